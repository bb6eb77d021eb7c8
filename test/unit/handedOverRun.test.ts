// A handed-over run database is data (issue 51 item 2): the task folder it
// names holds an evaluator that runs on this machine, outside the sandbox, so
// a program added to the stopped run (`steer --add`, `add_program` over MCP
// and through the engine worker, as the editor's language-model tools call
// it) is evaluated with it only where that folder lies in the working folder
// (the workspace), a runs folder or the bundled tasks. The planted folder's
// evaluator writes a marker file: refused, no marker and the database as it
// was; from the folder that holds the task, the same request runs it.
import { strict as assert } from 'node:assert';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { z } from 'zod';
import { defaultSettings } from '../../src/engine/common/config';
import { EngineHost } from '../../src/worker/engineHost';
import { runCli } from '../support/cli';
import { tempDir } from '../support/tempDirs';

const ROOT = resolve(__dirname, '../..');
const FIXTURE = join(ROOT, 'test/fixtures/tasks/quadratic');
const WORKER = join(ROOT, 'src/worker/engineWorker.ts');
const ADDED = 'import json\n\n# EVOLVE-BLOCK-START\nx = 2.5\n# EVOLVE-BLOCK-END\n\njson.dump({"x": x}, open("solution.json", "w"))\n';
const REFUSAL = /names the task folder .*planted-task, outside .* and the bundled tasks: a database is data anyone can hand over/s;

const sha = (file: string): string => createHash('sha256').update(readFileSync(file)).digest('hex');

describe('a handed-over run database names a task folder outside the workspace', function () {
  this.timeout(180_000);
  /** Where the planted folder lies (stands for a folder the database's author chose). */
  let elsewhere: string;
  let plantedTask: string;
  let marker: string;
  /** The workspace the person works in, the database handed over into its runs folder. */
  let workspace: string;
  let runs: string;
  let db: string;
  let program: string;

  before(async () => {
    elsewhere = tempDir('thetaevolve-elsewhere-');
    plantedTask = join(elsewhere, 'planted-task');
    marker = join(elsewhere, 'evaluator-ran');
    cpSync(FIXTURE, plantedTask, { recursive: true });
    const evaluator = join(plantedTask, 'evaluate.py');
    // Unsandboxed, it leaves its uid behind: the mark of code run on this machine.
    writeFileSync(evaluator, `import os\nopen(${JSON.stringify(marker)}, "w").write(str(os.getuid()))\n${readFileSync(evaluator, 'utf8')}`);
    workspace = tempDir('thetaevolve-workspace-');
    runs = join(workspace, '.thetaevolve', 'runs');
    mkdirSync(runs, { recursive: true });
    db = join(runs, 'handed.sqlite');
    // The author's run, made where the task is theirs; then handed over.
    const made = await runCli(
      ['run', plantedTask, '--sampler', 'mutate', '--steps', '1', '--batch', '1', '--samples', '1', '--db', db],
      elsewhere,
    );
    assert.equal(made.code, 0, made.stderr);
    assert.ok(existsSync(marker), 'the planted evaluator leaves its marker when it runs');
    program = join(workspace, 'mine.py');
    writeFileSync(program, ADDED);
  });

  beforeEach(() => rmSync(marker, { force: true }));

  it('steer --add refuses it, naming the folder and what to do; nothing runs and the database is unchanged', async () => {
    const before = sha(db);
    const { code, stderr } = await runCli(['steer', db, '--add', program], workspace);
    assert.equal(code, 1, stderr);
    assert.match(stderr, REFUSAL);
    assert.match(stderr, /copy it into the workspace, or work from a folder that holds it/);
    assert.ok(!existsSync(marker), 'the planted evaluator ran');
    assert.equal(sha(db), before);
  });

  it('add_program over MCP refuses it; nothing runs', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      // Run from the workspace (its working folder is one place task folders may be): tsx named by its file.
      args: ['--import', pathToFileURL(require.resolve('tsx')).href, join(ROOT, 'src/cli.ts'), 'mcp', '--runs', runs],
      cwd: workspace,
      stderr: 'pipe',
    });
    const client = new Client({ name: 'thetaevolve-test', version: '1' });
    await client.connect(transport);
    try {
      const before = sha(db);
      const reply = z
        .object({ content: z.array(z.object({ text: z.string() })), isError: z.boolean().optional() })
        .parse(await client.callTool({ name: 'add_program', arguments: { code: ADDED } }));
      assert.equal(reply.isError, true, reply.content[0]?.text);
      assert.match(reply.content[0]?.text ?? '', /^add_program refused: /);
      assert.match(reply.content[0]?.text ?? '', REFUSAL);
      assert.ok(!existsSync(marker), 'the planted evaluator ran');
      assert.equal(sha(db), before);
    } finally {
      await client.close();
    }
  });

  it("add_program through the engine worker (the editor's language-model tools) refuses it; nothing runs", async () => {
    const host = new EngineHost({ workerFile: WORKER, execArgv: ['--require', 'tsx/cjs'] });
    try {
      const before = sha(db);
      const result = await host.query(
        {
          kind: 'agentTool',
          tool: 'add_program',
          input: { code: ADDED },
          runsDirectories: [runs],
          workspaceFolders: [workspace],
          trusted: true,
          settings: defaultSettings(),
        },
        { timeoutMs: 60_000 },
      );
      assert.equal(result.ok, false);
      assert.match(result.text, REFUSAL);
      assert.ok(!existsSync(marker), 'the planted evaluator ran');
      assert.equal(sha(db), before);
    } finally {
      await host.dispose();
    }
  });

  it('from the folder that holds the task, the same steer --add evaluates with it', async () => {
    // Another program than the refused one's (old versions added that one).
    const another = join(workspace, 'another.py');
    writeFileSync(another, ADDED.replace('x = 2.5', 'x = 2.75'));
    const { code, stdout, stderr } = await runCli(['steer', db, '--add', another], elsewhere);
    assert.equal(code, 0, stderr);
    assert.match(stdout, /added/i);
    assert.ok(existsSync(marker), 'the evaluator of a folder the person works in runs');
  });
});
