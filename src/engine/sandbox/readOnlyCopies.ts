// The host folders a candidate may read (another system's task folder, our
// evaluator wrapper) reach the sandbox as copies, never bound whole: the
// copy leaves out dotfiles and dot-folders (.env, .git, .thetaevolve with
// other runs' databases) and run databases, and everyone may read it, so the
// unprivileged sandbox user can also when the folder sits below a private
// (0700) one, as a checkout under /root does.
import { chmodSync, cpSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { errorMessage, ThetaEvolveError } from '../common/errors';

/** A folder the task gives its candidates could not be copied for the sandbox (missing, unreadable, a full disk). */
export class ReadOnlyCopyError extends ThetaEvolveError {
  override readonly name = 'ReadOnlyCopyError';
}

/** What a copy leaves out: hidden entries, Python caches and run databases (and what sits beside them). */
export function keptInCopy(path: string): boolean {
  const name = basename(path);
  return !name.startsWith('.') && name !== '__pycache__' && !/\.sqlite(\.|$)/.test(name);
}

/** A readable copy of each folder in `scratchDir`, by the same names; remove them with removeTree when done. */
export function readOnlyCopies(dirs: Readonly<Record<string, string>>, scratchDir: string): Record<string, string> {
  const copies: Record<string, string> = {};
  for (const [name, hostDir] of Object.entries(dirs)) {
    const copy = mkdtempSync(join(scratchDir, `thetaevolve-ro-${name}-`));
    try {
      cpSync(hostDir, copy, { recursive: true, filter: (source) => source === hostDir || keptInCopy(source) });
    } catch (err) {
      for (const made of [copy, ...Object.values(copies)]) rmSync(made, { recursive: true, force: true });
      throw new ReadOnlyCopyError(`cannot copy ${hostDir} (the task's {${name}}) for the sandbox: ${errorMessage(err)}`, { cause: err });
    }
    for (const entry of readdirSync(copy, { recursive: true, withFileTypes: true })) {
      if (entry.isSymbolicLink()) continue; // chmod would follow it
      const path = join(entry.parentPath, entry.name);
      // Readable by all; what could be run (a directory, an executable) stays so.
      chmodSync(path, entry.isDirectory() || (statSync(path).mode & 0o111) !== 0 ? 0o755 : 0o644);
    }
    chmodSync(copy, 0o755);
    copies[name] = copy;
  }
  return copies;
}
