import type { ParsedArgs } from './args';
import { type CliIO, InputError } from './io';

export async function applyCommand(_args: ParsedArgs, _io: CliIO): Promise<number> {
  throw new InputError("'apply' is not available yet in this build");
}
