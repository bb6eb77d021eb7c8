// The engine's shared vocabulary: outcomes, penalties, evaluation results.
// Every module of src/engine speaks in these terms; nothing here imports vscode.

/**
 * How one sample (one model response) ended. Exactly one per sample.
 * Scores per docs/algorithm.md section 4; `request_failed` (the endpoint never
 * answered) and `evaluation_failed` (our evaluation machinery, not the
 * candidate, failed) have no score, never enter the program database and
 * never reach the trainer.
 */
export const OUTCOMES = [
  'no_diff', // no SEARCH/REPLACE block in the answer: -0.4
  'no_change', // child equals parent up to comments: -0.3
  'duplicate', // lazy penalty: child equals some program already in the database: -0.3
  'not_novel', // novelty rejection (operators/novelty): child too similar to a program of its island: -0.3, not evaluated
  'no_solution', // crash, non-zero exit, no/unreadable solution file, over-long child: -0.2
  'timeout', // candidate ran past its runtime limit: -0.2
  'invalid_solution', // solution fails the evaluator's validity check: -0.1
  'valid', // the evaluator's combined score (> 0)
  'request_failed', // endpoint still failing after retries: no score
  'evaluation_failed', // the evaluation infrastructure failed (a SLURM job lost past its resubmits): no score
] as const;
export type Outcome = (typeof OUTCOMES)[number];

export const OUTCOME_PENALTY: Readonly<Record<Exclude<Outcome, 'valid' | 'request_failed' | 'evaluation_failed'>, number>> = {
  no_diff: -0.4,
  no_change: -0.3,
  duplicate: -0.3,
  not_novel: -0.3,
  no_solution: -0.2,
  timeout: -0.2,
  invalid_solution: -0.1,
};

export type OutcomeCounts = Record<Outcome, number>;

export function emptyOutcomeCounts(): OutcomeCounts {
  return Object.fromEntries(OUTCOMES.map((o) => [o, 0])) as OutcomeCounts;
}

/** Outcomes of a candidate whose code was new and was evaluated: the programs that enter the database. */
export const EVALUATED_OUTCOMES = ['valid', 'invalid_solution', 'no_solution', 'timeout'] as const satisfies readonly Outcome[];

/** How many of the samples counted were evaluated (EVALUATED_OUTCOMES). */
export function evaluatedCount(counts: Readonly<OutcomeCounts>): number {
  return counts.valid + counts.invalid_solution + counts.no_solution + counts.timeout;
}

/** Whether a larger or a smaller objective is better (the one list every schema uses). */
export const DIRECTIONS = ['maximize', 'minimize'] as const;
export type Direction = (typeof DIRECTIONS)[number];

/**
 * Whether a task's score is protected from a hostile candidate: 'separate'
 * (our task.json: the evaluator, outside the sandbox, sees only the solution
 * file) or 'in-sandbox' (an OpenEvolve/ShinkaEvolve folder: its evaluator
 * imports and runs the candidate in one process inside the sandbox, so the
 * candidate can fake its score).
 */
export const EVALUATOR_TRUSTS = ['separate', 'in-sandbox'] as const;
export type EvaluatorTrust = (typeof EVALUATOR_TRUSTS)[number];

/** Why an 'in-sandbox' score is not protected, in one line for people (CLI, dashboard, Runs view). */
export const IN_SANDBOX_TRUST_REASON =
  "this folder's own evaluator imports and runs the candidate in one process inside the sandbox, so a hostile candidate can fake its score; `thetaevolve convert` keeps them apart";

/** How an evaluation that ran ends (`thetaevolve evaluate --json` prints it). */
export const SCORED_EVALUATION_STATUSES = ['ok', 'invalid_solution', 'no_solution', 'timeout'] as const;
export type ScoredEvaluationStatus = (typeof SCORED_EVALUATION_STATUSES)[number];
/** Every way an evaluation ends: scored, or `evaluation_failed` when the backend could not run it (no score). */
export const EVALUATION_STATUSES = [...SCORED_EVALUATION_STATUSES, 'evaluation_failed'] as const;
export type EvaluationStatus = (typeof EVALUATION_STATUSES)[number];

interface EvaluationResultBase {
  /** The task's own objective when a solution was produced and computed, else null. */
  objective: number | null;
  metrics: Record<string, number | string | boolean | null>;
  /** Human-readable reason for anything but `ok`; empty for `ok`. */
  reason: string;
  durationMs: number;
  /** Captured, truncated candidate output (never trusted). */
  stdout: string;
  stderr: string;
}

/** An evaluation that ran: the candidate's own result. */
export interface ScoredEvaluationResult extends EvaluationResultBase {
  status: ScoredEvaluationStatus;
  /** Combined score with the penalties of docs/algorithm.md: objective (max), 1/objective (min), or the penalty. */
  score: number;
  /** The solution file's text of a valid result, when it is small enough to keep (the dashboard draws the best one). */
  solution?: string;
}

