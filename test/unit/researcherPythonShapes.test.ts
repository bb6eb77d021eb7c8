// The researcher's Python as it is really installed (docs/architecture.md
// "The researcher's Python"): a standalone interpreter laid out as uv lays
// one out under a private home (~/.local/share/uv/python/..., named through
// ~/.local/bin/python3), reached through an absolute link on PATH, a
// relative link, a wrapper script (a pyenv shim), and a venv made from it
// (whose bin/python3 is a link to the base, and must stay the venv). Each
// environment alone holds the module the program and the evaluator import,
// and says which it is; inside the sandbox only what an interpreter needs of
// its prefix is there (nothing of the home, no dot-entry). An interpreter
// that is gone inside the sandbox, or a module the interpreter lacks, is
// evaluation_failed naming it, never a score.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, renameSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, relative } from 'node:path';
import { probePython } from '../../src/engine/python/interpreter';
import { Evaluator } from '../../src/engine/sandbox/evaluator';
import { interpreterBinds } from '../../src/engine/sandbox/interpreterBinds';
import { readOnlyCopies } from '../../src/engine/sandbox/readOnlyCopies';
import { removeTree } from '../../src/engine/sandbox/cleanup';
import { loadTask } from '../../src/engine/task/task';
import { runBuiltCliAsNobody, runCli } from '../support/cli';
import { standalonePython } from '../support/standalonePython';
import { tempDir } from '../support/tempDirs';

const DEBIAN_PYTHON = '/usr/bin/python3';
const MODULE = 'thetaevolve_shape_module';
const IS_ROOT = process.getuid?.() === 0;

const TASK_JSON = {
  name: 'shape',
  title: 'Which environment',
  direction: 'maximize',
  initialProgram: 'program.py',
  candidate: { command: ['{python}', '{program}'], runtimeLimitSec: 30 },
  evaluator: { command: ['{python}', '{taskDir}/evaluate.py', '{solution}'], timeLimitSec: 30 },
  metaInformation: [{ id: 'only', weight: 1, text: 'Make the number larger.' }],
};

// The program proves where it ran: its environment's module answers, and nothing else of the home or the prefix is there.
const program = (hidden: string[]): string => `import os
import ${MODULE}
# EVOLVE-BLOCK-START
x = 1
# EVOLVE-BLOCK-END
seen = [p for p in ${JSON.stringify(hidden)} if os.path.exists(p)]
assert not seen, "the sandbox shows %s" % seen
with open("solution.json", "w") as f:
    f.write(str(${MODULE}.VALUE * x))
`;

const EVALUATOR = `import json, sys
import ${MODULE}
value = float(open(sys.argv[1]).read())
print(json.dumps({"valid": True, "objective": value, "metrics": {}}))
`;

function writeTask(dir: string, hidden: string[]): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'task.json'), JSON.stringify(TASK_JSON, null, 2));
  writeFileSync(join(dir, 'program.py'), program(hidden));
  writeFileSync(join(dir, 'evaluate.py'), EVALUATOR);
}

const pythonLine = (stdout: string): string => /^python\s+(.*)$/m.exec(stdout)?.[1] ?? '';

