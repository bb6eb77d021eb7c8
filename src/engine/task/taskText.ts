// Reading a task's own text files (task.json, the initial program, another
// system's evaluator and config): a folder anyone can clone may hold a link
// to /dev/zero or a multi-gigabyte file where a program should be. Only
// regular files (a link to one is fine: git stores links) under a size cap
// are read, and never more than the cap.
import { open } from 'node:fs/promises';

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
    const buffer = Buffer.alloc(Math.min(stats.size, maxBytes) + 1);
    let length = 0;
    while (length < buffer.length) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    if (length > maxBytes) return { ok: false, problem: `grew past the ${maxBytes} bytes a task's file may hold while being read` };
    return { ok: true, text: buffer.subarray(0, length).toString('utf8') };
  } catch (err) {
    return { ok: false, problem: `cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})` };
  } finally {
    await handle.close();
  }
}
