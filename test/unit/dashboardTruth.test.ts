// The dashboard shows a run truthfully: the same run (same task, settings and
// seed) once through the engine worker with its events fed to a
// DashboardModel by the extension's own feed (src/dashboard/dashboardFeed.ts),
// once through the CLI's `run --json`; every per-step number the page plots
// equals the CLI's line, and the replay of the run from its database after a
// window reload shows the same numbers.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { defaultSettings } from '../../src/engine/common/config';
import { bestCode, DashboardFeed, modelSink, replayRunFromDisk } from '../../src/dashboard/dashboardFeed';
import { BEST_CODE_MAX_CHARS } from '../../src/protocol/dashboardMessages';
import { DashboardModel } from '../../src/dashboard/dashboardModel';
import { EngineHost } from '../../src/worker/engineHost';
import { tempDir } from '../support/tempDirs';

const ROOT = resolve(__dirname, '../..');
const TASK_DIR = resolve(__dirname, '../fixtures/tasks/quadratic');
const STEPS = 4;

interface JsonLine {
  step: number;
  best: number | null;
  stepBest: number | null;
  mean: number | null;
  p10: number | null;
  p50: number | null;
  p90: number | null;
  counts: Record<string, number>;
  samples: number;
  dbSize: number;
  tokens: { prompt: number; completion: number };
}

