// Steps overlapping (settings.pipelineDepth, docs/algorithm.md section 1
// "Pipelined steps"): the next step generates while the one before it is
// evaluated, shown by the events and by what the test server received, not
// by timing; steps still commit in order, draw their parents from the steps
// committed one step earlier, and the trainer's synchronous mode keeps them
// apart. Real parts: the quadratic task in the sandbox, the OpenAI-compatible
// test server, the atropos test server, the real run factory.
import assert from 'node:assert/strict';
import { join, resolve } from 'node:path';
import type { Settings } from '../../src/engine/common/config';
import type { EngineEvent } from '../../src/engine/common/events';
import { StepsInFlight } from '../../src/engine/common/stepsInFlight';
import { DashboardFeed, modelSink } from '../../src/dashboard/dashboardFeed';
import { DashboardModel } from '../../src/dashboard/dashboardModel';
import { ProgramDatabase } from '../../src/engine/database/programDatabase';
import { EndpointClient, endpointOptionsFromSettings } from '../../src/engine/llm/endpointClient';
import { type CandidateEvaluator, EvolutionRun } from '../../src/engine/loop';
import { assembleRun } from '../../src/engine/runFactory';
import { enqueueSteer } from '../../src/engine/steering/inbox';
import { Evaluator, evaluatorOptionsFromSettings } from '../../src/engine/sandbox/evaluator';
import { loadTask, type Task } from '../../src/engine/task/task';
import { startAtroposTestServer } from '../server/atroposTestServer';
import { startTestServer, type TestServer } from '../server/openaiTestServer';
import { settingsBuilder } from '../support/settings';
import { tempDir } from '../support/tempDirs';
import { waitFor } from '../support/waitFor';

const FIXTURE = resolve(__dirname, '..', 'fixtures', 'tasks', 'quadratic');
const B = 2;
const N = 3;
const settings = settingsBuilder({
  batchSize: B,
  samplesPerPrompt: N,
  evaluationConcurrency: 3,
  'database.preset': 'small',
  seed: 7,
  maxRetries: 0,
});

/** Index of the first event that `match` accepts (fails when there is none). */
function indexOf(events: readonly EngineEvent[], what: string, match: (e: EngineEvent) => boolean): number {
  const i = events.findIndex(match);
  assert.ok(i >= 0, `no ${what} among ${events.length} events`);
  return i;
}

const started = (step: number) => (e: EngineEvent) => e.type === 'step_started' && e.step === step;
const committed = (step: number) => (e: EngineEvent) => e.type === 'step_committed' && e.step === step;
const generated = (step: number) => (e: EngineEvent) => e.type === 'generation_finished' && e.step === step;

