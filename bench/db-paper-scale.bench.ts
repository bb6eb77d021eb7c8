// db-paper-scale: the paper's longest runs, 600 steps of 32 parents x 16
// children (307,200 programs ever added, 10,000 alive) into the large preset,
// every program ever added kept in the hash index (bench/support/paperScaleRun.ts).
// At steps 100, 300 and 600:
// the step commit (the rules on the in-memory structures), the durable persist
// (compressed rows + whole-file export, fsync, rename), the file size and the
// time to reopen the file; at 600 also this process's memory (the engine
// worker holds the same structures; this process runs with the worker's
// young generation, WORKER_YOUNG_GENERATION_MB). Heavy: run it alone, with `nice`.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ProgramDatabase } from '../src/engine/database/programDatabase';
import { percentile } from '../src/engine/common/stats';
import { WORKER_YOUNG_GENERATION_MB } from '../src/worker/engineHost';
import { generatePaperScaleRun, PAPER_SCALE_STEPS } from './support/paperScaleRun';

const REPORT_AT = [100, 300, PAPER_SCALE_STEPS];
/** Commit and persist are the median of this many steps up to each report point. */
const WINDOW = 10;

const mb = (bytes: number): string => (bytes / 1e6).toFixed(1);

// sql.js keeps its WebAssembly memory to itself; the bench notes it as sql.js
// instantiates it (the memory only grows: its size is its high-water mark).
interface WasmMemory {
  buffer: ArrayBuffer;
}
const wasm = (
  globalThis as unknown as {
    WebAssembly: { instantiate: (...args: unknown[]) => Promise<unknown>; Memory: abstract new (...args: never[]) => WasmMemory };
  }
).WebAssembly;
const wasmMemories: WasmMemory[] = [];
const instantiate = wasm.instantiate.bind(wasm);
wasm.instantiate = async (...args: unknown[]): Promise<unknown> => {
  const result = await instantiate(...args);
  const instance = (result as { instance?: { exports: object } }).instance ?? (result as { exports: object });
  // The minified build renames its exports: the memory is whichever export is one.
  for (const value of Object.values(instance.exports)) if (value instanceof wasm.Memory) wasmMemories.push(value);
  return result;
};
const wasmBytes = (): number => wasmMemories.reduce((sum, memory) => sum + memory.buffer.byteLength, 0);

/** V8's semi-space for a young generation of `mb` MB (two semi-spaces and a large-object space of one). */
const SEMI_SPACE_FLAG = `--max-semi-space-size=${WORKER_YOUNG_GENERATION_MB / 3}`;

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'thetaevolve-bench-'));
  // This process before any database: node, tsx (its loader thread) and the modules; the engine worker's bundle has less.
  const rssBefore = process.memoryUsage().rss;
  try {
    const file = path.join(dir, 'run.sqlite');
    const commitMs: number[] = [];
    const persistMs: number[] = [];
    /** Resident set after each step's commit (the persist's copy returned), over the last WINDOW steps. */
    const rssAfterCommit: number[] = [];
    const db = await generatePaperScaleRun(file, {
      seed: 600,
      onStep: async ({ step, added, timings }, db) => {
        commitMs.push(timings.applyMs);
        persistMs.push(timings.rowsMs + timings.fileMs);
        rssAfterCommit.push(process.memoryUsage().rss);
        if (!REPORT_AT.includes(step)) return;

        const window = `median of steps ${step - WINDOW + 1}-${step}`;
        const snapshot = db.stateSnapshot();
        const memory = process.memoryUsage();
        const bytes = fs.statSync(file).size;
        const reopenStarted = performance.now();
        const reopened = await ProgramDatabase.openReadOnly(file);
        const reopenMs = performance.now() - reopenStarted;
        const reopenedPrograms = reopened.size;
        await reopened.close();
        if (reopenedPrograms !== db.size) throw new Error(`the reopened file holds ${reopenedPrograms} programs, the open one ${db.size}`);
        const where = `step ${step}: ${added.toLocaleString('en-US')} programs added, ${db.size.toLocaleString('en-US')} alive, hash index ${snapshot.hashIndexSize.toLocaleString('en-US')}`;
        console.log(
          `bench db-paper-scale-commit-${step}: ${percentile(commitMs.slice(-WINDOW), 50).toFixed(1)} ms (${window}, 512 children each; ${where}; target <= 50)`,
        );
        console.log(
          `bench db-paper-scale-persist-${step}: ${percentile(persistMs.slice(-WINDOW), 50).toFixed(0)} ms (${window}: compressed rows + whole-file export, fsync, rename; target <= 1000)`,
        );
        console.log(`bench db-paper-scale-file-${step}: ${mb(bytes)} MB (${where}; target <= 150)`);
        console.log(
          `bench db-paper-scale-reopen-${step}: ${reopenMs.toFixed(0)} ms (open read-only and rebuild every in-memory index; target <= 3000)`,
        );
        if (step === PAPER_SCALE_STEPS) {
          const recent = rssAfterCommit.slice(-WINDOW);
          console.log(
            `bench db-paper-scale-memory-${step}: ${mb(memory.rss)} MB (resident set of the process holding the open database at ${where}; ` +
              `after the last ${WINDOW} commits ${mb(Math.min(...recent))}-${mb(Math.max(...recent))} MB; ${mb(rssBefore)} MB before the database was opened; ` +
              `JS heap ${mb(memory.heapUsed)} MB of ${mb(memory.heapTotal)} (young generation ${WORKER_YOUNG_GENERATION_MB} MB, as the engine worker's), ` +
              `external ${mb(memory.external)} MB of which array buffers ${mb(memory.arrayBuffers)} (sql.js's in-memory file, the hash index), ` +
              `sql.js wasm memory ${mb(wasmBytes())} MB, file ${mb(bytes)} MB; target <= 250)`,
          );
        }
      },
    });
    await db.close();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

// The engine worker runs with a small young generation (src/worker/engineHost.ts): so does this process, started again with it.
if (process.execArgv.includes(SEMI_SPACE_FLAG)) {
  void main();
} else {
  const again = spawnSync(process.execPath, [...process.execArgv, SEMI_SPACE_FLAG, ...process.argv.slice(1)], { stdio: 'inherit' });
  process.exit(again.status ?? 1);
}