describe("the researcher's Python as it is installed", function () {
  this.timeout(300000);
  let home: string;
  let uvPrefix: string;
  let uvPython: string;
  let bin: string;
  let venv: string;
  let taskDir: string;

  before(() => {
    // A private home (0700), as /root is on GPU boxes.
    home = tempDir('te-python-home-');
    uvPrefix = join(home, '.local', 'share', 'uv', 'python', 'cpython-3-linux-gnu');
    uvPython = standalonePython(uvPrefix, MODULE, 2);
    mkdirSync(join(home, '.local', 'bin'));
    symlinkSync(uvPython, join(home, '.local', 'bin', 'python3'));
    writeFileSync(join(home, 'secret.txt'), 'not for candidates\n');
    bin = tempDir('te-python-bin-');
    symlinkSync(relative(bin, uvPython), join(bin, 'python3'));
    writeFileSync(join(bin, 'python-shim'), `#!/bin/sh\nexec ${uvPython} "$@"\n`, { mode: 0o755 });
    symlinkSync(DEBIAN_PYTHON, join(bin, 'debian-python3'));
    // A venv made from the standalone interpreter: its bin/python3 is a link to the base, outside the venv.
    venv = join(home, 'venv');
    execFileSync(uvPython, ['-m', 'venv', '--without-pip', venv]);
    const purelib = execFileSync(join(venv, 'bin', 'python'), ['-I', '-c', 'import sysconfig; print(sysconfig.get_paths()["purelib"])'], {
      encoding: 'utf8',
    }).trim();
    writeFileSync(join(purelib, `${MODULE}.py`), 'VALUE = 3\n');
    taskDir = join(tempDir('te-python-task-', { mode: 0o755 }), 'task');
    writeTask(taskDir, [join(home, 'secret.txt'), join(uvPrefix, '.secrets', 'key'), join(uvPrefix, 'etc', 'private.conf')]);
  });

  const shapes: [string, () => { env: Record<string, string>; flags: string[]; executable: string; named: string; objective: number }][] = [
    [
      "uv's absolute link in ~/.local/bin, found on PATH",
      () => ({
        env: { PATH: `${join(home, '.local', 'bin')}:/usr/bin:/bin` },
        flags: [],
        executable: uvPython,
        named: join(home, '.local', 'bin', 'python3'),
        objective: 2,
      }),
    ],
    [
      'a relative link in a temp bin',
      () => ({ env: {}, flags: ['--python', join(bin, 'python3')], executable: uvPython, named: join(bin, 'python3'), objective: 2 }),
    ],
    [
      'a wrapper script (a pyenv shim)',
      () => ({
        env: {},
        flags: ['--python', join(bin, 'python-shim')],
        executable: uvPython,
        named: join(bin, 'python-shim'),
        objective: 2,
      }),
    ],
    [
      'a conda environment, activated (CONDA_PREFIX; its bin/python a link inside it)',
      () => ({
        env: { CONDA_PREFIX: uvPrefix, PATH: '/usr/bin:/bin' },
        flags: [],
        executable: join(uvPrefix, 'bin', 'python'),
        named: join(uvPrefix, 'bin', 'python'),
        objective: 2,
      }),
    ],
    [
      'a module-system Python (/opt or /sw style, or conda not activated): its bin first on PATH',
      () => ({
        env: { PATH: `${join(uvPrefix, 'bin')}:/usr/bin:/bin` },
        flags: [],
        executable: join(uvPrefix, 'bin', 'python3'),
        named: join(uvPrefix, 'bin', 'python3'),
        objective: 2,
      }),
    ],
    [
      'a venv made from it (its bin/python3 a link to the base: still the venv)',
      () => ({
        env: { VIRTUAL_ENV: venv, PATH: '/usr/bin:/bin' },
        flags: [],
        executable: join(venv, 'bin', 'python'),
        named: join(venv, 'bin', 'python'),
        objective: 3,
      }),
    ],
  ];
  for (const [shape, setup] of shapes) {
    it(`${shape}: runs in the sandbox as outside, its own module imported, nothing else of the home or the prefix there; the run shows both paths`, async () => {
      const { env, flags, executable, named, objective } = setup();
      const result = await runCli(['evaluate', taskDir, join(taskDir, 'program.py'), ...flags], taskDir, env);
      assert.equal(result.code, 0, result.stdout + result.stderr);
      assert.match(result.stdout, /^status\s+ok$/m, result.stdout);
      assert.match(result.stdout, new RegExp(`^objective\\s+${objective} \\(maximize\\)$`, 'm'));
      assert.match(result.stdout, /^isolation\s+bwrap/m, 'the full sandbox');
      const python = pythonLine(result.stdout);
      assert.ok(python.includes(`(${executable}${named === executable ? ')' : ` named as ${named})`}`), python);
    });
  }

  it('as the unprivileged user (not root): a relative link to a standalone interpreter runs in the sandbox as outside', async function () {
    const readable = tempDir('te-python-nobody-', { mode: 0o755 });
    const prefix = join(readable, 'home', '.local', 'share', 'uv', 'python', 'cpython-3-linux-gnu');
    const python = standalonePython(prefix, MODULE, 2);
    const linkDir = join(readable, 'bin');
    mkdirSync(linkDir);
    symlinkSync(relative(linkDir, python), join(linkDir, 'python3'));
    const task = join(readable, 'task');
    writeTask(task, [join(prefix, '.secrets', 'key'), join(prefix, 'etc', 'private.conf')]);
    const running = runBuiltCliAsNobody(['evaluate', task, join(task, 'program.py'), '--python', join(linkDir, 'python3')], readable, {});
    if (running === null) this.skip();
    const result = await running;
    assert.equal(result.code, 0, result.stdout + result.stderr);
    assert.match(result.stdout, /^status\s+ok$/m, result.stdout);
    assert.match(result.stdout, /^objective\s+2 \(maximize\)$/m);
    assert.ok(pythonLine(result.stdout).includes(`(${python} named as ${join(linkDir, 'python3')})`), result.stdout);
  });

  it("uv's link on PATH through `run`: the run starts, records the interpreter it executes and the link named", async () => {
    const dbFile = join(dirname(taskDir), 'uv.sqlite');
    const run = await runCli(
      ['run', taskDir, '--db', dbFile, '--steps', '1', '--set', 'sampler=mutate', '--set', 'batchSize=1', '--set', 'samplesPerPrompt=1'],
      taskDir,
      { PATH: `${join(home, '.local', 'bin')}:/usr/bin:/bin` },
    );
    assert.equal(run.code, 0, run.stderr);
    const db = await runCli(['db', dbFile, '--json'], taskDir, {});
    const recorded = (JSON.parse(db.stdout) as { python: { executable: string; named?: string }; best: { score: number } | null }).python;
    assert.equal(recorded.executable, uvPython);
    assert.equal(recorded.named, join(home, '.local', 'bin', 'python3'));
  });

  it("Debian's /usr/bin/python3 through a link in a temp bin: the bundled circle packing scores as with the interpreter itself", async () => {
    const repoTask = join(__dirname, '..', '..', 'tasks', 'circle-packing');
    const linked = await runCli(['evaluate', repoTask, join(repoTask, 'initial.py'), '--python', join(bin, 'debian-python3')], taskDir, {});
    assert.equal(linked.code, 0, linked.stdout + linked.stderr);
    assert.match(linked.stdout, /^status\s+ok$/m, linked.stdout);
    assert.ok(pythonLine(linked.stdout).includes(`(${DEBIAN_PYTHON} named as ${join(bin, 'debian-python3')};`), linked.stdout);
    const direct = await runCli(['evaluate', repoTask, join(repoTask, 'initial.py'), '--python', DEBIAN_PYTHON], taskDir, {});
    assert.equal(/^objective\s+(.*)$/m.exec(linked.stdout)?.[1], /^objective\s+(.*)$/m.exec(direct.stdout)?.[1]);
  });

  it('an interpreter gone after the run started is evaluation_failed naming it, never a score', async () => {
    // Reachable by everyone, so bound where it is (as root a private one is bound from a linked tree made at the start).
    const prefix = join(tempDir('te-python-gone-', { mode: 0o755 }), 'python');
    const python = standalonePython(prefix, MODULE, 2);
    const gone = join(tempDir('te-python-gone-task-', { mode: 0o755 }), 'task');
    writeTask(gone, []);
    const task = await loadTask(gone);
    const environment = await probePython({ path: python, source: '--python' });
    for (const warmInterpreters of ['off', 'auto'] as const) {
      const evaluator = new Evaluator(task, {
        concurrency: 1,
        memoryLimitMb: 1024,
        outputLimitBytes: 64 * 1024,
        warmInterpreters,
        python: environment,
      });
      try {
        const before = await evaluator.evaluate(task.initialProgram);
        assert.equal(before.status, 'ok', before.reason);
        renameSync(python, `${python}.away`);
        const after = await evaluator.evaluate(task.initialProgram);
        assert.equal(after.status, 'evaluation_failed', `${after.status}: ${after.reason}`);
        assert.equal(after.score, null);
        // The candidate's sandbox says so before anything runs; a warm one started before may still run it, and then
        // the task's evaluator is the one that cannot start it: either way no score, naming the interpreter.
        assert.match(after.reason, new RegExp(`${python}(: it does not exist|: No such file or directory)`));
      } finally {
        renameSync(`${python}.away`, python);
        await evaluator.close();
      }
    }
  });

  it('a prefix that holds the task folder is refused naming it: evaluation_failed, and a run stops at its start in one line', async () => {
    const prefix = join(tempDir('te-python-holds-', { mode: 0o755 }), 'env');
    const python = standalonePython(prefix, MODULE, 2);
    const inside = join(prefix, 'task');
    writeTask(inside, []);
    const evaluated = await runCli(['evaluate', inside, join(inside, 'program.py'), '--python', python], inside, {});
    assert.equal(evaluated.code, 1, evaluated.stdout + evaluated.stderr);
    assert.match(evaluated.stdout, /^status\s+evaluation_failed$/m);
    assert.match(evaluated.stderr, new RegExp(`the Python prefix ${prefix} holds ${inside}`));
    const run = await runCli(
      ['run', inside, '--python', python, '--db', join(dirname(prefix), 'holds.sqlite'), '--steps', '1', '--set', 'sampler=mutate'],
      inside,
      {},
    );
    assert.equal(run.code, 1, run.stderr);
    assert.match(run.stderr, new RegExp(`the Python prefix ${prefix} holds ${inside}`));
    assert.doesNotMatch(run.stdout + run.stderr, /^step 1/m, 'no step ran');
  });

  it("a prefix that holds the CLI's working folder (its workspace) is refused naming it: `evaluate` is evaluation_failed, `run` stops at its start", async () => {
    const root = tempDir('te-python-workspace-', { mode: 0o755 });
    const prefix = join(root, 'env');
    const python = standalonePython(prefix, MODULE, 2);
    const workspace = join(prefix, 'work');
    mkdirSync(workspace);
    const taskDir = join(root, 'task');
    writeTask(taskDir, []);
    const evaluated = await runCli(['evaluate', taskDir, join(taskDir, 'program.py'), '--python', python], workspace, {});
    assert.equal(evaluated.code, 1, evaluated.stdout + evaluated.stderr);
    assert.match(evaluated.stdout, /^status\s+evaluation_failed$/m);
    assert.match(
      evaluated.stderr,
      new RegExp(`the Python prefix ${prefix} holds ${workspace}, a home directory, the task's folder or a workspace folder`),
    );
    const run = await runCli(
      ['run', taskDir, '--python', python, '--db', join(root, 'holds.sqlite'), '--steps', '1', '--set', 'sampler=mutate'],
      workspace,
      {},
    );
    assert.equal(run.code, 1, run.stderr);
    assert.match(run.stderr, new RegExp(`the Python prefix ${prefix} holds ${workspace}`));
    assert.doesNotMatch(run.stdout + run.stderr, /^step 1/m, 'no step ran');
  });

  it('a prefix that is a workspace folder is refused; a venv inside the workspace (the CLI working there) evaluates as usual', async () => {
    const workspace = tempDir('te-python-in-workspace-', { mode: 0o755 });
    const prefix = join(workspace, '.venv');
    const python = standalonePython(prefix, MODULE, 3);
    await assert.rejects(interpreterBinds([prefix], null, tmpdir(), [prefix]), new RegExp(`the Python prefix ${prefix} is ${prefix}`));
    const taskDir = join(workspace, 'task');
    writeTask(taskDir, []);
    const evaluated = await runCli(['evaluate', taskDir, join(taskDir, 'program.py'), '--python', python], workspace, {});
    assert.equal(evaluated.code, 0, evaluated.stdout + evaluated.stderr);
    assert.match(evaluated.stdout, /^status\s+ok$/m);
    assert.match(evaluated.stdout, /^score\s+3\b/m);
  });

  it('a prefix that is or holds a home directory is refused naming it; one inside a home is bound by its needed entries only', async () => {
    await assert.rejects(interpreterBinds([home], null, tmpdir(), [home]), new RegExp(`the Python prefix ${home} is ${home}`));
    await assert.rejects(interpreterBinds([dirname(home)], null, tmpdir(), [home]), new RegExp(`holds ${home}`));
    const binds = await interpreterBinds([uvPrefix, venv], null, tmpdir(), [home]);
    assert.deepEqual(binds.dirs.map((d) => basename(d.hostDir)).sort(), ['bin', 'bin', 'include', 'lib', 'lib', 'pyvenv.cfg']);
    assert.deepEqual(
      binds.links.map((l) => [basename(l.sandboxPath), l.target]),
      [['lib64', 'lib']],
    );
  });

  it('`evaluate` says what `run` says of a module the interpreter lacks, for our task format and an OpenEvolve folder', async () => {
    const root = tempDir('te-python-missing-', { mode: 0o755 });
    const ours = join(root, 'ours');
    writeTask(ours, []);
    writeFileSync(
      join(ours, 'program.py'),
      'x = 1\n# EVOLVE-BLOCK-START\ny = 3\n# EVOLVE-BLOCK-END\nopen("solution.json", "w").write("6")\n',
    );
    const openEvolve = join(root, 'openevolve');
    mkdirSync(openEvolve);
    writeFileSync(join(openEvolve, 'initial_program.py'), '# EVOLVE-BLOCK-START\ndef f():\n    return 3\n# EVOLVE-BLOCK-END\n');
    writeFileSync(
      join(openEvolve, 'evaluator.py'),
      `import ${MODULE}\n\ndef evaluate(program_path):\n    return {"combined_score": ${MODULE}.VALUE}\n`,
    );
    for (const [dir, programFile, who] of [
      [ours, 'program.py', "the task's evaluator"],
      [openEvolve, 'initial_program.py', "the program or the task's evaluator"],
    ] as const) {
      const result = await runCli(['evaluate', dir, join(dir, programFile), '--python', DEBIAN_PYTHON], root, {});
      assert.equal(result.code, 1, result.stdout + result.stderr);
      assert.match(result.stdout, /^status\s+evaluation_failed$/m, result.stdout);
      assert.match(result.stdout, new RegExp(`${who} cannot import ${MODULE} with the Python interpreter ${DEBIAN_PYTHON}`));
      // The same environment with the module: a score.
      const fine = await runCli(['evaluate', dir, join(dir, programFile), '--python', join(bin, 'python3')], root, {});
      assert.match(fine.stdout, /^status\s+ok$/m, fine.stdout + fine.stderr);
    }
  });
});

