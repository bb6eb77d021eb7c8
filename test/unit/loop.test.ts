// The evolution loop end to end with real parts: the fixture task's Python
// candidate and evaluator in the sandbox, the real program database on disk,
// the offline sampler and the OpenAI-compatible test server over HTTP.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import type { Settings } from '../../src/engine/common/config';
import { ProgramDatabase } from '../../src/engine/database/programDatabase';
import type { EngineEvent, StepCommittedEvent } from '../../src/engine/common/events';
import { EndpointClient, endpointOptionsFromSettings } from '../../src/engine/llm/endpointClient';
import { type CommittedStep, EvolutionRun } from '../../src/engine/loop';
import { MutateSampler } from '../../src/engine/llm/mutateSampler';
import { Evaluator, evaluatorOptionsFromSettings } from '../../src/engine/sandbox/evaluator';
import { loadTask, type Task } from '../../src/engine/task/task';
import type { ResponseSource } from '../../src/engine/common/types';
import { startTestServer } from '../server/openaiTestServer';
import { settingsBuilder } from '../support/settings';
import { tempDir } from '../support/tempDirs';
import { waitFor } from '../support/waitFor';

const ROOT = resolve(__dirname, '..', '..');
const FIXTURE = join(ROOT, 'test', 'fixtures', 'tasks', 'quadratic');

const baseSettings = settingsBuilder({ batchSize: 2, samplesPerPrompt: 3, evaluationConcurrency: 3, 'database.preset': 'small', seed: 7 });

async function runOnce(
  task: Task,
  s: Settings,
  dbFile: string,
  steps: number,
  source: ResponseSource,
  extra: { stopAt?: (e: EngineEvent, run: EvolutionRun) => void; afterCommit?: (c: CommittedStep) => void } = {},
) {
  const events: EngineEvent[] = [];
  const evaluator = new Evaluator(task, evaluatorOptionsFromSettings(s));
  const run: EvolutionRun = new EvolutionRun({
    runId: 'test',
    task,
    settings: s,
    dbFile,
    source,
    evaluator,
    stepsThisInvocation: steps,
    onEvent: (e) => {
      events.push(e);
      extra.stopAt?.(e, run);
    },
    afterCommit: async (c) => extra.afterCommit?.(c),
  });
  const result = await run.run();
  await evaluator.close();
  return { result, events, committed: events.filter((e): e is StepCommittedEvent => e.type === 'step_committed') };
}

