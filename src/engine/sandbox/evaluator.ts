// Sandboxed evaluation of candidate programs (algorithm.md section 4,
// product.md "Sandbox"). The candidate runs isolated in an empty working
// directory and writes its solution file there; afterwards the trusted
// evaluator, outside the sandbox, reads only a copy of that file and
// computes the objective. A candidate never reports its own score.
import { setMaxListeners } from 'node:events';
import { chmod, chown, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import type { Settings } from '../config';
import type { EvaluateOptions, EvaluationBackend } from '../evaluation/backend';
import { combinedScore } from '../scoring';
import { fillTemplate, type Task } from '../task/task';
import { type ScoredEvaluationResult, type ScoredEvaluationStatus, OUTCOME_PENALTY } from '../types';
import {
  baseEnvironment,
  bwrapArguments,
  candidateEnvironment,
  detectIsolation,
  type IsolationInfo,
  type IsolationKind,
  limitedCommand,
  SANDBOX_PROGRAM_DIR,
  SANDBOX_WORK_DIR,
} from './isolation';
import { type ProcessOutcome, runProcess } from './process';
import { readSolutionFile } from './solutionFile';

export interface EvaluatorOptions {
  /** K: evaluations running at once (default 16). */
  concurrency: number;
  /** Address-space limit of the candidate, MiB (default 4096). */
  memoryLimitMb: number;
  /** Candidate stdout and stderr kept, bytes each (default 64 KiB). */
  outputLimitBytes: number;
  /** Overrides task.runtimeLimitSec. */
  runtimeLimitSec?: number;
  /** Processes and threads one candidate may have at once (default 256). */
  processLimit?: number;
  /** 'fallback' skips bubblewrap even where it works (default 'auto'). */
  isolation?: 'auto' | 'fallback';
}

export const DEFAULT_EVALUATOR_OPTIONS: Readonly<EvaluatorOptions> = {
  concurrency: 16,
  memoryLimitMb: 4096,
  outputLimitBytes: 64 * 1024,
};

const DEFAULT_PROCESS_LIMIT = 256;
/** Files a candidate may write (RLIMIT_FSIZE) at least; the solution cap decides what is read. */
const MIN_FILE_SIZE_LIMIT = 256 * 1024 * 1024;
const EVALUATOR_OUTPUT_LIMIT = 1024 * 1024;
const TAIL_CHARS = 600;

/** The sandbox options from the run settings. */
export function evaluatorOptionsFromSettings(
  settings: Pick<Settings, 'evaluationConcurrency' | 'sandbox.memoryLimitMb' | 'sandbox.outputLimitKb'>,
  runtimeLimitSec?: number,
): EvaluatorOptions {
  return {
    concurrency: settings.evaluationConcurrency,
    memoryLimitMb: settings['sandbox.memoryLimitMb'],
    outputLimitBytes: settings['sandbox.outputLimitKb'] * 1024,
    ...(runtimeLimitSec !== undefined ? { runtimeLimitSec } : {}),
  };
}

const MetricValueSchema = z.union([z.number().finite(), z.string(), z.boolean(), z.null()]);

/** The one JSON line a task's evaluator prints. */
export const EvaluatorReplySchema = z.object({
  valid: z.boolean(),
  objective: z.number().finite().nullable().optional(),
  metrics: z.record(z.string(), MetricValueSchema).default({}),
  reason: z.string().default(''),
  /** The file is not a solution at all (e.g. not JSON): no_solution rather than invalid_solution. */
  unreadable: z.boolean().optional(),
});
export type EvaluatorReply = z.infer<typeof EvaluatorReplySchema>;

type Metrics = ScoredEvaluationResult['metrics'];

function penaltyResult(status: Exclude<ScoredEvaluationStatus, 'ok'>, reason: string, extra: Partial<ScoredEvaluationResult> = {}): ScoredEvaluationResult {
  return {
    status,
    score: OUTCOME_PENALTY[status],
    objective: null,
    metrics: {},
    reason,
    durationMs: 0,
    stdout: '',
    stderr: '',
    ...extra,
  };
}

function tail(text: string): string {
  const trimmed = text.trim();
  if (trimmed.length <= TAIL_CHARS) return trimmed;
  return `...${trimmed.slice(trimmed.length - TAIL_CHARS)}`;
}

function withOutput(reason: string, stderr: string): string {
  const last = tail(stderr);
  return last ? `${reason}; stderr ends with:\n${last}` : reason;
}

/** Parse the evaluator's reply: the last non-empty line of its stdout. */
export function parseEvaluatorReply(stdout: string): { ok: true; reply: EvaluatorReply } | { ok: false; problem: string } {
  const lines = stdout.split('\n').map((l) => l.trim()).filter((l) => l !== '');
  const last = lines[lines.length - 1];
  if (last === undefined) return { ok: false, problem: 'the evaluator printed nothing' };
  let raw: unknown;
  try {
    raw = JSON.parse(last);
  } catch {
    return { ok: false, problem: `the evaluator's last line is not JSON: ${last.slice(0, 200)}` };
  }
  const parsed = EvaluatorReplySchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return { ok: false, problem: `the evaluator's reply is malformed at ${issue?.path.join('.') || '(top level)'}: ${issue?.message ?? 'invalid'}` };
  }
  return { ok: true, reply: parsed.data };
}

