// The researcher's Python as a run records it (docs/architecture.md "The
// researcher's Python"): which interpreter ran everything, its version and
// the versions of the packages results depend on. One shape for the run
// meta, the run_started event, the dashboard and Compare Runs.
import { z } from 'zod';

/** Where the interpreter came from, in the order it is looked for. */
export const PYTHON_SOURCES = [
  'thetaevolve.python',
  'python extension',
  'python.defaultInterpreterPath',
  '--python',
  'VIRTUAL_ENV',
  'CONDA_PREFIX',
  'PATH',
  'default',
] as const;
export const PythonSourceSchema = z.enum(PYTHON_SOURCES);
export type PythonSource = z.infer<typeof PythonSourceSchema>;

export const PythonEnvironmentSchema = z.object({
  /**
   * The interpreter every Python command of the run starts (absolute; sys.executable, so a pyenv shim names the real
   * one, with a link outside its prefix followed to where the sandbox has it: interpreter.ts runnableExecutable).
   */
  executable: z.string(),
  /** The path the researcher named (a link on PATH, a shim), where it is not `executable` itself. */
  named: z.string().optional(),
  /** Which source of the order chose it. */
  source: PythonSourceSchema,
  /** "3.11.2". */
  version: z.string(),
  /** sys.prefix and sys.base_prefix, resolved (the folders a sandboxed candidate must be able to read). */
  prefixes: z.array(z.string()),
  /** Versions of the packages results depend on (numpy, scipy when present, and what the programs import), by name; absent ones are left out. */
  packages: z.record(z.string(), z.string()),
});
export type PythonEnvironment = z.infer<typeof PythonEnvironmentSchema>;

/** "Python 3.11.2 (/usr/bin/python3.11 named as ~/bin/python3; numpy 1.24.2, scipy 1.10.1)": one line for headers. */
export function describePythonEnvironment(env: PythonEnvironment): string {
  const packages = Object.entries(env.packages)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, version]) => `${name} ${version}`);
  const named = env.named !== undefined && env.named !== env.executable ? ` named as ${env.named}` : '';
  return `Python ${env.version} (${env.executable}${named}${packages.length > 0 ? `; ${packages.join(', ')}` : ''})`;
}

/**
 * What differs between two runs' environments, one phrase each ("scipy
 * 1.10.1 vs 1.17.0"); empty when they match or one is unknown (older runs
 * recorded none). Where the interpreter lives is not a difference by itself.
 */
export function pythonEnvironmentDifferences(a: PythonEnvironment | null, b: PythonEnvironment | null): string[] {
  if (!a || !b) return [];
  const differences: string[] = [];
  if (a.version !== b.version) differences.push(`Python ${a.version} vs ${b.version}`);
  const names = [...new Set([...Object.keys(a.packages), ...Object.keys(b.packages)])].sort();
  for (const name of names) {
    const left = a.packages[name] ?? 'absent';
    const right = b.packages[name] ?? 'absent';
    if (left !== right) differences.push(`${name} ${left} vs ${right}`);
  }
  return differences;
}
