// npm run bench: runs every bench/*.bench.ts (or those named on the command
// line) one after the other; each prints `bench <name>: <number> <unit> (<context>)`,
// with the machine's calibration appended (bench/support/calibration.ts).
import { readdirSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const wanted = process.argv.slice(2);
const files = readdirSync(join(root, 'bench'))
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => wanted.length === 0 || wanted.some((w) => f.includes(w)))
  .sort();
let failed = 0;
for (const file of files) {
  // Every bench line carries the machine's calibration, measured in the same process (bench/support/calibration.ts).
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--import', './bench/support/calibration.ts', join('bench', file)], {
    cwd: root,
    stdio: 'inherit',
  });
  if (r.status !== 0) {
    failed++;
    console.error(`bench ${file} failed (exit ${r.status})`);
  }
}
process.exit(failed ? 1 : 0);
