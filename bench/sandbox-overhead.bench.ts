// Time the sandbox adds to one evaluation: the same trivial program and the
// same trusted evaluator run (a) as bare subprocesses and (b) through
// Evaluator.evaluate (bwrap as an unprivileged user with the seccomp filter,
// tmpfs scratch and copy-out, resource limits and the memory watch, the
// cgroup where delegated, the trusted evaluator's folder),
// interleaved, medians compared. Target: <= 50 ms added.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Evaluator } from '../src/engine/sandbox/evaluator';
import { candidateEnvironment } from '../src/engine/sandbox/isolation';
import { runProcess } from '../src/engine/sandbox/process';
import { percentile } from '../src/engine/common/stats';
import { loadTask } from '../src/engine/task/task';

const ROUNDS = 30;
const WARMUP = 3;
const PROGRAM = 'with open("solution.json", "w") as f:\n    f.write(\'{"value": 1}\')\n';

async function main(): Promise<void> {
  const task = await loadTask(join(__dirname, '../test/fixtures/hostile'));
  const evaluator = new Evaluator(task, { concurrency: 1, memoryLimitMb: 4096, outputLimitBytes: 64 * 1024 });
  const dir = await mkdtemp(join(tmpdir(), 'te-bench-'));
  const programPath = join(dir, 'program.py');
  await writeFile(programPath, PROGRAM);
  const env = candidateEnvironment(dir, dir);
  const bare = async (): Promise<number> => {
    const started = performance.now();
    const run = await runProcess({
      file: '/usr/bin/python3',
      args: [programPath],
      cwd: dir,
      env,
      timeoutMs: 10000,
      outputLimitBytes: 65536,
    });
    const check = await runProcess({
      file: '/usr/bin/python3',
      args: [join(task.dir, 'evaluate.py'), join(dir, 'solution.json')],
      cwd: dir,
      env,
      timeoutMs: 10000,
      outputLimitBytes: 65536,
    });
    if (run.exitCode !== 0 || !check.stdout.includes('"valid": true')) throw new Error(`bare run failed: ${run.stderr}${check.stderr}`);
    return performance.now() - started;
  };
  const sandboxed = async (): Promise<number> => {
    const started = performance.now();
    const result = await evaluator.evaluate(PROGRAM);
    if (result.status !== 'ok') throw new Error(`sandboxed run failed: ${result.reason}`);
    return performance.now() - started;
  };
  const bareTimes: number[] = [];
  const sandboxTimes: number[] = [];
  try {
    for (let i = 0; i < WARMUP + ROUNDS; i++) {
      // Alternate which goes first so drift hits both alike.
      let bareMs: number;
      let sandboxMs: number;
      if (i % 2 === 0) {
        bareMs = await bare();
        sandboxMs = await sandboxed();
      } else {
        sandboxMs = await sandboxed();
        bareMs = await bare();
      }
      if (i >= WARMUP) {
        bareTimes.push(bareMs);
        sandboxTimes.push(sandboxMs);
      }
    }
  } finally {
    await evaluator.close();
    await rm(dir, { recursive: true, force: true });
  }
  const median = (xs: number[]): number => percentile(xs, 50);
  const added = median(sandboxTimes) - median(bareTimes);
  console.log(
    `bench sandbox-overhead: ${added.toFixed(1)} ms (median added per evaluation by the ${evaluator.isolation.summary} sandbox; bare ${median(bareTimes).toFixed(1)} ms vs sandboxed ${median(sandboxTimes).toFixed(1)} ms, program + evaluator, ${ROUNDS} interleaved rounds; target <= 50 ms)`,
  );
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
