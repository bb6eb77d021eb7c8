// db-persist-10k: what making one step durable costs once the database holds
// 10,000 programs: compressing the step's texts, writing the changed rows into
// SQLite, exporting the whole database and replacing the file atomically
// (temporary file, fsync, rename, folder fsync).
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Rng } from '../src/engine/common/rng';
import { percentile } from '../src/engine/common/stats';
import { largeConfig, openFull, stepChildren } from '../test/unit/fixtures/database/fill';

const MEASURED_STEPS = 7;

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'thetaevolve-bench-'));
  try {
    const file = path.join(dir, 'run.sqlite');
    const rng = Rng.fromSeed(7);
    const db = await openFull(file, largeConfig(), rng);
    const durable: number[] = [];
    const rows: number[] = [];
    const files: number[] = [];
    for (let i = 0; i < MEASURED_STEPS; i++) {
      const children = stepChildren(db, rng);
      const { timings } = await db.commitStep({ step: db.lastStep + 1, children, stats: { step: db.lastStep + 1 }, engineState: null });
      durable.push(timings.rowsMs + timings.fileMs);
      rows.push(timings.rowsMs);
      files.push(timings.fileMs);
    }
    const bytes = fs.statSync(file).size;
    await db.close();
    const reopenStarted = performance.now();
    const reopened = await (await import('../src/engine/database/programDatabase')).ProgramDatabase.openReadOnly(file);
    const reopenMs = performance.now() - reopenStarted;
    await reopened.close();
    console.log(
      `bench db-persist-10k: ${percentile(durable, 50).toFixed(0)} ms (median of ${MEASURED_STEPS} steps of 512 children at 10,000 programs: ` +
        `compressed rows ${percentile(rows, 50).toFixed(0)} ms + whole-file export, fsync, rename ${percentile(files, 50).toFixed(0)} ms; target <= 1000)`,
    );
    console.log(
      `bench db-persist-10k-file-size: ${(bytes / 1e6).toFixed(1)} MB (10,000 programs of ~3 KB code + ~2 KB response, zlib level 1)`,
    );
    console.log(`bench db-persist-10k-reopen: ${reopenMs.toFixed(0)} ms (open and rebuild every in-memory index from the file)`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

void main();
