// The machine's calibration on every bench line (figures that reproduce:
// docs/guide.md "Benchmarks"): preloaded by scripts/run-benchmarks.mjs into
// every bench process (`node --import tsx --import ./bench/support/calibration.ts`),
// it measures, in that same run, a fixed workload in Debian's Python — a
// 5-million-step loop and `import numpy`, each the fastest of three fresh
// processes, wall and CPU time — and appends it, with the load average at
// start and at the line, to every line the bench prints that starts with
// `bench `. Two runs' figures compare only as far as these lines agree.
import { spawnSync } from 'node:child_process';
import { availableParallelism, loadavg } from 'node:os';
import { DEFAULT_PYTHON } from '../../src/engine/python/interpreter';

const TRIES = 3;
const LOOP =
  'import time\nt, c = time.perf_counter(), time.process_time()\nfor _ in range(5_000_000): pass\nprint(time.perf_counter() - t, time.process_time() - c)';
const NUMPY =
  'import time\nt, c = time.perf_counter(), time.process_time()\nimport numpy\nprint(time.perf_counter() - t, time.process_time() - c)';

/** Wall and CPU seconds of `script` in a fresh Python (-I -S: no site, as the same in every environment), the fastest of TRIES; null when it cannot run. */
function fastest(script: string): { wall: number; cpu: number } | null {
  let best: { wall: number; cpu: number } | null = null;
  for (let i = 0; i < TRIES; i++) {
    const run = spawnSync(DEFAULT_PYTHON, ['-I', '-c', script], { encoding: 'utf8', timeout: 60_000 });
    const [wall, cpu] = (run.stdout ?? '').trim().split(/\s+/).map(Number);
    if (run.status !== 0 || !Number.isFinite(wall) || !Number.isFinite(cpu)) return null;
    if (best === null || (wall as number) < best.wall) best = { wall: wall as number, cpu: cpu as number };
  }
  return best;
}

const load = (): string =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
const ms = (m: { wall: number; cpu: number } | null): string =>
  m ? `${(m.wall * 1000).toFixed(0)} ms (CPU ${(m.cpu * 1000).toFixed(0)} ms)` : 'could not run';

const loadAtStart = load();
const loop = fastest(LOOP);
const numpy = fastest(NUMPY);

/** The calibration as a bench line's suffix. */
export function calibrationText(): string {
  return (
    `[machine: ${DEFAULT_PYTHON} 5M-step loop ${ms(loop)}, import numpy ${ms(numpy)}, fastest of ${TRIES}; ` +
    `${availableParallelism()} cores; load average ${loadAtStart} at start, ${load()} now]`
  );
}

const print = console.log.bind(console);
console.log = (...args: unknown[]): void => {
  const [first, ...rest] = args;
  if (typeof first === 'string' && first.startsWith('bench ')) print(`${first} ${calibrationText()}`, ...rest);
  else print(...args);
};
