// The dashboard's message protocol, host <-> page, in one file that both
// sides import (no vscode, no DOM). Every message is a zod schema; each side
// validates what it receives. It also holds the one reducer that turns the
// host's messages into the page's state, so the page, its saved state and the
// tests agree on what an incremental update means.
//
// Values on the page are in the task's own objective (a minimise task shows
// its objective, not 1/objective); the host's model (src/dashboard/dashboardModel.ts)
// converts before sending.
import { ModelUsageSchema } from '../engine/common/models';
import { z } from 'zod';
import { PythonEnvironmentSchema } from '../engine/common/pythonEnvironment';
import { zodIssueText } from '../engine/common/errors';
import { type DatabaseSnapshot, DatabaseSnapshotSchema, RecommendationsInForceSchema } from '../engine/common/snapshot';
import { DirectionSchema, IsolationSummarySchema, OutcomeCountsSchema, StepStatisticsSchema } from '../engine/common/events';
import { OUTCOMES } from '../engine/common/types';

const finite = z.number().finite();
const count = z.number().int().min(0);
const optionalFinite = finite.nullable();

export { DirectionSchema };

/**
 * Outcome groups drawn as stacked bars, in stacking order. Labels carry the
 * penalty of docs/algorithm.md section 4.
 */
export const OUTCOME_GROUPS = [
  { id: 'no_diff', label: 'no diff (-0.4)', outcomes: ['no_diff'] },
  { id: 'no_change', label: 'no change / lazy / not novel (-0.3)', outcomes: ['no_change', 'duplicate', 'not_novel'] },
  { id: 'no_solution', label: 'no solution (-0.2)', outcomes: ['no_solution', 'timeout'] },
  { id: 'invalid', label: 'invalid (-0.1)', outcomes: ['invalid_solution'] },
  { id: 'valid', label: 'valid', outcomes: ['valid'] },
  { id: 'request_failed', label: 'request failed', outcomes: ['request_failed'] },
  { id: 'evaluation_failed', label: 'evaluation failed', outcomes: ['evaluation_failed'] },
] as const satisfies readonly { id: string; label: string; outcomes: readonly (typeof OUTCOMES)[number][] }[];
export type OutcomeGroupId = (typeof OUTCOME_GROUPS)[number]['id'];

// ---------------------------------------------------------------------------
// Inputs: what the extension host feeds the model (src/dashboard/dashboardModel.ts). They are
// structural subsets of the engine's events and database snapshot, so the
// host can pass those objects as they are.

export { OutcomeCountsSchema };

/** Statistics of the valid samples of one step in the task's own objective. */
export const ObjectiveStatsSchema = z.object({
  best: optionalFinite,
  mean: optionalFinite,
  p10: optionalFinite,
  p50: optionalFinite,
  p90: optionalFinite,
});
export type ObjectiveStats = z.infer<typeof ObjectiveStatsSchema>;

/**
 * One committed step. A `step_committed` engine event satisfies it as is;
 * the optional fields add what the event lacks.
 */
