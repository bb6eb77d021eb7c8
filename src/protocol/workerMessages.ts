// The protocol between the extension host and the engine worker thread
// (dist/engineWorker.js). Both sides import this one file: the worker
// validates every message the host sends, the host every message the worker
// sends (engine events with parseEngineEvent). Never imports vscode.
import { z } from 'zod';
import { PythonSourceSchema } from '../engine/common/pythonEnvironment';
import { SettingsSchema } from '../engine/common/config';
import { zodIssueText } from '../engine/common/errors';
import { DatabaseSnapshotSchema } from '../engine/common/snapshot';
import {
  DirectionSchema,
  EngineEventSchema,
  IsolationSummarySchema,
  type EngineEvent,
  parseEngineEvent,
  StepStatisticsSchema,
} from '../engine/common/events';
import { RunMetaSchema } from '../engine/common/runMeta';
import { RunComparisonSchema } from '../engine/common/runComparison';
import { EvaluationOutputSchema } from '../engine/common/evaluationOutputSchema';
import { EVALUATION_STATUSES, OUTCOMES } from '../engine/common/types';
import { PROGRAM_ORIGINS, SteerRequestSchema, SteerResultSchema } from '../engine/common/steering';
import { AgentToolResultSchema } from '../engine/common/agentToolResult';

const finite = z.number().finite();
const count = z.number().int().min(0);

// ----------------------------------------------------------------- results

/** An interpreter as chosen, before it ran (src/engine/python/interpreter.ts PythonChoice). */
const PythonChoiceSchema = z.object({ path: z.string().min(1), source: PythonSourceSchema });
export const ProgramRecordSchema = z.object({
  id: z.string(),
  parentId: z.string().nullable(),
  step: count,
  code: z.string(),
  codeHash: z.string(),
  score: finite,
  objective: finite.nullable(),
  outcome: z.enum(OUTCOMES),
  metrics: z.record(z.string(), z.union([finite, z.string(), z.boolean(), z.null()])),
  metaInfoId: z.string().nullable(),
  response: z.string().nullable(),
  reasoning: z.string().nullable(),
  generationMs: finite,
  evaluationMs: finite,
  promptTokens: count,
  completionTokens: count,
  island: count,
  createdAt: finite,
  migrantOf: z.string().nullable().optional(),
  /** Who wrote it, and a researcher's note (docs/algorithm.md section 11). */
  origin: z.enum(PROGRAM_ORIGINS).optional(),
  note: z.string().nullable().optional(),
  /** Its rank by score among its step's children (ProgramDatabase.stepRank): how it is named to people, with its step. */
  stepRank: z
    .object({ rank: z.number().int().min(1), of: z.number().int().min(1) })
    .nullable()
    .optional(),
  /** Still in the population (only a live program can be pinned as a parent or banned); absent where not asked. */
  live: z.boolean().optional(),
  /** Its parent's name (format.ts programName: "step 3 #2", "initial"); absent where not asked, null when the run no longer has it. */
  parentName: z.string().nullable().optional(),
});
export type ProgramRecordMessage = z.infer<typeof ProgramRecordSchema>;

export const DatabaseSummarySchema = z.object({
  programs: count,
  steps: count,
  best: z.object({ score: finite, id: z.string() }).nullable(),
  islands: z.array(count),
  archive: count,
});
export type DatabaseSummary = z.infer<typeof DatabaseSummarySchema>;

/** What the Resume Run list and the Runs view need of a run database. */
export const RunInfoSchema = z.object({
  dbFile: z.string(),
  lastStep: z.number().int().min(-1),
  summary: DatabaseSummarySchema,
  meta: RunMetaSchema,
  /** Programs banned now (the Runs view offers Unban on them). */
  banned: z.array(z.string()),
});
export type RunInfo = z.infer<typeof RunInfoSchema>;

export { DatabaseSnapshotSchema };

export const StepRowSchema = z.object({ step: count, stats: StepStatisticsSchema });
export type StepRow = z.infer<typeof StepRowSchema>;

/** What the loop keeps beside a run's database: the best program's id and its solution file's text. */
export const BestSolutionSchema = z.object({ id: z.string(), solution: z.string() });

