// The built bundles as shipped (npm test builds before the unit tests): the
// CLI runs as `node dist/cli.js` and as an executable, with the contract's exit codes.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';

const ROOT = resolve(__dirname, '../..');
const CLI = join(ROOT, 'dist', 'cli.js');

describe('built bundles', () => {
  before(function () {
    if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` first`);
  });

  it('dist/cli.js prints the contract with --help, as node dist/cli.js and as an executable', () => {
    for (const [command, args] of [
      [process.execPath, [CLI, '--help']],
      [CLI, ['--help']],
    ] as const) {
      const r = spawnSync(command, args, { encoding: 'utf8' });
      assert.equal(r.status, 0, r.stderr);
      for (const sub of ['run', 'evaluate', 'apply', 'db']) assert.match(r.stdout, new RegExp(`thetaevolve ${sub} `));
    }
  });

  it('dist/cli.js refuses an unknown command with one line and exit code 2', () => {
    const r = spawnSync(process.execPath, [CLI, 'frobnicate'], { encoding: 'utf8' });
    assert.equal(r.status, 2);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
  });

  it('ships the engine worker, the dashboard page and sql-wasm.wasm beside the extension', () => {
    for (const file of ['extension.js', 'engineWorker.js', 'webview/dashboard.js', 'webview/dashboard.css', 'sql-wasm.wasm']) {
      assert.ok(existsSync(join(ROOT, 'dist', file)), `dist/${file} is missing`);
    }
  });
});
