// The engine worker's read-only runs (src/worker/readOnlyRuns.ts) on real run
// files: what stays open is bounded by count and by the files' total size,
// an idle run is closed, and a run in use is never closed under its query.
import assert from 'node:assert/strict';
import { statSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { Rng } from '../../src/engine/common/rng';
import type { ProgramDatabase } from '../../src/engine/database/programDatabase';
import { ReadOnlyRuns, type ReadOnlyRunLimits } from '../../src/worker/readOnlyRuns';
import { largeConfig, openFull } from './fixtures/database/fill';
import { tempDir } from '../support/tempDirs';
import { waitFor } from '../support/waitFor';

/** Whether `db` was closed: a closed database refuses every query. */
function isClosed(db: ProgramDatabase): boolean {
  try {
    db.topPrograms(1);
    return false;
  } catch (err) {
    return err instanceof Error && err.message.includes('closed');
  }
}

describe('ReadOnlyRuns (the engine worker keeps runs open within bounds)', function () {
  this.timeout(60_000);
  const files: string[] = [];
  let fileBytes = 0;

  before(async () => {
    const dir = tempDir('read-only-runs');
    for (const name of ['a', 'b', 'c']) {
      const file = join(dir, `${name}.sqlite`);
      const db = await openFull(file, largeConfig({ populationSize: 200, archiveSize: 50 }), Rng.fromSeed(name.charCodeAt(0)));
      await db.close();
      files.push(file);
    }
    fileBytes = Math.max(...files.map((file) => statSync(file).size));
  });

  const limits = (overrides: Partial<ReadOnlyRunLimits>): ReadOnlyRunLimits => ({
    maxRuns: 4,
    maxFileBytes: 1024 * 1024 * 1024,
    idleMs: 60_000,
    ...overrides,
  });
  const a = (): string => files[0] as string;
  const b = (): string => files[1] as string;
  const c = (): string => files[2] as string;

  it('reuses an open run and keeps at most maxRuns, closing the one used least recently', async () => {
    const runs = new ReadOnlyRuns(limits({ maxRuns: 2 }));
    const first = await runs.read(a(), (db) => db);
    assert.equal(await runs.read(a(), (db) => db), first, 'a second query of an unchanged file uses the same open');
    const second = await runs.read(b(), (db) => db);
    await runs.read(a(), () => undefined);
    await runs.read(c(), () => undefined);
    assert.deepEqual(runs.files, [a(), c()]);
    await waitFor(() => isClosed(second), { what: 'the least recently used run to be closed' });
    assert.equal(isClosed(first), false);
  });

  it('keeps the open files within maxFileBytes, the run used last whatever its size', async () => {
    const runs = new ReadOnlyRuns(limits({ maxFileBytes: Math.floor(fileBytes * 1.5) }));
    const first = await runs.read(a(), (db) => db);
    await runs.read(b(), () => undefined);
    assert.deepEqual(runs.files, [b()], 'two files exceed the budget: the older one is closed');
    await waitFor(() => isClosed(first), { what: 'the run beyond the byte budget to be closed' });
    const tiny = new ReadOnlyRuns(limits({ maxFileBytes: 1 }));
    await tiny.read(c(), () => undefined);
    assert.deepEqual(tiny.files, [c()]);
  });

  it('closes a run nobody asked about for idleMs', async () => {
    const runs = new ReadOnlyRuns(limits({ idleMs: 50 }));
    const db = await runs.read(a(), (opened) => opened);
    await waitFor(() => isClosed(db), { what: 'the idle run to be closed' });
    assert.deepEqual(runs.files, []);
    const again = await runs.read(a(), (opened) => opened);
    assert.notEqual(again, db, 'the next query opens it afresh');
    assert.equal(isClosed(again), false);
  });

  it('never closes a run under a query still using it, and reopens a file written meanwhile', async () => {
    const runs = new ReadOnlyRuns(limits({ maxRuns: 1, idleMs: 50 }));
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    let inUse: ProgramDatabase | null = null;
    const slow = runs.read(a(), async (db) => {
      inUse = db;
      await held;
      return db.topPrograms(1).length;
    });
    await waitFor(() => inUse, { what: 'the slow query to start' });
    await runs.read(b(), () => undefined);
    assert.deepEqual(runs.files, [b()], 'evicted from the kept runs');
    assert.equal(isClosed(inUse as unknown as ProgramDatabase), false, 'but open while its query runs');
    release();
    assert.equal(await slow, 1);
    await waitFor(() => isClosed(inUse as unknown as ProgramDatabase), { what: 'the evicted run to be closed once unused' });

    const before = await runs.read(b(), (db) => db);
    const later = new Date(Date.now() + 5_000);
    utimesSync(b(), later, later);
    const after = await runs.read(b(), (db) => db);
    assert.notEqual(after, before, 'a changed file is opened again');
    await waitFor(() => isClosed(before), { what: 'the stale open to be closed' });
  });
});
