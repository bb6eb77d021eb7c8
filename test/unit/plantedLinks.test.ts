// Writes never follow a planted link, and a task's files never lead out of
// its folder (issue 42 item 5): convert and FunSearch conversion refuse a link
// at a name they write, leaving its target as it was; an OpenEvolve folder
// whose initial program or evaluator links to a "credentials" file outside,
// a task.json whose initialProgram does, or a release folder whose program,
// evaluator, verify.py or config does (issue 51 item 7), is refused saying so.
import { strict as assert } from 'node:assert';
import {
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { runAgentTool } from '../../src/engine/agentTools/handlers';
import { type AgentToolHost, readRunFile } from '../../src/engine/agentTools/host';
import { assertFolderInside, NewFileError } from '../../src/engine/newFiles';
import { runControlFile } from '../../src/engine/runFiles';
import { requestRunControl } from '../../src/engine/steering/runControl';
import { CONVERTED_FILES } from '../../src/engine/task/convert';
import { loadTask, TaskError } from '../../src/engine/task/task';
import { runCli } from '../support/cli';
import { tempDir } from '../support/tempDirs';

const OPENEVOLVE = resolve(__dirname, '../fixtures/openevolve/triangle_area');
const CAP_SET = resolve(__dirname, '../fixtures/funsearch/sum_free.py');
const QUADRATIC = resolve(__dirname, '../fixtures/tasks/quadratic');
const RELEASE = resolve(__dirname, '../fixtures/release/tiny_sum');
const SECRET = '[default]\naws_secret_access_key = not-for-the-model\n';

describe('planted links', function () {
  this.timeout(60_000);
  let dir: string;
  let secret: string;
  beforeEach(() => {
    dir = tempDir('thetaevolve-links-');
    // Stands for ~/.aws/credentials: a file outside every task folder.
    secret = join(dir, 'credentials');
    writeFileSync(secret, SECRET);
  });

  it('convert refuses a link at a file it writes; the link target and the folder stay as they were', async () => {
    const folder = join(dir, 'task');
    cpSync(OPENEVOLVE, folder, { recursive: true });
    symlinkSync(secret, join(folder, CONVERTED_FILES.evaluator));
    const { code, stderr } = await runCli(['convert', folder], dir);
    assert.equal(code, 1, stderr);
    assert.match(stderr, new RegExp(`${CONVERTED_FILES.evaluator} is a symbolic link: refused`));
    assert.equal(readFileSync(secret, 'utf8'), SECRET);
    assert.ok(!existsSync(join(folder, CONVERTED_FILES.taskFile)), 'no task.json: the folder still loads as OpenEvolve');
  });

  it('FunSearch conversion refuses an output folder that is a link, writing nothing through it', async () => {
    const elsewhere = join(dir, 'elsewhere');
    mkdirSync(elsewhere);
    // Where the folder goes by default: beside the specification, named after it.
    const spec = join(dir, 'cap_set.py');
    cpSync(CAP_SET, spec);
    symlinkSync(elsewhere, join(dir, 'cap_set'));
    const { code, stderr } = await runCli(['convert', spec, '--inputs', '[3]'], dir);
    assert.equal(code, 1, stderr);
    assert.match(stderr, /cap_set: is a symbolic link: refused/);
    assert.deepEqual(readdirSync(elsewhere), []);
  });

  for (const name of ['initial_program.py', 'evaluator.py'])
    it(`an OpenEvolve folder whose ${name} links to a file outside it is refused, naming where it leads`, async () => {
      const folder = join(dir, 'task');
      cpSync(OPENEVOLVE, folder, { recursive: true });
      const file = join(folder, name);
      writeFileSync(file, '');
      symlinkSync(secret, `${file}.link`);
      // Replace the file by the link (rename over it keeps one name).
      renameSync(`${file}.link`, file);
      await assert.rejects(loadTask(folder), (err: unknown) => {
        assert.ok(err instanceof TaskError);
        assert.match(err.message, new RegExp(`resolves to ${secret.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}, outside the task folder`));
        return true;
      });
      const { code, stderr } = await runCli(['evaluate', folder, join(OPENEVOLVE, 'initial_program.py')], dir);
      assert.equal(code, 1);
      assert.match(stderr, /outside the task folder/);
      assert.doesNotMatch(stderr, /not-for-the-model/);
    });

  for (const name of [
    'initial_programs/initial_program.py',
    'evaluators/evaluator_modular.py',
    'evaluators/verify.py',
    'configs/config_tiny_sum_it_S.yaml',
  ])
    it(`a release folder whose ${name} links to a file outside it is refused, naming where it leads`, async () => {
      const folder = join(dir, 'tiny_sum');
      cpSync(RELEASE, folder, { recursive: true });
      const file = join(folder, name);
      // What it leads to is a well-formed file of its kind: only where it lies is wrong.
      const outside = join(dir, basename(name));
      cpSync(file, outside);
      symlinkSync(outside, `${file}.link`);
      renameSync(`${file}.link`, file);
      await assert.rejects(loadTask(folder), (err: unknown) => {
        assert.ok(err instanceof TaskError);
        assert.match(err.message, new RegExp(`resolves to ${outside.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}, outside the task folder`));
        return true;
      });
      // A link that stays inside the folder is fine (git stores links).
      rmSync(file);
      cpSync(join(RELEASE, name), join(folder, `${name}.real`));
      symlinkSync(join(folder, `${name}.real`), file);
      assert.equal((await loadTask(folder)).dir, folder);
    });

  it('a task.json whose initialProgram is a link out of the folder is refused; one inside it is read', async () => {
    const folder = join(dir, 'task');
    cpSync(QUADRATIC, folder, { recursive: true });
    const taskFile = join(folder, 'task.json');
    const raw = JSON.parse(readFileSync(taskFile, 'utf8')) as Record<string, unknown>;
    symlinkSync(secret, join(folder, 'linked.py'));
    writeFileSync(taskFile, JSON.stringify({ ...raw, initialProgram: 'linked.py' }));
    await assert.rejects(loadTask(folder), /initialProgram.*resolves to .*credentials, outside the task folder/s);
    // git stores links: one that stays inside the folder is fine.
    symlinkSync(join(folder, 'initial.py'), join(folder, 'inside.py'));
    writeFileSync(taskFile, JSON.stringify({ ...raw, initialProgram: 'inside.py' }));
    assert.equal((await loadTask(folder)).initialProgramPath, join(folder, 'inside.py'));
  });

  describe('run databases and the files written beside them (issue 51 item 7)', () => {
    let runs: string;
    let outsideDb: string;
    before(async () => {
      const made = tempDir('thetaevolve-links-run-');
      outsideDb = join(made, 'private.sqlite');
      const run = await runCli(
        ['run', QUADRATIC, '--sampler', 'mutate', '--steps', '1', '--batch', '1', '--samples', '1', '--db', outsideDb],
        made,
      );
      assert.equal(run.code, 0, run.stderr);
    });
    beforeEach(() => {
      runs = join(dir, 'runs');
      mkdirSync(runs);
      cpSync(outsideDb, join(runs, 'mine.sqlite'));
    });

    it('the agent tools list and open only the databases in the runs folder, never one a link there leads to', async () => {
      symlinkSync(outsideDb, join(runs, 'planted.sqlite'));
      const host: AgentToolHost = {
        runsDirectories: [runs],
        runFiles: [],
        trusted: true,
        read: readRunFile,
        openEvaluator: () => Promise.reject(new Error('nothing is evaluated here')),
      };
      const listed = await runAgentTool('list_runs', {}, host);
      assert.equal(listed.ok, true, listed.text);
      assert.deepEqual(
        (listed.ok ? (listed.data.runs as { id: string }[]) : []).map((r) => r.id),
        ['mine'],
      );
      const status = await runAgentTool('run_status', { run: 'planted' }, host);
      assert.equal(status.ok, false);
      assert.match(status.text, /no run "planted": the runs are: mine/);
    });

    it('db --best --output (the helper report --output uses) and a run control request never write through a link planted at the temporary name', async () => {
      const victim = join(dir, 'victim.txt');
      writeFileSync(victim, SECRET);
      const db = join(runs, 'mine.sqlite');
      const out = join(dir, 'best.py');
      // The names an earlier version wrote to first: predictable from the process id.
      symlinkSync(victim, `${out}.${process.pid}.tmp`);
      symlinkSync(victim, `${runControlFile(db)}.${process.pid}.tmp`);
      const best = await runCli(['db', db, '--best', '--output', out], dir);
      assert.equal(best.code, 0, best.stderr);
      await requestRunControl(db, 'pause', 'researcher');
      assert.equal(readFileSync(victim, 'utf8'), SECRET, 'written through a planted link');
      assert.ok(lstatSync(out).isFile() && lstatSync(runControlFile(db)).isFile(), 'the files themselves were written');
      assert.match(readFileSync(out, 'utf8'), /EVOLVE-BLOCK-START/);
    });
  });

  it('a folder that links out of its root is refused', async () => {
    const root = join(dir, 'workspace');
    mkdirSync(root);
    mkdirSync(join(dir, 'elsewhere'));
    symlinkSync(join(dir, 'elsewhere'), join(root, 'circle-packing'));
    mkdirSync(join(root, 'real'));
    await assertFolderInside(join(root, 'real'), root);
    await assert.rejects(assertFolderInside(join(root, 'circle-packing'), root), NewFileError);
  });
});
