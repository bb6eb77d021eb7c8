// The line `thetaevolve evaluate --json` prints (docs/architecture.md "Command line"),
// defined once: the CLI writes it, and the SLURM backend reads it back from
// each job (the node runs that same command), so a result from a compute node
// carries what a local one does: the candidate's kept output (for "open the
// full output") and a valid solution's text (for the dashboard's picture).
import { z } from 'zod';
import { jsonForTerminal } from '../common/displayText';
import type { Task } from '../task/task';
import { EVALUATION_STATUSES, type EvaluationResult, IN_SANDBOX_TRUST_REASON } from '../common/types';

const MetricValueSchema = z.union([z.number().finite(), z.string(), z.boolean(), z.null()]);

export const EvaluateJsonSchema = z
  .object({
    status: z.enum(EVALUATION_STATUSES),
    /** null exactly when status is evaluation_failed: the evaluation could not run, no score. */
    score: z.number().finite().nullable(),
    objective: z.number().finite().nullable(),
    metrics: z.record(z.string(), MetricValueSchema),
    reason: z.string(),
    durationMs: z.number().finite().nonnegative(),
    /** false for another system's task folder (its evaluator runs with the candidate). */
    protected: z.boolean(),
    unprotectedReason: z.string().nullable(),
    /** The candidate's output as the sandbox kept it (each stream cut at thetaevolve.sandbox.outputLimitKb); never trusted. */
    stdout: z.string(),
    stderr: z.string(),
    /** A valid result's solution file, when small enough to keep. */
    solution: z.string().optional(),
  })
  .strict()
  .refine((json) => (json.score === null) === (json.status === 'evaluation_failed'), {
    message: 'score is null exactly when status is evaluation_failed',
    path: ['score'],
  });

export type EvaluateJson = z.infer<typeof EvaluateJsonSchema>;

/** The --json object of a result. */
export function evaluateJsonOf(result: EvaluationResult, task: Pick<Task, 'evaluatorTrust'>): EvaluateJson {
  const isProtected = task.evaluatorTrust === 'separate';
  return {
    status: result.status,
    score: result.score,
    objective: result.objective,
    metrics: result.metrics,
    reason: result.reason,
    durationMs: Math.round(result.durationMs),
    protected: isProtected,
    unprotectedReason: isProtected ? null : IN_SANDBOX_TRUST_REASON,
    stdout: result.stdout,
    stderr: result.stderr,
    ...(result.status !== 'evaluation_failed' && result.solution !== undefined ? { solution: result.solution } : {}),
  };
}

/**
 * One JSON line, through jsonForTerminal: candidate text in stdout/stderr
 * must not drive the terminal `evaluate --json` prints to (the JSON stays exact).
 */
export function evaluateJsonLine(json: EvaluateJson): string {
  return jsonForTerminal(json) + '\n';
}

/** A result read back from an evaluate --json line (a SLURM job's result file). */
export function resultOfEvaluateJson(json: EvaluateJson): EvaluationResult {
  const { protected: _protected, unprotectedReason: _why, status, score, ...rest } = json;
  if (status === 'evaluation_failed' || score === null) return { ...rest, status: 'evaluation_failed', score: null };
  return { ...rest, status, score };
}
