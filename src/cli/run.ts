import type { ParsedArgs } from './args';
import { type CliIO, InputError } from './io';

export async function runCommand(_args: ParsedArgs, _io: CliIO): Promise<number> {
  throw new InputError("'run' is not available yet in this build");
}