/** One program of a lineage (src/engine/database/lineage.ts LineageEntry) with the task's objective (what people read). */
const LineageEntrySchema = z.object({
  id: z.string(),
  parentId: z.string().nullable(),
  step: count,
  score: finite,
  objective: finite.nullable(),
  origin: z.enum(PROGRAM_ORIGINS),
  note: z.string().nullable(),
  /** Its rank by score among its step's children: named as everywhere ("step 12 #1", src/engine/common/format.ts programName). */
  stepRank: z
    .object({ rank: z.number().int().min(1), of: z.number().int().min(1) })
    .nullable()
    .optional(),
});

// ----------------------------------------------------------------- queries

/**
 * Read-only questions about a run database. Served from the running run's
 * open database when `dbFile` is the active run's, else by opening the file
 * read-only in the worker (sql.js loads the whole file: never in the host).
 */
export const QuerySchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('program'), dbFile: z.string().min(1), programId: z.string().min(1) }),
  z.object({ kind: z.literal('improvements'), dbFile: z.string().min(1) }),
  z.object({ kind: z.literal('summary'), dbFile: z.string().min(1) }),
  z.object({ kind: z.literal('runInfo'), dbFile: z.string().min(1) }),
  z.object({ kind: z.literal('snapshot'), dbFile: z.string().min(1) }),
  z.object({ kind: z.literal('steps'), dbFile: z.string().min(1) }),
  /** The solution file of the run's best program, kept beside its database (null when none is kept). */
  z.object({ kind: z.literal('bestSolution'), dbFile: z.string().min(1) }),
  /** How many ancestors a program has (ProgramDatabase.lineageDepth: stable for past bests). */
  z.object({ kind: z.literal('lineageDepth'), dbFile: z.string().min(1), programId: z.string().min(1) }),
  /** Combined scores of the valid programs alive in the database. */
  z.object({ kind: z.literal('validScores'), dbFile: z.string().min(1) }),
  /** Parent, grandparent, ... of a program (ids and scores only). */
  z.object({ kind: z.literal('ancestors'), dbFile: z.string().min(1), programId: z.string().min(1) }),
  /** The failed evaluations whose whole output is kept beside the database, newest step first (without the output). */
  z.object({ kind: z.literal('evaluationOutputs'), dbFile: z.string().min(1) }),
  /** One kept output (null: none kept for that evaluation). */
  z.object({ kind: z.literal('evaluationOutput'), dbFile: z.string().min(1), step: count, jobKey: z.string().min(1), sampleIndex: count }),
  /** A program and each parent back to the starting program (src/engine/database/lineage.ts). */
  z.object({ kind: z.literal('lineage'), dbFile: z.string().min(1), programId: z.string().min(1) }),
  /** For each line of a program, the program of its lineage where the line first appeared. */
  z.object({ kind: z.literal('blame'), dbFile: z.string().min(1), programId: z.string().min(1) }),
  /** The guidance a request waiting in the run's steering inbox sets, and the step it applies at (null: none waits). */
  z.object({ kind: z.literal('queuedGuidance'), dbFile: z.string().min(1) }),
  /**
   * A steer request (docs/algorithm.md section 11), the one query that changes a run: queued for the
   * active run's next step, else applied now (`add` evaluated in the sandbox with `settings`).
   */
  z.object({
    kind: z.literal('steer'),
    dbFile: z.string().min(1),
    request: SteerRequestSchema,
    settings: SettingsSchema,
    /** The editor's workspace folders: the interpreter's prefix may not be or hold one (docs/guide.md "Which Python"); absent: none. */
    workspaceFolders: z.array(z.string().min(1)).optional(),
  }),
  /** Runs compared (docs/architecture.md "Comparing runs"), each read from its database file as last committed. */
  z.object({ kind: z.literal('comparison'), dbFiles: z.array(z.string().min(1)).min(1) }),
  /**
   * One agent tool (docs/architecture.md "Agents"), run by the engine's handlers here, never in the host:
   * the runs are those of `runsDirectories`; `trusted` false refuses the tools that change a run; a stopped
   * run's add_program evaluates only with a task folder in `workspaceFolders`, a runs directory or the bundled tasks.
   */
  z.object({
    kind: z.literal('agentTool'),
    tool: z.string().min(1),
    input: z.unknown(),
    runsDirectories: z.array(z.string().min(1)),
    workspaceFolders: z.array(z.string().min(1)),
    trusted: z.boolean(),
    settings: SettingsSchema,
  }),
  /** Evaluate one program in the sandbox with a task's evaluator (the `thetaevolve` task of tasks.json); no database. */
  z.object({
    kind: z.literal('evaluate'),
    taskDir: z.string().min(1),
    code: z.string(),
    settings: SettingsSchema,
    /** The interpreter by the editor's order (absent: VIRTUAL_ENV, CONDA_PREFIX, python3 on PATH). */
    python: PythonChoiceSchema.optional(),
    /** The editor's workspace folders: the interpreter's prefix may not be or hold one; absent: none. */
    workspaceFolders: z.array(z.string().min(1)).optional(),
  }),
  /** Whether anything answers at a trainer URL (RL switched on with no run: src/engine/trainer/trainerProbe.ts). */
  z.object({ kind: z.literal('probeTrainer'), url: z.string().min(1) }),
]);
export type Query = z.infer<typeof QuerySchema>;
export type QueryKind = Query['kind'];

