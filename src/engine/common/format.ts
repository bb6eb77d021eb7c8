// How a score is written for people, everywhere (CLI, editor, log, diff
// titles): significant digits with trailing zeros dropped, "n/a" for none.
// `digits`: 8 where there is room, 6 in a status bar or a tree row.

/** A program's rank by score among its step's children (ProgramDatabase.stepRank). */
export interface StepRank {
  rank: number;
  of: number;
}

/**
 * How a program is named to people (Runs view, diff titles, documents,
 * dashboard): the step that made it and its rank there by score, "step 12 #1"
 * (the step's best child); the starting program is "initial". Ids are opaque:
 * they go in tooltips.
 */
export function programName(program: { step: number; stepRank?: StepRank | null }): string {
  if (program.step === 0) return 'initial';
  return program.stepRank ? `step ${program.step} #${program.stepRank.rank}` : `step ${program.step}`;
}

/** Who wrote a program, in words ('' for the starting program, whose name says it): a migration's copy is a copy, not an author. */
const AUTHOR_WORDS: Readonly<Record<string, string>> = { initial: '', model: 'model', researcher: 'researcher', migration: 'island copy' };

/**
 * A program of a lineage or a blame, named as everywhere (programName) with
 * who wrote it: "step 12 #1 · model", "initial" (the starting program and its
 * copies on the other islands, which a migration made at step 0).
 */
export function programLabel(program: { step: number; origin: string; stepRank?: StepRank | null }): string {
  const author = program.step === 0 ? '' : (AUTHOR_WORDS[program.origin] ?? program.origin);
  return author ? `${programName(program)} · ${author}` : programName(program);
}

/** What a program's name stands for, for a tooltip: "rank 1 by score of the 8 children of step 12 in the database; program 3k". */
export function programNameDetail(program: { id: string; step: number; stepRank?: StepRank | null }): string {
  const rank =
    program.step > 0 && program.stepRank
      ? `rank ${program.stepRank.rank} by score of the ${program.stepRank.of} children of step ${program.step} in the database; `
      : '';
  return `${rank}program ${program.id}`;
}

/** What is said in place of a run's best while none of its programs is valid: a penalty is no objective (docs/algorithm.md section 8). */
export const NO_VALID_PROGRAM = 'no valid program';

/** A run's best for people: "best 1.25", or NO_VALID_PROGRAM (`value`: the objective or score shown, null when nothing is valid). */
export function bestText(value: number | null, digits = 8): string {
  return value === null ? NO_VALID_PROGRAM : `best ${formatScore(value, digits)}`;
}

export function formatScore(score: number | null | undefined, digits = 8): string {
  if (score === null || score === undefined) return 'n/a';
  if (!Number.isFinite(score)) return String(score);
  return String(Number(score.toPrecision(digits)));
}
