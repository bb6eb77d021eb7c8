// One way to turn anything thrown into the text a person reads.

/** The message of an Error, or the thrown value as text. */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
