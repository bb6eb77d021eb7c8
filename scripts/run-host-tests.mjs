// npm run test:host (see test/support/runHostTests.ts).
import { spawnSync } from 'node:child_process';
const r = spawnSync(process.execPath, ['--import', 'tsx', 'test/support/runHostTests.ts'], { stdio: 'inherit' });
process.exit(r.status ?? 1);
