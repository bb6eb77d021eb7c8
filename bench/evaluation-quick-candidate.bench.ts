// bench evaluation-quick-candidate: what the sandbox adds to a quick
// candidate (one that imports numpy and is done in a few milliseconds), in
// our task format and in another system's folder (OpenEvolve's circle
// packing with artifacts, its evaluator run inside the sandbox). Side by
// side in one run, interleaved:
//   - warm bare: the candidate's own work, the candidate's and the
//     evaluator's scripts run in one Python already started with numpy
//     imported (bench/support/warm_runner.py): no process start at all;
//   - sandboxed: Evaluator.evaluate with its warm interpreters (warmPool.ts),
//     each evaluation finding the pool warm, as it does when candidates come
//     at the pace of LLM responses;
//   - cold sandboxed (warmInterpreters 'off') and cold bare (fresh Pythons),
//     for context.
// Overhead = median sandboxed - median warm bare. Target: <= 30 ms in both.
// Then where a child's CPU goes (bench evaluation-quick-candidate-cpu): the
// CPU time of one child with the warming of the interpreters it used
// (bench/support/cpuMeter.ts counts the sandboxes too) against the
// candidate's own work, and each part measured alone, cold: the sandbox
// around /bin/true (cgroup, setpriv, bwrap's namespaces and seccomp, the
// copy-out, prlimit, this process's side), an interpreter started in it,
// numpy imported in it, the trusted evaluator on the solution. Target: at
// most 30 ms over the candidate's own work.
import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { percentile } from '../src/engine/common/stats';
import { Evaluator } from '../src/engine/sandbox/evaluator';
import { scoreSolutionFile } from '../src/engine/sandbox/trustedEvaluator';
import { type CpuMeter, startCpuMeter } from './support/cpuMeter';
import { candidateEnvironment } from '../src/engine/sandbox/isolation';
import { runProcess } from '../src/engine/sandbox/process';
import { fillTemplate, loadTask, type Task } from '../src/engine/task/task';
import { DEFAULT_PYTHON } from '../src/engine/python/interpreter';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';

const ROUNDS = Number(process.env.THETAEVOLVE_BENCH_ROUNDS ?? 15);
const WARMUP = 2;
const TARGET_MS = 30;
/** Rounds of each part of the CPU breakdown. */
const CPU_ROUNDS = Number(process.env.THETAEVOLVE_BENCH_CPU_ROUNDS ?? 5);
const meter: CpuMeter = startCpuMeter();
const OUR_PROGRAM = [
  'import json',
  'import numpy as np',
  'value = float(np.sqrt(np.arange(1, 101)).sum())',
  'with open("solution.json", "w") as f:',
  '    json.dump({"value": value}, f)',
  '',
].join('\n');

/** One Python with numpy imported that runs scripts in itself and answers how long they took. */
class WarmBare {
  private readonly child = spawn('/usr/bin/python3', [join(__dirname, 'support', 'warm_runner.py')], {
    stdio: ['pipe', 'pipe', 'inherit'],
    env: candidateEnvironment(tmpdir(), tmpdir()),
  });
  private readonly lines = createInterface({ input: this.child.stdout })[Symbol.asyncIterator]();

  async run(code: string, programName: string, scripts: string[][]): Promise<number> {
    this.child.stdin.write(`${JSON.stringify({ code, programName, scripts })}\n`);
    const next = await this.lines.next();
    if (next.done) throw new Error('the warm runner stopped');
    return (JSON.parse(next.value as string) as { ms: number }).ms;
  }

  close(): void {
    this.child.stdin.end();
  }
}

/** The candidate's and the evaluator's commands as scripts on the host ({program}, {work}: filled by the runner). */
function hostScripts(task: Task): { cold: string[][]; warm: string[][] } {
  const dirs = task.sandboxReadOnlyDirs;
  const solution = `{work}/${task.solutionFile}`;
  const candidate = task.candidateCommand.map((a) =>
    fillTemplate(a, { ...task.variables, ...dirs, python: DEFAULT_PYTHON, program: '{program}', workDir: '{work}' }),
  );
  const evaluator = task.evaluatorCommand.map((a) =>
    fillTemplate(a, { ...task.variables, python: DEFAULT_PYTHON, solution, taskDir: task.dir }),
  );
  return { cold: [candidate, evaluator], warm: [candidate.slice(1), evaluator.slice(1)] };
}

