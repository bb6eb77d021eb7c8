// Durable whole-file replacement: write a temporary file beside the target,
// fsync it, rename it over the target, fsync the folder. A kill at any moment
// leaves either the old file or the new one, never a torn one. The new file
// keeps the old one's permissions (a 0600 database stays private) and, when
// root replaces another user's file, its owner; a failed write (a full disk)
// takes its temporary file with it. A file marked read-only is never
// replaced, as root too (root's writes pass every permission check, and a
// rename needs only the folder's). The temporary file's name is unguessable
// and it is created with O_EXCL: a link planted beside the target (at a
// `<file>.<pid>.tmp` name, say) is never written through. Every whole-file
// replacement goes through here.
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { ThetaEvolveError } from '../common/errors';

/** The file exists and no one may write it (no write bit in its mode): it is left as it is. */
export class ReadOnlyFileError extends ThetaEvolveError {
  override readonly name = 'ReadOnlyFileError';
}

/** Why `file` must not be written (its mode has no write bit), or null when it may be (or does not exist). */
export function readOnlyMark(mode: number): string | null {
  return (mode & 0o222) === 0 ? `marked read-only (mode ${(mode & 0o7777).toString(8).padStart(4, '0')})` : null;
}

/** Ours (random hex), and those of versions that named them by process id. */
const TEMP_SUFFIX = /^\.[0-9a-f]+\.tmp$/;

/** A new, unguessable temporary name beside `file`: create it with O_EXCL ('wx'), never follow what is there. */
export function tempFileFor(file: string): string {
  return `${file}.${randomBytes(8).toString('hex')}.tmp`;
}

/**
 * Replace `file` with `data` atomically. A new file gets `newFileMode`
 * (0o666 less the umask unless given: 0o600 for a private one); a replaced
 * one keeps its own mode and owner.
 */
export async function writeFileAtomic(file: string, data: Uint8Array | string, newFileMode?: number): Promise<void> {
  const temp = tempFileFor(file);
  const old = await fs.stat(file).catch(() => null);
  const mode = old ? old.mode & 0o7777 : null;
  const mark = mode === null ? null : readOnlyMark(mode);
  if (mark) throw new ReadOnlyFileError(`${file} is ${mark}: not written; make it writable (chmod u+w) to let ThetaEvolve write it`);
  let created = false;
  try {
    const handle = await fs.open(temp, 'wx', mode ?? newFileMode ?? 0o666);
    created = true;
    try {
      // open's mode passes through the umask; the old file's mode is kept exactly.
      if (mode !== null) await handle.chmod(mode);
      // Root replacing another user's file leaves it theirs (only root may give a file away).
      if (old && process.getuid?.() === 0 && (old.uid !== 0 || old.gid !== 0)) await handle.chown(old.uid, old.gid);
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fs.rename(temp, file);
  } catch (err) {
    // Only a file this call made is removed: what stood at the name (it never should) is not ours.
    if (created) await fs.rm(temp, { force: true });
    throw err;
  }
  await syncFolder(path.dirname(file));
}

async function syncFolder(folder: string): Promise<void> {
  let handle: fs.FileHandle | undefined;
  try {
    handle = await fs.open(folder, 'r');
    await handle.sync();
  } catch {
    // Some platforms (Windows) cannot open or fsync a folder; the rename is still atomic there.
  } finally {
    await handle?.close();
  }
}

/** Remove temporary files a killed writer left beside `file`. */
export async function removeStaleTempFiles(file: string): Promise<void> {
  const folder = path.dirname(file);
  const base = path.basename(file);
  let names: string[];
  try {
    names = await fs.readdir(folder);
  } catch {
    return;
  }
  for (const name of names) {
    if (name.startsWith(`${base}.`) && TEMP_SUFFIX.test(name.slice(base.length))) {
      await fs.rm(path.join(folder, name), { force: true });
    }
  }
}
