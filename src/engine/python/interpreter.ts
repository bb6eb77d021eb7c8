// The one interpreter a run uses for everything that runs Python
// (docs/architecture.md "The researcher's Python"): chosen in the command
// line's order here (the editor puts its own sources first, in
// src/vscode/pythonInterpreter.ts), then asked what it is: its real path,
// version, prefixes (for the sandbox) and the versions of the packages
// results depend on.
import { execFile } from 'node:child_process';
import { readlink, realpath } from 'node:fs/promises';
import { basename, delimiter, dirname, isAbsolute, join, resolve, sep } from 'node:path';
import { z } from 'zod';
import { errorMessage, ThetaEvolveError } from '../common/errors';
import { firstExecutable } from '../executables';
import type { PythonEnvironment, PythonSource } from '../common/pythonEnvironment';
import type { Task } from '../task/task';

/** The interpreter before anything ran it: the path as given and where it came from. */
export interface PythonChoice {
  path: string;
  source: PythonSource;
}

/** What runs Python where nothing was chosen (tests and callers without a run): Debian's, as before. */
export const DEFAULT_PYTHON = '/usr/bin/python3';

/** The interpreter cannot run (missing, not executable, not a Python): an infrastructure failure, never a score. */
export class PythonUnavailableError extends ThetaEvolveError {
  override readonly name = 'PythonUnavailableError';
}

/** Packages recorded for every run when present: results differ between their versions. */
export const ALWAYS_RECORDED_PACKAGES = ['numpy', 'scipy'] as const;

/** The first executable `name` on PATH, in PATH's order (an activated environment's bin comes first). */
export function onPath(name: string, pathVariable: string | undefined): string | null {
  // No PATH at all: the search path execvp uses then.
  return firstExecutable(
    name,
    (pathVariable ?? '/usr/bin:/bin').split(delimiter).filter((dir) => isAbsolute(dir)),
  );
}

/** An environment folder's interpreter (bin/python of a venv or a conda environment). */
function environmentPython(prefix: string): string {
  return process.platform === 'win32' ? join(prefix, 'python.exe') : join(prefix, 'bin', 'python');
}

/** A path as given by a person: absolute as it is, relative to `cwd`, or a bare name looked up on PATH. */
export function interpreterPath(given: string, env: NodeJS.ProcessEnv, cwd = process.cwd()): string {
  if (given.includes('/') || given.includes('\\')) return resolve(cwd, given);
  return onPath(given, env.PATH) ?? given;
}

/** After the editor's own sources (or the CLI's --python): an activated environment, then python3 on PATH. */
export function pythonFromEnvironment(env: NodeJS.ProcessEnv): PythonChoice {
  if (env.VIRTUAL_ENV) return { path: environmentPython(env.VIRTUAL_ENV), source: 'VIRTUAL_ENV' };
  if (env.CONDA_PREFIX) return { path: environmentPython(env.CONDA_PREFIX), source: 'CONDA_PREFIX' };
  return { path: onPath('python3', env.PATH) ?? 'python3', source: 'PATH' };
}

/** The command line's order: --python PATH, then VIRTUAL_ENV, CONDA_PREFIX, then python3 on PATH. */
export function pythonFromCommandLine(flag: string | undefined, env: NodeJS.ProcessEnv, cwd = process.cwd()): PythonChoice {
  if (flag !== undefined && flag.trim() !== '') return { path: interpreterPath(flag.trim(), env, cwd), source: '--python' };
  return pythonFromEnvironment(env);
}

const ProbeReplySchema = z.object({
  executable: z.string().min(1),
  version: z.string().min(1),
  prefixes: z.array(z.string().min(1)),
  packages: z.record(z.string(), z.string()),
});

// Asks the interpreter about itself; importlib.metadata reads versions without importing the packages.
// With no module named (a SLURM job's evaluate) it skips importlib.metadata, whose scan of every installed
// distribution is most of the probe's time.
const PROBE_SCRIPT = `
import json, os, sys
metadata, distributions = None, {}
if len(sys.argv) > 1:
    try:
        from importlib import metadata
        try:
            distributions = metadata.packages_distributions()
        except Exception:
            distributions = {}
    except ImportError:
        metadata = None
packages = {}
for module in sys.argv[1:]:
    if metadata is None or module in getattr(sys, "stdlib_module_names", ()):
        continue
    for name in distributions.get(module, [module]):
        try:
            packages[name.lower()] = metadata.version(name)
            break
        except Exception:
            pass
print(json.dumps({
    "executable": sys.executable,
    "version": "%d.%d.%d" % tuple(sys.version_info[:3]),
    "prefixes": sorted({os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix)}),
    "packages": packages,
}))
`;

const PROBE_TIMEOUT_MS = 30000;

/** Whether a task runs Python at all: a Python program, or {python} (or a python executable) in its commands. */
export function taskUsesPython(task: Pick<Task, 'language' | 'candidateCommand' | 'evaluatorCommand'>): boolean {
  return (
    task.language === 'py' || [...task.candidateCommand, ...task.evaluatorCommand].some((arg) => /\{python\}|python[0-9.]*$/.test(arg))
  );
}

