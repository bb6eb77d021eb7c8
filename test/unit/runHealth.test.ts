// Whose failure is it: the sandbox or the task's evaluator failing is never
// scored as the model's. Real sandboxes, real evaluators, the real CLI.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { type AddressInfo, createServer, type Socket } from 'node:net';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { Evaluator } from '../../src/engine/sandbox/evaluator';
import { loadTask } from '../../src/engine/task/task';
import { runCli } from '../support/cli';
import { tempDir } from '../support/tempDirs';

const QUADRATIC = resolve(__dirname, '../fixtures/tasks/quadratic');
const SANDBOX = { concurrency: 2, memoryLimitMb: 512, outputLimitBytes: 64 * 1024 };

/** A copy of the quadratic task whose evaluator is `evaluator` (Python). */
function taskWithEvaluator(evaluator: string): string {
  const dir = join(tempDir('thetaevolve-health-', { mode: 0o755 }), 'quadratic');
  cpSync(QUADRATIC, dir, { recursive: true });
  writeFileSync(join(dir, 'evaluate.py'), evaluator);
  return dir;
}

const StepLineSchema = z.object({ step: z.number() }).passthrough();

describe('run health: infrastructure failures are never the model’s', function () {
  this.timeout(120_000);

  it('a sandbox that cannot be set up (a folder bwrap cannot bind: its copy was removed) ends evaluation_failed, not a penalty', async () => {
    const key = `gone${process.pid}`;
    const task = { ...(await loadTask(QUADRATIC)), sandboxReadOnlyDirs: { [key]: QUADRATIC } };
    const evaluator = new Evaluator(task, SANDBOX);
    try {
      // What a temp-folder cleaner (or a lost disk) does between the start of a run and an evaluation.
      for (const name of readdirSync(tmpdir()).filter((n) => n.startsWith(`thetaevolve-ro-${key}-`))) {
        rmSync(join(tmpdir(), name), { recursive: true, force: true });
      }
      const result = await evaluator.evaluate(task.initialProgram);
      assert.equal(result.status, 'evaluation_failed', result.reason);
      assert.equal(result.score, null);
      assert.match(result.reason, /the sandbox failed to start/);
      assert.match(result.reason, new RegExp(`thetaevolve-ro-${key}-`));
    } finally {
      await evaluator.close();
    }
  });

  it('a task folder that cannot be copied for the sandbox stops the start, naming it', async () => {
    const task = { ...(await loadTask(QUADRATIC)), sandboxReadOnlyDirs: { data: '/nonexistent/thetaevolve-missing-folder' } };
    assert.throws(
      () => new Evaluator(task, SANDBOX),
      /cannot copy \/nonexistent\/thetaevolve-missing-folder \(the task's \{data\}\) for the sandbox: ENOENT/,
    );
  });

  it('an evaluator that raises at import stops the start, naming the evaluator and its last line; no step runs', async () => {
    const dir = taskWithEvaluator('import os\nos.environ["THETAEVOLVE_NO_SUCH_VARIABLE"]\n');
    const db = join(dir, '..', 'run.sqlite');
    const { code, stdout, stderr } = await runCli(
      ['run', dir, '--sampler', 'mutate', '--steps', '3', '--batch', '2', '--samples', '2', '--db', db, '--json'],
      dir,
    );
    assert.equal(code, 1, stderr);
    assert.match(
      stderr,
      /the task's evaluator \(.*evaluate\.py\) failed on the starting program, so no candidate could be scored: .*KeyError: 'THETAEVOLVE_NO_SUCH_VARIABLE'/,
    );
    const steps = stdout
      .split('\n')
      .filter((line) => line.trim() !== '')
      .flatMap((line) => (StepLineSchema.safeParse(JSON.parse(line)).success ? [line] : []));
    assert.deepEqual(steps, [], 'no step may run against a broken evaluator');
  });

  it('evaluate: a broken evaluator gives evaluation_failed with no score, exit 1, the reason on stderr', async () => {
    const dir = taskWithEvaluator('raise KeyError("x")\n');
    const { code, stdout, stderr } = await runCli(['evaluate', dir, join(dir, 'initial.py'), '--json'], dir);
    assert.equal(code, 1);
    const json = z
      .object({ status: z.string(), score: z.null(), metrics: z.record(z.string(), z.unknown()) })
      .passthrough()
      .parse(JSON.parse(stdout));
    assert.equal(json.status, 'evaluation_failed');
    assert.equal(json.metrics.evaluator_failed, true);
    assert.match(stderr, /the evaluation could not run \(not the program's fault\): the evaluator exited with code 1/);
  });

  // Overlapping, the step planned after the failed one is abandoned with it and planned again (docs/algorithm.md section 1).
  for (const pipelineDepth of [0, 1])
    it(`a step whose every evaluation failed on our side stops the run like a step with no answers (maxFailedSteps), and scores nothing (pipelineDepth ${pipelineDepth})`, async () => {
      // Works on the starting program (x = 1), crashes on every other solution: the evaluator's bug, not the children's.
      const dir = taskWithEvaluator(
        [
          'import json, sys',
          'x = json.load(open(sys.argv[1]))["x"]',
          'if x != 1:',
          '    raise RuntimeError("evaluator bug on x=%r" % x)',
          'print(json.dumps({"valid": True, "objective": 10 - (x - 3) ** 2, "metrics": {}, "reason": ""}))',
          '',
        ].join('\n'),
      );
      const db = join(dir, '..', 'run.sqlite');
      const args = ['run', dir, '--sampler', 'mutate', '--steps', '3', '--batch', '2', '--samples', '2', '--db', db, '--json'];
      const { code, stdout, stderr } = await runCli([...args, '--set', 'maxFailedSteps=2', '--set', `pipelineDepth=${pipelineDepth}`], dir);
      assert.equal(code, 1, stderr);
      if (pipelineDepth > 0) assert.match(stderr, /steps overlapping \(pipelineDepth 1\)/);
      assert.match(
        stderr,
        /no evaluation of step 1 could run \(\d+ failed on our side, not the model's\): \d+ x the evaluator exited with code 1/,
      );
      assert.match(stderr, /\(2 tries in a row; thetaevolve\.maxFailedSteps\); the run stops, every committed step is kept/);
      assert.ok(!stdout.includes('"step":1'), 'step 1 was never committed');
      assert.ok(existsSync(db));
      const summary = await runCli(['db', db, '--json'], dir);
      assert.equal(
        z.object({ lastStep: z.number() }).passthrough().parse(JSON.parse(summary.stdout)).lastStep,
        0,
        'only the starting program is in the database',
      );
    });
});

describe('run health: a trainer that never answers is named at once, with the deadline the settings give', function () {
  this.timeout(120_000);

  it('the CLI says it is connecting, then that the trainer fails and that the run waits for it, and finishes', async () => {
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => {
      sockets.add(socket); // accepts, never answers
      socket.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    try {
      const dir = tempDir('thetaevolve-silent-trainer-');
      const { code, stderr } = await runCli(
        [
          ...['run', QUADRATIC, '--sampler', 'mutate', '--steps', '1', '--batch', '2', '--samples', '2', '--db', join(dir, 'run.sqlite')],
          ...['--trainer', url, '--trainer-protocol', 'slime'],
          ...['--set', 'trainer.requestTimeoutSeconds=1', '--set', 'trainer.syncTimeoutSeconds=2'],
        ],
        dir,
      );
      assert.equal(code, 0, stderr);
      const lines = stderr.split('\n');
      const connecting = lines.findIndex((line) => line.includes(`slime trainer at ${url}: on (sync), connecting`));
      const notReady = lines.findIndex((line) => line.includes(`the trainer at ${url} is not ready (`) && /1 s/.test(line));
      const waiting = lines.findIndex((line) => line.includes(`slime trainer at ${url}: waiting for the trainer (synchronous mode`));
      assert.ok(connecting >= 0, `no 'connecting' line:\n${stderr}`);
      assert.ok(notReady > connecting, `no 'not ready' line naming the 1 s deadline after it:\n${stderr}`);
      assert.ok(waiting > notReady, `no 'waiting for the trainer' line after step 1:\n${stderr}`);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });
});

describe('run health: a full disk', function () {
  this.timeout(180_000);

  it('ends the run naming the disk, leaves no temporary file, and the last line names a best the database holds', async function () {
    // A small tmpfs is a full disk on demand; mounting one needs root (CI and GPU boxes run as root).
    if (process.getuid?.() !== 0) this.skip();
    const mount = tempDir('thetaevolve-full-disk-');
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=192k', 'tmpfs', mount]);
    try {
      const db = join(mount, 'run.sqlite');
      const args = ['run', QUADRATIC, '--sampler', 'mutate', '--steps', '500', '--batch', '4', '--samples', '4', '--db', db];
      const { code, stderr } = await runCli(args, tempDir('thetaevolve-full-disk-cwd-'));
      assert.equal(code, 1, stderr);
      assert.match(
        stderr,
        /step \d+ could not be saved to .*run\.sqlite: the disk is full \(ENOSPC\); the file keeps every step before it/,
      );
      assert.deepEqual(
        readdirSync(mount).filter((name) => name.endsWith('.tmp')),
        [],
        'a failed write takes its temporary file with it',
      );
      const last = /thetaevolve run: .*; best \S+ \((\w+)\); database /.exec(stderr);
      assert.ok(last, `no final line:\n${stderr.slice(-2000)}`);
      const best = await runCli(['db', db, '--best', '--json'], mount);
      assert.equal(best.code, 0, best.stderr);
      assert.equal(
        z.object({ id: z.string() }).passthrough().parse(JSON.parse(best.stdout)).id,
        last[1],
        'the best named is the one the file holds',
      );
    } finally {
      execFileSync('umount', ['-l', mount]);
    }
  });
});