/** What each query answers with. */
export const QueryResultSchemas = {
  program: ProgramRecordSchema.nullable(),
  improvements: z.array(ProgramRecordSchema),
  summary: DatabaseSummarySchema,
  runInfo: RunInfoSchema,
  snapshot: DatabaseSnapshotSchema,
  steps: z.array(StepRowSchema),
  validScores: z.array(finite),
  lineageDepth: count,
  bestSolution: BestSolutionSchema.nullable(),
  ancestors: z.array(z.object({ id: z.string(), step: count, score: finite })),
  lineage: z.object({ programs: z.array(LineageEntrySchema), complete: z.boolean() }),
  blame: z.object({
    id: z.string(),
    lines: z.array(
      z.object({ line: z.number().int().min(1), text: z.string(), id: z.string(), step: count, origin: z.enum(PROGRAM_ORIGINS) }),
    ),
    complete: z.boolean(),
    /** The programs the lines came from (the lineage's). */
    programs: z.array(LineageEntrySchema),
  }),
  queuedGuidance: z.object({ text: z.string().nullable(), step: count }).nullable(),
  steer: SteerResultSchema,
  agentTool: AgentToolResultSchema,
  comparison: RunComparisonSchema,
  evaluationOutputs: z.array(EvaluationOutputSchema.omit({ stdout: true, stderr: true }).extend({ bytes: count })),
  evaluationOutput: EvaluationOutputSchema.nullable(),
  probeTrainer: z.object({ answers: z.boolean(), message: z.string() }),
  evaluate: z.object({
    taskTitle: z.string(),
    direction: DirectionSchema,
    /** The sandbox the program got. */
    isolation: IsolationSummarySchema,
    status: z.enum(EVALUATION_STATUSES),
    /** null: the evaluation could not run (evaluation_failed), not the program's score. */
    score: finite.nullable(),
    objective: finite.nullable(),
    metrics: z.record(z.string(), z.union([finite, z.string(), z.boolean(), z.null()])),
    reason: z.string(),
    durationMs: finite,
    stdout: z.string(),
    stderr: z.string(),
  }),
} as const satisfies Record<QueryKind, z.ZodType>;
export type QueryResult<K extends QueryKind> = z.infer<(typeof QueryResultSchemas)[K]>;

// ----------------------------------------------------------------- host -> worker

export const StartMessageSchema = z.object({
  type: z.literal('start'),
  runId: z.string().min(1),
  /** Absolute path of the run database (created, or resumed when it exists). */
  dbFile: z.string().min(1),
  /** Absolute folder holding task.json. */
  taskDir: z.string().min(1),
  /** Text the run starts from (ignored when the database resumes). */
  startCode: z.string().nullable(),
  /** The file that text came from (recorded in the database's meta). */
  startPath: z.string().nullable(),
  settings: SettingsSchema,
  /** Never logged, never echoed back. */
  apiKey: z.string().nullable(),
  /** Several models: the keys stored in SecretStorage under each model's apiKeyName (never logged). Absent: none. */
  modelApiKeys: z.record(z.string(), z.string()).optional(),
  /** Continue an existing database after its last committed step. */
  resume: z.boolean(),
  /** The run's interpreter as the editor chose it (src/vscode/pythonInterpreter.ts); absent: VIRTUAL_ENV, CONDA_PREFIX, python3 on PATH. */
  python: PythonChoiceSchema.optional(),
  /** The editor's workspace folders: the interpreter's prefix may not be or hold one (docs/guide.md "Which Python"); absent: none. */
  workspaceFolders: z.array(z.string().min(1)).optional(),
});
export type StartMessage = z.infer<typeof StartMessageSchema>;

