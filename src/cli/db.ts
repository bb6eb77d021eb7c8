import type { ParsedArgs } from './args';
import { type CliIO, InputError } from './io';

export async function dbCommand(_args: ParsedArgs, _io: CliIO): Promise<number> {
  throw new InputError("'db' is not available yet in this build");
}
