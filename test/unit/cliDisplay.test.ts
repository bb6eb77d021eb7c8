// The CLI's lines for people hold no control or format character from text it
// did not write (issue 42 item 2): a task title with an OSC 8 link, an OSC 52
// clipboard write and cursor moves, and a served model id with one, reach
// stderr and `db` as readable text; --json stays exact.
import { strict as assert } from 'node:assert';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { startTestServer, type TestServer } from '../server/openaiTestServer';
import { runCli } from '../support/cli';
import { tempDir } from '../support/tempDirs';

const FIXTURE = resolve(__dirname, '../fixtures/tasks/quadratic');
const ESC = '\u001b';
const BEL = '\u0007';
const CSI = '\u009b';
/** Any control character but newline and tab, and the format characters (bidi overrides, zero-width). */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\p{Cf}]/u;

const TITLE = `Quad ${ESC}]8;;https://evil.example${BEL}click${ESC}]8;;${BEL} ${ESC}]52;c;cm0gLXJmIH4=${BEL}${ESC}[2A${ESC}[2K\u009b1;1H\u202Eend`;
const MODEL = `model${ESC}]52;c;ZXZpbA==${BEL}-x`;

describe('CLI: lines for people are filtered', function () {
  this.timeout(120_000);
  let server: TestServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('run and db show a hostile task title and model id as text; --json keeps them exact', async () => {
    const dir = tempDir('thetaevolve-clidisplay-');
    const taskDir = join(dir, 'task');
    cpSync(FIXTURE, taskDir, { recursive: true });
    const taskFile = join(taskDir, 'task.json');
    writeFileSync(taskFile, JSON.stringify({ ...JSON.parse(readFileSync(taskFile, 'utf8')), title: TITLE }));
    server = await startTestServer({ latencyMs: 1, models: [MODEL] });
    const db = join(dir, 'run.sqlite');
    const args = ['run', taskDir, '--endpoint', server.baseURL, '--model', MODEL, '--steps', '1', '--batch', '1', '--samples', '1'];
    const run = await runCli([...args, '--db', db, '--json'], dir, { OPENAI_API_KEY: 'k' });
    assert.equal(run.code, 0, run.stderr);
    assert.doesNotMatch(run.stderr, UNSAFE, run.stderr);
    assert.match(run.stderr, /Quad \]8;;https:\/\/evil\.exampleclick\]8;; \]52;c;cm0gLXJmIH4=\[2A\[2K1;1Hend/, 'the title reads as text');
    assert.match(run.stderr, /model\]52;c;ZXZpbA==-x/, 'the model id reads as text');

    const shown = await runCli(['db', db], dir);
    assert.equal(shown.code, 0, shown.stderr);
    assert.doesNotMatch(shown.stdout, UNSAFE, shown.stdout);

    // A ban and a pin, then the database's own strings as `db` lists them.
    const best = JSON.parse((await runCli(['db', db, '--best', '--json'], dir)).stdout) as { id: string };
    assert.equal((await runCli(['steer', db, '--pin', best.id, '--share', '0.5', '--steps', '2'], dir)).code, 0);
    const listed = await runCli(['db', db], dir);
    assert.match(listed.stdout, new RegExp(`pinned +${best.id}`));
    assert.doesNotMatch(listed.stdout + listed.stderr, UNSAFE);

    const json = await runCli(['db', db, '--lineage', 'best', '--json'], dir);
    assert.equal(json.code, 0, json.stderr);
    assert.ok(JSON.parse(json.stdout), 'machine output is JSON as before');
  });

  it('an error naming a hostile path says it as text', async () => {
    const dir = tempDir('thetaevolve-clidisplay-');
    const missing = join(dir, `gone${ESC}]8;;https://evil.example${BEL}x.sqlite`);
    const { code, stderr } = await runCli(['db', missing], dir);
    assert.equal(code, 1);
    assert.doesNotMatch(stderr, UNSAFE, stderr);
    assert.match(stderr, /gone\]8;;https:\/+evil\.examplex\.sqlite: no such run database/);
  });

  // Issue 51 item 8: the attacker's text is a candidate's stderr and a program's own code.
  it("quotes a candidate's stderr without its [label](command:...) link, as the notifications show it", async () => {
    const dir = tempDir('thetaevolve-clidisplay-');
    cpSync(FIXTURE, join(dir, 'task'), { recursive: true });
    const program = join(dir, 'program.py');
    writeFileSync(
      program,
      'import sys\n# EVOLVE-BLOCK-START\nx = 3\n# EVOLVE-BLOCK-END\n' +
        'sys.stderr.write("see [Fix it](command:workbench.action.terminal.sendSequence?%7B%22text%22%3A%22rm%22%7D) or <command:x.y>\\n")\n' +
        'sys.exit(3)\n',
    );
    const shown = await runCli(['evaluate', join(dir, 'task'), program], dir);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /the program exited with code 3/, shown.stdout);
    assert.match(
      shown.stdout,
      /see \[Fix it\] \(command: workbench\.action\.terminal\.sendSequence\?%7B%22text%22%3A%22rm%22%7D\) or < command: x\.y>/,
    );
    assert.doesNotMatch(shown.stdout, /\]\(|command:\S|<command:/, shown.stdout);
  });

  it('db --json writes the C1 controls of a stored program (U+009B is CSI) as \\u escapes, and parses to the same text', async () => {
    const dir = tempDir('thetaevolve-clidisplay-');
    cpSync(FIXTURE, join(dir, 'task'), { recursive: true });
    const code = readFileSync(join(dir, 'task', 'initial.py'), 'utf8') + `# \u009b2J\u009b1;1H cleared \u0085 ${ESC}[31m \u202Eend\n`;
    const program = join(dir, 'program.py');
    writeFileSync(program, code);
    const db = join(dir, 'run.sqlite');
    const run = await runCli(
      ['run', join(dir, 'task'), '--sampler', 'mutate', '--program', program, '--steps', '1', '--batch', '1', '--samples', '1', '--db', db],
      dir,
    );
    assert.equal(run.code, 0, run.stderr);
    const guidance = `think ${CSI}2J harder`;
    writeFileSync(join(dir, 'guidance.txt'), guidance);
    assert.equal((await runCli(['steer', db, '--guidance', join(dir, 'guidance.txt')], dir)).code, 0);
    for (const args of [['--best', '--json'], ['--json']]) {
      const shown = await runCli(['db', db, ...args], dir);
      assert.equal(shown.code, 0, shown.stderr);
      assert.doesNotMatch(shown.stdout, UNSAFE, `db ${args.join(' ')} printed a raw control or format character`);
      assert.match(shown.stdout, /\\u009b/);
    }
    const best = JSON.parse((await runCli(['db', db, '--best', '--json'], dir)).stdout) as { code: string };
    assert.equal(best.code.includes(`\u009b2J\u009b1;1H cleared \u0085 ${ESC}[31m \u202Eend`), true, 'the JSON parses to the exact code');
    const report = JSON.parse((await runCli(['db', db, '--json'], dir)).stdout) as { guidance: Array<{ text: string | null }> };
    assert.equal(report.guidance.at(-1)?.text, guidance);
  });
});