describe('dashboard numbers match `run --json` for the same run', function () {
  this.timeout(180_000);
  let scratch: string;

  before(() => {
    scratch = tempDir('thetaevolve-dashboard-truth-');
  });

  it('best, best so far, mean, percentiles, outcome counts, samples, tokens and database size per step', async () => {
    const cli = spawnSync(
      process.execPath,
      [
        '--import',
        'tsx',
        join(ROOT, 'src/cli.ts'),
        'run',
        TASK_DIR,
        '--sampler',
        'mutate',
        '--steps',
        String(STEPS),
        '--batch',
        '3',
        '--samples',
        '3',
        '--eval-concurrency',
        '2',
        '--seed',
        '5',
        '--db',
        join(scratch, 'cli.sqlite'),
        '--json',
      ],
      { encoding: 'utf8', cwd: ROOT },
    );
    assert.equal(cli.status, 0, cli.stderr);
    const lines = cli.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as JsonLine);
    assert.equal(lines.length, STEPS);

    const host = new EngineHost({ workerFile: join(ROOT, 'src/worker/engineWorker.ts'), execArgv: ['--require', 'tsx/cjs'] });
    const model = new DashboardModel();
    const replayed = new DashboardModel();
    const dbFile = join(scratch, 'worker.sqlite');
    const queryErrors: string[] = [];
    try {
      const feed = new DashboardFeed(
        modelSink(model),
        (q) => host.query(q),
        (what, message) => queryErrors.push(`${what}: ${message}`),
      );
      const closed = new Promise<void>((done, fail) => {
        host.on('runClosed', () => done());
        host.on('startFailed', (_id, message) => fail(new Error(message)));
      });
      host.on('event', (_id, event) => feed.handle(event, dbFile));
      const settings = {
        ...defaultSettings(),
        sampler: 'mutate' as const,
        batchSize: 3,
        samplesPerPrompt: 3,
        evaluationConcurrency: 2,
        seed: 5,
        maxSteps: STEPS,
      };
      host.start({ runId: 'truth', dbFile, taskDir: TASK_DIR, startCode: null, startPath: null, settings, apiKey: null, resume: false });
      await closed;
      await feed.settled();
      assert.ok(await replayRunFromDisk(modelSink(replayed), (q) => host.query(q), { runId: 'truth', dbFile }));
    } finally {
      await host.dispose();
    }
    assert.deepEqual(queryErrors, []);
    const live = model.snapshot();
    assert.ok(live.run?.details.includes('B 3 x n 3 = 9 samples per step'), 'the run card shows B and n from the run_started event');
    assert.equal(live.database?.programs, lines.at(-1)?.dbSize, 'the database view is the state after the last step');

    const { series, summary } = model.snapshot();
    assert.equal(series.bucketSteps, 1);
    assert.equal(series.points.length, STEPS);
    for (const [i, point] of series.points.entries()) {
      const line = lines[i] as JsonLine;
      const at = `step ${line.step}`;
      assert.equal(point.step, line.step, at);
      assert.equal(point.best, line.stepBest, at);
      assert.equal(point.bestSoFar, line.best, at);
      assert.equal(point.mean, line.mean, at);
      assert.equal(point.p10, line.p10, at);
      assert.equal(point.p50, line.p50, at);
      assert.equal(point.p90, line.p90, at);
      assert.equal(point.samples, line.samples, at);
      assert.equal(point.valid, line.counts.valid, at);
      assert.equal(
        point.outcomes.reduce((a, b) => a + b, 0),
        line.samples,
        at,
      );
      assert.equal(point.completionTokens, line.tokens.completion, at);
      assert.equal(typeof point.latencyMsP50, 'number', `${at}: the request latency chart has a point`);
    }
    const last = lines.at(-1) as JsonLine;
    assert.equal(summary.lastStep, last.step);
    assert.equal(summary.bestEver, last.best);
    assert.equal(summary.dbSize, last.dbSize);
    assert.equal(
      summary.samples,
      lines.reduce((a, l) => a + l.samples, 0),
    );

    // After a reload the same run comes back from its database with the same numbers.
    const again = replayed.snapshot();
    assert.deepEqual(
      again.series.points.map((p) => [p.step, p.best, p.bestSoFar, p.mean, p.samples, p.valid]),
      series.points.map((p) => [p.step, p.best, p.bestSoFar, p.mean, p.samples, p.valid]),
    );
    assert.equal(again.summary.bestEver, summary.bestEver);
    assert.equal(again.summary.elapsedMs, summary.elapsedMs, 'elapsed time is the same after a reload');
    assert.match(
      again.database?.histogram?.label ?? '',
      /valid programs in the database/,
      "the histogram shows the database's valid programs",
    );
    assert.equal(again.best?.id, live.best?.id);
    assert.equal(again.best?.lineageDepth, live.best?.lineageDepth, "the best program's lineage depth is the same after a reload");
    assert.ok((live.best?.code ?? '').trim().length > 0, "the best program's EVOLVE-BLOCK is shown");
    assert.ok(!(live.best?.code ?? '').includes('EVOLVE-BLOCK'), 'its content, without the markers');
    assert.equal(again.best?.code, live.best?.code);
    // The run card's facts come back from the database too (issue 43): B x n, the sandbox, the interpreter.
    assert.deepEqual(again.run?.details, live.run?.details);
    assert.ok(live.run?.isolation, 'the live run card names its sandbox');
    assert.deepEqual(again.run?.isolation, live.run?.isolation);
  });
});