describe('pipelined steps: generation overlaps evaluation', function () {
  this.timeout(120_000);
  let task: Task;
  let dir: string;
  let server: TestServer;

  before(async () => {
    task = await loadTask(FIXTURE);
  });
  beforeEach(async () => {
    dir = tempDir('thetaevolve-pipelined-');
    server = await startTestServer({ latencyMs: 5 });
  });
  afterEach(() => server.close());

  /** A run of `steps` steps through `evaluator` (the sandbox when left out), with every event it emitted. */
  async function evolve(
    s: Settings,
    steps: number,
    evaluatorOf: (real: Evaluator, events: EngineEvent[]) => CandidateEvaluator = (real) => real,
    watch: (e: EngineEvent) => void = () => undefined,
  ) {
    const events: EngineEvent[] = [];
    const real = new Evaluator(task, evaluatorOptionsFromSettings(s));
    const dbFile = join(dir, 'run.sqlite');
    try {
      const run = new EvolutionRun({
        runId: 'pipelined',
        task,
        settings: s,
        dbFile,
        source: new EndpointClient(endpointOptionsFromSettings(s, undefined)),
        evaluator: evaluatorOf(real, events),
        stepsThisInvocation: steps,
        onEvent: (e) => {
          events.push(e);
          watch(e);
        },
      });
      const result = await run.run();
      return { result, events, dbFile };
    } finally {
      await real.close();
    }
  }

  it("step 2's requests reach the server while step 1's candidates are held in evaluation; steps commit in order", async () => {
    const s = settings({ endpoint: server.baseURL, sampler: 'llm', pipelineDepth: 1 });
    let requestsBeforeStep2: number | null = null;
    const { result, events } = await evolve(
      s,
      3,
      (real, events) => ({
        evaluate: async (code, options) => {
          // Step 1's candidates (evaluated once step 1 started and before step 2 did) wait for step 2's requests to arrive.
          const inStep1 = events.some(started(1)) && !events.some(started(2));
          if (inStep1)
            await waitFor(() => requestsBeforeStep2 !== null && server.counters.chatRequests > requestsBeforeStep2, {
              what: "step 2's requests at the server while step 1 is evaluated (the steps never overlapped)",
              deadlineMs: 20_000,
              intervalMs: 10,
            });
          return real.evaluate(code, options);
        },
      }),
      // Said before step 2 sends anything: its requests are the ones after.
      (e) => {
        if (started(2)(e)) requestsBeforeStep2 = server.counters.chatRequests;
      },
    );
    assert.equal(result.reason, 'steps_done', JSON.stringify(events.filter((e) => e.type === 'error')));
    const step2 = indexOf(events, 'step 2 start', started(2));
    const lastOfStep1 = events.map((e) => e.type === 'evaluation_finished' && e.step === 1).lastIndexOf(true);
    assert.ok(step2 < lastOfStep1, 'step 2 started while step 1 was still being evaluated');
    assert.ok(step2 < indexOf(events, 'step 1 commit', committed(1)));
    assert.deepEqual(
      events.flatMap((e) => (e.type === 'step_committed' ? [e.step] : [])),
      [1, 2, 3],
    );
    for (const step of [1, 2, 3]) {
      // Each step starts once the one before has all its responses, and after the one before that committed (one step of staleness).
      if (step > 1)
        assert.ok(indexOf(events, `step ${step - 1} generated`, generated(step - 1)) < indexOf(events, `step ${step}`, started(step)));
      if (step > 2)
        assert.ok(indexOf(events, `step ${step - 2} commit`, committed(step - 2)) < indexOf(events, `step ${step}`, started(step)));
      const finished = events.filter((e) => e.type === 'evaluation_finished' && e.step === step);
      assert.equal(finished.length, B * N, `step ${step}: one outcome per sample`);
    }
  });

  it('draws the parents of step k + 1 from the programs committed through step k - 1, and says which steps are in flight', async () => {
    const s = settings({ endpoint: server.baseURL, sampler: 'llm', pipelineDepth: 1 });
    const { result, events, dbFile } = await evolve(s, 4);
    assert.equal(result.reason, 'steps_done');
    const db = await ProgramDatabase.openReadOnly(dbFile);
    try {
      for (const e of events) {
        if (e.type !== 'step_started') continue;
        for (const parent of e.parents) {
          const step = db.get(parent.id)?.step;
          assert.ok(step !== undefined && step <= Math.max(0, e.step - 2), `step ${e.step} drew program ${parent.id} of step ${step}`);
        }
      }
    } finally {
      await db.close();
    }
    // What the CLI and the dashboard show as the events come: two steps at once, the older one evaluating.
    const steps = new StepsInFlight();
    const shown = new Set<string>();
    for (const e of events) if (steps.apply(e)) shown.add(steps.text());
    assert.ok(shown.has('step 1 evaluating, step 2 generating'), [...shown].join(' | '));
    assert.equal(steps.text(), '');
    // The dashboard's run state line, fed the same events.
    const model = new DashboardModel();
    const lines: string[] = [];
    const sink = modelSink(model);
    const feed = new DashboardFeed(
      {
        ...sink,
        setRunState: (state) => {
          lines.push(`${state.state}: ${state.message}`);
          sink.setRunState(state);
        },
      },
      () => Promise.reject(new Error('no database queries without a database file')),
    );
    for (const e of events) feed.handle(e, undefined);
    assert.ok(lines.includes('running: step 1 evaluating, step 2 generating'), lines.join(' | '));
    assert.equal(model.snapshot().runState.state, 'finished');
  });

  it('a steer request takes effect at the step planned next, ahead of the last commit', async () => {
    const s = settings({ endpoint: server.baseURL, sampler: 'llm', pipelineDepth: 1 });
    const guidance = 'Researcher guidance: keep x an integer.';
    let queued: Promise<string> | null = null;
    const { result, events, dbFile } = await evolve(
      s,
      4,
      (real) => ({
        // Step 1 commits only once the request is in the inbox: step 3, planned after that commit, takes it at the latest.
        evaluate: async (code, options) => {
          await queued;
          return real.evaluate(code, options);
        },
      }),
      (e) => {
        if (started(1)(e)) queued = enqueueSteer(join(dir, 'run.sqlite'), { kind: 'guidance', text: guidance });
      },
    );
    assert.equal(result.reason, 'steps_done');
    const steered = events[indexOf(events, 'the steer request taken', (e) => e.type === 'steered' && e.ok)];
    assert.ok(steered?.type === 'steered');
    assert.ok(steered.step >= 2, `taken at step ${steered.step}`);
    // Taken while the step before it was in flight (not committed): it applies from the step planned right after, not from that one.
    const next = events.slice(events.indexOf(steered)).find((e) => e.type === 'step_started');
    assert.equal(next?.type === 'step_started' ? next.step : null, steered.step);
    assert.ok(events.indexOf(steered) < indexOf(events, `step ${steered.step - 1} commit`, committed(steered.step - 1)));
    const db = await ProgramDatabase.openReadOnly(dbFile);
    try {
      assert.deepEqual(
        db.guidanceHistory().map((g) => g.step),
        [steered.step],
      );
      assert.equal(db.guidanceAt(steered.step - 1), null);
      assert.equal(db.guidanceAt(steered.step), guidance);
    } finally {
      await db.close();
    }
  });

  it('the synchronous loop (pipelineDepth 0) never starts a step before the one before it committed', async () => {
    const { result, events } = await evolve(settings({ endpoint: server.baseURL, sampler: 'llm', pipelineDepth: 0 }), 3);
    assert.equal(result.reason, 'steps_done');
    for (const step of [2, 3])
      assert.ok(indexOf(events, `step ${step - 1} commit`, committed(step - 1)) < indexOf(events, `step ${step}`, started(step)));
  });
});

