// bench pipelined-steps: how much faster a run of several steps goes when
// the next step generates while the one before it is evaluated
// (settings.pipelineDepth 1) than in the paper's synchronous loop (0). The
// project's OpenAI-compatible test server answers over real HTTP after a
// fixed latency set to the step's evaluation time (generation ~ evaluation,
// where overlapping gains most: ideally 2 x for many steps, 12/7 for 6);
// every child's evaluation takes a fixed D ms in one of K slots (what the
// sandbox costs is measured by bench sandbox-overhead, not here). Both
// configurations run the same steps with the same seed, interleaved, in this
// one process; ratio = synchronous wall / pipelined wall. Also printed: where
// each spends its time (generation wait, evaluation, commit; overlapping,
// their sum exceeds the wall).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseSettings } from '../src/engine/common/config';
import type { EngineEvent } from '../src/engine/common/events';
import { EndpointClient, endpointOptionsFromSettings } from '../src/engine/llm/endpointClient';
import { EvolutionRun } from '../src/engine/loop';
import { loadTask, type Task } from '../src/engine/task/task';
import { startTestServer } from '../test/server/openaiTestServer';
import { FixedDurationEvaluator } from './support/fixedDurationEvaluator';

const B = 8;
const N = 16;
const K = 16;
const EVAL_MS = 100;
const STEPS = 6;
const ROUNDS = 2;
/** About the evaluation phase of a step: B x n children, K at a time. */
const LATENCY_MS = Math.round(((B * N) / K) * EVAL_MS);

interface Measured {
  wallMs: number;
  /** Summed over the steps: from each step's start to its last response. */
  generationMs: number;
  /** From each step's first evaluation start to its last end. */
  evaluationMs: number;
  /** From each step's last outcome to its step_committed (statistics, the database transaction, the file). */
  commitMs: number;
  evaluated: number;
}

async function runSteps(task: Task, baseURL: string, pipelineDepth: number, dbFile: string): Promise<Measured> {
  const settings = parseSettings({
    endpoint: baseURL,
    batchSize: B,
    samplesPerPrompt: N,
    evaluationConcurrency: K,
    // One request of n per prompt: the n responses of a prompt arrive together, as from one batched server call.
    useNParameter: true,
    lazyPenalty: false,
    seed: 1,
    pipelineDepth,
  });
  const source = new EndpointClient(endpointOptionsFromSettings(settings, undefined));
  await source.check();
  const events: EngineEvent[] = [];
  const run = new EvolutionRun({
    runId: `bench-${pipelineDepth}`,
    task: { ...task, targetValue: null },
    settings,
    dbFile,
    source,
    evaluator: new FixedDurationEvaluator(K, EVAL_MS),
    stepsThisInvocation: STEPS,
    onEvent: (e) => events.push(e),
  });
  const result = await run.run();
  if (result.reason !== 'steps_done') throw new Error(`the ${pipelineDepth} run ended ${result.reason}`);
  const first = events.find((e) => e.type === 'step_started');
  const last = events.filter((e) => e.type === 'step_committed').at(-1);
  const measured: Measured = {
    wallMs: (last?.time ?? 0) - (first?.time ?? 0),
    generationMs: 0,
    evaluationMs: 0,
    commitMs: 0,
    evaluated: 0,
  };
  for (const e of events) {
    if (e.type !== 'step_committed') continue;
    measured.generationMs += e.timings.generationMs;
    measured.evaluationMs += e.timings.evaluationMs;
    const outcomes = events.filter((o) => o.type === 'evaluation_finished' && o.step === e.step);
    measured.commitMs += e.time - Math.max(...outcomes.map((o) => o.time));
    measured.evaluated += e.counts.valid + e.counts.invalid_solution + e.counts.no_solution + e.counts.timeout;
  }
  return measured;
}

const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

function breakdown(name: string, m: Measured[]): string {
  const total = (key: keyof Measured): number => m.reduce((a, x) => a + x[key], 0) / m.length;
  return `${name} ${seconds(total('wallMs'))}: generation wait ${seconds(total('generationMs'))}, evaluation ${seconds(total('evaluationMs'))}, commit ${seconds(total('commitMs'))}, ${Math.round(total('evaluated'))} evaluated`;
}

async function main(): Promise<void> {
  const task = await loadTask(resolve(__dirname, '..', 'test', 'fixtures', 'tasks', 'quadratic'));
  const server = await startTestServer({ latencyMs: LATENCY_MS, latencyJitterMs: 0 });
  const dir = mkdtempSync(join(tmpdir(), 'thetaevolve-bench-pipelined-'));
  try {
    const sync: Measured[] = [];
    const pipelined: Measured[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      sync.push(await runSteps(task, server.baseURL, 0, join(dir, `sync-${round}.sqlite`)));
      pipelined.push(await runSteps(task, server.baseURL, 1, join(dir, `pipelined-${round}.sqlite`)));
    }
    const wall = (m: Measured[]): number => m.reduce((a, x) => a + x.wallMs, 0);
    const ratio = wall(sync) / wall(pipelined);
    console.log(
      `bench pipelined-steps: ${ratio.toFixed(2)} x (synchronous / pipelined wall of ${STEPS} steps, mean of ${ROUNDS} interleaved rounds, B=${B} n=${N} K=${K}, ` +
        `${LATENCY_MS} ms per response, ${EVAL_MS} ms evaluations, seed 1; ${breakdown('synchronous', sync)}; ${breakdown('pipelined', pipelined)}; target >= 1.6)`,
    );
  } finally {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
