// Bad command-line input is refused before anything runs (exit 2 naming the
// flag), and `db --best --output` never writes over a database and writes
// atomically, keeping the file's mode.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { writeFileAtomic } from '../../src/engine/database/atomicFile';
import { ProgramDatabase } from '../../src/engine/database/programDatabase';
import { runCli } from '../support/cli';
import { tempDir } from '../support/tempDirs';
import { programWith, testConfig } from './fixtures/database/programs';

const TASK = path.resolve(__dirname, '../../tasks/circle-packing');

describe('CLI input', () => {
  let dir: string;
  beforeEach(() => {
    dir = tempDir('thetaevolve-cliinput-');
  });

  const refused: [string[], RegExp][] = [
    [['--steps', '-2'], /--steps needs an integer of at least 1, got '-2'/],
    [['--until-step=-1'], /--until-step needs an integer of at least 1, got '-1'/],
    [['--batch', '0'], /--batch needs an integer of at least 1/],
    [['--seed', '-1'], /--seed needs an integer of at least 0/],
    [['--trainer', 'notaurl'], /--trainer needs an http:\/\/ or https:\/\/ URL, got 'notaurl'/],
    [['--trainer', 'ftp://host/x'], /--trainer needs an http:\/\/ or https:\/\/ URL/],
    [['--db', ''], /--db needs a value \(FILE\), got an empty one/],
  ];
  for (const [flags, message] of refused) {
    it(`run ${flags.join(' ')}: exit 2 naming the flag, nothing written`, async () => {
      const { code, stderr, stdout } = await runCli(['run', TASK, '--sampler', 'mutate', ...flags], dir);
      assert.equal(code, 2, stderr);
      assert.match(stderr, message);
      assert.equal(stdout, '');
      assert.deepEqual(fs.readdirSync(dir), [], 'nothing may be written for refused input');
    });
  }

  it('evaluate --timeout 0 is refused naming the flag', async () => {
    const { code, stderr } = await runCli(['evaluate', TASK, path.join(TASK, 'initial_program.py'), '--timeout', '0'], dir);
    assert.equal(code, 2);
    assert.match(stderr, /--timeout needs a positive number/);
  });

  it("run refuses to resume another task's database, which stays unchanged", async function () {
    this.timeout(60_000);
    const db = path.join(dir, 'run.sqlite');
    const first = await runCli(['run', TASK, '--sampler', 'mutate', '--steps', '1', '--batch', '1', '--samples', '1', '--db', db], dir);
    assert.equal(first.code, 0, first.stderr);
    const before = fs.readFileSync(db);
    const other = path.resolve(__dirname, '../../tasks/hadamard-29');
    const { code, stderr } = await runCli(['run', other, '--sampler', 'mutate', '--steps', '1', '--db', db], dir);
    assert.equal(code, 1);
    assert.match(
      stderr,
      /run\.sqlite is a run of the task 'circle-packing' \(.*circle-packing\), not of 'hadamard-29': resume it with its own task, or give another database/,
    );
    assert.deepEqual(fs.readFileSync(db), before);
  });

  it('a resumed run keeps its database private (0600 stays 0600)', async function () {
    this.timeout(60_000);
    const db = path.join(dir, 'run.sqlite');
    const args = ['run', TASK, '--sampler', 'mutate', '--batch', '1', '--samples', '1', '--db', db];
    const first = await runCli([...args, '--steps', '1'], dir);
    assert.equal(first.code, 0, first.stderr);
    fs.chmodSync(db, 0o600);
    const resumed = await runCli([...args, '--steps', '1'], dir);
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.match(resumed.stderr + resumed.stdout, /step 2/);
    assert.equal(fs.statSync(db).mode & 0o777, 0o600);
  });

  describe('db --best --output', () => {
    let dbFile: string;
    beforeEach(async () => {
      dbFile = path.join(dir, 'run.sqlite');
      const db = await ProgramDatabase.open(dbFile, { config: testConfig({ numIslands: 2 }) });
      const root = await db.addInitial(programWith(0.5, 100, null, 0, 'root'));
      await db.commitStep({ step: 1, children: [programWith(0.75, 120, root.id, 1, 'better')], stats: {}, engineState: null });
      await db.close();
    });

    it('refuses to write over the database it reads, which stays unchanged', async () => {
      const before = fs.readFileSync(dbFile);
      const { code, stderr } = await runCli(['db', 'run.sqlite', '--best', '--output', 'run.sqlite'], dir);
      assert.equal(code, 1);
      assert.match(stderr, /refusing to write the program over .*run\.sqlite: it is a SQLite database \(the run being read\)/);
      assert.deepEqual(fs.readFileSync(dbFile), before);
    });

    it('refuses to write over another database', async () => {
      fs.copyFileSync(dbFile, path.join(dir, 'other.sqlite'));
      const before = fs.readFileSync(path.join(dir, 'other.sqlite'));
      const { code, stderr } = await runCli(['db', 'run.sqlite', '--best', '--json', '--output', 'other.sqlite'], dir);
      assert.equal(code, 1);
      assert.match(stderr, /refusing to write the program over .*other\.sqlite: it is a SQLite database/);
      assert.deepEqual(fs.readFileSync(path.join(dir, 'other.sqlite')), before);
    });

    it('replaces an existing program file whole, keeping its mode, with no temporary file left', async () => {
      const out = path.join(dir, 'best.py');
      fs.writeFileSync(out, 'old\n', { mode: 0o600 });
      fs.chmodSync(out, 0o600);
      const { code, stderr } = await runCli(['db', 'run.sqlite', '--best', '--output', 'best.py'], dir);
      assert.equal(code, 0, stderr);
      assert.match(fs.readFileSync(out, 'utf8'), /better/);
      assert.equal(fs.statSync(out).mode & 0o777, 0o600);
      assert.deepEqual(fs.readdirSync(dir).sort(), ['best.py', 'run.sqlite']);
    });
  });

  describe('writeFileAtomic', () => {
    it('keeps the mode of the file it replaces (a 0600 database stays private)', async () => {
      const file = path.join(dir, 'private.sqlite');
      fs.writeFileSync(file, 'v1');
      fs.chmodSync(file, 0o600);
      await writeFileAtomic(file, new TextEncoder().encode('v2'));
      assert.equal(fs.readFileSync(file, 'utf8'), 'v2');
      assert.equal(fs.statSync(file).mode & 0o777, 0o600);
    });

    it('takes its temporary file with it when the write fails', async () => {
      const target = path.join(dir, 'a-folder');
      fs.mkdirSync(target);
      await assert.rejects(writeFileAtomic(target, 'x'));
      assert.deepEqual(fs.readdirSync(dir), ['a-folder']);
    });
  });
});
