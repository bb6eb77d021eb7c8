// The engine's event protocol: what the loop emits and the CLI, the
// extension host and the dashboard consume. Events cross the worker-thread
// boundary, so each has a zod schema and is validated on arrival. Every
// number is finite or null (JSON has no NaN).
import { z } from 'zod';
import { zodIssueText } from './errors';
import { DIRECTIONS, EVALUATOR_TRUSTS, OUTCOMES } from './types';
import { PythonEnvironmentSchema } from './pythonEnvironment';
import { StepModelFieldsSchema } from './models';

const finite = z.number().finite();
const count = z.number().int().min(0);
/** Milliseconds since the epoch when the event was emitted. */
const time = finite;

export const OutcomeSchema = z.enum(OUTCOMES);
export const DirectionSchema = z.enum(DIRECTIONS);
export const EvaluatorTrustSchema = z.enum(EVALUATOR_TRUSTS);

/** `not_novel` came later (novelty rejection): steps recorded before it read as 0. */
export const OutcomeCountsSchema = z.object(
  Object.fromEntries(OUTCOMES.map((o) => [o, o === 'not_novel' ? count.default(0) : count])) as Record<
    (typeof OUTCOMES)[number],
    typeof count
  >,
);

/** Which sandbox candidates get (the evaluator's IsolationReport, as far as people are shown it). */
export const IsolationSummarySchema = z.object({
  kind: z.string(),
  /** "bwrap + seccomp + cgroup", or which layers are there. */
  summary: z.string(),
  /** Each missing layer and why. */
  missing: z.array(z.string()),
  /** Weaker than the full sandbox (the user allowed it). */
  weak: z.boolean(),
  warning: z.string().nullable(),
});
export type IsolationSummary = z.infer<typeof IsolationSummarySchema>;

export const RUN_FINISH_REASONS = [
  'steps_done',
  'target_reached',
  'stopped',
  'token_limit',
  'no_improvement',
  'budget_reached',
  'error',
] as const;
export type RunFinishReason = (typeof RUN_FINISH_REASONS)[number];

/** Per-step statistics (scoring.ts computes them; the step_committed event carries them). */
export const StepStatisticsSchema = z.object({
  step: count,
  /** Samples of the step, request failures included. */
  samples: count,
  counts: OutcomeCountsSchema,
  /** Best, mean and percentiles of the valid scores of the step; null when none was valid. */
  best: finite.nullable(),
  mean: finite.nullable(),
  p10: finite.nullable(),
  p50: finite.nullable(),
  p90: finite.nullable(),
  /** Mean of every scored sample, penalties included (null when none was scored). */
  meanAll: finite.nullable(),
  tokens: z.object({ prompt: count, completion: count }),
  timings: z.object({ generationMs: finite.min(0), evaluationMs: finite.min(0), totalMs: finite.min(0) }),
  /** Samples finished per second of the step's wall time. */
  samplesPerSecond: finite.min(0),
  /** Request latency of the step's responses (median, 95th percentile); null when none answered. Absent in databases written before it was recorded. */
  latencyMsP50: finite.nullable().optional(),
  latencyMsP95: finite.nullable().optional(),
  /** Time since the run (this invocation) started, when the step was recorded. */
  elapsedMs: finite.min(0).optional(),
  /**
   * When this invocation of the run started (ms since the epoch): the steps of
   * one session share it, so the run's elapsed time adds up across resumes.
   * Absent in databases written before it was recorded.
   */
  sessionStartedAt: finite.optional(),
  /**
   * How the step was sampled, for comparing runs (docs/architecture.md "Comparing runs"):
   * B x n, whether RL was on, and the policy version that wrote its samples
   * (the inference server's weight_version, else the trainer step they were
   * sampled at; null with RL off or when neither is known). Absent in
   * databases written before it was recorded.
   */
  sampling: z.object({ batchSize: count, samplesPerPrompt: count, rl: z.boolean(), policyVersion: z.string().nullable() }).optional(),
  /** A task with an evaluator cascade (docs/algorithm.md section 12): how many evaluated children stopped at each stage ("1", "2", ...). Absent otherwise. */
  cascade: z.record(z.string(), count).optional(),
  /** Several models and cost (docs/algorithm.md section 12): models, childModels, costUsd, modelProbabilities. */
  ...StepModelFieldsSchema.shape,
});
export type StepStatistics = z.infer<typeof StepStatisticsSchema>;

const SettingValueSchema = z.union([z.string(), z.number(), z.boolean(), z.null()]);

