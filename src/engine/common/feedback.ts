// Evaluator feedback on a program: OpenEvolve's artifacts (stderr, warnings,
// feedback text), ShinkaEvolve's text_feedback, our own evaluator's reason.
// Those systems put it into the next prompt of the program's children, and
// so do we (docs/algorithm.md section 2). It may come from a candidate's own
// process (another system's evaluator runs beside it), so it is kept bounded
// and without control characters, and stored with the program's metrics
// under FEEDBACK_METRIC (no column of its own: one program, one metrics record).
import { forDisplay } from './displayText';

/** The metric a program's feedback is stored under. */
export const FEEDBACK_METRIC = 'feedback';
/** Characters kept per program (OpenEvolve's max_artifact_bytes, 20 KiB); the prompt shows at most thetaevolve.prompt.feedbackChars. */
export const MAX_FEEDBACK_CHARS = 20 * 1024;

/** `text` bounded to `maxChars` (a cut marked), control characters but newline and tab stripped, trimmed. */
export function feedbackText(text: string, maxChars: number = MAX_FEEDBACK_CHARS): string {
  const clean = forDisplay(text).trim();
  return clean.length <= maxChars ? clean : `${clean.slice(0, maxChars)}... (cut at ${maxChars} characters)`;
}

/** A program's stored feedback, or '' (absent, or not text). */
export function feedbackOf(metrics: Readonly<Record<string, unknown>>): string {
  const value = metrics[FEEDBACK_METRIC];
  return typeof value === 'string' ? value : '';
}