export const DashboardStepInputSchema = z.object({
  step: count,
  samples: count,
  counts: OutcomeCountsSchema,
  /** Best, mean, percentiles of the step's valid combined scores (higher is better); null when none was valid. */
  best: optionalFinite,
  mean: optionalFinite,
  p10: optionalFinite,
  p50: optionalFinite,
  p90: optionalFinite,
  tokens: z.object({ prompt: count, completion: count }),
  timings: z.object({ generationMs: finite.min(0), evaluationMs: finite.min(0), totalMs: finite.min(0) }),
  /** Best combined score of the run after this step. */
  bestEver: optionalFinite,
  dbSize: count,
  /** The run's elapsed time up to this step, across its sessions. */
  elapsedMs: finite.min(0),
  /** The run's sessions so far (each resume starts one) and the elapsed time of this step's own session. */
  session: z.object({ count: z.number().int().min(1), elapsedMs: finite.min(0) }).optional(),
  /** The same statistics computed on the task's objective values (exact mean for minimise tasks). */
  objective: ObjectiveStatsSchema.optional(),
  /** Candidate evaluations run in the step (default: valid + invalid + no_solution + timeout). */
  evaluations: count.optional(),
  /** Endpoint request latency of the step (GenerationStats.latencyMsP50 / P95). */
  latencyMsP50: optionalFinite.optional(),
  latencyMsP95: optionalFinite.optional(),
  /** How the step was sampled and by which policy version (RL on); absent in databases written before it was recorded. */
  sampling: StepStatisticsSchema.shape.sampling,
  /** Several models and cost (docs/algorithm.md section 12): what each model did in the step, its cost and the next draw's chances. */
  models: StepStatisticsSchema.shape.models,
  costUsd: StepStatisticsSchema.shape.costUsd,
  modelProbabilities: StepStatisticsSchema.shape.modelProbabilities,
  /** A task with an evaluator cascade: how many of the step's evaluated children stopped at each stage ("1", "2", ...). */
  cascade: StepStatisticsSchema.shape.cascade,
});
export type DashboardStepInput = z.infer<typeof DashboardStepInputSchema>;

/** ProgramDatabase.stateSnapshot(), as the dashboard receives it. */
export const DashboardDatabaseInputSchema = DatabaseSnapshotSchema;
export type DashboardDatabaseInput = DatabaseSnapshot;

export const DashboardRunInputSchema = z.object({
  runId: z.string(),
  taskName: z.string(),
  taskTitle: z.string(),
  direction: DirectionSchema,
  /** In the task's own objective units. */
  targetValue: optionalFinite,
  source: z.object({ kind: z.enum(['llm', 'mutate']), label: z.string() }),
  batchSize: count.nullable(),
  samplesPerPrompt: count.nullable(),
  resumedFromStep: count.nullable(),
  /** The sandbox candidates get (absent for a run read back from disk). */
  isolation: IsolationSummarySchema.optional(),
  /** The interpreter the run's Python ran with (absent: older runs, tasks without Python). */
  python: PythonEnvironmentSchema.optional(),
  /** Why the score is not protected from a hostile candidate (another system's task folder: its evaluator runs with the candidate). */
  scoreUnprotected: z.string().optional(),
});
export type DashboardRunInput = z.infer<typeof DashboardRunInputSchema>;

/**
 * A picture of the best program's solution, drawn from its solution file:
 * the packing's circles, a step function with its autoconvolution, or a
 * +-1 matrix. Sizes are capped by src/dashboard/solutionPicture.ts.
 */
export const SolutionPictureSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('circles'), circles: z.array(z.object({ x: finite, y: finite, r: finite })).max(10_000) }),
  z.object({ kind: z.literal('steps'), heights: z.array(finite).max(4_000), autoconvolution: z.array(finite).max(4_000) }),
  z.object({ kind: z.literal('matrix'), rows: z.array(z.array(finite).max(256)).max(256) }),
]);
export type SolutionPicture = z.infer<typeof SolutionPictureSchema>;

/** The most of the best program's code the page is sent. */
export const BEST_CODE_MAX_CHARS = 6000;
/** The most of the best program's evaluator feedback the page is sent. */
export const BEST_FEEDBACK_MAX_CHARS = 2000;

export const DashboardBestInputSchema = z.object({
  id: z.string(),
  step: count,
  score: finite,
  objective: optionalFinite,
  /** Ancestors back to the initial program (ProgramDatabase.ancestors(id).length). */
  lineageDepth: count,
  /** Its rank by score among its step's children (ProgramDatabase.stepRank). */
  stepRank: z
    .object({ rank: z.number().int().min(1), of: z.number().int().min(1) })
    .nullable()
    .optional(),
  parentId: z.string().nullable(),
  /** The best program's EVOLVE-BLOCK content (shown as text, cut at BEST_CODE_MAX_CHARS). */
  code: z
    .string()
    .max(BEST_CODE_MAX_CHARS + 100)
    .optional(),
  /** Its solution, drawn (bundled geometry, autocorrelation and matrix tasks). */
  picture: SolutionPictureSchema.optional(),
  /** The evaluator's feedback on it (common/feedback.ts), as its children's prompts get it; shown as text. */
  feedback: z
    .string()
    .max(BEST_FEEDBACK_MAX_CHARS + 100)
    .optional(),
});
export type DashboardBestInput = z.infer<typeof DashboardBestInputSchema>;

