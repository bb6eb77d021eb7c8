// bench evaluation-end-to-end: our half of the side-by-side with OpenEvolve
// on an OpenEvolve-layout circle-packing-like folder (test/fixtures/openevolve/disk_radii,
// its evaluator run in our sandbox): one step of 128 children (B = 8 parents
// x n = 16 responses, K = 16 evaluations at once) against the project's
// OpenAI-compatible test server answering every request after 2 s, then
// after 10 s. Printed per response time: the step's median wall time and
// evaluation phase (first evaluation start to last evaluation end) with the
// run's warm interpreters, and cold (warmInterpreters 'off') beside them,
// THETAEVOLVE_BENCH_ROUNDS (2) steps each way interleaved in the same run;
// warm/cold (target <= 1: warming a run's interpreters must not make its
// steps slower), and the CPU time of this process and the children it
// reaped. OpenEvolve itself is not run here: it needs the `openai`
// Python package, which Debian does not package (the figures for it:
// 19.0 s at 2 s, 82.3 s at 10 s on a quiet machine).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseSettings } from '../src/engine/common/config';
import { percentile } from '../src/engine/common/stats';
import type { StepCommittedEvent } from '../src/engine/common/events';
import { evaluatedCount } from '../src/engine/common/types';
import { EndpointClient, endpointOptionsFromSettings } from '../src/engine/llm/endpointClient';
import { EvolutionRun } from '../src/engine/loop';
import { Evaluator, evaluatorOptionsFromSettings } from '../src/engine/sandbox/evaluator';
import { loadTask, type Task } from '../src/engine/task/task';
import { startTestServer } from '../test/server/openaiTestServer';

const B = 8;
const N = 16;
const K = 16;
const RESPONSE_SECONDS = (process.env.THETAEVOLVE_BENCH_RESPONSE_SECONDS ?? '2,10').split(',').map(Number);
/** Steps measured each way per response time, warm and cold interleaved (ABBA...). */
const ROUNDS = Number(process.env.THETAEVOLVE_BENCH_ROUNDS ?? 2);

interface Measured {
  wallMs: number;
  /** CPU time of this process and the processes it started and reaped, over the step. */
  cpuMs: number;
  evaluationMs: number;
  evaluated: number;
}

/** CPU time so far of this process and of its reaped children (/proc/self/stat utime, stime, cutime, cstime). */
function cpuMs(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 14 to 17 of proc(5), counted from the state (field 3) here; in clock ticks, 100 a second on Linux.
  return fields.slice(11, 15).reduce((sum, f) => sum + Number(f), 0) * 10;
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
    const cpuBefore = cpuMs();
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
    const cpu = cpuMs() - cpuBefore;
    const step = committed[0];
    if (!step) throw new Error('the step was not committed');
    const c = step.counts;
    return {
      wallMs,
      cpuMs: cpu,
      evaluationMs: step.timings.evaluationMs,
      evaluated: evaluatedCount(c),
    };
  } finally {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const task = await loadTask(resolve(__dirname, '..', 'test', 'fixtures', 'openevolve', 'disk_radii'));
  for (const [index, seconds] of RESPONSE_SECONDS.entries()) {
    const warm: Measured[] = [];
    const cold: Measured[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      // Alternate which goes first, so drift hits both alike.
      const order = (index + round) % 2 === 0 ? [true, false] : [false, true];
      for (const isWarm of order) (isWarm ? warm : cold).push(await oneStep(task, seconds * 1000, isWarm));
    }
    const wall = (xs: Measured[]): number =>
      percentile(
        xs.map((m) => m.wallMs),
        50,
      );
    const phase = (xs: Measured[]): number =>
      percentile(
        xs.map((m) => m.evaluationMs),
        50,
      );
    const s = (ms: number): string => (ms / 1000).toFixed(1);
    const each = (xs: Measured[]): string => xs.map((m) => s(m.wallMs)).join(', ');
    const cpu = (xs: Measured[]): number =>
      percentile(
        xs.map((m) => m.cpuMs),
        50,
      );
    const ratio = wall(warm) / wall(cold);
    console.log(
      `bench evaluation-end-to-end-${seconds}s: ${s(wall(warm))} s (median wall time of one step of ${B * N} children, ${B} x ${N} x 1, K = ${K}, ` +
        `an OpenEvolve-layout folder (test/fixtures/openevolve/disk_radii), test server answering in ${seconds} s, warm interpreters as runs use them; ` +
        `evaluation phase ${s(phase(warm))} s, ${warm.map((m) => m.evaluated).join('/')} evaluated; ` +
        `cold interpreters interleaved in the same run: wall ${s(wall(cold))} s, evaluation phase ${s(phase(cold))} s; ` +
        `warm/cold ${ratio.toFixed(2)} (target <= 1.00${ratio <= 1 ? '' : ', MISSED'}), rounds warm ${each(warm)} s, cold ${each(cold)} s; ` +
        `CPU time of the step (ours and our processes') warm ${s(cpu(warm))} s, cold ${s(cpu(cold))} s; ` +
        `load average ${loadavg()[0]?.toFixed(1)}; ` +
        `OpenEvolve not run here (its openai package is not in Debian); the issue measured it at 19.0 s (2 s) and 82.3 s (10 s))`,
    );
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
