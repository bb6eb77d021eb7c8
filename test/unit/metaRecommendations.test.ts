// Meta-recommendations (docs/algorithm.md section 12) with real parts: the
// OpenAI-compatible test server (its model answers a review request with
// recommendations), the atropos test trainer, the fixture task in the sandbox
// and the run database on disk.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseSettings, type Settings } from '../../src/engine/common/config';
import type { EngineEvent } from '../../src/engine/common/events';
import { ProgramDatabase } from '../../src/engine/database/programDatabase';
import { EndpointClient, endpointOptionsFromSettings } from '../../src/engine/llm/endpointClient';
import { EvolutionRun } from '../../src/engine/loop';
import { META_REQUEST_HEADING } from '../../src/engine/operators/metaRecommendations';
import { OPERATORS_META_KEY } from '../../src/engine/operators/recorded';
import { Evaluator, evaluatorOptionsFromSettings } from '../../src/engine/sandbox/evaluator';
import { loadTask, type Task } from '../../src/engine/task/task';
import { TrainerBridge } from '../../src/engine/trainer/bridge';
import { startAtroposTestServer } from '../server/atroposTestServer';
import { type ScriptStep, startTestServer, type TestServer } from '../server/openaiTestServer';
import { runCli } from '../support/cli';
import { tempDir } from '../support/tempDirs';

const FIXTURE = resolve(__dirname, '..', 'fixtures', 'tasks', 'quadratic');
const N = 2;
const B = 2;
const SECTION = '# Recommendations written by the model';
/** The endpoint client asks each of a prompt's n responses in a request of its own. */
const REQUESTS_PER_STEP = B * N;

