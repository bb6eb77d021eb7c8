// Reading a task's own text files (task.json, the initial program, another
// system's evaluator and config): a folder anyone can clone may hold a link
// to /dev/zero or a multi-gigabyte file where a program should be. Only
// regular files (a link to one is fine: git stores links) under a size cap
// are read, and never more than the cap. A link must resolve inside the
// task's folder: an initial program linked to ~/.aws/credentials would
// otherwise be read, shown and sent to the model.
import { open, realpath } from 'node:fs/promises';
import { isAbsolute, relative } from 'node:path';
import { readStart } from '../boundedRead';

/** Far above any real task file, far below what would fill the extension host's memory. */
export const TASK_TEXT_MAX_BYTES = 4 * 1024 * 1024;

export type TaskTextRead = { ok: true; text: string } | { ok: false; problem: string };

/** Where `file` really is when that is outside `folder` (links followed), else null. */
async function outside(file: string, folder: string): Promise<string | null> {
  const [real, root] = await Promise.all([realpath(file), realpath(folder)]);
  const rel = relative(root, real);
  return rel.startsWith('..') || isAbsolute(rel) ? real : null;
}

/** `file`'s text; with `within`, only when `file` (links followed) is inside that folder. */
export async function readTaskText(file: string, within?: string, maxBytes = TASK_TEXT_MAX_BYTES): Promise<TaskTextRead> {
  if (within !== undefined) {
    try {
      const real = await outside(file, within);
      if (real !== null)
        return { ok: false, problem: `resolves to ${real}, outside the task folder ${within} (a link out of the folder is not read)` };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      return { ok: false, problem: code === 'ENOENT' ? 'no such file' : `cannot be resolved (${code ?? 'error'})` };
    }
  }
  let handle;
  try {
    handle = await open(file, 'r');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return { ok: false, problem: code === 'ENOENT' ? 'no such file' : `cannot be opened (${code ?? 'error'})` };
  }
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) return { ok: false, problem: 'is not a regular file (a device, a pipe or a folder)' };
    if (stats.size > maxBytes) return { ok: false, problem: `is ${stats.size} bytes, over the ${maxBytes} a task's file may hold` };
    // One byte more than stat says (never past the cap), to notice a file still growing.
    const bytes = await readStart(handle, Math.min(stats.size, maxBytes) + 1);
    if (bytes.length > stats.size) return { ok: false, problem: 'changed while being read' };
    return { ok: true, text: bytes.toString('utf8') };
  } catch (err) {
    return { ok: false, problem: `cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})` };
  } finally {
    await handle.close();
  }
}
