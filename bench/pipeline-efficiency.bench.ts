// bench pipeline-efficiency: does the loop overlap generation and evaluation?
// The project's OpenAI-compatible test server answers over real HTTP with a
// latency spread over [0, L) (as a continuously batching vLLM does for
// answers of different lengths); every child's evaluation takes a fixed D ms
// in one of K slots. Ideal step time = the longer of the response phase and
// the evaluation phase at K slots (plus one evaluation, the last arrival's);
// efficiency = ideal / measured, B = 32, n = 16 as in the paper. The response
// phase is measured side by side in the same run: the same client and server
// answering the same number of requests with no evaluation at all.
import { join } from 'node:path';
import { parseSettings } from '../src/engine/common/config';
import type { StepCommittedEvent } from '../src/engine/common/events';
import { evaluatedCount } from '../src/engine/common/types';
import { EndpointClient, endpointOptionsFromSettings } from '../src/engine/llm/endpointClient';
import { runWithFixedEvaluations, withLoopBench } from './support/loopBench';

const B = 32;
const N = 16;
const K = 16;
const LATENCY_SPREAD_MS = 4000;
const EVAL_MS = 100;
const STEPS = 3;

async function main(): Promise<void> {
  await withLoopBench(
    { latencyMs: 0, latencyJitterMs: LATENCY_SPREAD_MS },
    'thetaevolve-bench-pipeline-',
    async ({ task, baseURL, dir }) => {
      const settings = parseSettings({
        endpoint: baseURL,
        batchSize: B,
        samplesPerPrompt: N,
        evaluationConcurrency: K,
        lazyPenalty: false,
        seed: 1,
      });
      // The response phase alone, measured side by side.
      const client = new EndpointClient(endpointOptionsFromSettings(settings, undefined));
      await client.check();
      const responsePhases: number[] = [];
      for (let round = 0; round < STEPS; round++) {
        const jobs = Array.from({ length: B }, (_, i) => ({
          key: `r${round}-${i}`,
          messages: [{ role: 'user' as const, content: `Improve:\n\`\`\`python\n${task.initialProgram}\`\`\`` }],
          n: N,
          seed: round * 1000 + i,
          parentId: 'initial',
          parentCode: task.initialProgram,
        }));
        const started = Date.now();
        await client.generate(jobs, new AbortController().signal, () => {});
        responsePhases.push(Date.now() - started);
      }
      const responsePhase = [...responsePhases].sort((a, b) => a - b)[Math.floor(STEPS / 2)] as number;
      const events = await runWithFixedEvaluations({
        runId: 'bench',
        task,
        settings,
        dbFile: join(dir, 'bench.sqlite'),
        source: new EndpointClient(endpointOptionsFromSettings(settings, undefined)),
        evaluationMs: EVAL_MS,
        steps: STEPS,
      });
      const committed = events.filter((e): e is StepCommittedEvent => e.type === 'step_committed');
      const evaluatedPerStep = committed.map((c) => evaluatedCount(c.counts));
      const ratios = committed.map((c, i) => {
        const evalPhase = ((evaluatedPerStep[i] as number) / K) * EVAL_MS;
        const ideal = Math.max(responsePhase, evalPhase) + EVAL_MS;
        return ideal / c.timings.totalMs;
      });
      const sorted = [...ratios].sort((a, b) => a - b);
      const median = sorted[Math.floor(sorted.length / 2)] as number;
      const measured = committed
        .map((c) => `${c.timings.totalMs} (gen ${c.timings.generationMs}, eval ${c.timings.evaluationMs})`)
        .join(', ');
      console.log(
        `bench pipeline-efficiency: ${median.toFixed(3)} ideal/measured (median of ${committed.length} steps, B=${B} n=${N} K=${K}, responses spread over ${LATENCY_SPREAD_MS} ms (response phase alone ${responsePhase} ms), ${EVAL_MS} ms evaluations, ~${evaluatedPerStep[0]} evaluated/step, steps took ${measured} ms; target >= 0.9)`,
      );
    },
  );
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
