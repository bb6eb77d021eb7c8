// Reading the start of an open file, at most so many bytes: what a file we
// do not trust (a candidate's solution, a cloned task's program) may hand us
// is never more than we asked for, however it grows while being read.
import type { FileHandle } from 'node:fs/promises';

/** Up to `bytes` bytes from the start of the file (fewer at its end). */
export async function readStart(handle: FileHandle, bytes: number): Promise<Buffer> {
  const buffer = Buffer.alloc(bytes);
  let length = 0;
  while (length < buffer.length) {
    const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
    if (bytesRead === 0) break;
    length += bytesRead;
  }
  return buffer.subarray(0, length);
}
