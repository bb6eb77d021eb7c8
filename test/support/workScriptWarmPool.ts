// A warm pool of plain Python processes (no sandbox) warmed for one script,
// `<dir>/work.py`, which prints `worked`: the pool sandbox-warm.test.ts refills
// and warmPoolCloseChild.ts closes while it warms.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_PYTHON } from '../../src/engine/python/interpreter';
import type { ProcessOutcome } from '../../src/engine/sandbox/process';
import { startWarmProcess, type WarmableCommand, warmableCommand, warmLauncherCommand, WarmPool } from '../../src/engine/sandbox/warmPool';

export interface WorkScriptWarmPool {
  /** The command the warm processes are started for (`warmInput(command, '')` runs the script). */
  command: WarmableCommand;
  pool: WarmPool<ProcessOutcome>;
}

/** Writes `<dir>/work.py` and makes a pool of `size` warm processes for it; `onCreate` is called as each is started. */
export function workScriptWarmPool(dir: string, size: number, onCreate: () => void = () => undefined): WorkScriptWarmPool {
  writeFileSync(join(dir, 'work.py'), 'print("worked")\n');
  const command = warmableCommand([DEFAULT_PYTHON, join(dir, 'work.py')]) as WarmableCommand;
  const pool = new WarmPool(() => {
    onCreate();
    return startWarmProcess(
      {
        file: DEFAULT_PYTHON,
        args: warmLauncherCommand(command, [], null).slice(1),
        cwd: dir,
        env: {},
        timeoutMs: 30000,
        outputLimitBytes: 4096,
      },
      async (run: ProcessOutcome) => run,
    );
  }, size);
  return { command, pool };
}