// ---------------------------------------------------------------------------
// Views: what the page shows.

export const RUN_STATES = ['idle', 'starting', 'running', 'paused', 'stopping', 'finished', 'error'] as const;
export const RunStateViewSchema = z.object({
  state: z.enum(RUN_STATES),
  /** One line for people, e.g. the finish reason. */
  message: z.string(),
  /** A run that is over but can go on from its last committed step (Resume is offered). */
  resumable: z.boolean().optional(),
});
export type RunStateView = z.infer<typeof RunStateViewSchema>;

/** next_run: on in the settings, no run in progress to send anything yet. */
export const TRAINER_STATES = ['off', 'not_configured', 'next_run', 'connecting', 'ready', 'waiting', 'error'] as const;
export const TrainerViewSchema = z.object({
  /** The RL toggle: rollouts are sent to the trainer. */
  enabled: z.boolean(),
  state: z.enum(TRAINER_STATES),
  protocol: z.enum(['atropos', 'slime']).nullable(),
  url: z.string(),
  /** Last policy (weights) version the trainer acknowledged. */
  lastAckPolicyVersion: z.string().nullable(),
  /** Groups (rollouts of one prompt) the trainer accepted in this run. */
  groupsSent: count,
  message: z.string(),
});
export type TrainerView = z.infer<typeof TrainerViewSchema>;

export const RunViewSchema = z.object({
  runId: z.string(),
  taskName: z.string(),
  taskTitle: z.string(),
  direction: DirectionSchema,
  /** "minimise (lower is better)" / "maximise (higher is better)". */
  directionLabel: z.string(),
  targetValue: optionalFinite,
  source: z.object({ kind: z.enum(['llm', 'mutate']), label: z.string() }),
  /** Extra facts shown beside the source: "B 32 x n 16", "resumed after step 40". */
  details: z.array(z.string()),
  /** "sandbox: bwrap + seccomp + cgroup"; `weak` when weaker than the full sandbox (shown as a warning). */
  isolation: z.object({ text: z.string(), weak: z.boolean() }).optional(),
  /** The score is not protected from a hostile candidate, and why (shown as a warning). */
  scoreWarning: z.string().optional(),
});
export type RunView = z.infer<typeof RunViewSchema>;

/**
 * One point of the per-step series: a bucket of `steps` consecutive steps
 * (one step until the run grows past the point budget). Sums are exact over
 * the bucket; score statistics are in the task's objective.
 */
export const SeriesPointSchema = z.object({
  /** First and last step in the bucket. */
  step: count,
  lastStep: count,
  steps: z.number().int().min(1),
  /** Best valid objective in the bucket (the task's direction decides "best"). */
  best: optionalFinite,
  /** Best of the run up to the bucket's last step. */
  bestSoFar: optionalFinite,
  /** Mean and percentiles of valid objectives; for buckets of several steps, means weighted by valid counts. */
  mean: optionalFinite,
  p10: optionalFinite,
  p50: optionalFinite,
  p90: optionalFinite,
  /** Samples per outcome group, in OUTCOME_GROUPS order. */
  outcomes: z.array(count).length(OUTCOME_GROUPS.length),
  samples: count,
  valid: count,
  evaluations: count,
  promptTokens: count,
  completionTokens: count,
  generationMs: finite.min(0),
  evaluationMs: finite.min(0),
  totalMs: finite.min(0),
  /** Worst p50 / p95 request latency of the bucket's steps. */
  latencyMsP50: optionalFinite,
  latencyMsP95: optionalFinite,
  /** The policy version that took over in the bucket (its last, with RL on; docs/architecture.md "Comparing runs"); absent when it did not change. */
  policyChange: z.string().optional(),
});
export type SeriesPoint = z.infer<typeof SeriesPointSchema>;

