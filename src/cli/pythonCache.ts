// A SLURM job's interpreter, asked once per node and run: the first job of a
// run on a node asks the interpreter what it is (version, prefixes) and keeps
// the answer in the run's private staging folder; the node's later jobs read it
// instead of starting Python again before their candidates (bench
// slurm-step-overhead, its setup phase).
import { createHash } from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { type PythonEnvironment, PythonEnvironmentSchema } from '../engine/common/pythonEnvironment';
import type { PythonChoice } from '../engine/python/interpreter';
import { writeFileAtomic } from '../engine/database/atomicFile';

/** What `choice` is on this host: from `dir` when a job of the run asked already, else from `probe` (then kept there). */
export async function cachedPython(dir: string, choice: PythonChoice, probe: () => Promise<PythonEnvironment>): Promise<PythonEnvironment> {
  const key = createHash('sha256').update(`${hostname()}\0${choice.path}\0${choice.source}`).digest('hex').slice(0, 24);
  const file = join(dir, `python-${key}.json`);
  const kept = await readFile(file, 'utf8').then(
    (text) => PythonEnvironmentSchema.safeParse(JSON.parse(text) as unknown),
    () => null,
  );
  if (kept?.success) return kept.data;
  const environment = await probe();
  // Best effort: without it the next job asks the interpreter itself.
  await mkdir(dir, { recursive: true, mode: 0o700 })
    .then(() => writeFileAtomic(file, JSON.stringify(environment), 0o600))
    .catch(() => undefined);
  return environment;
}