export const RunStartedEventSchema = z.object({
  type: z.literal('run_started'),
  time,
  runId: z.string(),
  /** targetValue: in the task's own objective units (null: none). */
  /** evaluatorTrust: 'in-sandbox' when the score is not protected from a hostile candidate (absent: 'separate'). */
  task: z.object({
    name: z.string(),
    title: z.string(),
    direction: DirectionSchema,
    dir: z.string(),
    targetValue: finite.nullable(),
    evaluatorTrust: EvaluatorTrustSchema.optional(),
  }),
  dbFile: z.string(),
  source: z.object({ kind: z.enum(['llm', 'mutate']), label: z.string() }),
  /** The sandbox the run's candidates get. */
  isolation: IsolationSummarySchema.optional(),
  /** The interpreter everything Python runs with (absent: the task runs no Python). */
  python: PythonEnvironmentSchema.optional(),
  /** The settings that shape the run (B, n, temperature, database sizes...), flat. */
  settings: z.record(z.string(), SettingValueSchema),
  /** The last committed step when resuming, else null. */
  resumedFromStep: count.nullable(),
});

export const StepStartedEventSchema = z.object({
  type: z.literal('step_started'),
  time,
  step: count,
  parents: z.array(z.object({ id: z.string(), score: finite, island: count.nullable() })),
});

/** A step has all its responses (its failed requests asked again when resampling); only its evaluations are left. */
export const GenerationFinishedEventSchema = z.object({
  type: z.literal('generation_finished'),
  time,
  step: count,
  /** From the step's start to its last response. */
  generationMs: finite.min(0),
});

export const EvaluationStartedEventSchema = z.object({
  type: z.literal('evaluation_started'),
  time,
  step: count,
  jobKey: z.string(),
  sampleIndex: count,
  /** The scheduler's job id when the evaluation runs as a SLURM job. */
  schedulerJobId: z.string().optional(),
});

export const EvaluationFinishedEventSchema = z.object({
  type: z.literal('evaluation_finished'),
  time,
  step: count,
  jobKey: z.string(),
  sampleIndex: count,
  /** Known once the child enters the database; null before commit or when it never does. */
  childId: z.string().nullable(),
  outcome: OutcomeSchema,
  /** null for request_failed. */
  score: finite.nullable(),
  objective: finite.nullable(),
  durationMs: finite.min(0),
  /** Why it is not valid; empty for valid. */
  reason: z.string(),
  /** The whole output of this failed evaluation is kept beside the database (src/engine/evaluationOutputs.ts). */
  outputKept: z.boolean().optional(),
});

/** One distinct reason requests failed, with how many samples it failed. */
export const FailureReasonSchema = z.object({ message: z.string(), count: z.number().int().min(1) });
export type FailureReason = z.infer<typeof FailureReasonSchema>;

export const StepCommittedEventSchema = StepStatisticsSchema.extend({
  type: z.literal('step_committed'),
  time,
  dbSize: count,
  /** Best score of the whole run after this step (null while no valid program exists). */
  bestEver: finite.nullable(),
  newBest: z.boolean(),
  /** Milliseconds since the run (this invocation) started. */
  elapsedMs: finite.min(0),
  /** Why the step's failed requests failed: each distinct message once, most frequent first (absent: none failed). */
  failures: z.array(FailureReasonSchema).optional(),
  /** US dollars the whole run's replies cost so far, across sessions (priced models only). */
  runCostUsd: finite.min(0).optional(),
});

export const NewBestEventSchema = z.object({
  type: z.literal('new_best'),
  time,
  id: z.string(),
  step: count,
  score: finite,
  objective: finite.nullable(),
  parentId: z.string().nullable(),
});

export const PausedEventSchema = z.object({ type: z.literal('paused'), time, step: count });
export const ResumedEventSchema = z.object({ type: z.literal('resumed'), time, step: count });

export const RunFinishedEventSchema = z.object({
  type: z.literal('run_finished'),
  time,
  reason: z.enum(RUN_FINISH_REASONS),
  /** Last committed step (-1 when none). */
  lastStep: z.number().int().min(-1),
  best: z.object({ id: z.string(), score: finite }).nullable(),
  message: z.string(),
});

export const ErrorEventSchema = z.object({
  type: z.literal('error'),
  time,
  message: z.string(),
  /** A fatal error ends the run (a run_finished with reason 'error' follows). */
  fatal: z.boolean(),
  /** What it is about, where people are told more than the log line: `invalid_start`, the starting program is not valid. */
  about: z.enum(['invalid_start']).optional(),
});

/** The inference server went away (restart, loading, weight update) and requests wait for it, or it answers again. */
export const EndpointStateEventSchema = z.object({
  type: z.literal('endpoint_state'),
  time,
  waiting: z.boolean(),
  message: z.string(),
});

/** Where the RL trainer bridge stands (src/engine/trainer/bridge.ts TrainerState). */
export const TrainerStateEventSchema = z.object({
  type: z.literal('trainer_state'),
  time,
  state: z.object({
    enabled: z.boolean(),
    protocol: z.enum(['atropos', 'slime']),
    url: z.string(),
    mode: z.enum(['sync', 'async']),
    connected: z.boolean(),
    trainerStep: z.number().int().nullable(),
    lastAckedPolicyVersion: z.string().nullable(),
    pendingGroups: count,
    sentGroups: count,
    rejectedGroups: count,
    queuedGroups: count.optional(),
    droppedGroups: count.optional(),
    releasedGroups: count.optional(),
    resentGroups: count.optional(),
    lostGroups: count.optional(),
    waiting: z.boolean(),
    awaiting: z.string().nullable().optional(),
    lastError: z.string().nullable(),
  }),
});

