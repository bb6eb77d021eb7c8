// The evolution loop and the RL trainer bridge together, over real HTTP: the
// OpenAI-compatible test server fails 30% of requests (no retries), the
// sandbox scores the children, and the groups go to the protocol-faithful
// atropos and slime stand-ins. Only whole groups of n may reach a trainer:
// the loop asks again for the failed responses (trainer.resampleRounds), and
// a group still short is dropped with a warning and a count.
import assert from 'node:assert/strict';
import { join, resolve } from 'node:path';
import { parseSettings } from '../../src/engine/common/config';
import type { EngineEvent } from '../../src/engine/common/events';
import { EndpointClient, endpointOptionsFromSettings } from '../../src/engine/llm/endpointClient';
import { EvolutionRun } from '../../src/engine/loop';
import { Evaluator, evaluatorOptionsFromSettings } from '../../src/engine/sandbox/evaluator';
import { loadTask } from '../../src/engine/task/task';
import { TrainerBridge } from '../../src/engine/trainer/bridge';
import { startAtroposTestServer } from '../server/atroposTestServer';
import { startTestServer } from '../server/openaiTestServer';
import { startSlimeTestServer } from '../server/slimeTestServer';
import { tempDir } from '../support/tempDirs';

const FIXTURE = resolve(__dirname, '..', 'fixtures', 'tasks', 'quadratic');
const N = 3;

// With the paper's synchronous loop and with steps overlapping (asynchronous mode allows it: docs/algorithm.md section 1).
for (const pipelineDepth of [0, 1])
  describe(`RL trainer bridge under the loop with 30% of requests failing (pipelineDepth ${pipelineDepth})`, function () {
    this.timeout(90_000);
    let dir: string;
    const cleanups: (() => Promise<void>)[] = [];

    beforeEach(() => {
      dir = tempDir('thetaevolve-trainer-loop-');
    });
    afterEach(async () => {
      for (const c of cleanups.splice(0).reverse()) await c();
    });

    /** Three steps of B = 2 prompts x n = 3 against an endpoint failing 30% of requests, the groups going to `trainerUrl`. */
    async function evolve(protocol: 'atropos' | 'slime', trainerUrl: string, resampleRounds: number) {
      const endpoint = await startTestServer({ faultRate: 0.3, faultKinds: ['server_error'], faultSeed: 11 });
      cleanups.push(() => endpoint.close());
      const settings = parseSettings({
        endpoint: endpoint.baseURL,
        batchSize: 2,
        samplesPerPrompt: N,
        maxRetries: 0,
        'trainer.enabled': true,
        'trainer.url': trainerUrl,
        'trainer.protocol': protocol,
        'trainer.mode': 'async',
        'trainer.maxStaleness': 10,
        'trainer.resampleRounds': resampleRounds,
        pipelineDepth,
      });
      const dbFile = join(dir, `${protocol}-${resampleRounds}.sqlite`);
      const task = await loadTask(FIXTURE);
      const source = new EndpointClient(endpointOptionsFromSettings(settings, undefined));
      await source.check(new AbortController().signal);
      const warnings: string[] = [];
      const bridge = new TrainerBridge({
        settings,
        dbFile,
        groupSize: N,
        lastCommittedStep: -1,
        name: 'thetaevolve-test',
        tokenSupport: source.tokenSupport,
        onWarning: (m) => warnings.push(m),
        pollIntervalMs: 20,
        backoff: { baseMs: 20, maxMs: 100 },
        requestTimeoutMs: 2_000,
      });
      cleanups.push(() => bridge.close());
      await bridge.start(new AbortController().signal);
      const evaluator = new Evaluator(task, evaluatorOptionsFromSettings(settings));
      cleanups.push(() => evaluator.close());
      const events: EngineEvent[] = [];
      const run = new EvolutionRun({
        runId: `loop-${protocol}`,
        task,
        settings,
        dbFile,
        source,
        evaluator,
        stepsThisInvocation: 3,
        onEvent: (e) => events.push(e),
        beforeCommit: (committed, signal) => bridge.spoolStep(committed, signal),
        afterCommit: (committed, signal) => bridge.afterCommit(committed, signal),
        stepsMayOverlap: () => !bridge.holdsEachStep(),
      });
      const result = await run.run();
      assert.equal(result.reason, 'steps_done');
      assert.ok(endpoint.counters.faults.server_error > 0, 'the endpoint failed some requests');
      // One evaluation_finished per response, re-sampled or not.
      for (const step of [1, 2, 3]) {
        const finished = events.filter((e) => e.type === 'evaluation_finished' && e.step === step);
        assert.equal(finished.length, 2 * N, `step ${step}`);
        assert.equal(new Set(finished.map((e) => (e.type === 'evaluation_finished' ? `${e.jobKey}/${e.sampleIndex}` : ''))).size, 2 * N);
      }
      return { bridge, warnings, events };
    }

    it('atropos: failed responses are asked for again and every group goes out whole; without re-sampling the short groups are dropped and counted', async () => {
      const server = await startAtroposTestServer({ trainer: { batchSize: N } });
      cleanups.push(() => server.close());
      const resampled = await evolve('atropos', server.url, 10);
      assert.equal(await resampled.bridge.flush(new AbortController().signal, 10_000, { pulled: true }), 0);
      assert.ok(
        resampled.events.some((e) => e.type === 'error' && e.message.includes('asking again for')),
        'the loop asked again',
      );
      assert.equal(resampled.bridge.state().droppedGroups, 0);
      assert.equal(server.received.length, 6);
      assert.ok(server.received.every((r) => r.data.tokens.length === N && r.status === 'received' && r.problem === null));
      assert.equal(server.currentStep, 6, 'the trainer took a batch of every group (one group, n sequences, per batch)');

      const plain = await evolve('atropos', server.url, 0);
      assert.equal(await plain.bridge.flush(new AbortController().signal, 10_000), 0);
      const dropped = plain.bridge.state().droppedGroups;
      assert.ok(dropped > 0, 'some group was left short');
      assert.ok(
        plain.warnings.some((w) => w.includes(`${dropped} group(s) dropped so far`)),
        plain.warnings.join('\n'),
      );
      assert.equal(server.received.length, 6 + 6 - dropped);
      assert.ok(
        server.received.every((r) => r.data.tokens.length === N && r.status === 'received'),
        'no short group reached atropos',
      );
    });

    it('slime: only whole groups reach the buffer, re-sampled or not', async () => {
      const server = await startSlimeTestServer({ groupSize: N });
      cleanups.push(() => server.close());
      const resampled = await evolve('slime', server.url, 10);
      assert.equal(await resampled.bridge.flush(new AbortController().signal, 10_000), 0);
      assert.equal(resampled.bridge.state().droppedGroups, 0);
      // A buffer of its own: a run's looks at the buffer take out (and put back) whatever it holds, another run's groups too.
      const plainServer = await startSlimeTestServer({ groupSize: N });
      cleanups.push(() => plainServer.close());
      const plain = await evolve('slime', plainServer.url, 0);
      assert.equal(await plain.bridge.flush(new AbortController().signal, 10_000), 0);
      const dropped = plain.bridge.state().droppedGroups;
      assert.ok(dropped > 0);
      // Closed first: a look in flight puts back what it took before close() returns (the buffer is read destructively).
      await resampled.bridge.close();
      await plain.bridge.close();
      const held = [...server.held.values(), ...plainServer.held.values()];
      assert.equal(held.length, 12 - dropped);
      assert.ok(
        held.every((items) => items.length === N && new Set(items.map((i) => i.uid)).size === N),
        'every group in the buffer is whole',
      );
    });
  });
