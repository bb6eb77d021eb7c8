// The best program's solution file, beside the database: the dashboard draws it.
import type { EngineEvent } from '../common/events';
import { errorMessage } from '../common/errors';
import { writeFileAtomic } from '../database/atomicFile';
import { bestSolutionFile } from '../runFiles';

/** Keeps the best program's solution; a failure to write it costs the picture only (a non-fatal error event). */
export async function keepBestSolution(dbFile: string, id: string, solution: string, emit: (event: EngineEvent) => void): Promise<void> {
  await writeFileAtomic(bestSolutionFile(dbFile), Buffer.from(JSON.stringify({ id, solution }))).catch((err: unknown) =>
    emit({
      type: 'error',
      time: Date.now(),
      message: `could not keep the best program's solution for the dashboard: ${errorMessage(err)}`,
      fatal: false,
    }),
  );
}