export const SeriesViewSchema = z.object({
  /** Steps per point (a power of two). */
  bucketSteps: z.number().int().min(1),
  points: z.array(SeriesPointSchema),
});
export type SeriesView = z.infer<typeof SeriesViewSchema>;

export const SummaryViewSchema = z.object({
  lastStep: z.number().int().min(-1),
  /** Best objective of the run. */
  bestEver: optionalFinite,
  dbSize: count,
  /** Across every session of the run. */
  elapsedMs: finite.min(0),
  /** Sessions of the run (each resume starts one) and the latest one's elapsed time; absent for one session. */
  session: z.object({ count: z.number().int().min(1), elapsedMs: finite.min(0) }).optional(),
  samples: count,
  completionTokens: count,
  /**
   * False once a minimise task's step came without objective statistics: its
   * mean is then 1/(mean score), the harmonic mean of the objectives.
   */
  meanExact: z.boolean(),
  /** Several models or priced replies: the run's spend and per-model table (absent otherwise). */
  modelUsage: ModelUsageSchema.optional(),
  /** A task with an evaluator cascade (docs/algorithm.md section 12): per stage, in order, the evaluated children that reached it and that stopped there, over the steps shown (absent otherwise). */
  cascade: z.array(z.object({ stage: z.number().int().min(1), reached: count, stopped: count })).optional(),
});
export type SummaryView = z.infer<typeof SummaryViewSchema>;

/** Heat-map cell values: the cell's best score as a shade 0..HEAT_SHADES (best), or one of these. */
export const HEAT_EMPTY = -1;
/** The cell holds only programs with a penalty score (no valid one). */
export const HEAT_PENALTY = -2;
export const HEAT_SHADES = 100;

export const DatabaseViewSchema = z.object({
  programs: count,
  populationSize: count,
  currentIsland: count,
  islands: z.array(z.object({ island: count, size: count, best: optionalFinite })),
  heatmaps: z.object({
    bins: z.number().int().min(1),
    /** Objective range the rows span (low score row first), and code lengths the columns span. */
    scoreRange: z.object({ min: finite, max: finite }).nullable(),
    codeLengthRange: z.object({ min: finite, max: finite }).nullable(),
    /** A task's behaviour dimensions (docs/algorithm.md section 12): the metric and values of the rows and of the columns (null: one axis). Absent: score and code length. */
    axes: z
      .object({
        rows: z.object({ metric: z.string(), range: z.object({ min: finite, max: finite }).nullable() }),
        columns: z.object({ metric: z.string(), range: z.object({ min: finite, max: finite }).nullable() }).nullable(),
      })
      .optional(),
    /**
     * Per island, `bins * bins` values row by row, row 0 the lowest score bin,
     * column the code-length bin: HEAT_EMPTY, HEAT_PENALTY or a shade
     * 0..HEAT_SHADES of the cell's best score between the worst and best
     * valid cell of all islands. Dense small integers: ~3 bytes a cell.
     */
    islands: z.array(z.object({ island: count, occupied: count, grid: z.array(z.number().int().min(HEAT_PENALTY).max(HEAT_SHADES)) })),
  }),
  archive: z.object({ size: count, capacity: count, worst: optionalFinite, best: optionalFinite }),
  migrations: z.object({ count, lastStep: z.number().int().nullable(), interval: count, rate: finite }),
  /** The researcher's guidance in force and the first step it applies to (null: none). */
  guidance: z.object({ text: z.string(), step: count }).nullable(),
  /** The model's meta-recommendations in force (docs/algorithm.md section 12): the first step they apply to, the step after which the model wrote them, who edited them (null: nobody); null: none. */
  recommendations: RecommendationsInForceSchema.nullable(),
  histogram: z
    .object({
      /** What was counted, e.g. "valid programs evaluated (1,234)". */
      label: z.string(),
      min: finite,
      max: finite,
      counts: z.array(count),
    })
    .nullable(),
});
export type DatabaseView = z.infer<typeof DatabaseViewSchema>;

