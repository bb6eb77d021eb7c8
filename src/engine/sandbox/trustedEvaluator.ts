// The trusted step (docs/algorithm.md section 4): a task's own evaluator,
// outside the sandbox, on a private copy of the solution file only, under
// limits of its own (memory, CPU time, its time limit), and its one-line
// reply validated. Also the result shapes every backend gives.
import { FEEDBACK_METRIC, feedbackText } from '../common/feedback';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { reasonWithOutput } from '../common/evaluationReason';
import { scoreOfObjective } from '../common/scoring';
import {
  type EvaluationResult,
  type FailedEvaluationResult,
  type ScoredEvaluationResult,
  type ScoredEvaluationStatus,
  OUTCOME_PENALTY,
} from '../common/types';
import { zodIssueText } from '../common/errors';
import { fillTemplate, type Task } from '../task/task';
import { DEFAULT_PYTHON } from '../python/interpreter';
import { scoreThroughCascade } from '../operators/cascade';
import { removeTree } from './cleanup';
import { baseEnvironment, findExecutable, limitedCommand } from './isolation';
import { limitMetrics } from './metricsLimit';
import { type ProcessOutcome, type ProcessSpec, runProcess } from './process';
import { readSolutionFile } from './solutionFile';

/** Files the trusted evaluator may write (RLIMIT_FSIZE). */
const EVALUATOR_FILE_SIZE_LIMIT = 256 * 1024 * 1024;
const EVALUATOR_OUTPUT_LIMIT = 1024 * 1024;
/** How often the memory of the evaluator's processes is summed. */
const MEMORY_WATCH_INTERVAL_MS = 50;
const TAIL_CHARS = 600;
/** A valid solution file up to this size travels with its result (the best one is kept beside the database for the dashboard). */
const SOLUTION_KEPT_BYTES = 1024 * 1024;
/** The trusted evaluator's memory limit when no run settings give one (the default of sandbox.memoryLimitMb). */
export const DEFAULT_MEMORY_LIMIT_MB = 4096;

const MetricValueSchema = z.union([z.number().finite(), z.string(), z.boolean(), z.null()]);

/** The one JSON line a task's evaluator prints. */
export const EvaluatorReplySchema = z.object({
  valid: z.boolean(),
  objective: z.number().finite().nullable().optional(),
  metrics: z.record(z.string(), MetricValueSchema).default({}),
  reason: z.string().default(''),
  /** The file is not a solution at all (e.g. not JSON): no_solution rather than invalid_solution. */
  unreadable: z.boolean().optional(),
  /** Feedback for the next prompts (another system's artifacts or text_feedback); a valid reply's reason is feedback too. */
  feedback: z.string().optional(),
});
export type EvaluatorReply = z.infer<typeof EvaluatorReplySchema>;

type Metrics = ScoredEvaluationResult['metrics'];

/**
 * Our machinery failed, not the candidate: the sandbox could not be set up or
 * start the program, the task's trusted evaluator crashed, timed out or gave
 * no reply. No score: never ranked, never a reward (docs/algorithm.md section 4).
 */
export function infrastructureFailure(
  reason: string,
  extra: Partial<Omit<FailedEvaluationResult, 'status' | 'score'>> = {},
): FailedEvaluationResult {
  return { status: 'evaluation_failed', score: null, ...resultWithoutRun(reason), ...extra };
}

/** What every result has before a run tells more: no objective, metrics or output. */
function resultWithoutRun(reason: string): Omit<FailedEvaluationResult, 'status' | 'score'> {
  return { objective: null, metrics: {}, reason, durationMs: 0, stdout: '', stderr: '' };
}

export function penaltyResult(
  status: Exclude<ScoredEvaluationStatus, 'ok'>,
  reason: string,
  extra: Partial<ScoredEvaluationResult> = {},
): ScoredEvaluationResult {
  return { status, score: OUTCOME_PENALTY[status], ...resultWithoutRun(reason), ...extra };
}

function tail(text: string): string {
  const trimmed = text.trim();
  if (trimmed.length <= TAIL_CHARS) return trimmed;
  return `...${trimmed.slice(trimmed.length - TAIL_CHARS)}`;
}

export function withOutput(reason: string, stderr: string): string {
  return reasonWithOutput(reason, tail(stderr));
}