describe('task copies for the sandbox', () => {
  const releaseConfig =
    'llm:\n  api_base: "https://example.invalid/v1"\n  api_key: sk-te-copied-secret\n  models:\n    - name: m\n      api_key: sk-te-model\nmax_iterations: 3\n';

  const source = (): string => {
    const dir = tempDir('te-copy-source-');
    mkdirSync(join(dir, 'configs'));
    writeFileSync(join(dir, 'configs', 'config.yaml'), releaseConfig, { mode: 0o644 });
    writeFileSync(join(dir, 'run.sh'), '#!/bin/sh\n', { mode: 0o755 });
    writeFileSync(join(dir, '.env'), 'KEY=1\n');
    return dir;
  };

  it('as the sandbox runs as us: owner-only modes, no dot-entries, and a config without its keys', async () => {
    const { copies, made } = readOnlyCopies({ taskDir: source() }, tmpdir(), false);
    try {
      const copy = copies.taskDir as string;
      assert.equal(statSync(copy).mode & 0o777, 0o700);
      assert.equal(statSync(join(copy, 'configs')).mode & 0o777, 0o700);
      assert.equal(statSync(join(copy, 'configs', 'config.yaml')).mode & 0o777, 0o600);
      assert.equal(statSync(join(copy, 'run.sh')).mode & 0o777, 0o700);
      assert.throws(() => statSync(join(copy, '.env')));
      const config = readFileSync(join(copy, 'configs', 'config.yaml'), 'utf8');
      assert.doesNotMatch(config, /sk-te-|example\.invalid/);
      assert.match(config, /^ {2}api_key: ""$/m);
      assert.match(config, /^max_iterations: 3$/m);
    } finally {
      for (const dir of made) await removeTree(dir);
    }
  });

  it('as root (the sandbox runs as nobody): readable by others only under an unguessable name in a 0711 folder', async function () {
    if (!IS_ROOT) this.skip();
    const { copies, made } = readOnlyCopies({ taskDir: source() }, tmpdir(), true);
    try {
      const copy = copies.taskDir as string;
      assert.equal(statSync(dirname(copy)).mode & 0o777, 0o711);
      assert.match(basename(copy), /^[0-9a-f]{32}$/);
      assert.equal(statSync(join(copy, 'configs', 'config.yaml')).mode & 0o777, 0o644);
      assert.doesNotMatch(readFileSync(join(copy, 'configs', 'config.yaml'), 'utf8'), /sk-te-/);
    } finally {
      for (const dir of made) await removeTree(dir);
    }
  });

  it("as root, a private prefix's hard-link tree sits under an unguessable name in a 0711 folder", async function () {
    if (!IS_ROOT) this.skip();
    const prefix = join(tempDir('te-copy-prefix-'), 'env');
    mkdirSync(join(prefix, 'bin'), { recursive: true });
    writeFileSync(join(prefix, 'bin', 'python'), '', { mode: 0o755 });
    const binds = await interpreterBinds([prefix], { uid: 65534 }, tmpdir(), []);
    try {
      const tree = dirname(binds.dirs[0]?.hostDir as string);
      assert.equal(statSync(dirname(tree)).mode & 0o777, 0o711);
      assert.match(basename(tree), /^[0-9a-f]{32}$/);
    } finally {
      for (const dir of binds.made) await removeTree(dir);
    }
  });
});
