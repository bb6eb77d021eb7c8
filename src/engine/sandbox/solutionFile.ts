// Reading the one file a candidate hands over, without trusting it: no
// symbolic links followed, only regular files, size-capped before reading.
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { readStart } from '../boundedRead';
import { formatBytes } from './process';

export type SolutionRead = { ok: true; bytes: Buffer } | { ok: false; reason: string };

/** The one wording of each way a solution file can be refused (read here or copied out of a sandbox). */
export function solutionReadProblem(
  kind: 'missing' | 'symlink' | 'not_regular' | 'too_large' | 'empty',
  name: string,
  maxBytes = 0,
): string {
  switch (kind) {
    case 'missing':
      return `the program wrote no ${name}`;
    case 'symlink':
      return `${name} is a symbolic link (links are not followed)`;
    case 'not_regular':
      return `${name} is not a regular file`;
    case 'too_large':
      return `${name} is over the ${formatBytes(maxBytes)} limit`;
    case 'empty':
      return `${name} is empty`;
  }
}

function errorCode(err: unknown): string {
  return typeof err === 'object' && err !== null && 'code' in err ? String((err as { code: unknown }).code) : '';
}

/** Read `path` (named `name` in messages) if it is a plain, small enough file. */
export async function readSolutionFile(path: string, name: string, maxBytes: number): Promise<SolutionRead> {
  let handle;
  try {
    // O_NOFOLLOW: a symlink fails instead of being followed; O_NONBLOCK: a
    // FIFO cannot make us wait for a writer that will never come.
    handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = errorCode(err);
    if (code === 'ENOENT') return { ok: false, reason: solutionReadProblem('missing', name) };
    if (code === 'ELOOP' || code === 'EMLINK') return { ok: false, reason: solutionReadProblem('symlink', name) };
    if (code === 'ENOTDIR') return { ok: false, reason: solutionReadProblem('missing', name) };
    return { ok: false, reason: `${name} cannot be opened (${code || 'error'})` };
  }
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) return { ok: false, reason: solutionReadProblem('not_regular', name) };
    if (stats.nlink > 1)
      return { ok: false, reason: `${name} has other hard links (only a plain file written by the program is accepted)` };
    if (stats.size > maxBytes)
      return { ok: false, reason: `${name} is ${formatBytes(stats.size)}, over the ${formatBytes(maxBytes)} limit` };
    // One byte more than stat says, to notice a file still growing.
    const bytes = await readStart(handle, stats.size + 1);
    if (bytes.length > stats.size) return { ok: false, reason: `${name} changed while being read` };
    if (bytes.length === 0) return { ok: false, reason: solutionReadProblem('empty', name) };
    return { ok: true, bytes };
  } catch (err) {
    return { ok: false, reason: `${name} cannot be read (${errorCode(err) || (err instanceof Error ? err.message : 'error')})` };
  } finally {
    await handle.close();
  }
}
