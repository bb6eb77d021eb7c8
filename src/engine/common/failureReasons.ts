// Why requests failed, for people: the failure messages of a step grouped
// into distinct reasons with their counts (the CLI's progress, the editor's
// log and dashboard read them from the step_committed event).
import type { FailureReason } from './events';

/** The retry count a message ends with varies per request; the reason does not. */
const RETRY_SUFFIX = /\s*\(gave up after \d+ retr(?:y|ies)\)$/;

/** Distinct reasons, most frequent first (ties: first seen first). */
export function summarizeFailures(errors: Iterable<string>): FailureReason[] {
  const counts = new Map<string, number>();
  for (const error of errors) {
    const message = error.replace(RETRY_SUFFIX, '');
    counts.set(message, (counts.get(message) ?? 0) + 1);
  }
  return [...counts.entries()].map(([message, count]) => ({ message, count })).sort((a, b) => b.count - a.count);
}

/** The reasons on one line: "12 x HTTP 400: ...; 4 x connection failed: ..." (the rest counted). */
export function failureSummaryText(reasons: readonly FailureReason[], limit = 3): string {
  const shown = reasons.slice(0, limit).map((r) => `${r.count} x ${r.message}`);
  const rest = reasons.length - limit;
  if (rest > 0) shown.push(`${rest} more reason${rest === 1 ? '' : 's'}`);
  return shown.join('; ');
}
