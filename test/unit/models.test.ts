// Several models and what they cost (docs/algorithm.md section 12, "Several
// models and cost"), with real parts: the settings parser, the seeded
// generator, the loop against the OpenAI-compatible test server serving
// several model names with `usage`, the fixture task in the sandbox and the
// run database on disk.
import assert from 'node:assert/strict';
import { join, resolve } from 'node:path';
import { parseSettings, type Settings } from '../../src/engine/common/config';
import type { EngineEvent, StepCommittedEvent } from '../../src/engine/common/events';
import { type ModelSpec, type ModelStats, type ModelTableRow, sumModelStats } from '../../src/engine/common/models';
import { compareRunFiles } from '../../src/engine/database/runComparison';
import { DashboardModel } from '../../src/dashboard/dashboardModel';
import { runCli } from '../support/cli';
import { applyRewrite } from '../../src/engine/common/rewrite';
import { Rng } from '../../src/engine/common/rng';
import { ProgramDatabase } from '../../src/engine/database/programDatabase';
import { ModelChoice, emptyBanditState } from '../../src/engine/llm/models/modelChoice';
import { assembleRun, RunSetupError } from '../../src/engine/runFactory';
import { loadTask, type Task } from '../../src/engine/task/task';
import { startTestServer, type TestServer, type TestServerOptions } from '../server/openaiTestServer';
import { settingsBuilder } from '../support/settings';
import { tempDir } from '../support/tempDirs';

const ROOT = resolve(__dirname, '..', '..');
const FIXTURE = join(ROOT, 'test', 'fixtures', 'tasks', 'quadratic');

const settings = settingsBuilder({
  batchSize: 4,
  samplesPerPrompt: 2,
  evaluationConcurrency: 4,
  'database.preset': 'small',
  seed: 5,
  sampler: 'llm',
  maxRetries: 0,
  serverRetrySeconds: 1,
});

describe('several models: settings', () => {
  it('takes a weighted list as the release writes it, and says what is wrong with a bad one before any request', () => {
    const s = parseSettings({
      models: [
        { name: 'big', weight: 0.8 },
        { name: 'small', weight: 0.2 },
      ],
    });
    assert.deepEqual(
      s.models.map((m) => [m.name, m.weight]),
      [
        ['big', 0.8],
        ['small', 0.2],
      ],
    );
    assert.throws(
      () => parseSettings({ models: [{ name: 'a', weight: -1 }] }),
      /thetaevolve\.models is invalid: entry 1 \("a"\), weight: a weight cannot be below 0 \(got -1\)/,
    );
    assert.throws(
      () =>
        parseSettings({
          models: [
            { name: 'a', weight: 0 },
            { name: 'b', weight: 0 },
          ],
        }),
      /thetaevolve\.models is invalid: every weight is 0/,
    );
    assert.throws(
      () => parseSettings({ models: [{ name: 'a', pricePerMillionInput: 'cheap' }] }),
      /entry 1 \("a"\), pricePerMillionInput: a price must be a number.*\(got "cheap"\)/,
    );
    assert.throws(() => parseSettings({ models: [{ name: 'a' }, { name: 'a' }] }), /listed twice/);
    assert.throws(() => parseSettings({ models: [{ name: 'a', mode: 'whole' }] }), /entry 1 \("a"\), mode/);
  });
});

describe('several models: the draw', () => {
  const two: ModelSpec[] = [
    { name: 'big', weight: 0.8 },
    { name: 'small', weight: 0.2 },
  ];

  it('draws by weight: over 20,000 seeded draws each share is within 5 standard deviations of its weight', () => {
    const choice = new ModelChoice(two, 'weights');
    const rng = Rng.fromSeed(11);
    const p = choice.probabilities(emptyBanditState());
    let big = 0;
    const draws = 20_000;
    for (let i = 0; i < draws; i++) if (choice.draw(rng, p).name === 'big') big++;
    const sd = Math.sqrt((0.8 * 0.2) / draws);
    assert.ok(Math.abs(big / draws - 0.8) < 5 * sd, `share of big ${big / draws}`);
  });

  it('draws nothing from the generator when there is one model (a one-model run stays the run it was)', () => {
    const choice = new ModelChoice([{ name: 'only' }, { name: 'off', weight: 0 }], 'weights');
    const rng = Rng.fromSeed(3);
    const before = rng.state();
    assert.equal(choice.draw(rng, choice.probabilities(emptyBanditState())).name, 'only');
    assert.deepEqual(rng.state(), before);
  });

  it('the bandit tries each model first, then favours the one whose children improve', () => {
    const choice = new ModelChoice(two, 'ucb');
    assert.deepEqual(choice.probabilities(emptyBanditState()), { big: 0.5, small: 0.5 });
    const p = choice.probabilities({ pulls: { big: 40, small: 40 }, rewards: { big: 2, small: 20 } });
    assert.ok((p.small as number) > 0.9, JSON.stringify(p));
  });
});