/**
 * Score one solution file with the task's trusted evaluator (no candidate
 * run): safe read (no symlinks, size cap), a private copy, the evaluator
 * under its own time limit, its reply validated. Never throws for a bad
 * solution; durationMs covers this step only.
 */
export async function scoreSolutionFile(task: Task, solutionPath: string, options: { signal?: AbortSignal } = {}): Promise<ScoredEvaluationResult> {
  const started = performance.now();
  const read = await readSolutionFile(solutionPath, task.solutionFile, task.solutionMaxBytes);
  if (!read.ok) return penaltyResult('no_solution', read.reason, { durationMs: performance.now() - started });
  const trustedDir = await mkdtemp(join(tmpdir(), 'thetaevolve-score-'));
  try {
    const result = await scoreSolutionBytes(task, read.bytes, trustedDir, options.signal);
    return { ...result, durationMs: performance.now() - started };
  } finally {
    await removeTree(trustedDir);
  }
}

async function scoreSolutionBytes(task: Task, bytes: Buffer, trustedDir: string, signal: AbortSignal | undefined): Promise<ScoredEvaluationResult> {
  const copy = join(trustedDir, task.solutionFile);
  await writeFile(copy, bytes, { mode: 0o600 });
  const command = task.evaluatorCommand.map((arg) => fillTemplate(arg, { ...task.variables, solution: copy, taskDir: task.dir }));
  const run = await runProcess({
    file: command[0] as string,
    args: command.slice(1),
    cwd: trustedDir,
    env: baseEnvironment(trustedDir),
    timeoutMs: task.evaluatorTimeLimitSec * 1000,
    outputLimitBytes: EVALUATOR_OUTPUT_LIMIT,
    ...(signal ? { signal } : {}),
  });
  if (run.aborted) return cancelledResult();
  const failed = { metrics: { evaluator_failed: true } satisfies Metrics };
  if (run.spawnError) return penaltyResult('invalid_solution', `the evaluator could not start: ${run.spawnError}`, failed);
  if (run.timedOut) return penaltyResult('invalid_solution', `the evaluator ran past its ${task.evaluatorTimeLimitSec} s limit on this solution`, failed);
  if (run.exitCode !== 0) {
    const how = run.exitSignal ? `was killed by ${run.exitSignal}` : `exited with code ${String(run.exitCode)}`;
    return penaltyResult('invalid_solution', withOutput(`the evaluator ${how}`, run.stderr), failed);
  }
  const parsed = parseEvaluatorReply(run.stdout);
  if (!parsed.ok) return penaltyResult('invalid_solution', withOutput(parsed.problem, run.stderr), failed);
  const reply = parsed.reply;
  const objective = reply.objective ?? null;
  if (reply.unreadable) return penaltyResult('no_solution', reply.reason || `${task.solutionFile} is not readable`, { metrics: reply.metrics });
  if (!reply.valid) {
    return penaltyResult('invalid_solution', reply.reason || 'the solution failed the validity check', { metrics: reply.metrics, objective });
  }
  if (objective === null || !(objective > 0)) {
    return penaltyResult('invalid_solution', `the objective must be a positive number (the evaluator gave ${String(objective)})`, { metrics: reply.metrics });
  }
  const score = combinedScore(objective, task.direction);
  if (!Number.isFinite(score)) return penaltyResult('invalid_solution', `the objective ${objective} gives no finite score`, { metrics: reply.metrics });
  return { status: 'ok', score, objective, metrics: reply.metrics, reason: '', durationMs: 0, stdout: '', stderr: '' };
}

/** The result of an evaluation cancelled before it finished (every backend gives the same). */
export function cancelledResult(): ScoredEvaluationResult {
  return penaltyResult('no_solution', 'the evaluation was cancelled', { metrics: { cancelled: true } });
}

/** Remove a folder a candidate wrote into, even where it took its own permissions away. */
async function removeTree(path: string): Promise<void> {
  try {
    await rm(path, { recursive: true, force: true, maxRetries: 2 });
    return;
  } catch {
    // Retry below after restoring permissions.
  }
  const restore = async (dir: string): Promise<void> => {
    await chmod(dir, 0o700).catch(() => undefined);
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const entry of entries) if (entry.isDirectory() && !entry.isSymbolicLink()) await restore(join(dir, entry.name));
  };
  await restore(path);
  await rm(path, { recursive: true, force: true }).catch(() => undefined);
}

