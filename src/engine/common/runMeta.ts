// What a run database records about its run (the loop writes it when it
// creates the database): one typed shape for everything that reads it back.
import { z } from 'zod';
import { zodIssueText } from './errors';
import { DirectionSchema, EvaluatorTrustSchema, IsolationSummarySchema } from './events';
import { type PythonEnvironment, PythonEnvironmentSchema } from './pythonEnvironment';

export const RunMetaSchema = z.object({
  runId: z.string(),
  /** Task name, e.g. "circle-packing". */
  task: z.string(),
  /** What loads the task again (Task.source): its absolute folder, or the evaluator file of an OpenEvolve folder. */
  taskDir: z.string(),
  direction: DirectionSchema,
  /** The program's extension without the dot ("py"). */
  language: z.string(),
  /** The file the run evolves (the task's initial program when none was given). */
  programPath: z.string(),
  /** The text the run started from. */
  startCode: z.string(),
  /** The response source's label (model and server, or the offline sampler). */
  source: z.string(),
  createdAt: z.number().finite(),
  /** 'in-sandbox': the task's evaluator ran with the candidate, so scores are not protected (absent in older runs: 'separate'). */
  evaluatorTrust: EvaluatorTrustSchema.optional(),
  /** The interpreter everything Python ran with, its version and package versions (absent in older runs, and for tasks without Python). */
  python: PythonEnvironmentSchema.optional(),
  /** The sandbox candidates got in the run's latest session (absent in older runs): the dashboard shows it after a reload. */
  isolation: IsolationSummarySchema.optional(),
  /** The operator settings the run started with, where any differs from its default (operators/recorded.ts); absent: the paper's loop. */
  operators: z.record(z.string(), z.unknown()).optional(),
});
export type RunMeta = z.infer<typeof RunMetaSchema>;

/** The typed run meta of a database's stored meta; throws naming the file and the field when it is not one of ours. */
export function parseRunMeta(raw: unknown, dbFile: string): RunMeta {
  const result = RunMetaSchema.safeParse(raw);
  if (result.success) return result.data;
  throw new Error(`${dbFile}: the run meta is incomplete at ${zodIssueText(result.error, '(root)')}`);
}

/** The interpreter a database's run recorded (null: an older run, a task without Python, or not one of our databases). */
export function pythonOfRunMeta(raw: unknown): PythonEnvironment | null {
  const result = RunMetaSchema.pick({ python: true }).safeParse(raw);
  return result.success ? (result.data.python ?? null) : null;
}