/** Parse the evaluator's reply: the last non-empty line of its stdout. */
export function parseEvaluatorReply(stdout: string): { ok: true; reply: EvaluatorReply } | { ok: false; problem: string } {
  const lines = stdout
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
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
    return { ok: false, problem: `the evaluator's reply is malformed at ${zodIssueText(parsed.error, '(top level)')}` };
  }
  // Stored with every program: within limits, whatever the evaluator (or a candidate beside it) returned.
  return { ok: true, reply: { ...parsed.data, metrics: limitMetrics(parsed.data.metrics) } };
}

/**
 * Score one solution file with the task's trusted evaluator (no candidate
 * run): safe read (no symlinks, size cap), a private copy, the evaluator
 * under its own time limit, its reply validated. Never throws for a bad
 * solution; durationMs covers this step only.
 */
export async function scoreSolutionFile(
  task: Task,
  solutionPath: string,
  options: { signal?: AbortSignal; memoryLimitMb?: number; python?: string } = {},
): Promise<EvaluationResult> {
  const started = performance.now();
  const read = await readSolutionFile(solutionPath, task.solutionFile, task.solutionMaxBytes);
  if (!read.ok) return penaltyResult('no_solution', read.reason, { durationMs: performance.now() - started });
  const trustedDir = await mkdtemp(join(tmpdir(), 'thetaevolve-score-'));
  try {
    const limits = { memoryLimitMb: options.memoryLimitMb ?? DEFAULT_MEMORY_LIMIT_MB, python: options.python ?? DEFAULT_PYTHON };
    const result = await scoreSolutionBytes(task, read.bytes, trustedDir, limits, options.signal);
    return { ...result, durationMs: performance.now() - started };
  } finally {
    await removeTree(trustedDir);
  }
}

let prlimitPath: string | null | undefined;

/**
 * The trusted evaluator's command under its limits: the candidate's memory
 * limit (RLIMIT_AS per process; the sum is watched by runProcess) and
 * RLIMIT_CPU of its time limit (SIGXCPU at it, SIGKILL a second later).
 */
function evaluatorCommandUnderLimits(command: readonly string[], task: Task, memoryLimitMb: number): string[] {
  if (process.platform === 'win32') return [...command];
  prlimitPath ??= findExecutable('prlimit');
  return limitedCommand(
    command,
    {
      memoryLimitMb,
      processLimit: null,
      fileSizeLimitBytes: EVALUATOR_FILE_SIZE_LIMIT,
      cpuSeconds: Math.ceil(task.evaluatorTimeLimitSec),
    },
    prlimitPath,
  );
}

export async function scoreSolutionBytes(
  task: Task,
  bytes: Buffer,
  trustedDir: string,
  limits: { memoryLimitMb: number; python: string },
  signal: AbortSignal | undefined,
): Promise<EvaluationResult> {
  const copy = trustedSolutionPath(task, trustedDir);
  await writeFile(copy, bytes, { mode: 0o600 });
  return scoreThroughCascade(task.evaluatorStages ?? [], task.evaluatorCommand, async (evaluatorCommand) => {
    const run = await runProcess(
      trustedEvaluatorSpec(task, trustedDir, limits, signal, trustedEvaluatorTemplate(task, trustedDir, limits.python, evaluatorCommand)),
    );
    return scoreEvaluatorRun(task, bytes, run, limits);
  });
}

/** Where the trusted evaluator reads its private copy of the solution. */
export function trustedSolutionPath(task: Task, trustedDir: string): string {
  return join(trustedDir, task.solutionFile);
}

/** An evaluator command (the task's, or a stage of its cascade) with its variables, the solution being the copy in trustedDir. */
export function trustedEvaluatorTemplate(
  task: Task,
  trustedDir: string,
  python: string,
  evaluatorCommand: readonly string[] = task.evaluatorCommand,
): string[] {
  const copy = trustedSolutionPath(task, trustedDir);
  return evaluatorCommand.map((arg) => fillTemplate(arg, { ...task.variables, python, solution: copy, taskDir: task.dir }));
}

/** The trusted evaluator's process (command: the filled template, or what replaces it, e.g. a warm launcher's) under its limits. */
export function trustedEvaluatorSpec(
  task: Task,
  trustedDir: string,
  limits: { memoryLimitMb: number; python: string },
  signal: AbortSignal | undefined,
  command: readonly string[] = trustedEvaluatorTemplate(task, trustedDir, limits.python),
): ProcessSpec {
  const limited = evaluatorCommandUnderLimits(command, task, limits.memoryLimitMb);
  return {
    file: limited[0] as string,
    args: limited.slice(1),
    cwd: trustedDir,
    env: baseEnvironment(trustedDir),
    timeoutMs: task.evaluatorTimeLimitSec * 1000,
    outputLimitBytes: EVALUATOR_OUTPUT_LIMIT,
    memoryWatch: { limitBytes: limits.memoryLimitMb * 1024 * 1024, intervalMs: MEMORY_WATCH_INTERVAL_MS },
    ...(signal ? { signal } : {}),
  };
}