/** Where the evaluation backend's queue stands: the SLURM backend reports it after every poll. */
export const EvaluationQueueEventSchema = z.object({
  type: z.literal('evaluation_queue'),
  time,
  backend: z.enum(['local', 'slurm']),
  /** Staged or submitted, not running yet. */
  pending: count,
  running: count,
  done: count,
  /** Jobs that left the queue without a result (each resubmit counts). */
  lost: count,
  /** Samples that ended as evaluation_failed. */
  failed: count,
  /** Median time from submission to running. */
  queueWaitMsP50: z.number().nonnegative().nullable(),
  /** sbatch + squeue + scancel (+ sacct for lost jobs, + one sinfo at the start) calls so far. */
  schedulerCalls: count,
});

/** Per-server share when thetaevolve.endpoint lists several servers (src/engine/llm/endpointPool.ts). */
export const EndpointServersEventSchema = z.object({
  type: z.literal('endpoint_servers'),
  time,
  servers: z.array(
    z.object({
      baseURL: z.string(),
      healthy: z.boolean(),
      outstanding: count,
      requests: count,
      failures: count,
      samples: count,
      completionTokens: count,
      tokensPerSecond: z.number().nonnegative(),
      latencyMsP50: z.number().nonnegative().nullable(),
      lastError: z.string().nullable(),
    }),
  ),
  /** The pool as the run's source names it now (servers join and leave: a resubmitted job's server has a new address). */
  label: z.string().optional(),
  /** Inference servers run as SLURM jobs (thetaevolve.slurm.inference.*): each job, whether or not its server is up yet. */
  jobs: z
    .array(
      z.object({
        index: count,
        jobId: z.string().nullable(),
        state: z.string(),
        reason: z.string().nullable(),
        host: z.string().nullable(),
        baseURL: z.string().nullable(),
        resubmits: count,
      }),
    )
    .optional(),
});

/** A steer request the running loop took from its inbox (docs/algorithm.md section 11): applied from `step` on, or refused. */
export const SteeredEventSchema = z.object({
  type: z.literal('steered'),
  time,
  step: count,
  kind: z.string(),
  ok: z.boolean(),
  /** What it did or why it was refused, for people. */
  message: z.string(),
  /** The program added, banned, unbanned or pinned. */
  id: z.string().nullable(),
});

export const EngineEventSchema = z.discriminatedUnion('type', [
  RunStartedEventSchema,
  StepStartedEventSchema,
  GenerationFinishedEventSchema,
  EvaluationStartedEventSchema,
  EvaluationFinishedEventSchema,
  StepCommittedEventSchema,
  NewBestEventSchema,
  PausedEventSchema,
  ResumedEventSchema,
  RunFinishedEventSchema,
  ErrorEventSchema,
  TrainerStateEventSchema,
  EndpointStateEventSchema,
  EvaluationQueueEventSchema,
  EndpointServersEventSchema,
  SteeredEventSchema,
]);

export type EngineEvent = z.infer<typeof EngineEventSchema>;
export type EngineEventType = EngineEvent['type'];
export type EngineEventOf<T extends EngineEventType> = Extract<EngineEvent, { type: T }>;
export type RunStartedEvent = EngineEventOf<'run_started'>;
export type StepStartedEvent = EngineEventOf<'step_started'>;
export type GenerationFinishedEvent = EngineEventOf<'generation_finished'>;
export type EvaluationStartedEvent = EngineEventOf<'evaluation_started'>;
export type EvaluationFinishedEvent = EngineEventOf<'evaluation_finished'>;
export type StepCommittedEvent = EngineEventOf<'step_committed'>;
export type NewBestEvent = EngineEventOf<'new_best'>;
export type PausedEvent = EngineEventOf<'paused'>;
export type ResumedEvent = EngineEventOf<'resumed'>;
export type RunFinishedEvent = EngineEventOf<'run_finished'>;
export type EngineErrorEvent = EngineEventOf<'error'>;
export type EvaluationQueueEvent = EngineEventOf<'evaluation_queue'>;
export type EndpointServersEvent = EngineEventOf<'endpoint_servers'>;
export type TrainerStateEvent = EngineEventOf<'trainer_state'>;
export type EndpointStateEvent = EngineEventOf<'endpoint_state'>;

/** Validate an event from across a boundary; throws with the first issue's path. */
export function parseEngineEvent(raw: unknown): EngineEvent {
  const result = EngineEventSchema.safeParse(raw);
  if (result.success) return result.data;
  throw new Error(`malformed engine event at ${zodIssueText(result.error, '(root)')}`);
}

export type EngineEventListener = (event: EngineEvent) => void;