async function coldBare(task: Task, code: string, programName: string): Promise<number> {
  const work = await mkdtemp(join(tmpdir(), 'te-bench-cold-'));
  try {
    await writeFile(join(work, programName), code);
    const started = performance.now();
    for (const command of hostScripts(task).cold) {
      const filled = command.map((a) => a.replace('{program}', join(work, programName)).replace('{work}', work));
      const run = await runProcess({
        file: filled[0] as string,
        args: filled.slice(1),
        cwd: work,
        env: candidateEnvironment(work, work),
        timeoutMs: 60000,
        outputLimitBytes: 65536,
      });
      if (run.exitCode !== 0) throw new Error(`cold bare run failed: ${run.stderr}`);
    }
    return performance.now() - started;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** Mean CPU milliseconds of `run` over CPU_ROUNDS rounds (after one not counted). */
async function cpuOf(run: () => Promise<unknown>): Promise<number> {
  await run();
  const before = meter.ms();
  for (let i = 0; i < CPU_ROUNDS; i++) await run();
  return (meter.ms() - before) / CPU_ROUNDS;
}

/** Where a child's CPU goes: one child with its interpreters' warming, the candidate's own work, and each part alone. */
async function cpuBreakdown(label: string, task: Task, code: string, bare: WarmBare): Promise<boolean> {
  const programName = `program.${task.language}`;
  const options = { concurrency: 1, memoryLimitMb: 4096, outputLimitBytes: 64 * 1024 };
  const warm = new Evaluator(task, { ...options, warmInterpreters: 'auto' });
  // The same sandbox and limits around another command, cold: the candidate's part only (no solution, no trusted step).
  const around = (command: string[]): Evaluator => new Evaluator({ ...task, candidateCommand: command }, options);
  const nothing = around(['/bin/true']);
  const python = around(['{python}', '-c', 'pass']);
  const numpy = around(['{python}', '-c', 'import numpy']);
  const dir = await mkdtemp(join(tmpdir(), 'te-bench-cpu-'));
  try {
    const check = await warm.evaluate(code);
    if (check.status !== 'ok' || check.solution === undefined) throw new Error(`${label}: the candidate did not score: ${check.reason}`);
    const solution = join(dir, task.solutionFile);
    await writeFile(solution, check.solution);
    const scripts = hostScripts(task).warm;
    const nodeBefore = process.cpuUsage();
    const child = await cpuOf(async () => {
      await warm.warmed();
      await warm.evaluate(code);
      // The interpreters it used, replaced: what the next child finds warm.
      await warm.warmed();
    });
    const nodeUsage = process.cpuUsage(nodeBefore);
    const node = (nodeUsage.user + nodeUsage.system) / 1000 / (CPU_ROUNDS + 1);
    const own = await cpuOf(() => bare.run(code, programName, scripts));
    const sandbox = await cpuOf(() => nothing.evaluate(code));
    const start = (await cpuOf(() => python.evaluate(code))) - sandbox;
    const imports = (await cpuOf(() => numpy.evaluate(code))) - sandbox - start;
    const trusted = await cpuOf(() => scoreSolutionFile(task, solution));
    const over = child - own;
    const ok = over <= TARGET_MS;
    const f = (ms: number): string => ms.toFixed(0);
    console.log(
      `bench evaluation-quick-candidate-cpu: ${f(over)} ms (${label}: CPU per child over the candidate's own work; one child ${f(child)} ms with the warming of ` +
        `the interpreters it used, the candidate's own work ${f(own)} ms in a warm Python; the parts alone, cold: sandbox around /bin/true ` +
        `(cgroup, setpriv, bwrap namespaces and seccomp, copy-out, prlimit, this process's side) ${f(sandbox)} ms, an interpreter started in it ` +
        `${f(start)} ms, import numpy in it ${f(imports)} ms, the trusted evaluator on the solution ${f(trusted)} ms; this process itself ${f(node)} ms a child; ` +
        `means of ${CPU_ROUNDS}; ${meter.what}; target <= ${TARGET_MS} ms${ok ? '' : ', MISSED'})`,
    );
    return ok;
  } finally {
    for (const e of [warm, nothing, python, numpy]) await e.close();
    await rm(dir, { recursive: true, force: true });
  }
}

async function measure(label: string, task: Task, code: string): Promise<boolean> {
  const programName = `program.${task.language}`;
  const options = { concurrency: 1, memoryLimitMb: 4096, outputLimitBytes: 64 * 1024 };
  const warm = new Evaluator(task, { ...options, warmInterpreters: 'auto' });
  const cold = new Evaluator(task, { ...options, warmInterpreters: 'off' });
  const bare = new WarmBare();
  const times = { warmBare: [] as number[], sandboxed: [] as number[], cold: [] as number[], coldBare: [] as number[] };
  try {
    const scripts = hostScripts(task).warm;
    const check = await warm.evaluate(code);
    if (check.status !== 'ok') throw new Error(`${label}: the candidate did not score: ${check.reason}`);
    for (let i = 0; i < WARMUP + ROUNDS; i++) {
      const keep = i >= WARMUP;
      const bareMs = await bare.run(code, programName, scripts);
      // The warm pool refills in the background after each evaluation: measured once it is warm, as candidates coming at the pace of responses find it.
      await warm.warmed();
      let started = performance.now();
      const result = await warm.evaluate(code);
      const sandboxedMs = performance.now() - started;
      if (result.status !== 'ok') throw new Error(`${label}: sandboxed run failed: ${result.reason}`);
      started = performance.now();
      const coldResult = await cold.evaluate(code);
      const coldMs = performance.now() - started;
      if (coldResult.status !== 'ok') throw new Error(`${label}: cold sandboxed run failed: ${coldResult.reason}`);
      const coldBareMs = await coldBare(task, code, programName);
      if (keep) {
        times.warmBare.push(bareMs);
        times.sandboxed.push(sandboxedMs);
        times.cold.push(coldMs);
        times.coldBare.push(coldBareMs);
      }
    }
  } finally {
    bare.close();
    await warm.close();
    await cold.close();
  }
  const median = (xs: number[]): number => percentile(xs, 50);
  const overhead = median(times.sandboxed) - median(times.warmBare);
  const ok = overhead <= TARGET_MS;
  console.log(
    `bench evaluation-quick-candidate: ${overhead.toFixed(1)} ms (${label}: median sandboxed ${median(times.sandboxed).toFixed(1)} ms with warm interpreters ` +
      `vs the candidate's own work ${median(times.warmBare).toFixed(1)} ms bare in a warm Python, same run, ${ROUNDS} interleaved rounds; ` +
      `cold: sandboxed ${median(times.cold).toFixed(1)} ms, bare ${median(times.coldBare).toFixed(1)} ms; ` +
      `${warm.isolation.summary}; target <= ${TARGET_MS} ms${ok ? '' : ', MISSED'})`,
  );
  return ok;
}

async function main(): Promise<void> {
  const ours = await loadTask(resolve(__dirname, '..', 'test', 'fixtures', 'hostile'));
  const foreignDir = resolve(__dirname, '..', 'test', 'fixtures', 'openevolve', 'disk_radii');
  const foreign = await loadTask(foreignDir);
  const foreignLabel = 'an OpenEvolve-layout folder (test/fixtures/openevolve/disk_radii)';
  const results = [await measure('our format', ours, OUR_PROGRAM), await measure(foreignLabel, foreign, foreign.initialProgram)];
  const bare = new WarmBare();
  try {
    results.push(await cpuBreakdown('our format', ours, OUR_PROGRAM, bare));
    results.push(await cpuBreakdown(foreignLabel, foreign, foreign.initialProgram, bare));
  } finally {
    bare.close();
    meter.close();
  }
  if (results.includes(false)) process.exitCode = 1;
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
