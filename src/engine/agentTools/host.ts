// What the agent tools need from the process that serves them
// (docs/architecture.md "Agents"): which runs there are, how to read one (the
// live database this process runs, or the file read-only), how to evaluate an
// added program for a stopped run, and whether changes are allowed. The MCP
// server (`thetaevolve mcp`) and the engine worker (the editor's tools) each
// give one; the handlers (./handlers.ts) are the same for both.
import { readdir, stat } from 'node:fs/promises';
import { basename, isAbsolute, resolve } from 'node:path';
import type { RunMeta } from '../common/runMeta';
import { ProgramDatabase } from '../database/programDatabase';
import type { ClosableSteerEvaluator } from '../steering/steerRun';
import { AgentToolError } from './errors';

export interface AgentToolHost {
  /** Folders whose `*.sqlite` files are the runs (`--runs DIR`; each workspace folder's runs directory). */
  runsDirectories: readonly string[];
  /** Run databases named one by one (`--db FILE`). */
  runFiles: readonly string[];
  /** Whether tools may change a run (false in an untrusted workspace). */
  trusted: boolean;
  /** Read a run database as last committed: the live one this process runs, else the file read-only. */
  read<T>(dbFile: string, use: (db: ProgramDatabase) => T): Promise<T>;
  /** The sandboxed evaluator of a stopped run's task, for add_program. */
  openEvaluator(meta: RunMeta): Promise<ClosableSteerEvaluator>;
  /** What the run this process runs is doing or waiting for now, when it is this process's (null: not known here). */
  activity?(dbFile: string): string | null;
  /** Called after a tool changed a run's file (a cache of read-only copies drops it). */
  changed?(dbFile: string): void;
}

export interface RunRef {
  /** The file name without `.sqlite`: the run id the editor and the CLI name it by. */
  id: string;
  file: string;
}

/** Read-only reading for a host without a live run: open, use, close. */
export async function readRunFile<T>(dbFile: string, use: (db: ProgramDatabase) => T): Promise<T> {
  const db = await ProgramDatabase.openReadOnly(dbFile);
  try {
    return use(db);
  } finally {
    await db.close();
  }
}

/** Every run the host knows, the most recently changed first. */
export async function listRunRefs(host: AgentToolHost): Promise<RunRef[]> {
  const files = new Set(host.runFiles.map((f) => resolve(f)));
  for (const dir of host.runsDirectories) {
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    // Files only: a link planted in the runs folder could lead to any database on the machine.
    for (const entry of entries) if (entry.isFile() && entry.name.endsWith('.sqlite')) files.add(resolve(dir, entry.name));
  }
  const dated = await Promise.all([...files].map(async (file) => ({ file, mtime: (await stat(file).catch(() => null))?.mtimeMs ?? null })));
  return dated
    .filter((d): d is { file: string; mtime: number } => d.mtime !== null)
    .sort((a, b) => b.mtime - a.mtime)
    .map(({ file }) => ({ id: basename(file, '.sqlite'), file }));
}

/** The run an input names (its id or its file), or the only one when it names none; refused naming the runs there are. */
export async function resolveRun(host: AgentToolHost, run: string | undefined): Promise<RunRef> {
  const runs = await listRunRefs(host);
  const known = (): string =>
    runs.length === 0
      ? `no run database found (looked in ${[...host.runsDirectories, ...host.runFiles].join(', ') || 'nothing'})`
      : `the runs are: ${runs
          .slice(0, 20)
          .map((r) => r.id)
          .join(', ')}${runs.length > 20 ? ` and ${runs.length - 20} more` : ''}`;
  if (run === undefined) {
    if (runs.length === 1) return runs[0] as RunRef;
    throw new AgentToolError(
      runs.length === 0 ? `there is no run: ${known()}` : `there are ${runs.length} runs: name one with "run" (${known()})`,
    );
  }
  const asFile = isAbsolute(run) ? resolve(run) : null;
  const found = runs.find((r) => r.id === run || r.file === asFile || basename(r.file) === run);
  if (!found) throw new AgentToolError(`no run "${run}": ${known()}`);
  return found;
}
