// One process runs a run database at a time. Two `run` processes (or a CLI
// and an editor window) on one database would each commit their own steps
// over the other's: the lock file beside it (`RUN.sqlite.lock`) names the
// holder, and a second run is refused with that name. A lock whose process
// is gone (kill -9, a crashed window) is stale and taken over: on this host
// the holder's pid and its start time (so a reused pid is not mistaken for
// it) tell; a lock from another host (a shared folder) is never guessed at.
import { randomBytes } from 'node:crypto';
import { link, mkdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { tempFileFor } from './database/atomicFile';
import { dirname } from 'node:path';
import { hostname } from 'node:os';
import { z } from 'zod';
import { errorMessage, ThetaEvolveError } from './common/errors';
import { runLockFile } from './runFiles';

const LockFileSchema = z.object({
  pid: z.number().int(),
  host: z.string(),
  /** The process's start time in clock ticks since boot (/proc/PID/stat field 22), where there is a /proc. */
  startTicks: z.number().nullable(),
  since: z.string(),
});
type LockFile = z.infer<typeof LockFileSchema>;

/** The run is held by another process (or another run of this one). */
export class RunLockedError extends ThetaEvolveError {
  override readonly name = 'RunLockedError';
}

export interface RunLock {
  readonly file: string;
  /** Removes the lock file if it is still this one's; idempotent. */
  release(): Promise<void>;
}

/** Databases this process holds: a second run of one of them in this process is refused, not taken as stale. */
const heldHere = new Set<string>();

/** Take the run's lock, or throw RunLockedError naming who holds it. */
export async function acquireRunLock(dbFile: string): Promise<RunLock> {
  const file = runLockFile(dbFile);
  await mkdir(dirname(file), { recursive: true });
  const mine: LockFile = {
    pid: process.pid,
    host: hostname(),
    startTicks: await startTicksOf(process.pid),
    since: new Date().toISOString(),
  };
  const text = `${JSON.stringify(mine)}\n`;
  // Two tries: the second after a stale lock was moved aside.
  for (let attempt = 0; attempt < 2; attempt++) {
    if (heldHere.has(file)) throw new RunLockedError(`${dbFile} is already being run by this process: stop that run first`);
    if (await createExclusive(file, text)) {
      heldHere.add(file);
      return lockHandle(file, text);
    }
    const holder = await readLock(file);
    if (holder === 'gone') continue;
    if (holder !== 'unreadable' && (await isAlive(holder))) throw new RunLockedError(heldMessage(dbFile, file, holder));
    await moveAsideIfUnchanged(file, holder);
  }
  throw new RunLockedError(`${dbFile} is being locked by another process at the same moment (${file}): try again`);
}

/** Who runs the database now (its lock's live holder, this process included), or null: nobody, the run is stopped. Takes nothing. */
export async function runHolder(dbFile: string): Promise<{ pid: number; host: string; since: string } | null> {
  const file = runLockFile(dbFile);
  const holder = await readLock(file);
  if (holder === 'gone' || holder === 'unreadable') return null;
  if (heldHere.has(file) || (await isAlive(holder))) return { pid: holder.pid, host: holder.host, since: holder.since };
  return null;
}

function lockHandle(file: string, text: string): RunLock {
  let released = false;
  return {
    file,
    release: async () => {
      if (released) return;
      released = true;
      heldHere.delete(file);
      // Only our own lock: a lock someone took over after a stale check is theirs.
      const current = await readFile(file, 'utf8').catch(() => null);
      if (current === text) await unlink(file).catch(() => undefined);
    },
  };
}

function heldMessage(dbFile: string, file: string, holder: LockFile): string {
  const where = holder.host === hostname() ? `process ${holder.pid}` : `process ${holder.pid} on ${holder.host}`;
  const gone = holder.host === hostname() ? '' : `; if that process is gone, delete ${file}`;
  return `${dbFile} is being run by ${where} since ${holder.since}: stop that run first, or give another --db${gone}`;
}

/** Create the lock file with its whole text at once (a crash never leaves an empty lock): write aside, then link. */
async function createExclusive(file: string, text: string): Promise<boolean> {
  const temp = tempFileFor(file);
  await writeFile(temp, text, { mode: 0o644, flag: 'wx' });
  try {
    await link(temp, file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw new RunLockedError(`cannot lock ${file}: ${errorMessage(err)}`, { cause: err });
  } finally {
    await unlink(temp).catch(() => undefined);
  }
}

async function readLock(file: string): Promise<LockFile | 'gone' | 'unreadable'> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 'gone';
    throw new RunLockedError(`cannot read the lock ${file}: ${errorMessage(err)}`, { cause: err });
  }
  try {
    const parsed = LockFileSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : 'unreadable';
  } catch {
    return 'unreadable';
  }
}

/** Whether the lock's holder still runs. Another host's process cannot be checked: taken as alive. */
async function isAlive(holder: LockFile): Promise<boolean> {
  if (holder.host !== hostname()) return true;
  if (holder.pid === process.pid) return false; // not in heldHere: a lock this process left behind
  try {
    process.kill(holder.pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
  }
  // The pid runs; it is the holder unless the pid was reused by a process started later.
  const ticks = await startTicksOf(holder.pid);
  return holder.startTicks === null || ticks === null || ticks === holder.startTicks;
}

/**
 * Move a stale lock aside, but only if it is still the one judged stale:
 * another process may have taken it over between our read and now.
 */
async function moveAsideIfUnchanged(file: string, judged: LockFile | 'unreadable'): Promise<void> {
  const aside = `${file}.stale.${process.pid}.${randomBytes(4).toString('hex')}`;
  try {
    await rename(file, aside);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw new RunLockedError(`cannot replace the stale lock ${file}: ${errorMessage(err)}`, { cause: err });
  }
  const moved = await readLock(aside);
  const same =
    judged === 'unreadable' ? moved === 'unreadable' : typeof moved === 'object' && JSON.stringify(moved) === JSON.stringify(judged);
  if (!same) {
    // A live holder's fresh lock: put it back (if nobody locked meanwhile, link restores it exactly).
    await link(aside, file).catch(() => undefined);
  }
  await unlink(aside).catch(() => undefined);
}

/** Field 22 of /proc/PID/stat (after the command name, which may hold spaces and parentheses); null without /proc. */
async function startTicksOf(pid: number): Promise<number | null> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[19]);
    return Number.isFinite(ticks) ? ticks : null;
  } catch {
    return null;
  }
}