/** The backend could not evaluate the candidate (infrastructure failure): no score, not the model's fault. */
export interface FailedEvaluationResult extends EvaluationResultBase {
  status: 'evaluation_failed';
  score: null;
}

export type EvaluationResult = ScoredEvaluationResult | FailedEvaluationResult;

/** Map an evaluation status onto the sample outcome it gives. */
export function outcomeOfEvaluation(status: EvaluationStatus): Outcome {
  return status === 'ok' ? 'valid' : status;
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/** One prompt's worth of generation: n responses to the same messages (one group for RL). */
export interface GenerationJob {
  /** Stable group key, unique within the run (e.g. `s12-p3`: step 12, prompt 3). */
  key: string;
  messages: ChatMessage[];
  n: number;
  /** Base seed for this job; response i uses seed + i. */
  seed: number;
  /** The parent the prompt was built from (the offline sampler edits it directly). */
  parentId: string;
  parentCode: string;
  /** Several models (thetaevolve.models): the one drawn for this prompt; absent with one model. */
  model?: string;
  /** What the prompt asked for: SEARCH/REPLACE edits (default) or the whole EVOLVE-BLOCK rewritten. */
  editFormat?: 'diff' | 'rewrite';
}

export interface TokenTrace {
  promptTokenIds: number[];
  completionTokenIds: number[];
  /** Log-probability of each completion token, aligned with completionTokenIds. */
  completionLogprobs: number[] | null;
}

interface SampleBase {
  jobKey: string;
  /** 0..n-1 within the job. */
  index: number;
  latencyMs: number;
  /** Failed attempts before the final one. */
  retries: number;
}

export interface SampleResponse extends SampleBase {
  ok: true;
  /** The answer: only this is parsed for diffs. */
  content: string;
  /** Reasoning from `reasoning_content` / `reasoning` or inline `<think>`; kept, never parsed. */
  reasoning: string | null;
  finishReason: string;
  truncated: boolean;
  promptTokens: number;
  completionTokens: number;
  tokens: TokenTrace | null;
  /** Policy (weights) version the response was sampled with, when the server says. */
  policyVersion: string | null;
  /** The reply carried no `usage`: its tokens were counted from the text. */
  usageEstimated?: boolean;
  /** The prompt tokens this sample's request was billed for: the reply's, on its first sample only (n > 1 shares one prompt). */
  billedPromptTokens?: number;
}

export interface SampleFailure extends SampleBase {
  ok: false;
  error: string;
}

export type Sample = SampleResponse | SampleFailure;

export interface GenerationStats {
  requests: number;
  retries: number;
  failures: number;
  promptTokens: number;
  completionTokens: number;
  latencyMsP50: number;
  latencyMsP95: number;
  wallMs: number;
}

/**
 * Where responses come from: the LLM endpoint client or the offline mutate
 * sampler. `generate` calls `onSample` once per response as soon as it
 * arrives and resolves when all n x jobs samples have been delivered, or when
 * `signal` aborts (then the rest are delivered as failures or not at all;
 * the loop discards an aborted step).
 */
/** How a health check treats a server that is not there. */
export interface ServerCheckOptions {
  /** Wait (the source's retry window) for a server that is unreachable or loading. */
  waitForServer?: boolean;
  /**
   * Even then, fail at once when nothing answers at all (connection refused,
   * host not found): at an interactive start that is a typo or a server not
   * started, better said in seconds with Retry than after the whole window.
   * A server that answers but is loading (503) is still waited for.
   */
  unreachableFailsFast?: boolean;
}

export interface ResponseSource {
  readonly kind: 'llm' | 'mutate';
  /** Shown to people: "Qwen3-8B at http://127.0.0.1:8000/v1" or "offline mutate sampler (no model)". */
  readonly label: string;
  /**
   * Throws an Error with one actionable message when the source cannot serve.
   * With waitForServer, a server that is unreachable or loading is waited for
   * (within the source's retry window) instead.
   */
  check(signal?: AbortSignal, options?: ServerCheckOptions): Promise<void>;
  generate(jobs: GenerationJob[], signal: AbortSignal, onSample: (sample: Sample) => void): Promise<GenerationStats>;
  /** Told when the source starts waiting for its server and when the server answers again; returns the unsubscribe. */
  addStatusListener?(listener: (status: SourceStatus) => void): () => void;
}

/** Whether a response source is waiting for its server (restarting, loading, unreachable). */
export interface SourceStatus {
  waiting: boolean;
  /** For people: what is waited for and why, or that it answers again. */
  message: string;
}
