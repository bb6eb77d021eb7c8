// bench models-four-step-time: what several models cost the loop per step
// (docs/algorithm.md section 12, "Several models and cost"). The same steps
// with the same seed, once with one model (thetaevolve.model) and once with
// four (thetaevolve.models, equal weights: each prompt's draw, a client per
// model, per-model statistics and spend in every commit), against the
// project's OpenAI-compatible test server serving all four names with
// `usage`, after a short fixed latency; evaluations take a fixed short time
// in K slots, so the step is mostly the engine's own work. Interleaved
// (one, four, one, four, ...) in this one process; ratio = four-model /
// one-model trimmed mean step time (the slowest and fastest tenth of each
// dropped: on a shared machine a few steps wait for the CPU far longer than
// the rest, and step times are whole milliseconds of about 30, so a median
// moves in steps of 3%). Target: no regression (<= 1.05).
import { join } from 'node:path';
import { parseSettings } from '../src/engine/common/config';
import type { ResponseSource } from '../src/engine/common/types';
import { EndpointClient, endpointOptionsFromSettings } from '../src/engine/llm/endpointClient';
import { ensembleMembers, ModelEnsemble } from '../src/engine/llm/models/modelEnsemble';
import type { Task } from '../src/engine/task/task';
import { runWithFixedEvaluations, withLoopBench } from './support/loopBench';

const B = 8;
const N = 8;
const K = 16;
const EVAL_MS = 2;
const LATENCY_MS = 5;
const STEPS = 6;
const ROUNDS = 8;
const MODELS = ['m1', 'm2', 'm3', 'm4'];

/** Wall time of each step (step_started to step_committed). */
async function stepTimesMs(task: Task, baseURL: string, models: number, dbFile: string): Promise<number[]> {
  const settings = parseSettings({
    endpoint: baseURL,
    model: MODELS[0],
    models:
      models > 1 ? MODELS.slice(0, models).map((name) => ({ name, weight: 1, pricePerMillionInput: 0.5, pricePerMillionOutput: 2 })) : [],
    batchSize: B,
    samplesPerPrompt: N,
    evaluationConcurrency: K,
    useNParameter: true,
    lazyPenalty: false,
    seed: 1,
  });
  const source: ResponseSource =
    models > 1
      ? new ModelEnsemble(
          ensembleMembers(settings, () => undefined, {}),
          MODELS[0] as string,
        )
      : new EndpointClient(endpointOptionsFromSettings(settings, undefined));
  if (!(source instanceof EndpointClient || source instanceof ModelEnsemble)) throw new Error('an LLM source');
  await source.check(new AbortController().signal);
  const events = await runWithFixedEvaluations({
    runId: `bench-models-${models}`,
    task,
    settings,
    dbFile,
    source,
    evaluationMs: EVAL_MS,
    steps: STEPS,
  });
  const started = new Map<number, number>();
  const times: number[] = [];
  for (const e of events) {
    if (e.type === 'step_started') started.set(e.step, e.time);
    if (e.type === 'step_committed') times.push(e.time - (started.get(e.step) ?? e.time));
  }
  return times;
}

/** The mean of `xs` without its slowest and fastest tenth. */
function trimmedMean(xs: readonly number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  const cut = Math.floor(sorted.length / 10);
  const kept = sorted.slice(cut, sorted.length - cut);
  return kept.reduce((a, x) => a + x, 0) / kept.length;
}

function median(xs: readonly number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

async function main(): Promise<void> {
  await withLoopBench(
    { models: MODELS, latencyMs: LATENCY_MS, latencyJitterMs: 0 },
    'thetaevolve-bench-models-',
    async ({ task, baseURL, dir }) => {
      // A warm-up of each (module loading, JIT) that is not counted.
      await stepTimesMs(task, baseURL, 1, join(dir, 'warm-1.sqlite'));
      await stepTimesMs(task, baseURL, 4, join(dir, 'warm-4.sqlite'));
      const one: number[] = [];
      const four: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        one.push(...(await stepTimesMs(task, baseURL, 1, join(dir, `one-${round}.sqlite`))));
        four.push(...(await stepTimesMs(task, baseURL, 4, join(dir, `four-${round}.sqlite`))));
      }
      const ratio = trimmedMean(four) / trimmedMean(one);
      console.log(
        `bench models-four-step-time: ratio ${ratio.toFixed(3)} (four-model / one-model step time, means without the slowest and fastest tenth, ` +
          `${ROUNDS} interleaved rounds of ${STEPS} steps each, B=${B} n=${N} K=${K}, ${LATENCY_MS} ms per response, ${EVAL_MS} ms evaluations, seed 1; ` +
          `one model ${trimmedMean(one).toFixed(1)} ms (median ${median(one).toFixed(1)}), four models ${trimmedMean(four).toFixed(1)} ms ` +
          `(median ${median(four).toFixed(1)}); median ratio ${(median(four) / median(one)).toFixed(3)}; target <= 1.05)`,
      );
    },
  );
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
