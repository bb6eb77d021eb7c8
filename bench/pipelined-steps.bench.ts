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
import { join } from 'node:path';
import { parseSettings } from '../src/engine/common/config';
import { evaluatedCount } from '../src/engine/common/types';
import { EndpointClient, endpointOptionsFromSettings } from '../src/engine/llm/endpointClient';
import type { Task } from '../src/engine/task/task';
import { runWithFixedEvaluations, withLoopBench } from './support/loopBench';

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
  const events = await runWithFixedEvaluations({
    runId: `bench-${pipelineDepth}`,
    task,
    settings,
    dbFile,
    source,
    evaluationMs: EVAL_MS,
    steps: STEPS,
  });
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
    measured.evaluated += evaluatedCount(e.counts);
  }
  return measured;
}

const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

function breakdown(name: string, m: Measured[]): string {
  const total = (key: keyof Measured): number => m.reduce((a, x) => a + x[key], 0) / m.length;
  return `${name} ${seconds(total('wallMs'))}: generation wait ${seconds(total('generationMs'))}, evaluation ${seconds(total('evaluationMs'))}, commit ${seconds(total('commitMs'))}, ${Math.round(total('evaluated'))} evaluated`;
}

async function main(): Promise<void> {
  await withLoopBench({ latencyMs: LATENCY_MS, latencyJitterMs: 0 }, 'thetaevolve-bench-pipelined-', async ({ task, baseURL, dir }) => {
    const sync: Measured[] = [];
    const pipelined: Measured[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      sync.push(await runSteps(task, baseURL, 0, join(dir, `sync-${round}.sqlite`)));
      pipelined.push(await runSteps(task, baseURL, 1, join(dir, `pipelined-${round}.sqlite`)));
    }
    const wall = (m: Measured[]): number => m.reduce((a, x) => a + x.wallMs, 0);
    const ratio = wall(sync) / wall(pipelined);
    console.log(
      `bench pipelined-steps: ${ratio.toFixed(2)} x (synchronous / pipelined wall of ${STEPS} steps, mean of ${ROUNDS} interleaved rounds, B=${B} n=${N} K=${K}, ` +
        `${LATENCY_MS} ms per response, ${EVAL_MS} ms evaluations, seed 1; ${breakdown('synchronous', sync)}; ${breakdown('pipelined', pipelined)}; target >= 1.6)`,
    );
  });
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