/** The result of the trusted evaluator's run on `bytes` (the solution it read). */
export function scoreEvaluatorRun(task: Task, bytes: Buffer, run: ProcessOutcome, limits: { memoryLimitMb: number }): EvaluationResult {
  if (run.aborted) return cancelledResult();
  // The solution (within the task's size cap) made the trusted evaluator blow its own limits: the candidate's doing, penalised.
  const overLimit = evaluatorLimitExceeded(run, limits.memoryLimitMb, task.evaluatorTimeLimitSec);
  if (overLimit) return penaltyResult('invalid_solution', overLimit, { metrics: { evaluator_limit: true } });
  // The task's own evaluator failing is the task's problem, not the candidate's: no score.
  const failed = { metrics: { evaluator_failed: true } satisfies Metrics };
  if (run.spawnError) return infrastructureFailure(`the evaluator could not start: ${run.spawnError}`, failed);
  if (run.timedOut)
    return infrastructureFailure(`the evaluator ran past its ${task.evaluatorTimeLimitSec} s limit on this solution`, failed);
  if (run.exitCode !== 0) {
    const how = run.exitSignal ? `was killed by ${run.exitSignal}` : `exited with code ${String(run.exitCode)}`;
    return infrastructureFailure(withOutput(`the evaluator ${how}`, run.stderr), failed);
  }
  const parsed = parseEvaluatorReply(run.stdout);
  if (!parsed.ok) return infrastructureFailure(withOutput(parsed.problem, run.stderr), failed);
  const reply = parsed.reply;
  const objective = reply.objective ?? null;
  // Kept with the program (under the metric "feedback") for its children's prompts: common/feedback.ts.
  // A reason on an invalid result stays its reason (shown as such); on a valid one it is the evaluator's note.
  const feedback = feedbackText(reply.feedback ?? (reply.valid ? reply.reason : ''));
  if (feedback !== '') reply.metrics = { ...reply.metrics, [FEEDBACK_METRIC]: feedback };
  if (reply.unreadable)
    return penaltyResult('no_solution', reply.reason || `${task.solutionFile} is not readable`, { metrics: reply.metrics });
  if (!reply.valid) {
    return penaltyResult('invalid_solution', reply.reason || 'the solution failed the validity check', {
      metrics: reply.metrics,
      objective,
    });
  }
  if (objective === null || (task.scoreRule === 'direction' && !(objective > 0))) {
    return penaltyResult('invalid_solution', `the objective must be a positive number (the evaluator gave ${String(objective)})`, {
      metrics: reply.metrics,
    });
  }
  const score = scoreOfObjective(objective, task);
  if (!Number.isFinite(score))
    return penaltyResult('invalid_solution', `the objective ${objective} gives no finite score`, { metrics: reply.metrics });
  const solution = bytes.length <= SOLUTION_KEPT_BYTES ? bytes.toString('utf8') : undefined;
  return {
    status: 'ok',
    score,
    objective,
    metrics: reply.metrics,
    reason: '',
    durationMs: 0,
    stdout: '',
    stderr: '',
    ...(solution !== undefined ? { solution } : {}),
  };
}

/**
 * Why the trusted evaluator was stopped by its own memory or CPU limit on
 * this solution, or null. Its wall-clock limit is not among them: a loaded
 * host can make it run late, so that stays our failure, never scored.
 */
function evaluatorLimitExceeded(run: ProcessOutcome, memoryLimitMb: number, cpuSeconds: number): string | null {
  // Under RLIMIT_AS Python raises MemoryError (numpy's _ArrayMemoryError is one) and exits 1.
  const outOfMemory = run.memoryExceeded || (run.exitCode !== 0 && /\bMemoryError\b/.test(tail(run.stderr)));
  if (outOfMemory) return `the solution made the trusted evaluator exceed its memory limit (${memoryLimitMb} MiB)`;
  if (run.exitSignal === 'SIGXCPU') return `the solution made the trusted evaluator exceed its CPU time limit (${Math.ceil(cpuSeconds)} s)`;
  return null;
}

/** The result of an evaluation cancelled before it finished (every backend gives the same). */
export function cancelledResult(): ScoredEvaluationResult {
  return penaltyResult('no_solution', 'the evaluation was cancelled', { metrics: { cancelled: true } });
}
