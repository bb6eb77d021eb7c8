// The host folders a candidate may read (another system's task folder, our
// evaluator wrapper) reach the sandbox as copies, never bound whole: the
// copy leaves out dotfiles and dot-folders (.env, .git, .thetaevolve with
// other runs' databases) and run databases, and a config's keys and endpoints
// (api_key, api_base: a release config's llm section) are blanked. The copy
// is owner-only (the sandbox runs as us); as root the sandbox runs as the
// unprivileged user, so the copy is readable by others but sits under an
// unguessable name in a 0711 folder nobody else can list (a checkout under a
// private /root stays private): docs/architecture.md "Sandbox".
import { randomBytes } from 'node:crypto';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
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

/** A YAML config's api_key and api_base values (the release's llm section, each model's) blanked, the rest as it was. */
export function withoutKeys(yaml: string): string {
  return yaml.replace(/^(\s*-?\s*(?:api_key|api_base)\s*:)[^\n]*$/gm, '$1 ""');
}

/** The task's folders as the sandbox reads them, by name, and the folders made for them (remove with removeTree when done). */
export interface ReadOnlyCopies {
  copies: Record<string, string>;
  made: string[];
}

/** A copy of each folder in `scratchDir`; `forOthers`: the sandbox runs as another user (we are root), who must read it. */
export function readOnlyCopies(dirs: Readonly<Record<string, string>>, scratchDir: string, forOthers: boolean): ReadOnlyCopies {
  const result: ReadOnlyCopies = { copies: {}, made: [] };
  for (const [name, hostDir] of Object.entries(dirs)) {
    const holder = mkdtempSync(join(scratchDir, `thetaevolve-ro-${name}-`));
    result.made.push(holder);
    // mkdtemp's folder is 0700: as root, others may pass through it but never list it, so the copy's name is the secret.
    const copy = forOthers ? join(holder, randomBytes(16).toString('hex')) : holder;
    try {
      if (forOthers) {
        chmodSync(holder, 0o711);
        mkdirSync(copy, { mode: 0o700 });
      }
      cpSync(hostDir, copy, { recursive: true, filter: (source) => source === hostDir || keptInCopy(source) });
      restrictCopy(copy, forOthers);
    } catch (err) {
      for (const made of result.made) rmSync(made, { recursive: true, force: true });
      throw new ReadOnlyCopyError(`cannot copy ${hostDir} (the task's {${name}}) for the sandbox: ${errorMessage(err)}`, { cause: err });
    }
    result.copies[name] = copy;
  }
  return result;
}

/** Modes as the sandbox needs them (owner-only, or readable by others as root), and configs without keys. */
function restrictCopy(copy: string, forOthers: boolean): void {
  for (const entry of readdirSync(copy, { recursive: true, withFileTypes: true })) {
    if (entry.isSymbolicLink()) continue; // chmod would follow it
    const path = join(entry.parentPath, entry.name);
    if (entry.isFile() && /\.ya?ml$/.test(entry.name)) {
      const text = readFileSync(path, 'utf8');
      const blanked = withoutKeys(text);
      if (blanked !== text) writeFileSync(path, blanked);
    }
    // What could be run (a directory, an executable) stays so.
    const runnable = entry.isDirectory() || (statSync(path).mode & 0o100) !== 0;
    chmodSync(path, forOthers ? (runnable ? 0o755 : 0o644) : runnable ? 0o700 : 0o600);
  }
  chmodSync(copy, forOthers ? 0o755 : 0o700);
}