describe('dashboard: a resumed run is the same run, live and after a reload', function () {
  this.timeout(180_000);

  it('after a resume the earlier steps, best and totals stay; the live numbers equal the database replay, elapsed time across both sessions', async () => {
    const scratch = tempDir('thetaevolve-dashboard-resume-');
    const dbFile = join(scratch, 'resumed.sqlite');
    const host = new EngineHost({ workerFile: join(ROOT, 'src/worker/engineWorker.ts'), execArgv: ['--require', 'tsx/cjs'] });
    const live = new DashboardModel();
    const replayed = new DashboardModel();
    const queryErrors: string[] = [];
    const feed = new DashboardFeed(
      modelSink(live),
      (q) => host.query(q),
      (what, message) => queryErrors.push(`${what}: ${message}`),
    );
    let firstResumedStep: ReturnType<DashboardModel['snapshot']> | null = null;
    let sessionOneElapsed = 0;
    host.on('event', (_id, event) => {
      feed.handle(event, dbFile);
      if (event.type === 'step_committed' && event.step === 2) sessionOneElapsed = event.elapsedMs;
      // What the page holds once the resumed run's first step is in (its history read first).
      if (event.type === 'step_committed' && event.step === 3) void feed.settled().then(() => (firstResumedStep = live.snapshot()));
    });
    const session = async (maxSteps: number, resume: boolean): Promise<void> => {
      const closed = new Promise<void>((done, fail) => {
        const offClosed = host.on('runClosed', () => {
          offClosed();
          done();
        });
        host.on('startFailed', (_id, message) => fail(new Error(message)));
      });
      const settings = { ...defaultSettings(), sampler: 'mutate' as const, batchSize: 2, samplesPerPrompt: 2, seed: 3, maxSteps };
      host.start({ runId: 'resumed', dbFile, taskDir: TASK_DIR, startCode: null, startPath: null, settings, apiKey: null, resume });
      await closed;
      await feed.settled();
    };
    try {
      await session(2, false);
      const before = live.snapshot();
      await session(4, true);
      assert.ok(await replayRunFromDisk(modelSink(replayed), (q) => host.query(q), { runId: 'resumed', dbFile }));
      assert.deepEqual(queryErrors, []);
      assert.ok(firstResumedStep, 'the resumed run committed step 3');
      const first = firstResumedStep as ReturnType<DashboardModel['snapshot']>;
      assert.deepEqual(
        first.series.points.map((p) => p.step),
        [1, 2, 3],
        'the steps before the resume stay on the charts',
      );
      assert.ok(first.best, 'the best card keeps the best program');
      assert.equal(first.summary.samples, before.summary.samples + (first.series.points.at(-1)?.samples ?? 0));
      assert.ok(first.summary.elapsedMs > sessionOneElapsed, 'elapsed time goes on from the first session');

      const now = live.snapshot();
      const again = replayed.snapshot();
      const numbers = (s: ReturnType<DashboardModel['snapshot']>): unknown => ({
        steps: s.series.points.map((p) => [p.step, p.best, p.bestSoFar, p.mean, p.samples, p.valid, p.completionTokens, p.totalMs]),
        lastStep: s.summary.lastStep,
        bestEver: s.summary.bestEver,
        samples: s.summary.samples,
        completionTokens: s.summary.completionTokens,
        elapsedMs: s.summary.elapsedMs,
        histogram: s.database?.histogram,
        best: s.best?.id,
      });
      assert.deepEqual(numbers(now), numbers(again), 'live after a resume and replayed after a reload, the same numbers');
      assert.equal(now.summary.lastStep, 4);
      assert.equal(now.summary.session?.count, 2, 'the run says it has two sessions');
      assert.ok((now.summary.session?.elapsedMs ?? Infinity) < now.summary.elapsedMs, "the latest session's time is part of the run's");
      assert.equal(before.summary.session, undefined, 'a run of one session says nothing of sessions');
      assert.match(now.database?.histogram?.label ?? '', /valid programs in the database/);
    } finally {
      await host.dispose();
    }
  });
});

describe("dashboard: the best program's code as the page gets it", () => {
  it('is the EVOLVE-BLOCK content as plain text: control characters removed, newlines and tabs kept, cut when long', () => {
    const program = [
      'import x',
      '# EVOLVE-BLOCK-START',
      'def f():',
      '\treturn "\u001b[2J\u001b[31mok\u009b"',
      '# EVOLVE-BLOCK-END',
      '',
    ].join('\n');
    assert.equal(bestCode(program), 'def f():\n\treturn "[2J[31mok"');
    const long = `# EVOLVE-BLOCK-START\n${'x = 1\n'.repeat(5000)}# EVOLVE-BLOCK-END\n`;
    assert.ok(bestCode(long).length <= BEST_CODE_MAX_CHARS + 4);
  });
});
