// The built bundles as shipped (npm test builds before the unit tests): the
// CLI runs as `node dist/cli.js` and as an executable, with the contract's exit codes.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { AGENT_TOOL_NAMES } from '../../src/engine/agentTools/definitions';
import { tempDir } from '../support/tempDirs';

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
    for (const file of [
      'extension.js',
      'extensionMain.js',
      'engineWorker.js',
      'webview/dashboard.js',
      'webview/dashboard.css',
      'sql-wasm.wasm',
    ]) {
      assert.ok(existsSync(join(ROOT, 'dist', file)), `dist/${file} is missing`);
    }
  });

  it('keeps engine work out of the extension host: no openai client, no sandbox, no sql.js in dist/extension.js or extensionMain.js', () => {
    const extension = ['extension.js', 'extensionMain.js'].map((f) => readFileSync(join(ROOT, 'dist', f), 'utf8')).join('\n');
    const worker = readFileSync(join(ROOT, 'dist', 'engineWorker.js'), 'utf8');
    // Markers each module carries: the SDK's client class, the sandbox's bwrap argument list, sql.js's wasm loader.
    for (const [what, marker] of [
      ['the openai SDK', 'OpenAI-Beta'],
      ['the sandbox', '--unshare-all'],
      ['sql.js', 'sql-wasm.wasm'],
    ] as const) {
      assert.ok(worker.includes(marker), `the worker bundle should hold ${what} (marker ${marker})`);
      assert.ok(!extension.includes(marker), `the extension's bundles hold ${what}: that work belongs behind the engine worker`);
    }
  });

  it('dist/cli.js mcp serves the agent tools to an MCP client over stdio (the SDK bundled in)', async function () {
    this.timeout(60_000);
    const client = new Client({ name: 'bundles-test', version: '1' });
    await client.connect(
      new StdioClientTransport({ command: process.execPath, args: [CLI, 'mcp', '--runs', tempDir('thetaevolve-mcp-')], stderr: 'ignore' }),
    );
    try {
      assert.deepEqual(
        (await client.listTools()).tools.map((t) => t.name),
        AGENT_TOOL_NAMES,
      );
      const reply = (await client.callTool({ name: 'list_runs', arguments: {} })) as { content: { text: string }[] };
      assert.equal(reply.content[0]?.text, 'No run database found.');
    } finally {
      await client.close();
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

  it('loads little at activation: the entry dist/extension.js is at most 16 KB (no zod), the rest (extensionMain.js) minified and at most 600 KB', () => {
    const entry = readFileSync(join(ROOT, 'dist', 'extension.js'), 'utf8');
    assert.ok(entry.length <= 16 * 1024, `dist/extension.js is ${(entry.length / 1024).toFixed(0)} KB`);
    assert.ok(!entry.includes('ZodError'), 'dist/extension.js bundles zod: the entry only registers the serializer and loads the rest');
    assert.ok(entry.includes('require("./extensionMain.js")'), 'dist/extension.js does not load extensionMain.js beside it');
    const size = statSync(join(ROOT, 'dist', 'extensionMain.js')).size;
    assert.ok(size <= 600 * 1024, `dist/extensionMain.js is ${(size / 1024).toFixed(0)} KB`);
  });

  it('ships no test hook: no bundle in dist/ reads the in-host test variables', () => {
    for (const file of ['extension.js', 'extensionMain.js', 'engineWorker.js', 'cli.js', 'evaluateJob.js', 'jobStart.js']) {
      assert.ok(!readFileSync(join(ROOT, 'dist', file), 'utf8').includes('THETAEVOLVE_HOST_TESTS'), `dist/${file} holds a test hook`);
    }
  });

  it('packages with vsce as the Marketplace takes it (no skip flags): LICENSE, changelog, absolute README links, no source maps, at most 2.4 MB', function () {
    this.timeout(120_000);
    const out = join(tempDir('thetaevolve-vsix-'), 'thetaevolve.vsix');
    const vsce = join(ROOT, 'node_modules', '@vscode', 'vsce', 'vsce');
    const packed = spawnSync(process.execPath, [vsce, 'package', '--no-dependencies', '--out', out], { cwd: ROOT, encoding: 'utf8' });
    assert.equal(packed.status, 0, packed.stderr || packed.stdout);
    const size = statSync(out).size;
    assert.ok(size <= 2.4 * 1024 * 1024, `the .vsix is ${(size / 1024 / 1024).toFixed(2)} MB`);
    const listed = spawnSync('unzip', ['-Z1', out], { encoding: 'utf8' });
    assert.equal(listed.status, 0, listed.stderr);
    const files = listed.stdout.trim().split('\n');
    for (const file of ['extension/LICENSE.txt', 'extension/changelog.md', 'extension/readme.md', 'extension/dist/extension.js']) {
      assert.ok(files.includes(file), `${file} is not in the package: ${files.join(', ')}`);
    }
    assert.deepEqual(
      files.filter((f) => f.endsWith('.map')),
      [],
      'no source maps',
    );
    const readme = spawnSync('unzip', ['-p', out, 'extension/readme.md'], { encoding: 'utf8' }).stdout;
    const relative = [...readme.matchAll(/\]\(([^)#]+)\)/g)].map((m) => m[1] ?? '').filter((url) => !/^https:\/\//.test(url));
    assert.deepEqual(relative, [], 'every README link works on the Marketplace page');
  });
});