// The same behaviour with the paper's synchronous loop and with steps overlapping (docs/algorithm.md section 1).
for (const pipelineDepth of [0, 1])
  describe(`evolution loop (pipelineDepth ${pipelineDepth})`, function () {
    this.timeout(120_000);
    const settings = (overrides: Record<string, unknown> = {}) => baseSettings({ pipelineDepth, ...overrides });
    let task: Task;
    let dir: string;

    before(async () => {
      task = await loadTask(FIXTURE);
    });
    beforeEach(() => {
      dir = tempDir('thetaevolve-loop-');
    });

    it('accounts for every one of the B x n samples of each step and improves on the initial program', async () => {
      const s = settings({});
      const { result, committed, events } = await runOnce(
        task,
        s,
        join(dir, 'run.sqlite'),
        4,
        new MutateSampler({ seed: 7, language: 'py' }),
      );
      assert.equal(result.reason, 'steps_done');
      assert.deepEqual(
        committed.map((c) => c.step),
        [1, 2, 3, 4],
      );
      for (const c of committed) {
        const total = Object.values(c.counts).reduce((a, b) => a + b, 0);
        assert.equal(total, 6, `step ${c.step} counts ${JSON.stringify(c.counts)}`);
        assert.equal(c.samples, 6);
      }
      const initial = events.find((e) => e.type === 'evaluation_finished' && e.jobKey === 'initial');
      assert.ok(initial && initial.type === 'evaluation_finished' && initial.score === 6);
      assert.ok(result.best && result.best.score > 6, `best ${result.best?.score}`);
      // One evaluation_finished per sample, each started evaluation finished.
      const finished = events.filter((e) => e.type === 'evaluation_finished' && e.jobKey !== 'initial');
      assert.equal(finished.length, 24);
    });

    it('ends when the target value is reached', async () => {
      const { result, committed } = await runOnce(
        { ...task, targetValue: 8 },
        settings({}),
        join(dir, 'target.sqlite'),
        50,
        new MutateSampler({ seed: 7, language: 'py' }),
      );
      assert.equal(result.reason, 'target_reached');
      assert.ok(committed.length < 50);
      assert.ok(result.best && result.best.score >= 8);
    });

    it('is deterministic under a seed', async () => {
      const a = await runOnce(task, settings({}), join(dir, 'a.sqlite'), 3, new MutateSampler({ seed: 7, language: 'py' }));
      const b = await runOnce(task, settings({}), join(dir, 'b.sqlite'), 3, new MutateSampler({ seed: 7, language: 'py' }));
      const shape = (c: StepCommittedEvent[]) => c.map((e) => ({ counts: e.counts, best: e.best, mean: e.mean, dbSize: e.dbSize }));
      assert.deepEqual(shape(a.committed), shape(b.committed));
      const c = await runOnce(task, settings({ seed: 8 }), join(dir, 'c.sqlite'), 3, new MutateSampler({ seed: 8, language: 'py' }));
      assert.notDeepEqual(shape(a.committed), shape(c.committed));
    });

    it('resumes after the last committed step, exactly as an uninterrupted run', async () => {
      const whole = await runOnce(task, settings({}), join(dir, 'whole.sqlite'), 4, new MutateSampler({ seed: 7, language: 'py' }));
      const file = join(dir, 'split.sqlite');
      await runOnce(task, settings({}), file, 2, new MutateSampler({ seed: 7, language: 'py' }));
      const metaOf = async () => {
        const db = await ProgramDatabase.openReadOnly(file);
        try {
          return db.meta();
        } finally {
          await db.close();
        }
      };
      const metaBefore = await metaOf();
      // A resumed run that wrote its own creation time would now write a later one.
      await waitFor(() => Date.now() > Number(metaBefore.createdAt), { what: 'the clock to pass the creation time' });
      const second = await runOnce(task, settings({}), file, 2, new MutateSampler({ seed: 7, language: 'py' }));
      // What the run was created with is kept on resume.
      const metaAfter = await metaOf();
      assert.equal(metaAfter.createdAt, metaBefore.createdAt);
      assert.equal(metaAfter.startCode, metaBefore.startCode);
      const started = second.events.find((e) => e.type === 'run_started');
      assert.ok(started && started.type === 'run_started' && started.resumedFromStep === 2);
      assert.deepEqual(
        second.committed.map((c) => c.step),
        [3, 4],
      );
      const shape = (c: StepCommittedEvent[]) => c.map((e) => ({ counts: e.counts, best: e.best, dbSize: e.dbSize }));
      assert.deepEqual(shape(second.committed), shape(whole.committed).slice(2));
    });

    it('gives the lazy penalty to children equal to any program already in the database, across steps', async () => {
      // One integer literal: the sampler soon proposes programs the database already holds.
      const s = settings({ batchSize: 3, samplesPerPrompt: 4 });
      const { committed } = await runOnce(task, s, join(dir, 'lazy.sqlite'), 5, new MutateSampler({ seed: 3, language: 'py' }));
      const duplicates = committed.reduce((a, c) => a + c.counts.duplicate, 0);
      assert.ok(duplicates > 0, `no duplicate in ${JSON.stringify(committed.map((c) => c.counts))}`);
      const off = await runOnce(
        task,
        { ...s, lazyPenalty: false },
        join(dir, 'lazy-off.sqlite'),
        5,
        new MutateSampler({ seed: 3, language: 'py' }),
      );
      assert.equal(
        off.committed.reduce((a, c) => a + c.counts.duplicate, 0),
        0,
      );
    });

    it('stop abandons the steps in flight: nothing of them is committed', async () => {
      const file = join(dir, 'stop.sqlite');
      let stopped = false;
      const { result, events } = await runOnce(task, settings({}), file, 10, new MutateSampler({ seed: 7, language: 'py' }), {
        stopAt: (e, run) => {
          // Overlapping, step 3 is already in flight when step 2 commits.
          const inStep3 =
            pipelineDepth === 0 ? e.type === 'evaluation_started' && e.step === 3 : e.type === 'step_committed' && e.step === 2;
          if (!stopped && inStep3) {
            stopped = true;
            run.stop();
          }
        },
      });
      assert.ok(events.some((e) => e.type === 'step_started' && e.step === 3));
      assert.equal(result.reason, 'stopped');
      assert.equal(result.lastStep, 2);
      const db = await ProgramDatabase.openReadOnly(file);
      try {
        assert.equal(db.lastStep, 2);
        assert.deepEqual(
          db.steps().map((s) => s.step),
          [1, 2],
        );
      } finally {
        await db.close();
      }
    });

    it('pause waits after the step commits; resume goes on', async () => {
      let paused = false;
      const { events, result } = await runOnce(
        task,
        settings({}),
        join(dir, 'pause.sqlite'),
        3,
        new MutateSampler({ seed: 7, language: 'py' }),
        {
          stopAt: (e, run) => {
            if (e.type === 'step_committed' && e.step === 1) run.pause();
            if (e.type === 'paused') {
              paused = true;
              // The run awaits its resume right after emitting paused: resume once it waits.
              queueMicrotask(() => run.resume());
            }
          },
        },
      );
      assert.ok(paused);
      assert.equal(result.lastStep, 3);
      const types = events.map((e) => e.type);
      assert.ok(types.indexOf('paused') < types.indexOf('resumed'));
    });

    it('hands each committed step to the trainer hook as B groups of n scored samples with shaped rewards', async () => {
      const groups: CommittedStep[] = [];
      await runOnce(task, settings({}), join(dir, 'groups.sqlite'), 2, new MutateSampler({ seed: 7, language: 'py' }), {
        afterCommit: (c) => groups.push(c),
      });
      assert.equal(groups.length, 2);
      for (const c of groups) {
        assert.equal(c.groups.length, 2);
        for (const g of c.groups) {
          assert.equal(g.samples.length, 3);
          for (const sample of g.samples) {
            if (sample.outcome === 'valid') {
              // Task shaping: k (x - L) / (U - L) with L 0, U 10, k 1.
              assert.ok(sample.objective !== null);
              assert.ok(Math.abs((sample.reward as number) - (sample.objective as number) / 10) < 1e-12);
            } else if (sample.score !== null) assert.equal(sample.reward, sample.score);
          }
        }
      }
    });

    it('hands each step to beforeCommit before the commit (no child ids yet) and the same groups with child ids to afterCommit; a failing beforeCommit leaves the step uncommitted', async () => {
      const dbFile = join(dir, 'before.sqlite');
      const before: { step: number; lastStepInDb: number; committed: CommittedStep }[] = [];
      const after: CommittedStep[] = [];
      const evaluator = new Evaluator(task, evaluatorOptionsFromSettings(settings({})));
      const runWith = (beforeCommit: (c: CommittedStep) => Promise<void>) => {
        const run: EvolutionRun = new EvolutionRun({
          runId: 'test',
          task,
          settings: settings({}),
          dbFile,
          source: new MutateSampler({ seed: 7, language: 'py' }),
          evaluator,
          stepsThisInvocation: 2,
          onEvent: () => undefined,
          beforeCommit: async (c) => {
            before.push({ step: c.step, lastStepInDb: run.database?.lastStep ?? -2, committed: c });
            await beforeCommit(c);
          },
          afterCommit: async (c) => void after.push(c),
        });
        return run.run();
      };
      try {
        const first = await runWith(async () => undefined);
        assert.equal(first.lastStep, 2);
        assert.deepEqual(
          before.map((b) => [b.step, b.lastStepInDb]),
          [
            [1, 0],
            [2, 1],
          ],
          'called before the commit',
        );
        for (const [i, b] of before.entries()) {
          const a = after[i] as CommittedStep;
          assert.ok(b.committed.groups.every((g) => g.samples.every((x) => x.childId === null)));
          assert.deepEqual(
            b.committed.groups.map((g) => g.key),
            a.groups.map((g) => g.key),
          );
          assert.deepEqual(
            b.committed.groups.map((g) => g.samples.map((x) => x.reward)),
            a.groups.map((g) => g.samples.map((x) => x.reward)),
          );
        }
        assert.ok(
          after.some((a) => a.groups.some((g) => g.samples.some((x) => x.childId !== null))),
          'afterCommit has the child ids',
        );
        const failed = await runWith(async (c) => {
          if (c.step === 3) throw new Error('spool full');
        });
        assert.equal(failed.reason, 'error');
        assert.equal(failed.lastStep, 2, 'step 3 was not committed');
        assert.equal(after.length, 2);
      } finally {
        await evaluator.close();
      }
    });

    it('commits every step against the OpenAI-compatible test server with 30% mixed faults', async () => {
      const server = await startTestServer({
        latencyMs: 5,
        faultRate: 0.3,
        faultSeed: 11,
        faultKinds: ['rate_limit', 'server_error', 'reset', 'garbage', 'truncate', 'no_diff'],
        retryAfterSeconds: 0,
      });
      try {
        const s = settings({ endpoint: server.baseURL, sampler: 'llm', maxRetries: 2 });
        const client = new EndpointClient({ ...endpointOptionsFromSettings(s, undefined), backoff: { baseMs: 1, maxMs: 5 } });
        const { committed, result } = await runOnce(task, s, join(dir, 'llm.sqlite'), 3, client);
        assert.equal(result.reason, 'steps_done');
        assert.deepEqual(
          committed.map((c) => c.step),
          [1, 2, 3],
        );
        for (const c of committed)
          assert.equal(
            Object.values(c.counts).reduce((a, b) => a + b, 0),
            6,
          );
        assert.ok(committed.some((c) => c.counts.no_diff > 0 || c.counts.request_failed > 0 || c.counts.valid > 0));
      } finally {
        await server.close();
      }
    });

    it('the CLI run prints one JSON line per committed step and resumes with the same --db', () => {
      const db = join(dir, 'cli.sqlite');
      const cli = (steps: number) =>
        spawnSync(
          process.execPath,
          [
            '--import',
            'tsx',
            join(ROOT, 'src/cli.ts'),
            'run',
            FIXTURE,
            '--sampler',
            'mutate',
            '--steps',
            String(steps),
            '--batch',
            '2',
            '--samples',
            '2',
            '--db',
            db,
            '--json',
            '--set',
            `pipelineDepth=${pipelineDepth}`,
          ],
          {
            cwd: ROOT,
            encoding: 'utf8',
            timeout: 90_000,
          },
        );
      const first = cli(2);
      assert.equal(first.status, 0, first.stderr);
      const lines = first.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      assert.deepEqual(
        lines.map((l) => l.step),
        [1, 2],
      );
      for (const l of lines)
        for (const key of ['step', 'best', 'mean', 'counts', 'dbSize', 'elapsedMs']) assert.ok(key in l, `${key} missing`);
      const second = cli(1);
      assert.equal(second.status, 0, second.stderr);
      assert.equal((JSON.parse(second.stdout.trim()) as { step: number }).step, 3);
    });
  });
