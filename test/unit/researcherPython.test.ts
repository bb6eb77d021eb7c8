// The researcher's Python (docs/architecture.md "The researcher's Python"):
// a venv below a private (0700) folder holds the only copy of a module the
// task's program and evaluator import; the interpreter is found through each
// source of the command line's order, runs inside bwrap with the venv
// readable and nothing else of that folder, is recorded in the run database,
// and one that is missing, or lacks the module, stops the run in one line.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pythonFromCommandLine } from '../../src/engine/python/interpreter';
import { runCli } from '../support/cli';
import { tempDir } from '../support/tempDirs';

/** Debian's interpreter, named: the venv is made from it (python3 on PATH may be another one). */
const DEBIAN_PYTHON = '/usr/bin/python3';
const MODULE = 'thetaevolve_private_module';

const TASK_JSON = {
  name: 'private-module',
  title: 'Private module',
  direction: 'maximize',
  initialProgram: 'program.py',
  candidate: { command: ['{python}', '{program}'], runtimeLimitSec: 30 },
  evaluator: { command: ['{python}', '{taskDir}/evaluate.py', '{solution}'], timeLimitSec: 30 },
  metaInformation: [{ id: 'only', weight: 1, text: 'Make the number larger.' }],
};

// The program proves where it ran: the venv's module answers, and nothing else of the private folder is there.
const program = (secret: string): string => `import os
import ${MODULE}
# EVOLVE-BLOCK-START
x = 3
# EVOLVE-BLOCK-END
assert not os.path.exists(${JSON.stringify(secret)}), "the sandbox shows what lies beside the venv"
with open("solution.json", "w") as f:
    f.write(str(${MODULE}.double(x)))
`;

const EVALUATOR = `import json, sys
import ${MODULE}
value = float(open(sys.argv[1]).read())
print(json.dumps({"valid": ${MODULE}.double(1) == 2, "objective": value, "metrics": {}}))
`;

