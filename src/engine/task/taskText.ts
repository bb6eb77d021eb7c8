// Reading a task's own text files (task.json, the initial program, another
// system's evaluator and config): a folder anyone can clone may hold a link
// to /dev/zero or a multi-gigabyte file where a program should be. Only
// regular files (a link to one is fine: git stores links) under a size cap
// are read, and never more than the cap.
import { open } from 'node:fs/promises';
import { readStart } from '../boundedRead';

/** Far above any real task file, far below what would fill the extension host's memory. */
export const TASK_TEXT_MAX_BYTES = 4 * 1024 * 1024;

export type TaskTextRead = { ok: true; text: string } | { ok: false; problem: string };

export async function readTaskText(file: string, maxBytes = TASK_TEXT_MAX_BYTES): Promise<TaskTextRead> {
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
