// db-paper-scale: the paper's longest runs, 600 steps of 32 parents x 16
// children (307,200 programs ever added, 10,000 alive) into the large preset,
// every program ever added kept in the hash index (bench/support/paperScaleRun.ts).
// At steps 100, 300 and 600:
// the step commit (the rules on the in-memory structures), the durable persist
// (compressed rows + whole-file export, fsync, rename), the file size and the
// time to reopen the file; at 600 also the memory of the process holding it.
//
// What holds the database is what the editor runs: the engine's code bundled
// and minified (out/bench/paperScaleHolder.js, built as dist/engineWorker.js
// is), in a worker thread with the engine worker's young generation, in a
// plain Node process (bench/support/paperScaleHolder.ts). Its resident set is
// printed beside that of the same kind of process before any database: a
// worker thread that loads nothing, and one that loaded the bundle and sql.js.
// Heavy: run it alone, with `nice`.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { WORKER_YOUNG_GENERATION_MB } from '../src/worker/engineHost';
import { HOLDER_WINDOW, type HolderMemory, type HolderMode, type HolderReport } from './support/paperScaleReport';
import { PAPER_SCALE_STEPS } from './support/paperScaleRun';

const REPO_ROOT = path.resolve(__dirname, '..');
const HOLDER = path.join(REPO_ROOT, 'out', 'bench', 'paperScaleHolder.js');

const mb = (bytes: number): string => (bytes / 1e6).toFixed(1);

/** Run the holder in `mode` in a fresh process; its reports, in order. */
function hold(mode: HolderMode, file?: string): HolderReport[] {
  const result = spawnSync(process.execPath, [HOLDER, mode, ...(file ? [file] : [])], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 16 * 1024 * 1024,
  });
  if (result.status !== 0) throw new Error(`${HOLDER} ${mode} failed (exit ${result.status})`);
  return result.stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as HolderReport);
}

function baseline(mode: 'bare' | 'loaded'): HolderMemory {
  const report = hold(mode).find((r) => r.kind === 'baseline');
  if (!report) throw new Error(`${HOLDER} ${mode} reported nothing`);
  return report.memory;
}

const arenas = (memory: HolderMemory): string =>
  memory.mallocArenas === null ? 'glibc malloc arenas not readable' : `glibc malloc arenas ${mb(memory.mallocArenas)} MB`;

function main(): void {
  const built = spawnSync(process.execPath, [path.join(REPO_ROOT, 'scripts', 'build.mjs')], { cwd: REPO_ROOT, stdio: 'inherit' });
  if (built.status !== 0) throw new Error('npm run build failed');
  const bare = baseline('bare');
  const loaded = baseline('loaded');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'thetaevolve-bench-'));
  try {
    const steps = hold('run', path.join(dir, 'run.sqlite')).filter((r) => r.kind === 'step');
    if (steps.length === 0) throw new Error(`${HOLDER} run reported no step`);
    for (const r of steps) {
      const window = `median of steps ${r.step - HOLDER_WINDOW + 1}-${r.step}`;
      const where = `step ${r.step}: ${r.added.toLocaleString('en-US')} programs added, ${r.alive.toLocaleString('en-US')} alive, hash index ${r.hashIndexSize.toLocaleString('en-US')}`;
      console.log(
        `bench db-paper-scale-commit-${r.step}: ${r.commitMs.toFixed(1)} ms (${window}, 512 children each; ${where}; target <= 50)`,
      );
      console.log(
        `bench db-paper-scale-persist-${r.step}: ${r.persistMs.toFixed(0)} ms (${window}: compressed rows + whole-file export, fsync, rename; target <= 1000)`,
      );
      console.log(`bench db-paper-scale-file-${r.step}: ${mb(r.fileBytes)} MB (${where}; target <= 150)`);
      console.log(
        `bench db-paper-scale-reopen-${r.step}: ${r.reopenMs.toFixed(0)} ms (open read-only and rebuild every in-memory index; target <= 3000)`,
      );
      if (r.step !== PAPER_SCALE_STEPS) continue;
      const m = r.memory;
      console.log(
        `bench db-paper-scale-memory-${r.step}: ${mb(m.rss)} MB (resident set of a Node process whose engine worker thread, bundled as ` +
          `dist/engineWorker.js, holds the open database at ${where}; after the last ${HOLDER_WINDOW} commits ${mb(r.rssWindow.min)}-${mb(r.rssWindow.max)} MB; ` +
          `the same process before any database: ${mb(bare.rss)} MB with a worker thread that loads nothing, ` +
          `${mb(loaded.rss)} MB with the engine bundle and sql.js loaded (${arenas(loaded)}); ` +
          `worker JS heap ${mb(m.heapUsed)} MB of ${mb(m.heapTotal)} (young generation ${WORKER_YOUNG_GENERATION_MB} MB), ` +
          `external ${mb(m.external)} MB of which array buffers ${mb(m.arrayBuffers)} (sql.js's in-memory file, the hash index), ` +
          `sql.js wasm memory ${mb(m.wasm)} MB, ` +
          `${arenas(m)} (what malloc holds, free chunks included: it overlaps the array buffers below 32 MB), file ${mb(r.fileBytes)} MB; target <= 250)`,
      );
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main();
