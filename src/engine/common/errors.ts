// The errors kit: one base class for our errors, one way to turn anything
// thrown into the text a person reads, one way to name a zod issue.
import type { z } from 'zod';

/**
 * The base of ThetaEvolve's own errors: `name` says which one (each subclass
 * spells it out, because bundlers may rename classes), `cause` keeps the
 * error it wraps. Code prints `message` (errorMessage), never `name`.
 */
export abstract class ThetaEvolveError extends Error {
  abstract override readonly name: string;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** The message of an Error, or the thrown value as text. */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * A field path as text: keys joined with dots ('a.0.b'), or with array
 * indexes in brackets ('a[0].b') when `indexes` is 'bracketed'; `root` for
 * the empty path (each message keeps its own word: '(root)', '(top level)').
 */
export function fieldPathText(path: readonly PropertyKey[], root: string, indexes: 'dotted' | 'bracketed' = 'dotted'): string {
  let out = '';
  if (indexes === 'dotted') out = path.map(String).join('.');
  else for (const key of path) out += typeof key === 'number' ? `[${key}]` : out === '' ? String(key) : `.${String(key)}`;
  return out === '' ? root : out;
}

/** The first problem zod found, as its path (see fieldPathText) and message; 'invalid' when zod gave none. */
export function firstZodIssue(error: z.ZodError, root: string): { path: string; message: string } {
  const issue = error.issues[0];
  return { path: fieldPathText(issue?.path ?? [], root), message: issue?.message ?? 'invalid' };
}

/** The first problem zod found as 'path: message' (e.g. 'steps.0.score: Expected number'); the message alone at the root when `root` is ''. */
export function zodIssueText(error: z.ZodError, root: string): string {
  const { path, message } = firstZodIssue(error, root);
  return path === '' ? message : `${path}: ${message}`;
}