/** A slot queue for the K concurrent evaluations. */
class Slots {
  private running = 0;
  private readonly waiting: { grant: () => void }[] = [];

  constructor(private readonly size: number) {}

  /** Resolves true when a slot is held, false when `signal` aborted first. */
  acquire(signal: AbortSignal): Promise<boolean> {
    if (signal.aborted) return Promise.resolve(false);
    if (this.running < this.size) {
      this.running++;
      return Promise.resolve(true);
    }
    return new Promise<boolean>((resolvePromise) => {
      const entry = {
        grant: (): void => {
          signal.removeEventListener('abort', onAbort);
          resolvePromise(true);
        },
      };
      const onAbort = (): void => {
        const index = this.waiting.indexOf(entry);
        if (index !== -1) this.waiting.splice(index, 1);
        resolvePromise(false);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(entry);
    });
  }

  release(): void {
    const next = this.waiting.shift();
    if (next) next.grant();
    else this.running--;
  }
}

/** The `local` evaluation backend: K sandboxed evaluations at once on this machine. */
export class Evaluator implements EvaluationBackend {
  readonly kind = 'local';
  readonly isolation: { kind: IsolationKind; warning: string | null };
  private readonly info: IsolationInfo;
  private readonly options: Required<Omit<EvaluatorOptions, 'runtimeLimitSec'>> & { runtimeLimitSec: number };
  private readonly slots: Slots;
  private readonly closing = new AbortController();
  private readonly inFlight = new Set<Promise<ScoredEvaluationResult>>();

  constructor(
    readonly task: Task,
    options: EvaluatorOptions,
  ) {
    const check = (name: string, value: number, min: number): void => {
      if (!Number.isFinite(value) || value < min) throw new RangeError(`Evaluator option ${name} must be a number >= ${min} (got ${value})`);
    };
    check('concurrency', options.concurrency, 1);
    check('memoryLimitMb', options.memoryLimitMb, 16);
    check('outputLimitBytes', options.outputLimitBytes, 1);
    if (options.runtimeLimitSec !== undefined) check('runtimeLimitSec', options.runtimeLimitSec, 0.001);
    this.options = {
      concurrency: Math.floor(options.concurrency),
      memoryLimitMb: options.memoryLimitMb,
      outputLimitBytes: Math.floor(options.outputLimitBytes),
      runtimeLimitSec: options.runtimeLimitSec ?? task.runtimeLimitSec,
      processLimit: options.processLimit ?? DEFAULT_PROCESS_LIMIT,
      isolation: options.isolation ?? 'auto',
    };
    this.info = detectIsolation(this.options.isolation);
    this.isolation = { kind: this.info.kind, warning: this.info.warning };
    this.slots = new Slots(this.options.concurrency);
    // Every running evaluation listens on it: K of them, not a leak.
    setMaxListeners(0, this.closing.signal);
  }

  /** Queues behind the concurrency limit; never throws for candidate failures. A cancelled evaluation resolves as no_solution with metrics.cancelled. */
  evaluate(code: string, options: EvaluateOptions = {}): Promise<ScoredEvaluationResult> {
    const promise = this.evaluateNow(code, options);
    this.inFlight.add(promise);
    void promise.finally(() => this.inFlight.delete(promise));
    return promise;
  }

  get description(): string {
    return `local sandbox (${this.info.kind === 'bwrap' ? 'bubblewrap' : 'fallback: no bubblewrap'}), ${this.options.concurrency} at once`;
  }

  /** Cancel queued and running evaluations and wait until every one has cleaned up. */
  async close(): Promise<void> {
    this.closing.abort();
    await Promise.allSettled([...this.inFlight]);
  }

  private async evaluateNow(code: string, options: { signal?: AbortSignal; onStart?: () => void }): Promise<ScoredEvaluationResult> {
    const started = performance.now();
    const elapsed = (result: ScoredEvaluationResult): ScoredEvaluationResult => ({ ...result, durationMs: performance.now() - started });
    if (this.closing.signal.aborted) return elapsed(penaltyResult('no_solution', 'the evaluator is closed', { metrics: { cancelled: true } }));
    if (code.length > this.task.maxCodeLength) {
      return elapsed(penaltyResult('no_solution', `the program is ${code.length} characters, over the task's limit of ${this.task.maxCodeLength}`));
    }
    const signal = options.signal ? AbortSignal.any([options.signal, this.closing.signal]) : this.closing.signal;
    if (!(await this.slots.acquire(signal))) return elapsed(cancelledResult());
    try {
      options.onStart?.();
      return elapsed(await this.runAndScore(code, signal));
    } catch (err) {
      // Our own failure (disk full, temp folder gone): still a result, not a throw.
      return elapsed(penaltyResult('no_solution', `the sandbox failed: ${err instanceof Error ? err.message : String(err)}`, { metrics: { sandbox_failed: true } }));
    } finally {
      this.slots.release();
    }
  }

