// `steerRun`: one steer request on a run, live or stopped (docs/algorithm.md
// section 11; docs/architecture.md "Steering a run"). The run lock says which:
// held by a live process, the request is checked against the database file
// and queued in the steering inbox for that process's next step; otherwise
// this process takes the lock and applies it now (`add` evaluates the
// program now), then lets go.
import { zodIssueText } from '../common/errors';
import { parseRunMeta, type RunMeta } from '../common/runMeta';
import { type SteerRequest, SteerRequestSchema, type SteerResult } from '../common/steering';
import { ProgramDatabase } from '../database/programDatabase';
import { acquireRunLock, RunLockedError } from '../runLock';
import { applySteer, checkSteer, type SteerEvaluator, SteerInputError } from './applySteer';
import { enqueueSteer } from './inbox';

/** An evaluator made for a stopped run's task, closed after use. */
export interface ClosableSteerEvaluator extends SteerEvaluator {
  close(): Promise<void>;
}

export interface SteerRunOptions {
  /** Makes the evaluator of a stopped run's `add` from the run meta (taskDir, language...); asked for only then. */
  openEvaluator?: (runMeta: RunMeta) => Promise<ClosableSteerEvaluator>;
  signal?: AbortSignal;
}

/**
 * Apply `request` to the run of `dbFile`: `{ kind, queued: true }` when a live
 * process runs it, else what it did. Throws SteerInputError (nothing changed)
 * for a request that cannot apply, DatabaseFileError for a file that is no
 * run database.
 */
export async function steerRun(dbFile: string, request: unknown, options: SteerRunOptions = {}): Promise<SteerResult> {
  const parsed = SteerRequestSchema.safeParse(request);
  if (!parsed.success) throw new SteerInputError(`not a steer request: ${zodIssueText(parsed.error, 'request')}`);
  const steer: SteerRequest = parsed.data;
  // Checked against the file first: a live run's file holds its last committed step.
  const file = await ProgramDatabase.openReadOnly(dbFile);
  try {
    checkSteer(steer, { db: file, language: parseRunMeta(file.meta(), dbFile).language });
  } finally {
    await file.close();
  }
  let lock;
  try {
    lock = await acquireRunLock(dbFile);
  } catch (err) {
    if (!(err instanceof RunLockedError)) throw err;
    await enqueueSteer(dbFile, steer);
    return { kind: steer.kind, queued: true };
  }
  let evaluator: ClosableSteerEvaluator | undefined;
  try {
    const db = await ProgramDatabase.openExisting(dbFile);
    try {
      const meta = parseRunMeta(db.meta(), dbFile);
      if (steer.kind === 'add') {
        if (!options.openEvaluator) throw new SteerInputError('adding a program to a stopped run needs an evaluator for its task');
        evaluator = await options.openEvaluator(meta);
      }
      return await applySteer(steer, { db, dbFile, language: meta.language, evaluator, signal: options.signal });
    } finally {
      await db.close();
    }
  } finally {
    await evaluator?.close();
    await lock.release();
  }
}
