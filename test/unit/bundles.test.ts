// The built bundles as shipped (npm test builds before the unit tests): the
// CLI runs as `node dist/cli.js` and as an executable, with the contract's exit codes.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
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
      for (const sub of ['run', 'evaluate', 'apply', 'db', 'convert']) assert.match(r.stdout, new RegExp(`thetaevolve ${sub} `));
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

  it('keeps engine work out of the extension host: no openai client, no sandbox, no sql.js in dist/extension.js', () => {
    const extension = readFileSync(join(ROOT, 'dist', 'extension.js'), 'utf8');
    const worker = readFileSync(join(ROOT, 'dist', 'engineWorker.js'), 'utf8');
    // Markers each module carries: the SDK's client class, the sandbox's bwrap argument list, sql.js's wasm loader.
    for (const [what, marker] of [
      ['the openai SDK', 'OpenAI = class'],
      ['the sandbox', '--unshare-all'],
      ['sql.js', 'sql-wasm.wasm'],
    ] as const) {
      assert.ok(worker.includes(marker), `the worker bundle should hold ${what} (marker ${marker})`);
      assert.ok(!extension.includes(marker), `dist/extension.js bundles ${what}: that work belongs behind the engine worker`);
    }
  });

  it('dist/cli.js evaluate --json prints exactly one JSON object on stdout (a SLURM job reads it as its result)', () => {
    const task = join(ROOT, 'test/fixtures/tasks/quadratic');
    const r = spawnSync(process.execPath, [CLI, 'evaluate', task, join(task, 'initial.py'), '--json'], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    const lines = r.stdout.trim().split('\n');
    assert.equal(lines.length, 1, r.stdout);
    assert.equal((JSON.parse(lines[0] as string) as { status: string }).status, 'ok');
  });
});
