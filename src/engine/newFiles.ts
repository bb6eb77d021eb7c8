// Files written for a person (a converted task folder, a new task, the copy
// of a bundled task's starting program) are new files: created with O_EXCL,
// so a link planted at the name, even a dangling one, is refused and never
// followed (`convert` in a cloned folder holding `converted_evaluator.py ->
// ~/.bashrc` would have overwritten the target), and nothing is overwritten.
// A folder written into must really be inside the folder it belongs to.
import { constants } from 'node:fs';
import { copyFile, lstat, realpath, writeFile } from 'node:fs/promises';
import { isAbsolute, relative } from 'node:path';
import { ThetaEvolveError } from './common/errors';

/** A file could not be written as a new file, or a folder is not where it belongs; the message says which and why. */
export class NewFileError extends ThetaEvolveError {
  override readonly name = 'NewFileError';
}

async function refusal(file: string, err: unknown): Promise<unknown> {
  if ((err as NodeJS.ErrnoException).code !== 'EEXIST') return err;
  const link = (await lstat(file).catch(() => null))?.isSymbolicLink() === true;
  return new NewFileError(
    link
      ? `${file} is a symbolic link: refused (a new file is never written through a link); remove it and try again`
      : `${file} already exists: refused (nothing is overwritten); move it away and try again`,
    { cause: err },
  );
}

/** Write `text` to `file`, which must not exist (not even as a link). */
export async function writeNewFile(file: string, text: string): Promise<void> {
  try {
    await writeFile(file, text, { flag: 'wx' });
  } catch (err) {
    throw await refusal(file, err);
  }
}

/** Copy `from` to `to`, which must not exist (not even as a link). */
export async function copyToNewFile(from: string, to: string): Promise<void> {
  try {
    await copyFile(from, to, constants.COPYFILE_EXCL);
  } catch (err) {
    throw await refusal(to, err);
  }
}

/** Throws unless `folder`, links followed, is `root` or inside it (both must exist). */
export async function assertFolderInside(folder: string, root: string): Promise<void> {
  const [real, realRoot] = await Promise.all([realpath(folder), realpath(root)]);
  const rel = relative(realRoot, real);
  if (rel.startsWith('..') || isAbsolute(rel))
    throw new NewFileError(`${folder} resolves to ${real}, outside ${root}: refused (a link out of the folder is not written through)`);
}
