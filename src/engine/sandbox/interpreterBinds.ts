// The run's interpreter inside bwrap (docs/architecture.md "The researcher's
// Python"): its prefixes (sys.prefix and sys.base_prefix) are bound
// read-only at the same paths, so the interpreter finds its standard library
// and packages where it was installed, and nothing else of the home is
// there. As root, bwrap runs as the unprivileged user, who cannot reach a
// prefix below a private folder (/root/miniconda3, a venv in a checkout
// under /root): that prefix is bound from a tree of hard links (a copy where
// links cannot be made) in a folder that user can traverse, made once per
// run (without blocking: the Evaluator awaits it before its first bwrap);
// the files keep their own permissions, so nothing unreadable becomes readable.
import { execFile } from 'node:child_process';
import { statSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { dirname, join, sep } from 'node:path';
import { errorMessage, ThetaEvolveError } from '../common/errors';

/** The system folders every sandbox has already (isolation.ts systemMounts): a prefix inside one needs no bind. */
const SYSTEM_FOLDERS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];

/** The interpreter's prefix could not be made readable in the sandbox. */
export class InterpreterBindError extends ThetaEvolveError {
  override readonly name = 'InterpreterBindError';
}

export interface InterpreterBinds {
  /** Host folder -> where it appears in the sandbox (the prefix's own path). */
  dirs: { hostDir: string; sandboxDir: string }[];
  /** Folders made for the binds, removed when the run's evaluator closes. */
  made: string[];
}

function inside(path: string, folder: string): boolean {
  return path === folder || path.startsWith(folder.endsWith(sep) ? folder : folder + sep);
}

/** Whether others (the unprivileged user) can reach and list `path`: every folder above it searchable, itself readable too. */
export function reachableByOthers(path: string): boolean {
  try {
    if ((statSync(path).mode & 0o005) !== 0o005) return false;
    for (let dir = dirname(path); ; dir = dirname(dir)) {
      if ((statSync(dir).mode & 0o001) === 0) return false;
      if (dir === dirname(dir)) return true;
    }
  } catch {
    return false;
  }
}

/** Run a command without blocking the event loop (a large environment takes seconds to link); its stderr when it fails, else null. */
function run(file: string, args: readonly string[]): Promise<string | null> {
  return new Promise((resolvePromise) => {
    execFile(file, [...args], { maxBuffer: 1024 * 1024 }, (err, _stdout, stderr) =>
      resolvePromise(err ? stderr || errorMessage(err) : null),
    );
  });
}

/**
 * The binds that make `prefixes` readable in bwrap: those outside the
 * system folders, outermost only; `runAs` (we are root, bwrap runs as that
 * user): a prefix it cannot reach comes from a linked tree in `scratchBase`.
 */
export async function interpreterBinds(
  prefixes: readonly string[],
  runAs: { uid: number } | null,
  scratchBase: string,
): Promise<InterpreterBinds> {
  const wanted = [...new Set(prefixes)]
    .filter((p) => p !== '/' && !SYSTEM_FOLDERS.some((folder) => inside(p, folder)))
    .sort((a, b) => a.length - b.length);
  const outermost = wanted.filter((p, i) => !wanted.slice(0, i).some((outer) => inside(p, outer)));
  const binds: InterpreterBinds = { dirs: [], made: [] };
  for (const prefix of outermost) {
    if (!runAs || reachableByOthers(prefix)) {
      binds.dirs.push({ hostDir: prefix, sandboxDir: prefix });
      continue;
    }
    const holder = await mkdtemp(join(scratchBase, 'thetaevolve-python-'));
    binds.made.push(holder);
    await chmod(holder, 0o755);
    const tree = join(holder, 'prefix');
    // GNU cp: hard links keep it cheap for a large conda environment; across filesystems a copy.
    const notLinked = await run('cp', ['-a', '--link', prefix, tree]);
    if (notLinked !== null) {
      await rm(tree, { recursive: true, force: true });
      const notCopied = await run('cp', ['-a', prefix, tree]);
      if (notCopied !== null) {
        for (const made of binds.made) await rm(made, { recursive: true, force: true });
        throw new InterpreterBindError(
          `cannot make the Python prefix ${prefix} readable in the sandbox: ${notCopied.trim().split('\n')[0] ?? ''}`,
        );
      }
    }
    binds.dirs.push({ hostDir: tree, sandboxDir: prefix });
  }
  return binds;
}
