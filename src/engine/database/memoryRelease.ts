// A persist copies the whole database out of sql.js (its export) and drops
// the copy once the file is written; a step's texts and the growth of
// sql.js's in-memory file leave garbage of the same order. V8 lets such
// garbage wait for its next full collection: at paper scale (a 60 MB file)
// two or three dropped copies and tens of MB of dropped texts were seen held
// at once, nearly doubling the process's resident size. So a persist's copy
// is freed as soon as the file is written (moved out of the object that held
// it into a fresh one, which a minor collection, a few milliseconds, frees),
// and a full collection is started, run concurrently, not as a pause. V8
// hands the memory of dead array buffers back on a background thread, some
// time after the collection that found them dead: at paper scale a 60 MB copy
// was still resident after every third persist or so. Returned by the
// collection itself instead (a free() per dead buffer, no pause to speak of),
// the copy is gone when persist returns.
//
// V8's flags are the process's: in the editor the engine worker is a thread
// of the extension host, whose own heap and contexts (every extension's) read
// the same flags. So each flag is set only for the moment it is needed and
// set back at once:
// the gc function is taken with --expose-gc on (it stays usable after), and
// only the one minor collection that frees the copy sweeps synchronously.
import * as v8 from 'node:v8';
import * as vm from 'node:vm';

type Collect = (options: { type: 'major' | 'minor'; execution: 'async' | 'sync' }) => void;

let collect: Collect | null | undefined;

function collector(): Collect | null {
  if (collect !== undefined) return collect;
  collect = null;
  try {
    // The gc function is exposed by a V8 flag; set now, a fresh context sees it (the process's own globals do not change).
    v8.setFlagsFromString('--expose-gc');
    try {
      const gc = vm.runInNewContext('gc') as unknown;
      if (typeof gc === 'function') collect = gc as Collect;
    } finally {
      v8.setFlagsFromString('--no-expose-gc');
    }
  } catch {
    // A runtime without it collects on its own schedule.
  }
  return collect;
}

/** Free `copy` (no longer used by anyone) now, and start a concurrent full collection. */
export function releaseCopy(copy: Uint8Array): void {
  const buffer = copy.buffer;
  if (!(buffer instanceof ArrayBuffer) || buffer.byteLength === 0) return;
  // Detaches `copy`: its memory now belongs to a fresh object nothing holds.
  structuredClone(buffer, { transfer: [buffer] });
  const gc = collector();
  if (!gc) return;
  // The dead copy's memory is handed back within this collection, not later on a background thread.
  v8.setFlagsFromString('--no-concurrent-array-buffer-sweeping');
  try {
    gc({ type: 'minor', execution: 'sync' });
  } finally {
    v8.setFlagsFromString('--concurrent-array-buffer-sweeping');
  }
  gc({ type: 'major', execution: 'async' });
}
