// Where run databases live and what they are called: the one place the CLI
// and the extension name a run and find its database.
import { existsSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { defaultSettings, type Settings } from './common/config';

/** `thetaevolve.runsDirectory`'s default, from the settings table. */
export const DEFAULT_RUNS_DIRECTORY = defaultSettings().runsDirectory;

/** The runs directory of a base folder (the workspace folder, or the CLI's working directory). */
export function runsDirectoryOf(baseDir: string, settings: Pick<Settings, 'runsDirectory'>): string {
  const dir = settings.runsDirectory.trim() || DEFAULT_RUNS_DIRECTORY;
  return isAbsolute(dir) ? dir : join(baseDir, dir);
}

export function runDatabaseFile(runsDir: string, runId: string): string {
  return join(runsDir, `${runId}.sqlite`);
}

/** `<task>-YYYYMMDD-HHMMSS`: a run's id before numbering. */
export function runIdStamp(taskName: string, now = new Date()): string {
  return `${taskName}-${now.toISOString().replace(/[-:]/g, '').replace(/\..*$/, '').replace('T', '-')}`;
}

/** runIdStamp, numbered (`-2`, `-3`, ...) when a run of the same task started within the same second already has a database there. */
export function newRunId(taskName: string, runsDir: string, now = new Date()): string {
  const stamp = runIdStamp(taskName, now);
  let runId = stamp;
  for (let n = 2; existsSync(runDatabaseFile(runsDir, runId)); n++) runId = `${stamp}-${n}`;
  return runId;
}

/** The lock file of a run being run (src/engine/runLock.ts), beside its database. */
export function runLockFile(dbFile: string): string {
  return `${dbFile}.lock`;
}

/** The solution file of a run's best program, kept beside its database (what the dashboard draws). */
export function bestSolutionFile(dbFile: string): string {
  return `${dbFile}.best-solution.json`;
}

/** The folder of a run's kept evaluation outputs (src/engine/evaluationOutputs.ts), beside its database. */
export function evaluationOutputsDir(dbFile: string): string {
  return `${dbFile}.outputs`;
}

/** The steering inbox of a run (src/engine/steering/inbox.ts): requests waiting for the process that runs it. */
export function steerInboxDir(dbFile: string): string {
  return `${dbFile}.steer`;
}

/** A request to pause, resume or stop the process that runs the database (src/engine/steering/runControl.ts), beside it. */
export function runControlFile(dbFile: string): string {
  return `${dbFile}.control.json`;
}
