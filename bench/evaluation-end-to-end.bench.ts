// bench evaluation-end-to-end: our half of the side-by-side with OpenEvolve
// on an OpenEvolve-layout circle-packing-like folder (test/fixtures/openevolve/disk_radii,
// its evaluator run in our sandbox): one step of 128 children (B = 8 parents
// x n = 16 responses, K = 16 evaluations at once) against the project's
// OpenAI-compatible test server answering every request after 2 s, then
// after 10 s. Printed per response time: the step's wall time and its
// evaluation phase (first evaluation start to last evaluation end), with
// the run's warm interpreters, and cold (warmInterpreters 'off') beside them
// in the same run. OpenEvolve itself is not run here: it needs the `openai`
// Python package, which Debian does not package (the figures for it:
// 19.0 s at 2 s, 82.3 s at 10 s on a quiet machine).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseSettings } from '../src/engine/common/config';
import type { StepCommittedEvent } from '../src/engine/common/events';
import { EndpointClient, endpointOptionsFromSettings } from '../src/engine/llm/endpointClient';
import { EvolutionRun } from '../src/engine/loop';
import { Evaluator, evaluatorOptionsFromSettings } from '../src/engine/sandbox/evaluator';
import { loadTask, type Task } from '../src/engine/task/task';
import { startTestServer } from '../test/server/openaiTestServer';

const B = 8;
const N = 16;
const K = 16;
const RESPONSE_SECONDS = (process.env.THETAEVOLVE_BENCH_RESPONSE_SECONDS ?? '2,10').split(',').map(Number);

interface Measured {
  wallMs: number;
  evaluationMs: number;
  evaluated: number;
}

async function oneStep(task: Task, responseMs: number, warm: boolean): Promise<Measured> {
  const server = await startTestServer({ latencyMs: responseMs });
  const dir = mkdtempSync(join(tmpdir(), 'thetaevolve-bench-e2e-'));
  try {
    const settings = parseSettings({
      endpoint: server.baseURL,
      batchSize: B,
      samplesPerPrompt: N,
      evaluationConcurrency: K,
      seed: 1,
    });
    const committed: StepCommittedEvent[] = [];
    // As createEvaluationBackend makes a run's local backend: warming starts with the run.
    const evaluator = new Evaluator(task, { ...evaluatorOptionsFromSettings(settings), warmInterpreters: warm ? 'auto' : 'off' });
    const started = performance.now();
    evaluator.warmUp();
    const run = new EvolutionRun({
      runId: 'bench',
      task: { ...task, targetValue: null },
      settings,
      dbFile: join(dir, 'bench.sqlite'),
      source: new EndpointClient(endpointOptionsFromSettings(settings, undefined)),
      evaluator,
      stepsThisInvocation: 1,
      onEvent: (e) => {
        if (e.type === 'step_committed') committed.push(e);
      },
    });
    try {
      await run.run();
    } finally {
      await evaluator.close();
    }
    const wallMs = performance.now() - started;
    const step = committed[0];
    if (!step) throw new Error('the step was not committed');
    const c = step.counts;
    return { wallMs, evaluationMs: step.timings.evaluationMs, evaluated: c.valid + c.invalid_solution + c.no_solution + c.timeout };
  } finally {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const task = await loadTask(resolve(__dirname, '..', 'test', 'fixtures', 'openevolve', 'disk_radii'));
  for (const [index, seconds] of RESPONSE_SECONDS.entries()) {
    // Alternate which goes first, so drift hits both alike.
    const order = index % 2 === 0 ? [true, false] : [false, true];
    const results = new Map<boolean, Measured>();
    for (const warm of order) results.set(warm, await oneStep(task, seconds * 1000, warm));
    const warm = results.get(true) as Measured;
    const cold = results.get(false) as Measured;
    console.log(
      `bench evaluation-end-to-end-${seconds}s: ${(warm.wallMs / 1000).toFixed(1)} s (wall time of one step of ${B * N} children, ${B} x ${N} x 1, K = ${K}, ` +
        `an OpenEvolve-layout folder (test/fixtures/openevolve/disk_radii), test server answering in ${seconds} s; evaluation phase ${(warm.evaluationMs / 1000).toFixed(1)} s, ${warm.evaluated} evaluated; ` +
        `cold interpreters in the same run: wall ${(cold.wallMs / 1000).toFixed(1)} s, evaluation phase ${(cold.evaluationMs / 1000).toFixed(1)} s; ` +
        `OpenEvolve not run here (its openai package is not in Debian); the issue measured it at 19.0 s (2 s) and 82.3 s (10 s))`,
    );
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
