// How a score is written for people, everywhere (CLI, editor, log, diff
// titles): significant digits with trailing zeros dropped, "n/a" for none.
// `digits`: 8 where there is room, 6 in a status bar or a tree row.

export function formatScore(score: number | null | undefined, digits = 8): string {
  if (score === null || score === undefined) return 'n/a';
  if (!Number.isFinite(score)) return String(score);
  return String(Number(score.toPrecision(digits)));
}