describe('pipelined steps and the RL trainer', function () {
  this.timeout(120_000);

  /** Three steps through the run factory with the atropos trainer in `mode` and pipelineDepth 1. */
  async function trainedRun(mode: 'sync' | 'async') {
    const dir = tempDir('thetaevolve-pipelined-rl-');
    const endpoint = await startTestServer({ latencyMs: 5 });
    const trainer = await startAtroposTestServer({ trainer: { batchSize: N } });
    try {
      const s = settings({
        endpoint: endpoint.baseURL,
        sampler: 'llm',
        pipelineDepth: 1,
        'trainer.enabled': true,
        'trainer.url': trainer.url,
        'trainer.protocol': 'atropos',
        'trainer.mode': mode,
        'trainer.maxStaleness': 10,
      });
      const events: EngineEvent[] = [];
      const assembled = await assembleRun({
        runId: `pipelined-${mode}`,
        dbFile: join(dir, 'run.sqlite'),
        task: await loadTask(FIXTURE),
        settings: s,
        apiKey: undefined,
        stepsThisInvocation: 3,
        signal: new AbortController().signal,
        onEvent: (e) => events.push(e),
        onWarning: () => undefined,
      });
      try {
        const result = await assembled.run.run();
        assert.equal(result.reason, 'steps_done', JSON.stringify(events.filter((e) => e.type === 'error')));
        return events;
      } finally {
        await assembled.close();
      }
    } finally {
      await trainer.close();
      await endpoint.close();
    }
  }

  it('sync mode hands each step over once committed, before the next one starts; async mode lets them overlap', async () => {
    const sync = await trainedRun('sync');
    for (const step of [2, 3])
      assert.ok(indexOf(sync, `step ${step - 1} commit`, committed(step - 1)) < indexOf(sync, `step ${step}`, started(step)));
    const overlapping = await trainedRun('async');
    assert.ok(indexOf(overlapping, 'step 2 start', started(2)) < indexOf(overlapping, 'step 1 commit', committed(1)));
  });
});
