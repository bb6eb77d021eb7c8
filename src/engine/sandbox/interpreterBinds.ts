// The run's interpreter inside bwrap (docs/architecture.md "The researcher's
// Python"): of its prefixes (sys.prefix and sys.base_prefix) only what an
// interpreter needs (bin, lib*, include, share, a venv's pyvenv.cfg; never a
// dot-entry) is bound read-only at the same paths, so the interpreter finds
// its standard library and packages where it was installed, and nothing else
// of the home is there; a prefix that is or holds a home directory, the
// task's folder or a workspace folder is refused, named. As root, bwrap runs as the unprivileged
// user, who cannot reach a prefix below a private folder (/root/miniconda3,
// a venv in a checkout under /root): those entries are bound from a tree of
// hard links (a copy where links cannot be made) under an unguessable name in
// a 0711 folder, made once per run (without blocking: the Evaluator awaits it
// before its first bwrap); the files keep their own permissions, so nothing
// unreadable becomes readable.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { lstatSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readlink, rm } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, sep } from 'node:path';
import { errorMessage, ThetaEvolveError } from '../common/errors';

/** The system folders every sandbox has already (isolation.ts systemMounts): a prefix inside one needs no bind. */
const SYSTEM_FOLDERS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];

/** What of a prefix an interpreter needs: its programs, libraries (lib, lib64, libexec), headers, data, and a venv's marker. */
export function neededInPrefix(name: string): boolean {
  return (
    !name.startsWith('.') && (name === 'bin' || name.startsWith('lib') || name === 'include' || name === 'share' || name === 'pyvenv.cfg')
  );
}

/** The interpreter's prefix could not be made readable in the sandbox, or may not be (it holds a home, the task or a workspace folder). */
export class InterpreterBindError extends ThetaEvolveError {
  override readonly name = 'InterpreterBindError';
}

export interface InterpreterBinds {
  /** Host path -> where it appears in the sandbox (the prefix's own entries, at their own paths). */
  dirs: { hostDir: string; sandboxDir: string }[];
  /** Entries of a prefix that are links (a venv's lib64 -> lib): made as the same links in the sandbox. */
  links: { target: string; sandboxPath: string }[];
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

/** People's home directories: this user's, root's, and those of /etc/passwd's login users (uid 1000 and up, not nobody). */
export function homeDirectories(): string[] {
  const homes = new Set<string>([homedir()]);
  if (process.env.HOME && isAbsolute(process.env.HOME)) homes.add(process.env.HOME);
  try {
    for (const line of readFileSync('/etc/passwd', 'utf8').split('\n')) {
      const [, , uid, , , home] = line.split(':');
      const id = Number(uid);
      if (home && isAbsolute(home) && (id === 0 || (id >= 1000 && id !== 65534))) homes.add(home);
    }
  } catch {
    // No passwd file (a container without one): this user's home still counts.
  }
  return [...homes].filter((home) => home !== '/');
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
 * The binds that make `prefixes` usable in bwrap: those outside the system
 * folders, outermost only, each by the entries an interpreter needs;
 * `refused`: folders a prefix may neither be nor hold (homes, the task's
 * folder, the workspace folders); `runAs` (we are root, bwrap runs as that user): a prefix it
 * cannot reach comes from a linked tree in `scratchBase`.
 */
export async function interpreterBinds(
  prefixes: readonly string[],
  runAs: { uid: number } | null,
  scratchBase: string,
  refused: readonly string[] = homeDirectories(),
): Promise<InterpreterBinds> {
  const wanted = [...new Set(prefixes)]
    .filter((p) => p !== '/' && !SYSTEM_FOLDERS.some((folder) => inside(p, folder)))
    .sort((a, b) => a.length - b.length);
  const outermost = wanted.filter((p, i) => !wanted.slice(0, i).some((outer) => inside(p, outer)));
  for (const prefix of outermost) {
    const held = refused.find((folder) => inside(folder, prefix));
    if (held !== undefined)
      throw new InterpreterBindError(
        `the Python prefix ${prefix} ${held === prefix ? 'is' : 'holds'} ${held}, a home directory, the task's folder or a workspace folder, ` +
          'which the sandbox may not read: use an interpreter installed in a folder of its own (a venv, a conda environment)',
      );
  }
  const binds: InterpreterBinds = { dirs: [], links: [], made: [] };
  try {
    for (const prefix of outermost) await bindPrefix(prefix, runAs, scratchBase, binds);
  } catch (err) {
    for (const made of binds.made) await rm(made, { recursive: true, force: true });
    throw err;
  }
  return binds;
}

/** One prefix's needed entries into `binds`: bound where they are, or (root, unreachable) from a linked tree. */
async function bindPrefix(prefix: string, runAs: { uid: number } | null, scratchBase: string, binds: InterpreterBinds): Promise<void> {
  let names: string[];
  try {
    names = readdirSync(prefix).filter(neededInPrefix).sort();
  } catch (err) {
    throw new InterpreterBindError(`cannot make the Python prefix ${prefix} readable in the sandbox: ${errorMessage(err)}`, { cause: err });
  }
  const entries: string[] = [];
  for (const name of names) {
    const path = join(prefix, name);
    // A link stays a link (a venv's lib64 -> lib): it names what the sandbox has, nothing more is bound for it.
    if (lstatSync(path).isSymbolicLink()) binds.links.push({ target: await readlink(path), sandboxPath: path });
    else entries.push(name);
  }
  if (!runAs || reachableByOthers(prefix)) {
    for (const name of entries) binds.dirs.push({ hostDir: join(prefix, name), sandboxDir: join(prefix, name) });
    return;
  }
  // Others may traverse the holder but not list it: the tree's name inside is the secret.
  const holder = await mkdtemp(join(scratchBase, 'thetaevolve-python-'));
  binds.made.push(holder);
  await chmod(holder, 0o711);
  const tree = join(holder, randomBytes(16).toString('hex'));
  await mkdir(tree, { mode: 0o755 });
  await chmod(tree, 0o755);
  for (const name of entries) {
    // GNU cp: hard links keep it cheap for a large conda environment; across filesystems a copy.
    const notLinked = await run('cp', ['-a', '--link', join(prefix, name), join(tree, name)]);
    if (notLinked !== null) {
      await rm(join(tree, name), { recursive: true, force: true });
      const notCopied = await run('cp', ['-a', join(prefix, name), join(tree, name)]);
      if (notCopied !== null)
        throw new InterpreterBindError(
          `cannot make the Python prefix ${prefix} readable in the sandbox: ${notCopied.trim().split('\n')[0] ?? ''}`,
        );
    }
    binds.dirs.push({ hostDir: join(tree, name), sandboxDir: join(prefix, name) });
  }
}
