// Patience (docs/algorithm.md section 12): a run that has not found a new best
// program for a number of committed steps ends with reason `no_improvement`.
// Counted from the database (the step of the last improvement), so a resumed
// run counts exactly as the uninterrupted one.
import type { ProgramDatabase } from '../database/programDatabase';

/** Committed steps since the last new best (the starting program counts as one, at step 0). */
export function stepsWithoutImprovement(db: ProgramDatabase): number {
  // A smaller penalty before anything was valid counted as progress when patience was written: kept so.
  const last = db.improvements(true).at(-1);
  return db.lastStep - (last?.step ?? 0);
}

/** Whether patience `steps` (0: off) is spent. */
export function patienceSpent(db: ProgramDatabase, steps: number): boolean {
  return steps > 0 && stepsWithoutImprovement(db) >= steps;
}