/** The best program card shows what the host gives it. */
export const BestViewSchema = DashboardBestInputSchema.extend({
  /** How people know it: "step 12 #1" (src/engine/common/format.ts programName); the id is in nameDetail, its tooltip. */
  name: z.string().optional(),
  nameDetail: z.string().optional(),
});
export type BestView = z.infer<typeof BestViewSchema>;

export const DASHBOARD_STATE_VERSION = 1;

/** Where the work goes beyond this machine: the SLURM queue and the inference servers, when there are several. */
export const BackendViewSchema = z.object({
  /** One line: "SLURM: 12 pending, 16 running, 480 done, 1 lost; queue wait 3.2 s", or null for local evaluations. */
  queue: z.string().nullable(),
  servers: z.array(
    z.object({
      url: z.string(),
      healthy: z.boolean(),
      requests: count,
      failures: count,
      tokensPerSecond: z.number().nonnegative(),
      lastError: z.string().nullable(),
    }),
  ),
  /** Inference servers run as SLURM jobs: one line each (job, state, node, throughput); `up` while its server is in the pool. */
  jobs: z.array(z.object({ text: z.string(), up: z.boolean() })).optional(),
});
export type BackendView = z.infer<typeof BackendViewSchema>;

export const DashboardStateSchema = z.object({
  version: z.literal(DASHBOARD_STATE_VERSION),
  run: RunViewSchema.nullable(),
  runState: RunStateViewSchema,
  series: SeriesViewSchema,
  summary: SummaryViewSchema,
  database: DatabaseViewSchema.nullable(),
  best: BestViewSchema.nullable(),
  trainer: TrainerViewSchema,
  /** Absent in pages saved before it existed. */
  backend: BackendViewSchema.optional(),
});
export type DashboardState = z.infer<typeof DashboardStateSchema>;

// ---------------------------------------------------------------------------
// Host -> page

export const HostMessageSchema = z.discriminatedUnion('type', [
  /** Everything: sent on `ready`, when a run starts, and after a reload. */
  z.object({ type: z.literal('snapshot'), state: DashboardStateSchema }),
  /** One committed step: append `point`, or replace the last point when the step fell into its bucket. */
  z.object({
    type: z.literal('step'),
    bucketSteps: z.number().int().min(1),
    point: SeriesPointSchema,
    replaceLast: z.boolean(),
    summary: SummaryViewSchema,
  }),
  /** The whole series, re-bucketed (sent when the bucket width doubles). */
  z.object({ type: z.literal('series'), series: SeriesViewSchema, summary: SummaryViewSchema }),
  z.object({ type: z.literal('database'), database: DatabaseViewSchema }),
  z.object({ type: z.literal('best'), best: BestViewSchema.nullable() }),
  z.object({ type: z.literal('trainer'), trainer: TrainerViewSchema }),
  z.object({ type: z.literal('runState'), runState: RunStateViewSchema }),
  z.object({ type: z.literal('backend'), backend: BackendViewSchema }),
  /** A line for the person (an action was refused, an error). Not kept in the state. */
  z.object({ type: z.literal('notice'), level: z.enum(['info', 'warning', 'error']), text: z.string() }),
]);
export type HostMessage = z.infer<typeof HostMessageSchema>;

// ---------------------------------------------------------------------------
// Page -> host

export const DASHBOARD_ACTIONS = ['start', 'stop', 'pause', 'resume'] as const;
export type DashboardAction = (typeof DASHBOARD_ACTIONS)[number];

