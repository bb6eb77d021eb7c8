// What out/bench/paperScaleHolder.js (paperScaleHolder.ts) reports to bench
// db-paper-scale, one JSON line each: shared by both sides, and free of the
// holder's own start-up code.
import { PAPER_SCALE_STEPS } from './paperScaleRun';

export const HOLDER_MODES = ['bare', 'loaded', 'run'] as const;
export type HolderMode = (typeof HOLDER_MODES)[number];

/** Commit and persist are the median of this many steps up to each report point. */
export const HOLDER_WINDOW = 10;
export const HOLDER_REPORT_AT = [100, 300, PAPER_SCALE_STEPS];

export interface HolderMemory {
  /** The whole process's resident set (main thread, worker thread, sql.js). */
  rss: number;
  /** The worker's own V8 heap and buffers. */
  heapUsed: number;
  heapTotal: number;
  external: number;
  arrayBuffers: number;
  /** sql.js's WebAssembly memory (it only grows: its size is its high-water mark). */
  wasm: number;
  /**
   * Resident in glibc's malloc arenas (its [heap] and the 64 MB-aligned
   * anonymous mappings of its thread arenas), free chunks they keep included;
   * null where /proc/self/smaps cannot be read.
   */
  mallocArenas: number | null;
}

export type HolderReport =
  | { kind: 'baseline'; mode: 'bare' | 'loaded'; memory: HolderMemory }
  | {
      kind: 'step';
      step: number;
      added: number;
      alive: number;
      hashIndexSize: number;
      /** Medians over the last HOLDER_WINDOW steps. */
      commitMs: number;
      persistMs: number;
      fileBytes: number;
      reopenMs: number;
      /** Taken before the reopen, the database open as the run holds it. */
      memory: HolderMemory;
      /** The resident set after each of the last HOLDER_WINDOW commits. */
      rssWindow: { min: number; max: number };
    };