/** Top-level modules a Python program imports (a cheap scan of its import lines; what it imports inside functions counts too). */
export function importedModules(code: string): string[] {
  const modules = new Set<string>();
  for (const match of code.matchAll(/^\s*(?:from\s+([A-Za-z_][\w]*)[\w.]*\s+import\b|import\s+([^#\n]+))/gm)) {
    if (match[1]) modules.add(match[1]);
    else
      for (const part of (match[2] ?? '').split(',')) {
        const name = /^\s*([A-Za-z_]\w*)/.exec(part)?.[1];
        if (name) modules.add(name);
      }
  }
  return [...modules].sort();
}

/** Links followed at most (the kernel's own limit on a chain is 40). */
const MAX_LINKS = 40;

function insideFolder(path: string, folder: string): boolean {
  return path === folder || path.startsWith(folder.endsWith(sep) ? folder : folder + sep);
}

/**
 * The path to start so that the interpreter is the same one inside the
 * sandbox, where only its prefixes are (docs/architecture.md "The
 * researcher's Python"): along the chain of links from `executable` (a link
 * on PATH: ~/bin/python3, uv's ~/.local/bin/python3.12, update-alternatives,
 * relative or absolute), the first one whose folder lies inside a prefix,
 * with that folder's own links resolved. A venv's bin/python3 (itself a link
 * to the base interpreter) is inside the venv, so it stays the venv; a link
 * outside every prefix is followed to the interpreter it names, which Python
 * itself resolves the same way to find its prefix. Null when the chain never
 * enters a prefix (the path as reported then).
 */
export async function runnableExecutable(executable: string, prefixes: readonly string[]): Promise<string | null> {
  let current = executable;
  for (let links = 0; links <= MAX_LINKS; links++) {
    const folder = await realpath(dirname(current)).catch(() => null);
    if (folder === null) return null;
    const here = join(folder, basename(current));
    if (prefixes.some((prefix) => insideFolder(here, prefix))) return here;
    const target = await readlink(here).catch(() => null);
    if (target === null) return null;
    current = resolve(folder, target);
  }
  return null;
}

/** The interpreter's answer to the probe, or PythonUnavailableError naming it (`where`). */
function askInterpreter(path: string, names: readonly string[], where: string): Promise<z.infer<typeof ProbeReplySchema>> {
  return new Promise<string>((resolvePromise, reject) => {
    // Its own environment as the person's shell has it (a pyenv shim needs PYENV_ROOT): this is their interpreter, not a candidate.
    execFile(
      path,
      // -I: as candidates see it (no PYTHONPATH, no user site: they run without either), and never a module of the current folder.
      ['-I', '-c', PROBE_SCRIPT, ...names],
      { cwd: '/', timeout: PROBE_TIMEOUT_MS, maxBuffer: 1024 * 1024, env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' } },
      (err, out, stderr) => {
        if (!err) return resolvePromise(out);
        const code = (err as NodeJS.ErrnoException).code;
        const why =
          code === 'ENOENT'
            ? 'does not exist'
            : code === 'EACCES'
              ? 'is not executable'
              : `cannot run: ${(stderr.trim().split('\n').pop() ?? '') || errorMessage(err)}`;
        reject(new PythonUnavailableError(`${where} ${why}`, { cause: err }));
      },
    );
  }).then((stdout) => {
    try {
      return ProbeReplySchema.parse(JSON.parse(stdout.trim().split('\n').pop() ?? ''));
    } catch (err) {
      throw new PythonUnavailableError(`${where} did not answer as a Python 3 interpreter does`, { cause: err });
    }
  });
}

/**
 * Run the chosen interpreter once and say what it is. `modules`: what the
 * run's programs import, recorded with numpy and scipy when installed
 * (`packages: false`: no package versions, where only the interpreter and
 * its prefixes matter and time does: a SLURM job's evaluate).
 * Throws PythonUnavailableError, one line naming the interpreter, when it
 * cannot run, or cannot be started from inside its own prefixes.
 */
export async function probePython(
  choice: PythonChoice,
  modules: readonly string[] = [],
  options: { packages?: boolean } = {},
): Promise<PythonEnvironment> {
  const names = options.packages === false ? [] : [...new Set([...ALWAYS_RECORDED_PACKAGES, ...modules])];
  const where = `the Python interpreter ${choice.path} (from ${choice.source})`;
  if (!isAbsolute(choice.path))
    throw new PythonUnavailableError(`${where} was not found on PATH; give one with --python PATH or the setting thetaevolve.python`);
  const reply = await askInterpreter(choice.path, names, where);
  // sys.executable is empty where Python cannot tell: the path as given then.
  const reported = isAbsolute(reply.executable) ? reply.executable : choice.path;
  const executable = (await runnableExecutable(reported, reply.prefixes)) ?? reported;
  // Where the link chain ends (its real path) is where Python itself looks for its prefix: the same interpreter by
  // construction. Stopped earlier (inside a prefix, at a link of its own), it is asked once more.
  if (executable !== reported && executable !== (await realpath(reported).catch(() => null))) {
    // Started from where the link leads, it must still be the same interpreter with the same prefixes (a venv stays the venv).
    const direct = await askInterpreter(executable, [], `${where}, started as ${executable},`);
    if (direct.version !== reply.version || direct.prefixes.join('\0') !== reply.prefixes.join('\0'))
      throw new PythonUnavailableError(
        `${where} is ${reported}, which the sandbox cannot start: ${executable}, where it leads, is another environment ` +
          `(prefix ${direct.prefixes.join(', ')} instead of ${reply.prefixes.join(', ')}); name the interpreter inside its environment's bin folder`,
      );
  }
  return {
    executable,
    ...(choice.path !== executable ? { named: choice.path } : {}),
    source: choice.source,
    version: reply.version,
    prefixes: reply.prefixes,
    packages: reply.packages,
  };
}
