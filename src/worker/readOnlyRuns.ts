// The run databases the engine worker keeps open read-only between queries
// (the Runs view, the dashboard and Compare Runs ask often; a paper-scale run
// takes a second or more to open). An open run holds its whole file in
// memory and more, so what stays open is bounded by the files' total size
// (the run used last always stays), and a run nobody asked about for a while
// is closed (docs/architecture.md "Memory").
import { stat } from 'node:fs/promises';
import { ProgramDatabase } from '../engine/database/programDatabase';

export interface ReadOnlyRunLimits {
  /** Most runs kept open. */
  maxRuns: number;
  /** Most bytes of run files kept open together (the run used last stays open whatever its size). */
  maxFileBytes: number;
  /** A run not asked about for this long is closed. */
  idleMs: number;
}

/** Two paper-scale runs (about 50 MB files each) stay open together; a third closes the one used least recently. */
export const READ_ONLY_RUN_LIMITS: ReadOnlyRunLimits = { maxRuns: 4, maxFileBytes: 128 * 1024 * 1024, idleMs: 60_000 };

interface OpenRun {
  mtimeMs: number;
  size: number;
  /** The open (or opening) database: queries that come while it opens wait for the same open. */
  db: Promise<ProgramDatabase>;
  /** Queries using it now: it is closed only once none is. */
  users: number;
  /** No longer kept: closed when its last user is done. */
  dropped: boolean;
  idleTimer: NodeJS.Timeout | null;
}

export class ReadOnlyRuns {
  /** Most recently used last. */
  private readonly open = new Map<string, OpenRun>();

  constructor(private readonly limits: ReadOnlyRunLimits = READ_ONLY_RUN_LIMITS) {}

  /** The files open now, least recently used first (the tests read it). */
  get files(): string[] {
    return [...this.open.keys()];
  }

  /** Run `use` on a read-only copy of `file`, reopened only when the file changed since last time. */
  async read<T>(file: string, use: (db: ProgramDatabase) => T | Promise<T>): Promise<T> {
    const info = await stat(file).catch(() => null);
    if (!info) throw new Error(`${file}: no such run database`);
    let entry = this.open.get(file);
    if (entry && (entry.mtimeMs !== info.mtimeMs || entry.size !== info.size)) {
      this.drop(file);
      entry = undefined;
    }
    if (entry) {
      this.open.delete(file);
      this.open.set(file, entry);
    } else {
      // One open per file: the dashboard asks five questions of a run at once.
      const opened: OpenRun = {
        mtimeMs: info.mtimeMs,
        size: info.size,
        db: ProgramDatabase.openReadOnly(file),
        users: 0,
        dropped: false,
        idleTimer: null,
      };
      entry = opened;
      this.open.set(file, opened);
      // A file that cannot be opened is not kept: the next query tries again.
      opened.db.catch(() => {
        if (this.open.get(file) === opened) this.open.delete(file);
      });
    }
    const current = entry;
    if (current.idleTimer) clearTimeout(current.idleTimer);
    current.idleTimer = null;
    current.users++;
    this.evictBeyondLimits();
    try {
      return await use(await current.db);
    } finally {
      current.users--;
      if (current.dropped) this.closeIfUnused(current);
      else if (current.users === 0) this.closeWhenIdle(file, current);
    }
  }

  /** Forget `file` (it was written meanwhile): closed now, or when the queries using it are done. */
  drop(file: string): void {
    const entry = this.open.get(file);
    if (!entry) return;
    this.open.delete(file);
    entry.dropped = true;
    this.closeIfUnused(entry);
  }

  private evictBeyondLimits(): void {
    const total = (): number => [...this.open.values()].reduce((sum, entry) => sum + entry.size, 0);
    for (const [file] of this.open) {
      if (this.open.size <= 1) return;
      if (this.open.size <= this.limits.maxRuns && total() <= this.limits.maxFileBytes) return;
      this.drop(file);
    }
  }

  private closeWhenIdle(file: string, entry: OpenRun): void {
    entry.idleTimer = setTimeout(() => {
      entry.idleTimer = null;
      if (this.open.get(file) === entry && entry.users === 0) this.drop(file);
    }, this.limits.idleMs);
    // An idle run kept open must not keep the process alive.
    entry.idleTimer.unref();
  }

  private closeIfUnused(entry: OpenRun): void {
    if (entry.users > 0) return;
    if (entry.idleTimer) clearTimeout(entry.idleTimer);
    entry.idleTimer = null;
    void entry.db.then((db) => db.close()).catch(() => undefined);
  }
}