describe('meta-recommendations (meta.everySteps)', function () {
  this.timeout(180_000);
  let dir: string;
  let task: Task;
  const cleanups: (() => Promise<void>)[] = [];
  before(async () => {
    task = await loadTask(FIXTURE);
  });
  beforeEach(() => {
    dir = tempDir('thetaevolve-meta-');
  });
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  async function server(script: readonly ScriptStep[] = []): Promise<TestServer> {
    const s = await startTestServer({ script });
    cleanups.push(() => s.close());
    return s;
  }

  function settingsFor(endpoint: TestServer, extra: Record<string, unknown>): Settings {
    return parseSettings({
      endpoint: endpoint.baseURL,
      batchSize: B,
      samplesPerPrompt: N,
      evaluationConcurrency: 2,
      'database.preset': 'small',
      seed: 3,
      maxRetries: 0,
      pipelineDepth: 0,
      ...extra,
    });
  }

  async function evolve(settings: Settings, dbFile: string, steps: number, trainer?: TrainerBridge, client?: EndpointClient) {
    const source = client ?? new EndpointClient(endpointOptionsFromSettings(settings, undefined));
    const evaluator = new Evaluator(task, evaluatorOptionsFromSettings(settings));
    cleanups.push(() => evaluator.close());
    const events: EngineEvent[] = [];
    const run = new EvolutionRun({
      runId: 'meta',
      task,
      settings,
      dbFile,
      source,
      evaluator,
      stepsThisInvocation: steps,
      onEvent: (e) => events.push(e),
      ...(trainer
        ? {
            beforeCommit: (committed, signal) => trainer.spoolStep(committed, signal),
            afterCommit: (committed, signal) => trainer.afterCommit(committed, signal),
            stepsMayOverlap: () => !trainer.holdsEachStep(),
          }
        : {}),
    });
    const result = await run.run();
    return { result, events };
  }

  const isMeta = (userText: string): boolean => userText.startsWith(META_REQUEST_HEADING);

  it('the model writes recommendations every k steps: recorded with their step, marked, in the next prompts, never a rollout; a resume carries them, and an edit is marked', async () => {
    const endpoint = await server();
    const atropos = await startAtroposTestServer({ trainer: { batchSize: N } });
    cleanups.push(() => atropos.close());
    const settings = settingsFor(endpoint, {
      'meta.everySteps': 2,
      'trainer.enabled': true,
      'trainer.url': atropos.url,
      'trainer.protocol': 'atropos',
      'trainer.mode': 'async',
      'trainer.maxStaleness': 10,
    });
    const dbFile = join(dir, 'meta.sqlite');
    const source = new EndpointClient(endpointOptionsFromSettings(settings, undefined));
    await source.check(new AbortController().signal);
    const bridge = new TrainerBridge({
      settings,
      dbFile,
      groupSize: N,
      lastCommittedStep: -1,
      name: 'thetaevolve-test',
      tokenSupport: source.tokenSupport,
      onWarning: () => undefined,
      pollIntervalMs: 20,
      backoff: { baseMs: 20, maxMs: 100 },
      requestTimeoutMs: 2_000,
    });
    cleanups.push(() => bridge.close());
    await bridge.start(new AbortController().signal);
    const { result, events } = await evolve(settings, dbFile, 4, bridge, source);
    assert.equal(result.reason, 'steps_done');
    assert.equal(await bridge.flush(new AbortController().signal, 10_000), 0);

    // Two meta requests, after steps 2 and 4, each one answer; the prompts before the first carry no recommendations.
    // The token-id probe ("Reply with OK.") comes before the steps.
    const requests = endpoint.requests.filter((r) => r.userText !== 'Reply with OK.');
    const metaAt = requests.flatMap((r, i) => (isMeta(r.userText) ? [i] : []));
    assert.equal(metaAt.length, 2, 'one meta request after step 2 and one after step 4');
    assert.deepEqual(
      metaAt.map((i) => requests[i]?.n),
      [1, 1],
    );
    assert.equal(metaAt[0], 2 * REQUESTS_PER_STEP, 'the first meta request follows the requests of steps 1 and 2');
    assert.match(requests[metaAt[0] as number]?.userText ?? '', /^Steps 1 to 2: \d+ children/m);
    const before = requests.slice(0, metaAt[0]);
    const between = requests.slice((metaAt[0] as number) + 1, metaAt[1]);
    assert.ok(before.every((r) => !r.userText.includes(SECTION)));
    assert.equal(between.length, 2 * REQUESTS_PER_STEP);
    for (const r of between) {
      assert.ok(r.userText.includes(SECTION), 'the prompts of steps 3 and 4 carry the section');
      assert.ok(r.userText.includes('- Keep the constants the new best programs of steps 1 to 2 changed'));
    }
    // The trainer got the groups of the 4 steps' prompts only: the meta requests are no rollouts.
    assert.equal(atropos.received.length, 4 * B);
    assert.ok(atropos.received.every((r) => r.data.tokens.length === N));
    assert.ok(events.some((e) => e.type === 'steered' && e.kind === 'recommendations' && e.step === 3));

    const db = await ProgramDatabase.openReadOnly(dbFile);
    assert.deepEqual(
      db.recommendationsHistory().map((v) => ({ step: v.step, afterStep: v.afterStep, editedBy: v.editedBy })),
      [
        { step: 3, afterStep: 2, editedBy: null },
        { step: 5, afterStep: 4, editedBy: null },
      ],
    );
    assert.match(db.recommendationsAt(5)?.text ?? '', /steps 3 to 4/);
    assert.equal(db.recommendationsAt(2), null);
    assert.deepEqual(db.meta()[OPERATORS_META_KEY], { 'meta.everySteps': 2 });
    await db.close();

    // Resumed without the setting, on a fresh server: the recorded recommendations are in step 5's prompts,
    // and the recorded meta.everySteps asks for the next ones after step 6.
    const endpoint2 = await server();
    await evolve(settingsFor(endpoint2, {}), dbFile, 2);
    const resumed = endpoint2.requests;
    assert.ok(
      resumed
        .slice(0, REQUESTS_PER_STEP)
        .every((r) => r.userText.includes('- Keep the constants the new best programs of steps 3 to 4 changed')),
    );
    assert.equal(resumed.filter((r) => isMeta(r.userText)).length, 1);

    // The researcher edits them on the stopped run (the CLI): the prompts carry the edit, still as the model's section, marked edited.
    const editFile = join(dir, 'edit.md');
    writeFileSync(editFile, '- Prefer smaller constants.\n');
    const steered = await runCli(['steer', dbFile, '--recommendations', editFile, '--json'], dir);
    assert.equal(steered.code, 0, steered.stderr);
    assert.deepEqual(JSON.parse(steered.stdout), { kind: 'recommendations', step: 7 });
    const report = await runCli(['db', dbFile, '--json'], dir);
    assert.equal(report.code, 0, report.stderr);
    const parsed = JSON.parse(report.stdout) as { recommendations: unknown[]; steering: { kind: string; by: string }[] };
    assert.deepEqual(parsed.recommendations.at(-1), { step: 7, text: '- Prefer smaller constants.', afterStep: 6, editedBy: 'researcher' });
    assert.deepEqual(
      parsed.steering.filter((e) => e.kind === 'recommendations').map((e) => e.by),
      ['model', 'model', 'model', 'researcher'],
    );
    const human = await runCli(['db', dbFile], dir);
    assert.match(
      human.stdout,
      /recommendations by the model after step 6, edited by the researcher, from step 7: - Prefer smaller constants\./,
    );
    const endpoint3 = await server();
    await evolve(settingsFor(endpoint3, {}), dbFile, 1);
    const first = endpoint3.requests[0]?.userText ?? '';
    assert.ok(first.includes(`${SECTION}`) && first.includes('- Prefer smaller constants.'), first);
  });

  it("counts the meta round's tokens and dollars in the run's spend (maxCostUsd)", async () => {
    const endpoint = await server();
    const priced = { name: 'test-model', pricePerMillionInput: 1, pricePerMillionOutput: 2 };
    const settings = settingsFor(endpoint, { 'meta.everySteps': 1, models: [priced] });
    const { events } = await evolve(settings, join(dir, 'spend.sqlite'), 2);
    const committed = events.flatMap((e) => (e.type === 'step_committed' ? [e] : []));
    assert.equal(committed.length, 2);
    const stepCosts = committed.map((e) => e.costUsd ?? 0);
    assert.ok((stepCosts[0] ?? 0) > 0, 'the steps are priced');
    // The meta request after step 1 went out between the two commits: the run's spend at step 2 holds it too.
    const meta = endpoint.requests.filter((r) => isMeta(r.userText));
    assert.equal(meta.length, 2);
    const runCost = committed[1]?.runCostUsd ?? 0;
    assert.ok(
      runCost > (stepCosts[0] ?? 0) + (stepCosts[1] ?? 0),
      `run cost ${runCost} holds more than the two steps' ${stepCosts.join(' + ')}`,
    );
  });

  it("is reachable from the CLI: run --set meta.everySteps=2 records the model's recommendations", async () => {
    const endpoint = await server();
    const dbFile = join(dir, 'cli.sqlite');
    const args = ['run', FIXTURE, '--endpoint', endpoint.baseURL, '--batch', '2', '--samples', '1', '--steps', '2', '--db', dbFile];
    const run = await runCli([...args, '--set', 'meta.everySteps=2'], dir);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(endpoint.requests.filter((r) => isMeta(r.userText)).length, 1);
    const db = await ProgramDatabase.openReadOnly(dbFile);
    assert.equal(db.recommendationsHistory().length, 1);
    await db.close();
  });

  it('a failed meta request is named and the run goes on without recommendations', async () => {
    // The chat request after those of steps 1 and 2 is the meta request.
    const endpoint = await server([...new Array<ScriptStep>(2 * REQUESTS_PER_STEP).fill('ok'), 'server_error']);
    const dbFile = join(dir, 'failed.sqlite');
    const { result, events } = await evolve(settingsFor(endpoint, { 'meta.everySteps': 2 }), dbFile, 3);
    assert.equal(result.reason, 'steps_done');
    assert.ok(
      isMeta(endpoint.requests[2 * REQUESTS_PER_STEP]?.userText ?? ''),
      endpoint.requests.map((r) => `${r.fault} ${r.userText.slice(0, 40)}`).join('\n'),
    );
    const failure = events.find((e) => e.type === 'error' && e.message.includes('meta-recommendations after step 2 failed'));
    assert.ok(failure && failure.type === 'error' && !failure.fatal, JSON.stringify(events.filter((e) => e.type === 'error')));
    assert.ok(endpoint.requests.slice(2 * REQUESTS_PER_STEP + 1).every((r) => !r.userText.includes(SECTION)));
    const db = await ProgramDatabase.openReadOnly(dbFile);
    assert.equal(db.lastStep, 3);
    assert.deepEqual(db.recommendationsHistory(), []);
    await db.close();
  });

  it('is off by default: no meta request, nothing recorded', async () => {
    const endpoint = await server();
    const dbFile = join(dir, 'off.sqlite');
    await evolve(settingsFor(endpoint, {}), dbFile, 2);
    assert.ok(endpoint.requests.every((r) => !isMeta(r.userText) && !r.userText.includes(SECTION)));
    const db = await ProgramDatabase.openReadOnly(dbFile);
    assert.deepEqual(db.recommendationsHistory(), []);
    assert.equal(db.meta()[OPERATORS_META_KEY], undefined);
    await db.close();
  });
});
