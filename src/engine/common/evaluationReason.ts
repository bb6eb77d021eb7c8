// An evaluation's reason as the sandbox writes it: a headline, and for a
// failure the end of the program's stderr after a marker. One line of it
// for lists: the headline and the error line (the last one of the output),
// which is what a person scans for.

/** Between the headline and the output's tail. */
export const OUTPUT_TAIL_MARKER = '; stderr ends with:\n';

/** `reason` with the end of `stderrTail` after the marker (nothing added when there is no output). */
export function reasonWithOutput(reason: string, stderrTail: string): string {
  return stderrTail ? `${reason}${OUTPUT_TAIL_MARKER}${stderrTail}` : reason;
}

/** "exit code 1: ZeroDivisionError: division by zero": the headline and the output's last non-empty line. */
export function reasonOneLine(reason: string): string {
  const at = reason.indexOf(OUTPUT_TAIL_MARKER);
  if (at < 0) return reason.split('\n')[0] ?? '';
  const headline = reason.slice(0, at);
  const last = reason
    .slice(at + OUTPUT_TAIL_MARKER.length)
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '')
    .pop();
  return last ? `${headline}: ${last}` : headline;
}

/**
 * The reason to show above the kept output (the output document): its one
 * line when the output it quotes is in `stderr` below (the traceback said
 * once), else the whole reason.
 */
export function reasonAboveOutput(reason: string, stderr: string): string {
  const at = reason.indexOf(OUTPUT_TAIL_MARKER);
  if (at < 0) return reason;
  // A tail cut at its start begins with an ellipsis that the stream itself does not hold.
  const tail = reason
    .slice(at + OUTPUT_TAIL_MARKER.length)
    .replace(/^(\.\.\.|\u2026)/, '')
    .trim();
  return tail !== '' && stderr.includes(tail) ? reasonOneLine(reason) : reason;
}