describe("the researcher's Python", function () {
  this.timeout(180000);
  let privateDir: string;
  let venv: string;
  let taskDir: string;

  before(() => {
    privateDir = tempDir('te-python-private-');
    assert.equal(statSync(privateDir).mode & 0o777, 0o700);
    venv = join(privateDir, 'venv');
    // With the system's packages, so numpy and scipy (Debian's) are recorded too.
    execFileSync(DEBIAN_PYTHON, ['-m', 'venv', '--system-site-packages', '--without-pip', venv]);
    const purelib = execFileSync(join(venv, 'bin', 'python'), ['-c', 'import sysconfig; print(sysconfig.get_paths()["purelib"])'], {
      encoding: 'utf8',
    }).trim();
    writeFileSync(join(purelib, `${MODULE}.py`), 'def double(x):\n    return 2 * x\n');
    writeFileSync(join(privateDir, 'secret.txt'), 'not for candidates\n');
    taskDir = join(privateDir, 'task');
    mkdirSync(taskDir);
    writeFileSync(join(taskDir, 'task.json'), JSON.stringify(TASK_JSON, null, 2));
    writeFileSync(join(taskDir, 'program.py'), program(join(privateDir, 'secret.txt')));
    writeFileSync(join(taskDir, 'evaluate.py'), EVALUATOR);
  });

  const evaluate = (env: Record<string, string | undefined>, ...flags: string[]) =>
    runCli(['evaluate', taskDir, join(taskDir, 'program.py'), ...flags], privateDir, env);

  const sources: [string, () => { env: Record<string, string | undefined>; flags: string[]; executable: string }][] = [
    ['--python', () => ({ env: {}, flags: ['--python', join(venv, 'bin', 'python')], executable: join(venv, 'bin', 'python') })],
    ['VIRTUAL_ENV', () => ({ env: { VIRTUAL_ENV: venv, PATH: '/usr/bin:/bin' }, flags: [], executable: join(venv, 'bin', 'python') })],
    ['CONDA_PREFIX', () => ({ env: { CONDA_PREFIX: venv, PATH: '/usr/bin:/bin' }, flags: [], executable: join(venv, 'bin', 'python') })],
    ['PATH', () => ({ env: { PATH: `${join(venv, 'bin')}:/usr/bin:/bin` }, flags: [], executable: join(venv, 'bin', 'python3') })],
  ];
  for (const [source, setup] of sources) {
    it(`found through ${source}, runs the program in the sandbox and the evaluator, both importing the venv's module`, async () => {
      const { env, flags, executable } = setup();
      assert.equal(pythonFromCommandLine(flags[1], env, privateDir).source, source);
      const result = await evaluate(env, ...flags);
      assert.equal(result.code, 0, result.stdout + result.stderr);
      assert.match(result.stdout, /^status\s+ok$/m);
      assert.match(result.stdout, /^objective\s+6 \(maximize\)$/m);
      assert.match(result.stdout, /^isolation\s+bwrap/m, 'the full sandbox');
      const python = /^python\s+(.*)$/m.exec(result.stdout)?.[1] ?? '';
      assert.ok(python.includes(`(${executable};`), python);
      assert.match(python, /numpy \d+\.\d+/);
    });
  }

  it("the same program without the module (Debian's own interpreter) fails, and a run of it stops at the health check naming the interpreter", async () => {
    const result = await runCli(
      [
        'run',
        taskDir,
        '--python',
        DEBIAN_PYTHON,
        '--db',
        join(privateDir, 'no-module.sqlite'),
        '--steps',
        '1',
        '--set',
        'sampler=mutate',
        '--set',
        'batchSize=1',
        '--set',
        'samplesPerPrompt=1',
      ],
      privateDir,
      {},
    );
    assert.notEqual(result.code, 0);
    assert.match(result.stderr, new RegExp(`the starting program cannot import ${MODULE} with the Python interpreter ${DEBIAN_PYTHON}`));
    assert.doesNotMatch(result.stderr, /^step 1/m, 'no step ran');
  });

  it('the evaluator alone lacking the module is the same infrastructure failure, never a score', async () => {
    const evaluatorOnly = join(privateDir, 'evaluator-only');
    mkdirSync(evaluatorOnly);
    // The program needs nothing; the evaluator imports a module this interpreter does not have.
    writeFileSync(join(evaluatorOnly, 'task.json'), JSON.stringify(TASK_JSON));
    writeFileSync(
      join(evaluatorOnly, 'program.py'),
      'x = 1\n# EVOLVE-BLOCK-START\ny = 3\n# EVOLVE-BLOCK-END\nopen("solution.json", "w").write("6")\n',
    );
    writeFileSync(join(evaluatorOnly, 'evaluate.py'), EVALUATOR);
    const result = await runCli(
      [
        'run',
        evaluatorOnly,
        '--python',
        DEBIAN_PYTHON,
        '--db',
        join(privateDir, 'evaluator-only.sqlite'),
        '--steps',
        '1',
        '--set',
        'sampler=mutate',
        '--set',
        'batchSize=1',
        '--set',
        'samplesPerPrompt=1',
      ],
      privateDir,
      {},
    );
    assert.notEqual(result.code, 0);
    assert.match(result.stderr, new RegExp(`the task's evaluator cannot import ${MODULE} with the Python interpreter ${DEBIAN_PYTHON}`));
  });

  it('a missing interpreter is one line naming it, and nothing runs', async () => {
    const missing = join(privateDir, 'no-such-env', 'bin', 'python');
    const run = await runCli(
      ['run', taskDir, '--python', missing, '--db', join(privateDir, 'missing.sqlite'), '--set', 'sampler=mutate'],
      privateDir,
      {},
    );
    assert.equal(run.code, 1);
    assert.match(run.stderr, new RegExp(`the Python interpreter ${missing} \\(from --python\\) does not exist`));
    const evaluated = await evaluate({ VIRTUAL_ENV: join(privateDir, 'no-such-env') });
    assert.equal(evaluated.code, 1);
    assert.match(evaluated.stderr, /the Python interpreter .*no-such-env\/bin\/python \(from VIRTUAL_ENV\) does not exist/);
    assert.equal(evaluated.stdout, '');
  });

  it('the run records its interpreter, version and package versions; db --json and report show them', async () => {
    const dbFile = join(privateDir, 'recorded.sqlite');
    const run = await runCli(
      ['run', taskDir, '--db', dbFile, '--steps', '1', '--set', 'sampler=mutate', '--set', 'batchSize=1', '--set', 'samplesPerPrompt=2'],
      privateDir,
      { VIRTUAL_ENV: venv, PATH: '/usr/bin:/bin' },
    );
    assert.equal(run.code, 0, run.stderr);
    const firstLine = run.stderr.split('\n')[0] ?? '';
    assert.ok(firstLine.includes(`Python `) && firstLine.includes(join(venv, 'bin', 'python')), firstLine);
    const db = await runCli(['db', dbFile, '--json'], privateDir, {});
    assert.equal(db.code, 0, db.stderr);
    const python = (
      JSON.parse(db.stdout) as { python: { executable: string; source: string; version: string; packages: Record<string, string> } }
    ).python;
    assert.equal(python.executable, join(venv, 'bin', 'python'));
    assert.equal(python.source, 'VIRTUAL_ENV');
    const debian = execFileSync(DEBIAN_PYTHON, ['-c', 'import platform, numpy; print(platform.python_version(), numpy.__version__)'], {
      encoding: 'utf8',
    }).trim();
    assert.equal(`${python.version} ${python.packages.numpy}`, debian, "the venv's interpreter and the system numpy it sees");
    const report = await runCli(['report', dbFile, '--json'], privateDir, { PATH: '/usr/bin:/bin' });
    assert.equal(report.code, 0, report.stderr);
    const compared = (JSON.parse(report.stdout) as { runs: { python: { executable: string } | null; settings: { python: string } }[] })
      .runs[0];
    assert.equal(compared?.python?.executable, join(venv, 'bin', 'python'));
    assert.ok(
      compared.settings.python.startsWith(`${python.version} (`) && compared.settings.python.includes(`numpy ${python.packages.numpy}`),
    );
  });
});
