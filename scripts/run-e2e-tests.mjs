// npm run test:e2e: the end-to-end suites (test/e2e) against code-server + Chromium.
import { spawnSync } from 'node:child_process';
const r = spawnSync(process.execPath, ['node_modules/mocha/bin/mocha.js', '--config', 'test/e2e/.mocharc.json'], { stdio: 'inherit' });
process.exit(r.status ?? 1);
