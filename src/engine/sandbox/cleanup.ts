// Removing a folder a candidate wrote into, whatever it did to it: trees
// deeper than PATH_MAX (Node's fs.rm fails there with ENAMETOOLONG), folders
// whose permissions it took away, and folders swapped for symbolic links
// while we work (never followed). Every step goes through a descriptor of
// the directory it acts in (/proc/self/fd/N/name), so paths stay short and
// no link on the way is followed. A failure is reported, never swallowed.
import { chmodSync, closeSync, constants, lstatSync, openSync, readdirSync, rmdirSync, unlinkSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { errorMessage } from '../common/errors';

/** O_PATH (Linux, the same on x86_64 and aarch64): a handle on a directory that needs no permission on it. */
const O_PATH = 0o10000000;
const OPEN_DIR = O_PATH | constants.O_NOFOLLOW | constants.O_DIRECTORY;

const via = (fd: number, name?: string): string => (name === undefined ? `/proc/self/fd/${fd}` : `/proc/self/fd/${fd}/${name}`);

function errorCode(err: unknown): string {
  return typeof err === 'object' && err !== null && 'code' in err ? String((err as { code: unknown }).code) : String(err);
}

/** Depth-first removal holding one descriptor at a time (the way back up is '..', which is never a link). */
function removeTreeByDescriptors(path: string): void {
  const stats = lstatSync(path);
  if (!stats.isDirectory()) {
    unlinkSync(path);
    return;
  }
  let current = openSync(path, OPEN_DIR);
  // Per level below the top: the directory's name in its parent, and the subdirectories still to visit.
  const stack: { name: string; pending: string[] }[] = [];
  let pending = clearFiles(current);
  try {
    for (;;) {
      const next = pending.pop();
      if (next !== undefined) {
        let child: number;
        try {
          child = openSync(via(current, next), OPEN_DIR);
        } catch (err) {
          const code = errorCode(err);
          if (code === 'ENOENT') continue;
          // Swapped for a link or a file since it was listed: remove that, never follow it.
          if (code === 'ENOTDIR' || code === 'ELOOP') {
            unlinkSync(via(current, next));
            continue;
          }
          throw err;
        }
        stack.push({ name: next, pending });
        closeSync(current);
        current = child;
        pending = clearFiles(current);
        continue;
      }
      const level = stack.pop();
      if (level === undefined) break;
      const parent = openSync(via(current, '..'), O_PATH | constants.O_DIRECTORY);
      closeSync(current);
      current = parent;
      rmdirSync(via(current, level.name));
      pending = level.pending;
    }
  } finally {
    closeSync(current);
  }
  rmdirSync(path);
}

/** Make a directory usable again (through its descriptor: a link swapped in is never chmod-ed), unlink its non-directories, return its subdirectories. */
function clearFiles(dirFd: number): string[] {
  chmodSync(via(dirFd), 0o700);
  const subdirectories: string[] = [];
  for (const entry of readdirSync(via(dirFd), { withFileTypes: true })) {
    if (entry.isDirectory()) subdirectories.push(entry.name);
    else unlinkSync(via(dirFd, entry.name));
  }
  return subdirectories;
}

/**
 * Remove `path` completely. Resolves with null when it is gone, else with
 * a sentence saying what is left and why (for the caller to report).
 */
export async function removeTree(path: string): Promise<string | null> {
  let problem = '';
  try {
    // Node's fs.rm walks by path: too deep a tree fails it, and a folder swapped for a link between its lstat and its readdir is followed.
    if (process.platform === 'linux') removeTreeByDescriptors(path);
    else await rm(path, { recursive: true, force: true, maxRetries: 2 });
  } catch (err) {
    if (errorCode(err) !== 'ENOENT') problem = errorMessage(err);
  }
  try {
    lstatSync(path);
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return null;
  }
  return `could not remove ${path}: ${problem || 'it is still there'}`;
}
