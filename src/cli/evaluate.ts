import type { ParsedArgs } from './args';
import { type CliIO, InputError } from './io';

export async function evaluateCommand(_args: ParsedArgs, _io: CliIO): Promise<number> {
  throw new InputError("'evaluate' is not available yet in this build");
}
