// Text from a candidate (its output, an evaluator's reason) is never shown
// raw: escape sequences in it rewrote "status no_solution" into "status ok /
// score 2.9999" on a terminal. Everything shown to a person goes through
// forDisplay; machine output (--json) stays exact.

/** C0 controls except tab and newline, DEL, and the C1 controls (U+0080-U+009F, which some terminals honour like ESC [). */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL_CHARACTERS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/** `text` without control characters (newline and tab kept), safe to write to a terminal or a view. */
export function forDisplay(text: string): string {
  return text.replace(CONTROL_CHARACTERS, '');
}