describe('several models: rewrites', () => {
  const parent = ['import math', '# EVOLVE-BLOCK-START', 'x = 1.0', 'y = 2.0', '# EVOLVE-BLOCK-END', 'print(x + y)', ''].join('\n');

  it('replaces only the code between the markers, whatever else the answer holds', () => {
    const answer = ['Here it is:', '```python', 'x = 1.5', 'y = 2.0', '```'].join('\n');
    const result = applyRewrite(parent, answer, { language: 'py' });
    assert.equal(result.status, 'applied');
    assert.equal(
      result.child,
      ['import math', '# EVOLVE-BLOCK-START', 'x = 1.5', 'y = 2.0', '# EVOLVE-BLOCK-END', 'print(x + y)', ''].join('\n'),
    );
    // The whole program given back, with a change outside the markers: only the inside lands.
    const whole = [
      '```python',
      'import os',
      '# EVOLVE-BLOCK-START',
      'x = 3.0',
      'y = 2.0',
      '# EVOLVE-BLOCK-END',
      'print("gamed")',
      '```',
    ].join('\n');
    const inside = applyRewrite(parent, whole, { language: 'py' });
    assert.equal(inside.status, 'applied');
    assert.equal(inside.child, parent.replace('x = 1.0', 'x = 3.0'));
  });

  it('checks a rewrite like an edit: no block, no change, too long, markers moved', () => {
    assert.equal(applyRewrite(parent, 'no code here').status, 'no_diff_blocks');
    assert.equal(applyRewrite(parent, '```python\nx = 1.0  # same\ny = 2.0\n```', { language: 'py' }).status, 'no_valid_change');
    assert.equal(applyRewrite(parent, '```python\nx = 9.0\ny = 2.0\n```', { maxLength: 20 }).status, 'too_long');
    assert.equal(applyRewrite(parent, '```python\nx = 9.0\n# EVOLVE-BLOCK-END\ny = 2.0\n```').status, 'outside_evolve_block');
  });
});