export const HostToWorkerSchema = z.discriminatedUnion('type', [
  StartMessageSchema,
  z.object({ type: z.literal('stop') }),
  z.object({ type: z.literal('pause') }),
  z.object({ type: z.literal('resume') }),
  z.object({ type: z.literal('setTrainerEnabled'), enabled: z.boolean() }),
  z.object({ type: z.literal('query'), requestId: count, query: QuerySchema }),
]);
export type HostToWorker = z.infer<typeof HostToWorkerSchema>;

// ----------------------------------------------------------------- worker -> host

export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

const ReplySchema = z.union([
  z.object({ type: z.literal('reply'), requestId: count, ok: z.literal(true), result: z.unknown() }),
  z.object({ type: z.literal('reply'), requestId: count, ok: z.literal(false), error: z.string() }),
]);

const WorkerNoticeSchema = z.discriminatedUnion('type', [
  /** The worker is up and listening. */
  z.object({ type: z.literal('ready') }),
  /** An engine event of the active run (validated again with parseEngineEvent). */
  z.object({ type: z.literal('event'), runId: z.string(), event: EngineEventSchema }),
  /** The run could not start (task, settings, database); no run_started follows. */
  z.object({
    type: z.literal('startFailed'),
    runId: z.string(),
    message: z.string(),
    /** The setting to change, e.g. thetaevolve.endpoint. */ setting: z.string().nullable(),
  }),
  /** The run is over and its sandbox closed: the worker is idle again. */
  z.object({ type: z.literal('runClosed'), runId: z.string() }),
  z.object({ type: z.literal('log'), level: z.enum(LOG_LEVELS), message: z.string() }),
  /** A message the worker could not accept (malformed, or not now); the worker keeps running. */
  z.object({ type: z.literal('protocolError'), message: z.string(), requestId: count.nullable() }),
]);

export const WorkerToHostSchema = z.union([WorkerNoticeSchema, ReplySchema]);
export type WorkerToHost = z.infer<typeof WorkerToHostSchema>;

// ----------------------------------------------------------------- parsing

/** Validate a message from the host (throws naming the first bad field; never echoes the API key). */
export function parseHostToWorker(raw: unknown): HostToWorker {
  const result = HostToWorkerSchema.safeParse(raw);
  if (result.success) return result.data;
  const type = typeof raw === 'object' && raw !== null && 'type' in raw ? String((raw as { type: unknown }).type) : '(none)';
  throw new Error(`malformed message from the host (type ${type}) at ${zodIssueText(result.error, '(root)')}`);
}

/** Validate a message from the worker; events are checked with parseEngineEvent. */
export function parseWorkerToHost(raw: unknown): WorkerToHost {
  if (typeof raw === 'object' && raw !== null && (raw as { type?: unknown }).type === 'event') {
    const { runId, event } = raw as { runId?: unknown; event?: unknown };
    if (typeof runId !== 'string') throw new Error('malformed message from the engine worker at runId: expected a string');
    const parsed: EngineEvent = parseEngineEvent(event);
    return { type: 'event', runId, event: parsed };
  }
  const result = WorkerToHostSchema.safeParse(raw);
  if (result.success) return result.data;
  throw new Error(`malformed message from the engine worker at ${zodIssueText(result.error, '(root)')}`);
}

/** Validate a query's result against the schema of its kind. */
export function parseQueryResult<K extends QueryKind>(kind: K, raw: unknown): QueryResult<K> {
  const result = QueryResultSchemas[kind].safeParse(raw);
  if (result.success) return result.data as QueryResult<K>;
  throw new Error(`malformed ${kind} reply from the engine worker at ${zodIssueText(result.error, '(root)')}`);
}

/** Request ids for a query without one (a malformed query still gets an error reply when its id is readable). */
export function requestIdOf(raw: unknown): number | null {
  if (typeof raw !== 'object' || raw === null) return null;
  const id = (raw as { requestId?: unknown }).requestId;
  return typeof id === 'number' && Number.isInteger(id) && id >= 0 ? id : null;
}
