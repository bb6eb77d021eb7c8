// A process whose only work is a warm pool closed while its one process is
// still warming (sandbox-warm.test.ts runs it): it must live until the pool's
// close() resolves, and then prints `closed` and exits 0. Nothing else keeps
// it alive, as at the end of a CLI run whose evaluator closes last.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_PYTHON } from '../../src/engine/python/interpreter';
import { startWarmProcess, type WarmableCommand, warmableCommand, warmLauncherCommand, WarmPool } from '../../src/engine/sandbox/warmPool';

const dir = mkdtempSync(join(tmpdir(), 'te-warm-close-'));
writeFileSync(join(dir, 'work.py'), 'print("worked")\n');
const command = warmableCommand([DEFAULT_PYTHON, join(dir, 'work.py')]) as WarmableCommand;
const pool = new WarmPool(
  () =>
    startWarmProcess(
      {
        file: DEFAULT_PYTHON,
        args: warmLauncherCommand(command, [], null).slice(1),
        cwd: dir,
        env: {},
        timeoutMs: 30000,
        outputLimitBytes: 4096,
      },
      async (run) => run,
    ),
  1,
);
pool.startOne();
void pool.close().then(() => {
  rmSync(dir, { recursive: true, force: true });
  process.stdout.write('closed\n');
});
