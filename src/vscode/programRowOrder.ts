// The order of a run's program rows in the Runs view. The best is pinned on
// top under one row id (its content changes, its place does not) and the
// earlier improvements follow oldest first, so a new best appends a row below
// the others instead of pushing every row down under the pointer (an inline
// Apply button used to land on another program).

export interface ProgramRowKey {
  programId: string;
  /** The pinned best row (one per run, whichever program is best). */
  pinnedBest: boolean;
}

/** Rows for improvements in the order they were found (the last is the best). */
export function programRowOrder<T extends { id: string }>(improvements: readonly T[]): Array<T & ProgramRowKey> {
  const best = improvements.at(-1);
  if (!best) return [];
  return [
    { ...best, programId: best.id, pinnedBest: true },
    ...improvements.slice(0, -1).map((p) => ({ ...p, programId: p.id, pinnedBest: false })),
  ];
}

/** The tree item id of a row: stable across refreshes for the same place. */
export function programRowId(dbFile: string, row: ProgramRowKey): string {
  return row.pinnedBest ? `best:${dbFile}` : `program:${dbFile}:${row.programId}`;
}