describe('several models: runs against the test server', function () {
  this.timeout(120_000);
  let task: Task;
  let dir: string;
  let server: TestServer | null = null;

  before(async () => {
    task = await loadTask(FIXTURE);
  });
  beforeEach(() => {
    dir = tempDir('thetaevolve-models-');
  });
  afterEach(async () => {
    await server?.close();
    server = null;
  });

  const start = async (options: TestServerOptions) => {
    server = await startTestServer({ latencyMs: 1, ...options });
    return server;
  };

  const run = async (s: Settings, dbFile: string, steps: number) => {
    const events: EngineEvent[] = [];
    const assembled = await assembleRun({
      runId: 'models',
      dbFile,
      task,
      settings: s,
      apiKey: undefined,
      stepsThisInvocation: steps,
      signal: new AbortController().signal,
      onEvent: (e) => events.push(e),
      onWarning: () => undefined,
    });
    try {
      const result = await assembled.run.run();
      const committed = events.filter((e): e is StepCommittedEvent => e.type === 'step_committed');
      return { result, events, committed };
    } finally {
      await assembled.close();
    }
  };

  const engineState = async (dbFile: string) => {
    const db = await ProgramDatabase.openReadOnly(dbFile);
    try {
      return db.engineState() as { costUsd?: number; bandit?: unknown };
    } finally {
      await db.close();
    }
  };

  it('sends each prompt to the model drawn for it, records which model wrote each child, and spends the sum over the replies', async () => {
    const endpoint = await start({ models: ['big', 'small'] });
    const models = [
      { name: 'big', weight: 0.7, pricePerMillionInput: 2, pricePerMillionOutput: 8 },
      { name: 'small', weight: 0.3, pricePerMillionInput: 0.5, pricePerMillionOutput: 1 },
    ];
    const dbFile = join(dir, 'run.sqlite');
    const { result, committed } = await run(settings({ endpoint: endpoint.baseURL, models }), dbFile, 3);
    assert.equal(result.reason, 'steps_done');
    assert.equal(committed.length, 3);
    const totals = sumModelStats(committed.map((c) => c.models));
    // Every sample is one model's; the server saw each model's requests.
    for (const name of ['big', 'small']) {
      assert.equal(totals[name]?.samples ?? 0, endpoint.requests.filter((r) => r.model === name).length, name);
    }
    assert.equal((totals.big?.samples ?? 0) + (totals.small?.samples ?? 0), 3 * 4 * 2);
    // Tokens are the replies' usage; dollars are tokens times prices.
    let expected = 0;
    for (const m of models) {
      const t = totals[m.name];
      if (!t) continue;
      assert.equal(t.estimatedTokens, 0);
      expected += (t.promptTokens * m.pricePerMillionInput + t.completionTokens * m.pricePerMillionOutput) / 1e6;
    }
    const completion = committed.reduce((a, c) => a + c.tokens.completion, 0);
    assert.equal((totals.big?.completionTokens ?? 0) + (totals.small?.completionTokens ?? 0), completion);
    const state = await engineState(dbFile);
    assert.ok(expected > 0);
    assert.ok(Math.abs((state.costUsd ?? 0) - expected) < 1e-12, `${state.costUsd} vs ${expected}`);
    // Which model wrote each child that entered the database.
    const db = await ProgramDatabase.openReadOnly(dbFile);
    try {
      const childModels = Object.assign({}, ...committed.map((c) => c.childModels ?? {})) as Record<string, string>;
      const children = db.topPrograms(10_000).filter((p) => p.step > 0);
      assert.ok(children.length > 0);
      for (const child of children) assert.ok(['big', 'small'].includes(childModels[child.id] as string), child.id);
    } finally {
      await db.close();
    }
    // The per-model table: db --json, the report's comparison (Compare Runs) and the dashboard show the same rows.
    const cli = await runCli(['db', dbFile, '--json'], dir);
    assert.equal(cli.code, 0, cli.stderr);
    const report = JSON.parse(cli.stdout) as { costUsd: number; models: ModelTableRow[] };
    assert.ok(Math.abs(report.costUsd - expected) < 1e-12);
    assert.deepEqual(
      report.models.map((r) => r.name),
      ['big', 'small'],
    );
    for (const row of report.models) {
      const t = totals[row.name] as ModelStats;
      assert.equal(row.samples, t.samples);
      assert.equal(row.validShare, t.valid / t.samples);
      assert.equal(row.meanReward, t.rewarded > 0 ? t.improvements / t.rewarded : null);
      assert.equal(row.probability, row.name === 'big' ? 0.7 : 0.3);
    }
    const text = await runCli(['db', dbFile], dir);
    assert.match(text.stdout, /spent {9}\$/);
    assert.match(text.stdout, /model +format +samples +valid +improved +reward +tokens +cost +next draw/);
    const comparison = await compareRunFiles([dbFile]);
    assert.deepEqual(comparison.runs[0]?.modelUsage?.models, report.models);
    const dashboard = new DashboardModel();
    dashboard.setRun({
      runId: 'models',
      taskName: task.name,
      taskTitle: task.title,
      direction: task.direction,
      targetValue: null,
      source: { kind: 'llm', label: 'models' },
      batchSize: 4,
      samplesPerPrompt: 2,
      resumedFromStep: null,
    });
    for (const c of committed) dashboard.addStep({ ...c, elapsedMs: c.elapsedMs });
    assert.deepEqual(dashboard.snapshot().summary.modelUsage?.models, report.models);
  });

  it('the CLI run --json gives the spend (costUsd) and each model on every step line; the step line for people says it', async () => {
    const endpoint = await start({ models: ['big', 'small'] });
    const models = JSON.stringify([
      { name: 'big', weight: 0.8, pricePerMillionInput: 2, pricePerMillionOutput: 8 },
      { name: 'small', weight: 0.2 },
    ]);
    const dbFile = join(dir, 'cli.sqlite');
    const args = [
      'run',
      FIXTURE,
      '--steps',
      '2',
      '--batch',
      '2',
      '--samples',
      '2',
      '--db',
      dbFile,
      '--json',
      '--endpoint',
      endpoint.baseURL,
    ];
    const cli = await runCli([...args, '--set', `models=${models}`, '--set', 'seed=1'], dir);
    assert.equal(cli.code, 0, cli.stderr);
    const lines = cli.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { costUsd: number | null; models?: Record<string, ModelStats> });
    assert.equal(lines.length, 2);
    const state = await engineState(dbFile);
    assert.equal(lines[1]?.costUsd, state.costUsd);
    assert.ok((lines[0]?.costUsd ?? 0) > 0 && (lines[1]?.costUsd ?? 0) >= (lines[0]?.costUsd ?? 0));
    assert.ok(lines.every((l) => l.models !== undefined));
    assert.match(cli.stderr, /\| spent \$[0-9.]+ \| /);
    assert.match(cli.stderr, /small has no price in thetaevolve\.models[^:]*: its tokens are counted, not its cost\n/);
    assert.equal(cli.stderr.match(/has no price/g)?.length, 1, 'said once');
  });

  it('counts tokens from the text when the server sends no usage, and says so', async () => {
    const endpoint = await start({ models: ['m'], omitUsage: true });
    const { committed } = await run(
      settings({ endpoint: endpoint.baseURL, models: [{ name: 'm', pricePerMillionOutput: 1 }] }),
      join(dir, 'r.sqlite'),
      1,
    );
    const m = committed[0]?.models?.m;
    assert.ok(m && m.estimatedTokens > 0 && m.estimatedTokens === m.promptTokens + m.completionTokens, JSON.stringify(m));
  });

  it('stops with "budget reached" between steps: the step that would pass maxCostUsd is not started', async () => {
    const endpoint = await start({ models: ['m'] });
    const models = [{ name: 'm', pricePerMillionInput: 1000, pricePerMillionOutput: 1000 }];
    // One step's cost, measured, sets a budget of about two and a half steps.
    const probe = await run(settings({ endpoint: endpoint.baseURL, models }), join(dir, 'probe.sqlite'), 1);
    const stepCost = probe.committed[0]?.costUsd as number;
    assert.ok(stepCost > 0);
    const dbFile = join(dir, 'budget.sqlite');
    const { result, events } = await run(settings({ endpoint: endpoint.baseURL, models, maxCostUsd: stepCost * 2.5 }), dbFile, 20);
    assert.equal(result.reason, 'budget_reached');
    assert.ok(result.lastStep >= 1 && result.lastStep < 20, String(result.lastStep));
    const finished = events.find((e) => e.type === 'run_finished');
    assert.match(finished && 'message' in finished ? finished.message : '', /budget reached/);
    const state = await engineState(dbFile);
    assert.ok((state.costUsd as number) <= stepCost * 2.5 * 1.5, `${state.costUsd}`);
  });

  it('the bandit shifts to the model whose children improve, and a resumed run draws exactly as the uninterrupted one', async () => {
    const endpoint = await start({ models: ['good', 'bad'], noDiffModels: ['bad'] });
    const s = settings({ endpoint: endpoint.baseURL, models: [{ name: 'good' }, { name: 'bad' }], modelSelection: 'ucb', batchSize: 6 });
    const whole = await run(s, join(dir, 'whole.sqlite'), 6);
    const totals = sumModelStats(whole.committed.map((c) => c.models));
    assert.equal(totals.bad?.improvements ?? 0, 0);
    assert.ok((totals.good?.improvements ?? 0) > 0);
    assert.ok((totals.good?.samples ?? 0) > (totals.bad?.samples ?? 0), JSON.stringify(totals));
    // Later steps draw the good model more than the first did.
    const lastSteps = whole.committed.slice(-2).map((c) => c.models?.good?.samples ?? 0);
    assert.ok(
      lastSteps.every((n) => n >= (whole.committed[0]?.models?.good?.samples ?? 0)),
      JSON.stringify(lastSteps),
    );

    const split = join(dir, 'split.sqlite');
    await run(s, split, 3);
    const resumed = await run(s, split, 3);
    const drawsOf = (c: StepCommittedEvent[]) => c.map((e) => [e.step, e.models?.good?.samples ?? 0, e.models?.bad?.samples ?? 0]);
    assert.deepEqual(drawsOf(resumed.committed), drawsOf(whole.committed).slice(3));
    assert.deepEqual((await engineState(split)).bandit, (await engineState(join(dir, 'whole.sqlite'))).bandit);
  });

  it('rewrite mode asks for the whole EVOLVE-BLOCK and applies it there; the counts say which format failed', async () => {
    const endpoint = await start({ models: ['small', 'big'] });
    const s = settings({
      endpoint: endpoint.baseURL,
      models: [{ name: 'small', mode: 'rewrite' }, { name: 'big' }],
    });
    const { result, committed } = await run(s, join(dir, 'rewrite.sqlite'), 2);
    assert.equal(result.reason, 'steps_done');
    const rewritePrompts = endpoint.requests.filter((r) => r.userText.includes('Do not use SEARCH/REPLACE blocks.'));
    assert.ok(rewritePrompts.length > 0);
    assert.ok(rewritePrompts.every((r) => r.model === 'small'));
    const totals = sumModelStats(committed.map((c) => c.models));
    assert.equal(totals.small?.editFormat, 'rewrite');
    assert.equal(totals.big?.editFormat, 'diff');
    assert.ok((totals.small?.valid ?? 0) > 0, JSON.stringify(totals.small));
  });

  it('an unknown model fails the start in one line naming the setting and the models the server has', async () => {
    const endpoint = await start({ models: ['alpha', 'beta'] });
    await assert.rejects(
      run(settings({ endpoint: endpoint.baseURL, models: [{ name: 'alpha' }, { name: 'gamma' }] }), join(dir, 'x.sqlite'), 1),
      (err: unknown) => {
        assert.ok(err instanceof RunSetupError);
        assert.equal(err.setting, 'thetaevolve.models');
        assert.match(err.message, /^thetaevolve\.models: Model "gamma" is not served at .*; it serves: alpha, beta\.$/);
        assert.ok(!err.message.includes('\n'));
        return true;
      },
    );
    assert.equal(endpoint.counters.chatRequests, 0);
  });
});
