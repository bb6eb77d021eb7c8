// What a CLI command may touch of the process: its streams and an abort
// signal raised on SIGINT/SIGTERM. Tests pass their own.
import { ThetaEvolveError } from '../engine/common/errors';

export interface CliIO {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** Whether stderr is a terminal (progress bars only then). */
  stderrIsTTY: boolean;
  signal: AbortSignal;
  cwd: string;
  env: Readonly<Record<string, string | undefined>>;
}

/** Thrown for bad input (missing files, malformed task files): one line on stderr, exit 1. */
export class InputError extends ThetaEvolveError {
  override readonly name = 'InputError';
}
