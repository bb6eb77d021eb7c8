// host-event-loop-lag: does running the engine in a worker thread keep the
// extension host's event loop responsive? The main thread plays the host and
// watches its own event-loop delay (perf_hooks.monitorEventLoopDelay) while
// the same workload runs twice, side by side in one run:
//   (a) in-process: EvolutionRun on the main thread, as before the worker;
//   (b) worker: src/worker/engineWorker.ts driven through EngineHost, the main
//       thread only relaying (and validating) events and asking for a
//       'snapshot' per committed step, as the dashboard does.
// Workload: resume a large-preset run database prefilled to 10,000 programs
// and commit a few steps of the offline mutate sampler on the quadratic
// fixture task. Each commit exports and rewrites the whole ~40 MB sql.js
// database (and resuming parses it): that is what stalls a thread.
import { copyFileSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { type IntervalHistogram, monitorEventLoopDelay } from 'node:perf_hooks';
import { codeHash } from '../src/engine/codeHash';
import { parseSettings, type Settings } from '../src/engine/common/config';
import { databaseConfigFromSettings, type NewProgram, ProgramDatabase } from '../src/engine/database/programDatabase';
import type { EngineEvent } from '../src/engine/common/events';
import { EvolutionRun } from '../src/engine/loop';
import { MutateSampler } from '../src/engine/llm/mutateSampler';
import { Rng } from '../src/engine/common/rng';
import { Evaluator, evaluatorOptionsFromSettings } from '../src/engine/sandbox/evaluator';
import { loadTask, type Task } from '../src/engine/task/task';
import { EngineHost } from '../src/worker/engineHost';
import { pythonish } from '../test/unit/fixtures/database/programs';

const ROOT = resolve(__dirname, '..');
const TASK_DIR = join(ROOT, 'test', 'fixtures', 'tasks', 'quadratic');
const WORKER = join(ROOT, 'src', 'worker', 'engineWorker.ts');
// tsx's CommonJS hook: `--import tsx` does not reach a worker's entry file on Node 20.
const WORKER_EXEC_ARGV = ['--require', 'tsx/cjs'];

const STEPS = 5;
const B = 4;
const N = 4;
const K = 4;
/** Prefill in big steps: fewer whole-file rewrites while filling. */
const FILL_PARENTS = 64;
const FILL_CHILDREN = 32;
const RESOLUTION_MS = 10;
const TARGET_P99_MS = 50;

interface Lag {
  p50: number;
  p99: number;
  max: number;
  samples: number;
}

interface VariantResult {
  lag: Lag;
  wallMs: number;
  stepsCommitted: number;
  snapshots: number;
}

function settingsFor(maxSteps: number): Settings {
  return parseSettings({
    sampler: 'mutate',
    batchSize: B,
    samplesPerPrompt: N,
    evaluationConcurrency: K,
    'database.preset': 'large',
    seed: 1,
    maxSteps,
  });
}

function lagOf(h: IntervalHistogram): Lag {
  const ms = (ns: number): number => ns / 1e6;
  return { p50: ms(h.percentile(50)), p99: ms(h.percentile(99)), max: ms(h.max), samples: h.count };
}

/**
 * A valid quadratic program padded with ~3 KB of comment lines (so the file
 * is as big as a real run's), with a ~2 KB response. Comments do not change
 * the code hash, so the x literal is what makes programs distinct; the mutate
 * sampler perturbs it inside the EVOLVE-BLOCK.
 */
function paddedProgram(task: Task, rng: Rng, step: number, parentId: string | null): NewProgram {
  const x = 0.2 + rng.next() * 5.6;
  const words = pythonish(rng, 2900).replace(/\s+/g, ' ');
  const comments = (words.match(/.{1,76}/g) ?? []).map((line) => `# ${line}`).join('\n');
  const code = `${comments}\n${task.initialProgram.replace(/return\s+1\b/, `return ${x.toFixed(6)}`)}`;
  const score = 10 - (x - 3) ** 2;
  return {
    parentId,
    step,
    code,
    codeHash: codeHash(code, task.language),
    score,
    objective: score,
    outcome: 'valid',
    metrics: { x },
    metaInfoId: 'hint',
    response: pythonish(rng, 2000),
    reasoning: null,
    generationMs: 1000 + rng.int(5000),
    evaluationMs: 100 + rng.int(1000),
    promptTokens: 1500 + rng.int(500),
    completionTokens: 200 + rng.int(2000),
  };
}

/** A run database of the large preset filled to its 10,000-program capacity; returns its last step. */
async function prefill(file: string, task: Task, settings: Settings): Promise<number> {
  if (!/return\s+1\b/.test(task.initialProgram))
    throw new Error(`${TASK_DIR}: the initial program no longer returns 1; update paddedProgram`);
  const config = databaseConfigFromSettings(settings);
  const meta = {
    runId: 'bench-prefill',
    task: task.name,
    taskDir: task.dir,
    direction: task.direction,
    language: task.language,
    programPath: task.initialProgramPath,
    startCode: task.initialProgram,
    source: 'bench prefill',
    createdAt: Date.now(),
  };
  const db = await ProgramDatabase.open(file, { config, meta });
  try {
    const rng = Rng.fromSeed(2024);
    await db.addInitial(paddedProgram(task, rng, 0, null));
    while (db.size < config.populationSize) {
      const step = db.lastStep + 1;
      const children = db
        .sampleParents(FILL_PARENTS)
        .flatMap((parent) => Array.from({ length: FILL_CHILDREN }, () => paddedProgram(task, rng, step, parent.id)));
      await db.commitStep({ step, children, stats: null, engineState: null });
    }
    return db.lastStep;
  } finally {
    await db.close();
  }
}

/** (a) The engine on the main thread, as the host would run it without the worker. */
async function inProcess(file: string, task: Task, settings: Settings): Promise<VariantResult> {
  let stepsCommitted = 0;
  let snapshots = 0;
  let fatal: string | null = null;
  const lag = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  lag.enable();
  const started = performance.now();
  const evaluator = new Evaluator(task, evaluatorOptionsFromSettings(settings));
  try {
    const run: EvolutionRun = new EvolutionRun({
      runId: 'bench-in-process',
      task,
      settings,
      dbFile: file,
      source: new MutateSampler({ seed: settings.seed, language: task.language }),
      evaluator,
      onEvent: (event: EngineEvent) => {
        if (event.type === 'step_committed') {
          stepsCommitted++;
          // What the dashboard's snapshot query costs when the database lives on this thread.
          if (run.database) {
            run.database.stateSnapshot();
            snapshots++;
          }
        }
        if (event.type === 'error' && event.fatal) fatal = event.message;
      },
    });
    const result = await run.run();
    if (result.reason !== 'steps_done') throw new Error(`in-process run ended with ${result.reason}${fatal ? `: ${fatal}` : ''}`);
  } finally {
    lag.disable();
    await evaluator.close();
  }
  return { lag: lagOf(lag), wallMs: performance.now() - started, stepsCommitted, snapshots };
}

/** (b) The engine in the worker thread; this thread only relays events and asks for snapshots. */
async function inWorker(file: string, settings: Settings): Promise<VariantResult> {
  const host = new EngineHost({ workerFile: WORKER, execArgv: WORKER_EXEC_ARGV, queryTimeoutMs: 120_000 });
  host.on('log', (level, message) => {
    if (level === 'warn' || level === 'error') console.error(`worker ${level}: ${message}`);
  });
  try {
    // Start the worker (and let tsx compile its modules) before measuring: the extension starts it ahead of any run.
    await host.query({ kind: 'summary', dbFile: join(dirname(file), 'no-such.sqlite') }).catch(() => undefined);
    let stepsCommitted = 0;
    let fatal: string | null = null;
    let finishReason: string | null = null;
    const queries: Promise<unknown>[] = [];
    // EngineHost unrefs its worker and the delay monitor holds no ref: keep the process alive until the run closes.
    const keepAlive = setInterval(() => undefined, 60_000);
    const lag = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
    lag.enable();
    const started = performance.now();
    try {
      await new Promise<void>((resolvePromise, reject) => {
        const offs = [
          host.on('event', (_runId, event) => {
            if (event.type === 'step_committed') {
              stepsCommitted++;
              queries.push(host.query({ kind: 'snapshot', dbFile: file }));
            }
            if (event.type === 'error' && event.fatal) fatal = event.message;
            if (event.type === 'run_finished') finishReason = event.reason;
          }),
          host.on('runClosed', () => done(null)),
          host.on('startFailed', (_runId, message) => done(new Error(`the worker refused the run: ${message}`))),
          host.on('protocolError', (message) => done(new Error(`protocol error: ${message}`))),
          host.on('exit', (code) => done(new Error(`the engine worker exited with code ${code}`))),
        ];
        function done(err: Error | null): void {
          offs.forEach((off) => off());
          if (err) reject(err);
          else resolvePromise();
        }
        host.start({
          runId: 'bench-worker',
          dbFile: file,
          taskDir: TASK_DIR,
          startCode: null,
          startPath: null,
          settings,
          apiKey: null,
          resume: true,
        });
      });
      await Promise.all(queries);
    } finally {
      lag.disable();
      clearInterval(keepAlive);
    }
    if (finishReason !== 'steps_done')
      throw new Error(`worker run ended with ${finishReason ?? 'no run_finished'}${fatal ? `: ${fatal}` : ''}`);
    return { lag: lagOf(lag), wallMs: performance.now() - started, stepsCommitted, snapshots: queries.length };
  } finally {
    await host.dispose();
  }
}

function describeLag(r: VariantResult): string {
  return `p50 ${r.lag.p50.toFixed(1)}, max ${r.lag.max.toFixed(0)} ms; ${r.lag.samples} samples over ${(r.wallMs / 1000).toFixed(1)} s, ${r.stepsCommitted} steps committed, ${r.snapshots} snapshots`;
}

async function main(): Promise<void> {
  const task = await loadTask(TASK_DIR);
  const dir = mkdtempSync(join(tmpdir(), 'thetaevolve-bench-lag-'));
  try {
    const seedFile = join(dir, 'prefilled.sqlite');
    const fillStarted = performance.now();
    const lastStep = await prefill(seedFile, task, settingsFor(0));
    const fillSeconds = (performance.now() - fillStarted) / 1000;
    const megabytes = statSync(seedFile).size / 1e6;
    // Both variants resume an identical copy and stop after the same STEPS steps.
    const settings = settingsFor(lastStep + STEPS);
    const fileA = join(dir, 'in-process.sqlite');
    const fileB = join(dir, 'worker.sqlite');
    copyFileSync(seedFile, fileA);
    copyFileSync(seedFile, fileB);

    const a = await inProcess(fileA, task, settings);
    const b = await inWorker(fileB, settings);

    const workload = `resume 10,000 programs (${megabytes.toFixed(0)} MB, prefilled in ${fillSeconds.toFixed(0)} s) + ${STEPS} steps of B=${B} x n=${N}, K=${K}, mutate sampler; monitorEventLoopDelay resolution ${RESOLUTION_MS} ms, so ~${RESOLUTION_MS} ms is the floor`;
    console.log(
      `bench host-event-loop-lag-in-process: ${a.lag.p99.toFixed(1)} ms p99 (engine on the host thread: ${describeLag(a)}; ${workload})`,
    );
    console.log(
      `bench host-event-loop-lag-worker: ${b.lag.p99.toFixed(1)} ms p99 (engine in the worker, host relays events + 1 snapshot query per step: ${describeLag(b)}; target <= ${TARGET_P99_MS})`,
    );
    console.log(
      `bench host-event-loop-lag-ratio: ${(a.lag.p99 / b.lag.p99).toFixed(1)} x (in-process p99 / worker p99, measured side by side in this run)`,
    );
    const pass = b.lag.p99 <= TARGET_P99_MS;
    console.log(
      `bench host-event-loop-lag-target: ${pass ? 'PASS' : 'FAIL'} (worker p99 ${b.lag.p99.toFixed(1)} ms ${pass ? '<=' : '>'} ${TARGET_P99_MS} ms)`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
