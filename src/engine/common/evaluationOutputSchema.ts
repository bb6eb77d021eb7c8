// The shape of a kept evaluation output (src/engine/evaluationOutputs.ts), apart
// from the file handling so the protocol (which the dashboard page also
// compiles) can name it without Node modules.
import { z } from 'zod';
import { OUTCOMES } from './types';

/** What one failed evaluation printed, and why it failed (candidate text: never trusted, never shown raw). */
export const EvaluationOutputSchema = z.object({
  step: z.number().int().min(0),
  jobKey: z.string().min(1),
  sampleIndex: z.number().int().min(0),
  outcome: z.enum(OUTCOMES),
  reason: z.string(),
  stdout: z.string(),
  stderr: z.string(),
});
export type EvaluationOutput = z.infer<typeof EvaluationOutputSchema>;
