// `thetaevolve evaluate` as product.md specifies it.
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { main } from '../../src/cli';
import type { CliIO } from '../../src/cli/io';
import { tempDir } from '../support/tempDirs';

const REPO = join(__dirname, '../..');
const FIXTURE = join(REPO, 'test/fixtures/hostile');

async function cli(args: string[], signal = new AbortController().signal): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const io: CliIO = {
    stdout: (t) => void (stdout += t),
    stderr: (t) => void (stderr += t),
    stderrIsTTY: false,
    signal,
    cwd: REPO,
    env: {},
  };
  const code = await main(args, io);
  return { code, stdout, stderr };
}

describe('cli: evaluate', function () {
  this.timeout(60_000);
  let dir: string;
  before(() => {
    dir = tempDir('te-cli-');
  });

  it('an evaluation interrupted (Ctrl-C, a kill) is no score: evaluation_failed, score null, metrics.cancelled kept', async () => {
    const interrupted = new AbortController();
    interrupted.abort();
    const { code, stdout } = await cli(['evaluate', 'tasks/hadamard-29', 'tasks/hadamard-29/initial.py', '--json'], interrupted.signal);
    const out = JSON.parse(stdout) as {
      status: string;
      score: number | null;
      objective: number | null;
      reason: string;
      metrics: Record<string, unknown>;
    };
    assert.deepEqual([out.status, out.score, out.objective], ['evaluation_failed', null, null]);
    assert.equal(out.metrics.cancelled, true, 'a SLURM job reads it as stopped on its node');
    assert.match(out.reason, /interrupted before it finished/);
    assert.notEqual(code, 0);
  });

  it('prints status, score, objective, metrics, reason and durationMs with --json', async () => {
    const { code, stdout } = await cli(['evaluate', 'tasks/hadamard-29', 'tasks/hadamard-29/initial.py', '--json']);
    assert.equal(code, 0);
    const out = JSON.parse(stdout) as Record<string, unknown>;
    // Beside product.md's fields: the candidate's kept output and a valid solution's text (a SLURM job's result carries them back).
    assert.deepEqual(Object.keys(out).sort(), [
      'durationMs',
      'metrics',
      'objective',
      'protected',
      'reason',
      'score',
      'solution',
      'status',
      'stderr',
      'stdout',
      'unprotectedReason',
    ]);
    assert.equal(typeof out.stdout, 'string');
    assert.equal((JSON.parse(out.solution as string) as { matrix: unknown[] }).matrix.length, 29);
    // Our task.json keeps the evaluator apart from the candidate.
    assert.equal(out.protected, true);
    assert.equal(out.unprotectedReason, null);
    assert.equal(out.status, 'ok');
    assert.ok(Math.abs((out.objective as number) - 0.1433) < 0.001);
    assert.equal(out.score, out.objective);
    assert.equal(out.reason, '');
    assert.equal(typeof out.durationMs, 'number');
  });

  it('exits 0 for a failing candidate, and --timeout overrides the runtime limit', async () => {
    const program = join(dir, 'slow.py');
    await writeFile(program, 'import time\ntime.sleep(600)\n');
    const started = performance.now();
    const { code, stdout } = await cli(['evaluate', FIXTURE, program, '--json', '--timeout', '0.5']);
    assert.equal(code, 0);
    const out = JSON.parse(stdout) as Record<string, unknown>;
    assert.equal(out.status, 'timeout');
    assert.equal(out.score, -0.2);
    assert.equal(out.objective, null);
    assert.match(out.reason as string, /0\.5 s limit/);
    assert.ok(performance.now() - started < 60_000, 'killed at its limit, not waited out');
  });

  it('--json carries the candidate output with every control character escaped (C1 too), the JSON exact', async () => {
    const program = join(dir, 'loud.py');
    await writeFile(program, 'import sys\nsys.stdout.write("A\\x1b[2J\\x9b31mB\\x7f")\nsys.stderr.write("boom\\n")\nraise SystemExit(2)\n');
    const { code, stdout } = await cli(['evaluate', FIXTURE, program, '--json']);
    assert.equal(code, 0);
    // The line a terminal receives holds no control character at all.
    // eslint-disable-next-line no-control-regex -- looking for control characters is the point
    assert.doesNotMatch(stdout.trimEnd(), /[\u0000-\u001f\u007f-\u009f]/);
    const out = JSON.parse(stdout) as { status: string; stdout: string; stderr: string };
    assert.equal(out.status, 'no_solution');
    assert.equal(out.stdout, 'A\u001b[2J\u009b31mB\u007f');
    assert.equal(out.stderr, 'boom\n');
  });

  it('prints a readable summary without --json', async () => {
    const { code, stdout } = await cli(['evaluate', FIXTURE, join(FIXTURE, 'initial.py')]);
    assert.equal(code, 0);
    assert.match(stdout, /status\s+ok/);
    assert.match(stdout, /objective\s+1\.5 \(maximize\)/);
  });

  it('exits 1 with one line naming the problem for a bad task or program, 2 for bad usage', async () => {
    const folder = await mkdtemp(join(dir, 'task-'));
    await writeFile(join(folder, 'task.json'), JSON.stringify({ name: 'x', title: 'x', direction: 'sideways' }));
    const bad = await cli(['evaluate', folder, join(FIXTURE, 'initial.py')]);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /task\.json: field direction/);
    assert.equal(bad.stderr.trim().split('\n').length, 1);
    const missing = await cli(['evaluate', FIXTURE, join(dir, 'nope.py')]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /cannot read the program file/);
    const usage = await cli(['evaluate', FIXTURE, join(FIXTURE, 'initial.py'), '--timeout', '-1']);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /--timeout needs a positive number/);
  });

  it('--result-files evaluates several programs at once, each result beside its program and its folder named in --done-dir', async () => {
    const root = await mkdtemp(join(dir, 'packed-'));
    const programs = {
      good: 'import json\njson.dump({"value": 4}, open("solution.json", "w"))\n',
      exits: 'raise SystemExit(3)\n',
      slow: 'import time\ntime.sleep(60)\n',
    };
    for (const [name, code] of Object.entries(programs)) {
      await mkdir(join(root, name));
      await writeFile(join(root, name, 'program.py'), code);
    }
    await mkdir(join(root, 'done'));
    const files = Object.keys(programs).map((name) => join(root, name, 'program.py'));
    const run = await cli(['evaluate', FIXTURE, ...files, '--result-files', '--done-dir', join(root, 'done'), '--timeout', '2']);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout, '', 'the results go to their files');
    const result = async (name: string): Promise<Record<string, unknown>> =>
      JSON.parse(await readFile(join(root, name, 'result.json'), 'utf8')) as Record<string, unknown>;
    assert.deepEqual(
      [(await result('good')).status, (await result('good')).objective, (await result('exits')).status, (await result('slow')).status],
      ['ok', 4, 'no_solution', 'timeout'],
    );
    assert.deepEqual((await readdir(join(root, 'done'))).sort(), ['exits', 'good', 'slow']);
    assert.deepEqual((await readdir(join(root, 'good'))).sort(), ['program.py', 'result.json'], 'no partial file left');

    // A program gone meanwhile (its candidate was cancelled) costs the others nothing; exit 1 says one has no result.
    await mkdir(join(root, 'again'));
    await writeFile(join(root, 'again', 'program.py'), programs.good);
    const withMissing = await cli([
      'evaluate',
      FIXTURE,
      join(root, 'gone', 'program.py'),
      join(root, 'again', 'program.py'),
      '--result-files',
    ]);
    assert.equal(withMissing.code, 1);
    assert.match(withMissing.stderr, /cannot read the program file .*gone/);
    assert.equal((JSON.parse(await readFile(join(root, 'again', 'result.json'), 'utf8')) as { status: string }).status, 'ok');

    const several = await cli(['evaluate', FIXTURE, ...files, '--json']);
    assert.equal(several.code, 2);
    assert.match(several.stderr, /several program files need --result-files/);
    const doneAlone = await cli(['evaluate', FIXTURE, files[0] as string, '--done-dir', root]);
    assert.equal(doneAlone.code, 2);
    assert.match(doneAlone.stderr, /--done-dir needs --result-files/);
  });
});
