// `thetaevolve apply <parent-file> <response-file> [--json]`: apply a model
// response's SEARCH/REPLACE blocks to a parent program, exactly as the loop
// does, and print the child. Exit 0 whenever it ran, whatever the status.
import { jsonForTerminal } from '../engine/common/displayText';
import { readFile } from 'node:fs/promises';
import * as path from 'node:path';
import { applyResponse, DEFAULT_MAX_CODE_LENGTH } from '../engine/common/diff';
import { booleanFlag, type ParsedArgs } from './args';
import { type CliIO, InputError } from './io';

async function readInput(file: string, what: string, cwd: string): Promise<string> {
  const full = path.resolve(cwd, file);
  try {
    return await readFile(full, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'is a folder' : (err as Error).message;
    throw new InputError(`cannot read the ${what} ${file}: ${why}`);
  }
}

export async function applyCommand(args: ParsedArgs, io: CliIO): Promise<number> {
  const [parentFile, responseFile] = args.positionals as [string, string];
  const parent = await readInput(parentFile, 'parent program', io.cwd);
  const response = await readInput(responseFile, 'response', io.cwd);
  const language = path.extname(parentFile).replace(/^\./, '').toLowerCase();
  const result = applyResponse(parent, response, { language, maxLength: DEFAULT_MAX_CODE_LENGTH });

  if (booleanFlag(args, 'json')) {
    const skipped = result.skipped.map((s) => ({ index: s.index, reason: s.reason, search: s.search, detail: s.detail }));
    io.stdout(
      `${jsonForTerminal({ status: result.status, child: result.child, applied: result.applied, skipped, message: result.message })}\n`,
    );
    return 0;
  }
  // People: the child on stdout (so `> child.py` works), what happened on stderr.
  if (result.status === 'applied' && result.child !== null) io.stdout(result.child.endsWith('\n') ? result.child : `${result.child}\n`);
  io.stderr(`${result.status}: ${result.message}\n`);
  for (const s of result.skipped) io.stderr(`  block ${s.index + 1} skipped (${s.reason}): ${s.detail}\n`);
  return 0;
}
