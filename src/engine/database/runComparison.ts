// Reads runs for a comparison (docs/architecture.md "Comparing runs"): each
// database opened read-only, its run meta, sizes, steps, best program and
// that program's lineage, shaped by src/engine/common/runComparison.ts.
import { DATABASE_PRESETS } from '../common/config';
import { errorMessage } from '../common/errors';
import { StepStatisticsSchema } from '../common/events';
import { compareRuns, type RunComparison, type RunRecordForComparison } from '../common/runComparison';
import { parseRunMeta } from '../common/runMeta';
import { lineageOf } from './lineage';
import { ProgramDatabase } from './programDatabase';
import { DatabaseFileError } from './schema';

/** What an open run database holds for a comparison (the running run's own, or one opened read-only). */
export function runRecordOf(db: ProgramDatabase, file: string): RunRecordForComparison {
  const meta = parseRunMeta(db.meta(), file);
  const steps = db.steps().map(({ step, stats }) => {
    const parsed = StepStatisticsSchema.safeParse(stats);
    if (!parsed.success) throw new DatabaseFileError(`${file}: the statistics of step ${step} are malformed`);
    return { step, stats: parsed.data };
  });
  const best = db.best();
  const lineage = best ? lineageOf(db, best) : { programs: [], complete: true };
  const usage = db.modelUsage();
  // Named as the Runs view names them ("step 11 #1", "initial"), not by id.
  const ranks = db.stepRanks([...(best ? [best.id] : []), ...lineage.programs.map((p) => p.id)]);
  const ranked = <T extends { id: string }>(p: T) => ({ ...p, stepRank: ranks.get(p.id) ?? null });
  return {
    runId: meta.runId,
    file,
    task: meta.task,
    direction: meta.direction,
    source: meta.source,
    database: db.config,
    steps,
    improvements: db.improvements().map((p) => ({ step: p.step, score: p.score })),
    best: best ? ranked({ id: best.id, step: best.step, score: best.score, origin: best.origin, code: best.code }) : null,
    lineage: { programs: lineage.programs.map(ranked), complete: lineage.complete },
    python: meta.python ?? null,
    // Only a run of several models, or a priced one, has a per-model table and spend.
    ...(usage.models.length > 0 || usage.costUsd !== null ? { modelUsage: usage } : {}),
  };
}

/** What one run's database file holds for a comparison; a file that is not a usable run database is a DatabaseFileError naming it. */
export async function readRunForComparison(file: string): Promise<RunRecordForComparison> {
  const db = await ProgramDatabase.openReadOnly(file);
  try {
    return readOnlyRecordOf(db, file);
  } finally {
    await db.close();
  }
}

/** runRecordOf of a database opened read-only (damaged files open so): what it cannot read is a DatabaseFileError naming it. */
export function readOnlyRecordOf(db: ProgramDatabase, file: string): RunRecordForComparison {
  try {
    return runRecordOf(db, file);
  } catch (err) {
    if (err instanceof DatabaseFileError) throw err;
    // A damaged file opens read-only (no integrity check) and fails on the first read of what is damaged.
    throw new DatabaseFileError(`${file} is not a usable ThetaEvolve run database (${errorMessage(err)})`, { cause: err });
  }
}

/** The comparison of the runs in `files`, in that order; `read` may answer a running run from its open database. */
export async function compareRunFiles(
  files: readonly string[],
  now = Date.now(),
  read: (file: string) => RunRecordForComparison | Promise<RunRecordForComparison> = readRunForComparison,
): Promise<RunComparison> {
  const records: RunRecordForComparison[] = [];
  for (const file of files) records.push(await read(file));
  return compareRuns(records, DATABASE_PRESETS, now);
}
