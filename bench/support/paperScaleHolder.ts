// What the editor runs at paper scale, as a plain Node process: the engine
// worker is a worker thread of the extension host (src/worker/engineHost.ts,
// with its young generation), and that thread holds the run's database. Built
// by scripts/build.mjs to out/bench/paperScaleHolder.js, minified and with
// sql-wasm.wasm beside it, as dist/engineWorker.js is. No tsx, no test
// runner: the resident set it reports is a real process's, of the same kind.
//
//   node out/bench/paperScaleHolder.js bare          a worker thread that loads nothing
//   node out/bench/paperScaleHolder.js loaded        the worker loaded this bundle and sql.js, no database
//   node out/bench/paperScaleHolder.js run <file>    the worker commits the paper-scale run into <file>
//
// Prints one JSON line per measurement (HolderReport, paperScaleReport.ts) on stdout.
import { readFileSync, statSync } from 'node:fs';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { ProgramDatabase } from '../../src/engine/database/programDatabase';
import { loadSqlJs } from '../../src/engine/database/sqlite';
import { percentile } from '../../src/engine/common/stats';
import { WORKER_YOUNG_GENERATION_MB } from '../../src/worker/engineHost';
import { generatePaperScaleRun } from './paperScaleRun';
import { HOLDER_MODES, HOLDER_REPORT_AT, HOLDER_WINDOW, type HolderMemory, type HolderMode, type HolderReport } from './paperScaleReport';

// sql.js keeps its WebAssembly memory to itself; noted as sql.js instantiates it.
interface WasmMemory {
  buffer: ArrayBuffer;
}
const wasmMemories: WasmMemory[] = [];

function watchWasmMemories(): void {
  const wasm = (
    globalThis as unknown as {
      WebAssembly: { instantiate: (...args: unknown[]) => Promise<unknown>; Memory: abstract new (...args: never[]) => WasmMemory };
    }
  ).WebAssembly;
  const instantiate = wasm.instantiate.bind(wasm);
  wasm.instantiate = async (...args: unknown[]): Promise<unknown> => {
    const result = await instantiate(...args);
    const instance = (result as { instance?: { exports: object } }).instance ?? (result as { exports: object });
    // The minified build renames its exports: the memory is whichever export is one.
    for (const value of Object.values(instance.exports)) if (value instanceof wasm.Memory) wasmMemories.push(value);
    return result;
  };
}

/** 64 MiB: glibc's thread arenas are heaps of at most this size, aligned to it. */
const ARENA_ALIGNMENT = 64n * 1024n * 1024n;

function mallocArenaBytes(): number | null {
  let smaps: string;
  try {
    smaps = readFileSync('/proc/self/smaps', 'utf8');
  } catch {
    return null;
  }
  let total = 0;
  let counted = false;
  for (const line of smaps.split('\n')) {
    const mapping = /^([0-9a-f]+)-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (mapping) {
      const [, start = '0', name = ''] = mapping;
      counted = name === '[heap]' || (name === '' && BigInt(`0x${start}`) % ARENA_ALIGNMENT === 0n);
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss && counted) total += Number(rss[1]) * 1024;
  }
  return total;
}

function memoryNow(): HolderMemory {
  const memory = process.memoryUsage();
  return {
    rss: memory.rss,
    heapUsed: memory.heapUsed,
    heapTotal: memory.heapTotal,
    external: memory.external,
    arrayBuffers: memory.arrayBuffers,
    wasm: wasmMemories.reduce((sum, m) => sum + m.buffer.byteLength, 0),
    mallocArenas: mallocArenaBytes(),
  };
}

/** The worker thread's side: runs `mode` and posts its reports. */
async function workerMain(mode: 'loaded' | 'run', file: string | undefined): Promise<void> {
  const post = (report: HolderReport): void => parentPort?.postMessage(report);
  watchWasmMemories();
  await loadSqlJs();
  if (mode === 'loaded' || !file) {
    post({ kind: 'baseline', mode: 'loaded', memory: memoryNow() });
    return;
  }
  const commitMs: number[] = [];
  const persistMs: number[] = [];
  const rssAfterCommit: number[] = [];
  const db = await generatePaperScaleRun(file, {
    seed: 600,
    onStep: async ({ step, added, timings }, db) => {
      commitMs.push(timings.applyMs);
      persistMs.push(timings.rowsMs + timings.fileMs);
      rssAfterCommit.push(process.memoryUsage.rss());
      if (!HOLDER_REPORT_AT.includes(step)) return;
      const memory = memoryNow();
      const recent = rssAfterCommit.slice(-HOLDER_WINDOW);
      const fileBytes = statSync(file).size;
      const reopenStarted = performance.now();
      const reopened = await ProgramDatabase.openReadOnly(file);
      const reopenMs = performance.now() - reopenStarted;
      const reopenedPrograms = reopened.size;
      await reopened.close();
      if (reopenedPrograms !== db.size) throw new Error(`the reopened file holds ${reopenedPrograms} programs, the open one ${db.size}`);
      post({
        kind: 'step',
        step,
        added,
        alive: db.size,
        hashIndexSize: db.stateSnapshot().hashIndexSize,
        commitMs: percentile(commitMs.slice(-HOLDER_WINDOW), 50),
        persistMs: percentile(persistMs.slice(-HOLDER_WINDOW), 50),
        fileBytes,
        reopenMs,
        memory,
        rssWindow: { min: Math.min(...recent), max: Math.max(...recent) },
      });
    },
  });
  await db.close();
}

/** The process's side: starts the worker as the editor's engine host does and prints what it reports. */
function processMain(mode: HolderMode, file: string | undefined): void {
  const options = { resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB } };
  const worker =
    mode === 'bare'
      ? new Worker(`require('node:worker_threads').parentPort.postMessage('ready')`, { ...options, eval: true })
      : new Worker(__filename, { ...options, workerData: { mode, file } });
  worker.on('message', (message: unknown) => {
    if (message === 'ready') {
      const report: HolderReport = { kind: 'baseline', mode: 'bare', memory: { ...memoryNow(), rss: process.memoryUsage.rss() } };
      console.log(JSON.stringify(report));
      // The thread stays until measured, then the process ends.
      void worker.terminate();
      return;
    }
    console.log(JSON.stringify(message));
  });
  worker.on('error', (err) => {
    console.error(`paperScaleHolder: the worker failed: ${err.stack ?? err.message}`);
    process.exitCode = 1;
  });
}

if (isMainThread) {
  const [mode, file] = process.argv.slice(2);
  if (!(HOLDER_MODES as readonly string[]).includes(mode ?? '')) {
    console.error(`usage: node paperScaleHolder.js ${HOLDER_MODES.join('|')} [file]`);
    process.exit(2);
  }
  processMain(mode as HolderMode, file);
} else {
  const data = workerData as { mode: 'loaded' | 'run'; file?: string };
  // A failure rejects unhandled: the thread ends with it, and the process says so (its 'error' above).
  void workerMain(data.mode, data.file);
}