export const PageMessageSchema = z.discriminatedUnion('type', [
  /** The page is listening; the host answers with a snapshot before anything else. */
  z.object({ type: z.literal('ready'), stateVersion: z.number().int().nullable() }),
  z.object({ type: z.literal('action'), action: z.enum(DASHBOARD_ACTIONS) }),
  z.object({ type: z.literal('setRl'), enabled: z.boolean() }),
  z.object({ type: z.literal('showDiff'), programId: z.string().min(1) }),
  z.object({ type: z.literal('applyToFile'), programId: z.string().min(1) }),
  /** The best card's Lineage: its ancestors, each opening the diff to its parent. */
  z.object({ type: z.literal('showLineage'), programId: z.string().min(1) }),
]);
export type PageMessage = z.infer<typeof PageMessageSchema>;

/** Validate what the page sent; throws naming the first problem. */
export function parsePageMessage(raw: unknown): PageMessage {
  const result = PageMessageSchema.safeParse(raw);
  if (!result.success) throw new Error(`malformed dashboard message at ${zodIssueText(result.error, '(root)')}`);
  return result.data;
}

/** Validate what the host sent; throws naming the first problem. */
export function parseHostMessage(raw: unknown): HostMessage {
  const result = HostMessageSchema.safeParse(raw);
  if (!result.success) throw new Error(`malformed host message at ${zodIssueText(result.error, '(root)')}`);
  return result.data;
}

/** A saved page state, or null when it is missing, old or damaged. */
export function parseSavedState(raw: unknown): DashboardState | null {
  const result = DashboardStateSchema.safeParse(raw);
  return result.success ? result.data : null;
}

export function emptyDashboardState(): DashboardState {
  return {
    version: DASHBOARD_STATE_VERSION,
    run: null,
    runState: { state: 'idle', message: 'No run yet.' },
    series: { bucketSteps: 1, points: [] },
    summary: { lastStep: -1, bestEver: null, dbSize: 0, elapsedMs: 0, samples: 0, completionTokens: 0, meanExact: true },
    database: null,
    best: null,
    trainer: {
      enabled: false,
      state: 'off',
      protocol: null,
      url: '',
      lastAckPolicyVersion: null,
      groupsSent: 0,
      message: '',
    },
  };
}

/**
 * Apply one host message to the page state. Mutates and returns `state`
 * (the series can hold hundreds of points; copying them per step is waste).
 * `notice` leaves the state as it is.
 */
export function reduceDashboardState(state: DashboardState, message: HostMessage): DashboardState {
  switch (message.type) {
    case 'snapshot':
      return message.state;
    case 'step': {
      const points = state.series.points;
      if (message.bucketSteps !== state.series.bucketSteps) {
        // Out of order with a re-bucketing: the next snapshot/series repairs it; never mix widths.
        return state;
      }
      if (message.replaceLast && points.length > 0) points[points.length - 1] = message.point;
      else points.push(message.point);
      state.summary = message.summary;
      return state;
    }
    case 'series':
      state.series = message.series;
      state.summary = message.summary;
      return state;
    case 'database':
      state.database = message.database;
      return state;
    case 'best':
      state.best = message.best;
      return state;
    case 'trainer':
      state.trainer = message.trainer;
      return state;
    case 'runState':
      state.runState = message.runState;
      return state;
    case 'backend':
      state.backend = message.backend;
      return state;
    case 'notice':
      return state;
  }
}

/** Throughput of a series point: rates per second of the steps' wall time. */
export function pointRates(point: SeriesPoint): {
  samplesPerSecond: number | null;
  evaluationsPerSecond: number | null;
  tokensPerSecond: number | null;
} {
  if (point.totalMs <= 0) return { samplesPerSecond: null, evaluationsPerSecond: null, tokensPerSecond: null };
  const seconds = point.totalMs / 1000;
  return {
    samplesPerSecond: point.samples / seconds,
    evaluationsPerSecond: point.evaluations / seconds,
    tokensPerSecond: point.completionTokens / seconds,
  };
}
