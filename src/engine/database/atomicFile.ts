// Durable whole-file replacement: write a temporary file beside the target,
// fsync it, rename it over the target, fsync the folder. A kill at any moment
// leaves either the old file or the new one, never a torn one. The new file
// keeps the old one's permissions (a 0600 database stays private), and a
// failed write (a full disk) takes its temporary file with it.
import * as fs from 'node:fs/promises';
import * as path from 'node:path';

const TEMP_SUFFIX = /\.\d+\.tmp$/;

export function tempFileFor(file: string): string {
  return `${file}.${process.pid}.tmp`;
}

export async function writeFileAtomic(file: string, data: Uint8Array | string): Promise<void> {
  const temp = tempFileFor(file);
  const mode = await fs.stat(file).then(
    (st) => st.mode & 0o7777,
    () => null,
  );
  try {
    const handle = await fs.open(temp, 'w', mode ?? 0o666);
    try {
      // open's mode passes through the umask; the old file's mode is kept exactly.
      if (mode !== null) await handle.chmod(mode);
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fs.rename(temp, file);
  } catch (err) {
    await fs.rm(temp, { force: true });
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