  private async runAndScore(code: string, signal: AbortSignal): Promise<ScoredEvaluationResult> {
    const root = await mkdtemp(join(tmpdir(), 'thetaevolve-eval-'));
    try {
      const programDir = join(root, 'program');
      const workDir = join(root, 'work');
      const trustedDir = join(root, 'trusted');
      await mkdir(programDir);
      await mkdir(workDir);
      await mkdir(trustedDir, { mode: 0o700 });
      const programName = `program.${this.task.language}`;
      await writeFile(join(programDir, programName), code, { mode: 0o444 });
      const runAs = this.info.runAs;
      if (runAs) {
        // The unprivileged candidate user may pass through and read the
        // program, write only its working directory, and never see trusted/.
        await chmod(root, 0o711);
        await chmod(programDir, 0o755);
        await chown(workDir, runAs.uid, runAs.gid);
      }

      const run = await this.runCandidate(programDir, programName, workDir, signal);
      const output = { stdout: run.stdout, stderr: run.stderr };
      const runtime = { runtime_seconds: Math.round(run.durationMs) / 1000 };
      if (run.aborted) return { ...cancelledResult(), ...output };
      if (run.spawnError) return penaltyResult('no_solution', `the sandbox could not start the program: ${run.spawnError}`, output);
      if (run.timedOut) {
        return penaltyResult('timeout', `the program ran past its ${this.options.runtimeLimitSec} s limit and was killed`, { ...output, metrics: runtime });
      }
      if (run.exitCode !== 0) {
        return penaltyResult('no_solution', withOutput(this.describeExit(run), run.stderr), { ...output, metrics: runtime });
      }
      const read = await readSolutionFile(join(workDir, this.task.solutionFile), this.task.solutionFile, this.task.solutionMaxBytes);
      if (!read.ok) return penaltyResult('no_solution', read.reason, { ...output, metrics: runtime });
      const scored = await scoreSolutionBytes(this.task, read.bytes, trustedDir, signal);
      return { ...scored, ...output, metrics: { ...scored.metrics, ...runtime } };
    } finally {
      await removeTree(root);
    }
  }

  private describeExit(run: ProcessOutcome): string {
    if (run.exitSignal === 'SIGXFSZ') return 'the program was killed for writing a file over the size limit';
    if (run.exitSignal) return `the program was killed by ${run.exitSignal}`;
    if (this.info.kind === 'bwrap' && run.exitCode === 1 && run.stderr.startsWith('bwrap:')) return 'the sandbox failed to start the program';
    return `the program exited with code ${String(run.exitCode)}`;
  }

  private runCandidate(programDir: string, programName: string, workDir: string, signal: AbortSignal): Promise<ProcessOutcome> {
    const bwrap = this.info.kind === 'bwrap' && this.info.bwrapPath !== null;
    const programPath = bwrap ? `${SANDBOX_PROGRAM_DIR}/${programName}` : join(programDir, programName);
    const workPath = bwrap ? SANDBOX_WORK_DIR : workDir;
    const command = this.task.candidateCommand.map((arg) => fillTemplate(arg, { ...this.task.variables, program: programPath, workDir: workPath }));
    const runAs = this.info.runAs;
    // Inside bwrap the kernel counts processes per user namespace, so the
    // limit is per evaluation. In the fallback it counts every process of
    // the user: only applied for our own unprivileged user, shared by K.
    const processLimit = !this.info.processLimit ? null : bwrap ? this.options.processLimit : this.options.processLimit * this.options.concurrency;
    const limited = limitedCommand(
      command,
      {
        memoryLimitMb: this.options.memoryLimitMb,
        processLimit,
        fileSizeLimitBytes: Math.max(MIN_FILE_SIZE_LIMIT, 2 * this.task.solutionMaxBytes),
      },
      this.info.prlimitPath,
    );
    const common = {
      timeoutMs: this.options.runtimeLimitSec * 1000,
      outputLimitBytes: this.options.outputLimitBytes,
      signal,
      ...(runAs ? { uid: runAs.uid, gid: runAs.gid } : {}),
    };
    if (bwrap) {
      const env = candidateEnvironment('/tmp', '/tmp');
      const args = [...bwrapArguments({ programDir, workDir, env, tmpfsSizeOption: this.info.tmpfsSizeOption }), '--info-fd', '3', '--', ...limited];
      return runProcess({ file: this.info.bwrapPath as string, args, cwd: workDir, env: {}, bwrapInfoFd: true, ...common });
    }
    return runProcess({ file: limited[0] as string, args: limited.slice(1), cwd: workDir, env: candidateEnvironment(workDir, workDir), ...common });
  }
}
