// A process whose only work is a warm pool closed while its one process is
// still warming (sandbox-warm.test.ts runs it): it must live until the pool's
// close() resolves, and then prints `closed` and exits 0. Nothing else keeps
// it alive, as at the end of a CLI run whose evaluator closes last.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { workScriptWarmPool } from './workScriptWarmPool';

const dir = mkdtempSync(join(tmpdir(), 'te-warm-close-'));
const { pool } = workScriptWarmPool(dir, 1);
pool.startOne();
void pool.close().then(() => {
  rmSync(dir, { recursive: true, force: true });
  process.stdout.write('closed\n');
});
