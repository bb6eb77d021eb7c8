// The Compare Runs page's messages (docs/architecture.md "Comparing runs"):
// the editor posts the comparison, the page says when it is ready and asks
// for what a person clicks. The `thetaevolve report` HTML file embeds the
// same comparison in the page instead. Both sides validate with zod.
import { z } from 'zod';
import { zodIssueText } from '../engine/common/errors';
import { RunComparisonSchema } from '../engine/common/runComparison';

export const CompareHostMessageSchema = z.discriminatedUnion('type', [
  /** The whole comparison, again after each step a live run among them commits. */
  z.object({ type: z.literal('comparison'), comparison: RunComparisonSchema }),
  /** A run could not be read: one line. */
  z.object({ type: z.literal('error'), message: z.string() }),
]);
export type CompareHostMessage = z.infer<typeof CompareHostMessageSchema>;

export const ComparePageMessageSchema = z.discriminatedUnion('type', [z.object({ type: z.literal('ready') })]);
export type ComparePageMessage = z.infer<typeof ComparePageMessageSchema>;

/** A host message, or an Error naming what is wrong with it. */
export function parseCompareHostMessage(raw: unknown): CompareHostMessage | Error {
  const parsed = CompareHostMessageSchema.safeParse(raw);
  return parsed.success ? parsed.data : new Error(`malformed comparison message: ${zodIssueText(parsed.error, '(root)')}`);
}

/** A page message, or null when it is not one. */
export function parseComparePageMessage(raw: unknown): ComparePageMessage | null {
  const parsed = ComparePageMessageSchema.safeParse(raw);
  return parsed.success ? parsed.data : null;
}
