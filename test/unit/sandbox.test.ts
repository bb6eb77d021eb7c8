import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { link, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Evaluator, type EvaluatorOptions } from '../../src/engine/sandbox/evaluator';
import { parseEvaluatorReply, scoreSolutionFile } from '../../src/engine/sandbox/trustedEvaluator';
import { detectIsolation, findExecutable } from '../../src/engine/sandbox/isolation';
import { runProcess } from '../../src/engine/sandbox/process';
import { readSolutionFile } from '../../src/engine/sandbox/solutionFile';
import { loadTask, type Task } from '../../src/engine/task/task';
import { processesMatching } from '../fixtures/hostile/processes';
import { tempDir } from '../support/tempDirs';
import { waitFor } from '../support/waitFor';

const FIXTURE = join(__dirname, '../fixtures/hostile');
const BWRAP_EXPECTED = process.platform === 'linux' && findExecutable('bwrap') !== null;

const OPTIONS: EvaluatorOptions = { concurrency: 4, memoryLimitMb: 1024, outputLimitBytes: 64 * 1024 };

/** A candidate program that writes {"value": x}. */
function writesValue(value: string, before = ''): string {
  return `import json, sys, time\n${before}\nwith open("solution.json", "w") as f:\n    f.write(json.dumps({"value": ${value}}))\n`;
}

describe('sandbox: evaluator', function () {
  this.timeout(60_000);
  let task: Task;
  let evaluator: Evaluator;

  before(async () => {
    task = await loadTask(FIXTURE);
    evaluator = new Evaluator(task, OPTIONS);
  });
  after(async () => {
    await evaluator.close();
  });

  it('uses bubblewrap where it is installed, else warns plainly', () => {
    if (BWRAP_EXPECTED) {
      assert.equal(evaluator.isolation.kind, 'bwrap', `bwrap is installed but not used: ${evaluator.isolation.warning}`);
      assert.equal(evaluator.isolation.warning, null);
    } else {
      assert.equal(evaluator.isolation.kind, 'fallback');
      assert.match(evaluator.isolation.warning ?? '', /bubblewrap/);
    }
    // Detected once per process.
    assert.equal(detectIsolation(), detectIsolation());
  });

  it('scores a valid solution with the objective (maximise)', async () => {
    let started = false;
    const result = await evaluator.evaluate(writesValue('2.5', 'print("hello from the candidate")'), { onStart: () => (started = true) });
    assert.equal(started, true);
    assert.equal(result.status, 'ok', result.reason);
    assert.equal(result.score, 2.5);
    assert.equal(result.objective, 2.5);
    assert.equal(result.reason, '');
    assert.equal(result.metrics.value, 2.5);
    assert.match(result.stdout, /hello from the candidate/);
    assert.ok(result.durationMs > 0);
  });

  it('scores 1/objective when minimising', async () => {
    const minimise = new Evaluator({ ...task, direction: 'minimize' }, OPTIONS);
    try {
      const result = await minimise.evaluate(writesValue('4'));
      assert.equal(result.status, 'ok', result.reason);
      assert.equal(result.objective, 4);
      assert.equal(result.score, 0.25);
    } finally {
      await minimise.close();
    }
  });

  it('gives -0.1 for a solution that fails validation, with the evaluator reason', async () => {
    const result = await evaluator.evaluate(writesValue('-3'));
    assert.equal(result.status, 'invalid_solution');
    assert.equal(result.score, -0.1);
    assert.match(result.reason, /finite number > 0/);
  });

  it('gives -0.2 for a crash, a non-zero exit, no file or an unreadable file', async () => {
    const crash = await evaluator.evaluate('raise RuntimeError("boom at line one")\n');
    assert.equal(crash.status, 'no_solution');
    assert.equal(crash.score, -0.2);
    assert.match(crash.reason, /exited with code 1/);
    assert.match(crash.reason, /boom at line one/);

    const exit3 = await evaluator.evaluate(writesValue('2', '') + 'sys.exit(3)\n');
    assert.equal(exit3.status, 'no_solution');
    assert.match(exit3.reason, /code 3/);

    const nothing = await evaluator.evaluate('print("no file")\n');
    assert.equal(nothing.status, 'no_solution');
    assert.match(nothing.reason, /wrote no solution\.json/);

    const garbage = await evaluator.evaluate('open("solution.json", "w").write("{not json")\n');
    assert.equal(garbage.status, 'no_solution');
    assert.equal(garbage.score, -0.2);
    assert.match(garbage.reason, /not JSON/);
  });

  it('gives timeout (-0.2) past the runtime limit, and the override applies', async () => {
    const quick = new Evaluator(task, { ...OPTIONS, runtimeLimitSec: 0.5 });
    try {
      const started = performance.now();
      const result = await quick.evaluate(writesValue('2', 'time.sleep(600)'));
      assert.equal(result.status, 'timeout');
      assert.equal(result.score, -0.2);
      assert.match(result.reason, /0\.5 s limit/);
      // Killed at its limit, not waited out (a minute: it never ended by itself).
      assert.ok(performance.now() - started < 60_000, 'killed at its limit');
    } finally {
      await quick.close();
    }
  });

  it('rejects an over-long program without running it', async () => {
    const result = await evaluator.evaluate(`# ${'x'.repeat(task.maxCodeLength)}\n`);
    assert.equal(result.status, 'no_solution');
    assert.match(result.reason, /over the task's limit/);
  });

  it('runs at most K evaluations at once and queues the rest', async () => {
    const two = new Evaluator(task, { ...OPTIONS, concurrency: 2 });
    try {
      const starts: number[] = [];
      const program = writesValue('1', 'time.sleep(0.5)');
      const results = await Promise.all(
        Array.from({ length: 5 }, () => two.evaluate(program, { onStart: () => starts.push(performance.now()) })),
      );
      assert.deepEqual(
        results.map((r) => r.status),
        ['ok', 'ok', 'ok', 'ok', 'ok'],
      );
      const [first, second, third] = starts as [number, number, number];
      // Two start at once; each later one waits for a slot (a run sleeps 0.5 s).
      assert.ok(second - first < 300, `second started ${second - first} ms after the first`);
      assert.ok(third - first >= 450, `third started only ${third - first} ms after the first`);
    } finally {
      await two.close();
    }
  });

  it('cancels on abort and on close, and never throws', async () => {
    const one = new Evaluator(task, { ...OPTIONS, concurrency: 1 });
    // Cancelled only once the candidate runs: its child process, marked on its command line, is up.
    const sleeper = (marker: string): string =>
      writesValue('1', `import subprocess\nsubprocess.run([sys.executable, "-c", "import time; time.sleep(30)", "${marker}"])`);
    const whenRunning = (marker: string): Promise<unknown> =>
      waitFor(() => processesMatching(marker).length > 0, { what: `the candidate's process ${marker} to run`, deadlineMs: 15_000 });
    const abortMarker = `te-abort-${process.pid}-${Date.now()}`;
    const controller = new AbortController();
    let abortedWhileRunning: Promise<void> | undefined;
    const running = one.evaluate(sleeper(abortMarker), {
      signal: controller.signal,
      onStart: () => (abortedWhileRunning = whenRunning(abortMarker).then(() => controller.abort())),
    });
    const queued = one.evaluate(writesValue('1'));
    const aborted = await running;
    await abortedWhileRunning;
    assert.equal(aborted.status, 'no_solution');
    assert.equal(aborted.metrics.cancelled, true);
    assert.equal((await queued).status, 'ok');

    let closedWhileRunning: Promise<void> | undefined;
    const closeMarker = `te-close-${process.pid}-${Date.now()}`;
    const long = one.evaluate(sleeper(closeMarker), {
      onStart: () => (closedWhileRunning = whenRunning(closeMarker).then(() => one.close())),
    });
    const behind = one.evaluate(writesValue('1'));
    assert.equal((await long).metrics.cancelled, true);
    await closedWhileRunning;
    assert.equal((await behind).metrics.cancelled, true);
    assert.equal((await one.evaluate(writesValue('1'))).metrics.cancelled, true);
  });

  it('truncates captured output at the limit', async () => {
    const small = new Evaluator(task, { ...OPTIONS, outputLimitBytes: 1000 });
    try {
      const result = await small.evaluate(writesValue('1', 'sys.stdout.write("a" * 100000); sys.stderr.write("b" * 100000)'));
      assert.equal(result.status, 'ok', result.reason);
      assert.ok(result.stdout.startsWith('a'.repeat(1000)));
      assert.ok(result.stdout.length < 1100);
      assert.match(result.stdout, /truncated at 1000 bytes/);
      assert.ok(result.stderr.length < 1100);
    } finally {
      await small.close();
    }
  });

  it("treats the task's evaluator crashing or replying malformed as an evaluation that could not run: no score, not the candidate's", async () => {
    const dir = tempDir('te-badeval-');
    await writeFile(join(dir, 'crash.py'), 'import sys\nsys.stderr.write("evaluator bug")\nsys.exit(5)\n');
    await writeFile(join(dir, 'liar.py'), 'print("score: 100")\n');
    await writeFile(join(dir, 'shape.py'), 'print(\'{"valid": true, "objective": "high"}\')\n');
    for (const [script, pattern] of [
      ['crash.py', /exited with code 5[\s\S]*evaluator bug/],
      ['liar.py', /not JSON/],
      ['shape.py', /malformed at objective/],
    ] as const) {
      const broken = new Evaluator({ ...task, evaluatorCommand: ['/usr/bin/python3', join(dir, script), '{solution}'] }, OPTIONS);
      try {
        const result = await broken.evaluate(writesValue('2'));
        assert.equal(result.status, 'evaluation_failed', script);
        assert.equal(result.score, null);
        assert.match(result.reason, pattern);
        assert.equal(result.metrics.evaluator_failed, true);
      } finally {
        await broken.close();
      }
    }
  });

  it('scores a solution file directly with the trusted evaluator', async () => {
    const dir = tempDir('te-score-');
    await writeFile(join(dir, 'solution.json'), '{"value": 7}');
    const result = await scoreSolutionFile(task, join(dir, 'solution.json'));
    assert.equal(result.status, 'ok');
    assert.equal(result.objective, 7);
  });
});

describe('sandbox: fallback isolation', function () {
  this.timeout(60_000);
  let task: Task;
  let evaluator: Evaluator;

  before(async () => {
    task = await loadTask(FIXTURE);
    evaluator = new Evaluator(task, { ...OPTIONS, isolation: 'fallback', allowWeakIsolation: true, runtimeLimitSec: 2 });
  });
  after(async () => {
    await evaluator.close();
  });

  it('says plainly what it does not protect', () => {
    assert.equal(evaluator.isolation.kind, 'fallback');
    assert.match(evaluator.isolation.warning ?? '', /can still read your files and use the network/);
  });

  it('runs a candidate in a private folder with a cleared environment', async () => {
    process.env.THETAEVOLVE_TEST_SECRET = 'fallback-secret-value';
    try {
      const result = await evaluator.evaluate(writesValue('3', 'import os; print(sorted(os.environ.items())); print(os.getcwd())'));
      assert.equal(result.status, 'ok', result.reason);
      assert.equal(result.objective, 3);
      assert.doesNotMatch(result.stdout, /fallback-secret-value/);
      assert.match(result.stdout, /thetaevolve-eval-/);
    } finally {
      delete process.env.THETAEVOLVE_TEST_SECRET;
    }
  });

  it('kills the whole process group at the time limit', async () => {
    const marker = `te-fallback-${process.pid}-${Date.now()}`;
    const result = await evaluator.evaluate(
      `import subprocess, time\nsubprocess.Popen(["/bin/sleep", "300"], env={"M": "${marker}"})\nsubprocess.Popen(["/bin/sh", "-c", "sleep 301 # ${marker}"])\ntime.sleep(60)\n`,
    );
    assert.equal(result.status, 'timeout');
    // The group was sent SIGKILL; the kernel may take a moment to reap it.
    await waitFor(() => processesMatching(marker).length === 0, { what: `no process marked ${marker} left`, deadlineMs: 5000 });
    assert.deepEqual(processesMatching(marker), []);
  });

  it('applies the memory limit', async () => {
    const small = new Evaluator(task, { ...OPTIONS, isolation: 'fallback', allowWeakIsolation: true, memoryLimitMb: 200 });
    try {
      const result = await small.evaluate(writesValue('1', 'hog = bytearray(1024 * 1024 * 1024)'));
      assert.equal(result.status, 'no_solution');
      assert.match(result.reason, /MemoryError/);
    } finally {
      await small.close();
    }
  });
});

describe('sandbox: process runner and solution reader', function () {
  this.timeout(60_000);
  let dir: string;
  before(() => {
    dir = tempDir('te-reader-');
  });

  it('reports exit codes, signals and timeouts', async () => {
    const base = { cwd: dir, env: { PATH: '/usr/bin:/bin' }, outputLimitBytes: 1000 };
    const ok = await runProcess({ ...base, file: '/bin/sh', args: ['-c', 'echo out; echo err >&2; exit 4'], timeoutMs: 5000 });
    assert.equal(ok.exitCode, 4);
    assert.equal(ok.stdout, 'out\n');
    assert.equal(ok.stderr, 'err\n');
    const slow = await runProcess({ ...base, file: '/bin/sh', args: ['-c', 'sleep 600'], timeoutMs: 200 });
    assert.equal(slow.timedOut, true);
    assert.ok(slow.durationMs >= 200 && slow.durationMs < 60_000, `killed at its limit, not waited out: ${slow.durationMs} ms`);
    const missing = await runProcess({ ...base, file: '/nonexistent/program', args: [], timeoutMs: 1000 });
    assert.match(missing.spawnError ?? '', /ENOENT/);
  });

  it('refuses symlinks, FIFOs, hard links, directories, empty and oversized files', async () => {
    await writeFile(join(dir, 'real.json'), '{"value": 1}');
    assert.equal((await readSolutionFile(join(dir, 'real.json'), 'real.json', 100)).ok, true);
    await symlink(join(dir, 'real.json'), join(dir, 'link.json'));
    assert.match(reasonOf(await readSolutionFile(join(dir, 'link.json'), 'solution.json', 100)), /symbolic link/);
    execFileSync('mkfifo', [join(dir, 'fifo.json')]);
    assert.match(reasonOf(await readSolutionFile(join(dir, 'fifo.json'), 'solution.json', 100)), /not a regular file/);
    await link(join(dir, 'real.json'), join(dir, 'hard.json'));
    assert.match(reasonOf(await readSolutionFile(join(dir, 'hard.json'), 'solution.json', 100)), /hard links/);
    assert.match(reasonOf(await readSolutionFile(dir, 'solution.json', 100)), /not a regular file/);
    await writeFile(join(dir, 'empty.json'), '');
    assert.match(reasonOf(await readSolutionFile(join(dir, 'empty.json'), 'solution.json', 100)), /empty/);
    await writeFile(join(dir, 'big.json'), 'x'.repeat(101));
    assert.match(reasonOf(await readSolutionFile(join(dir, 'big.json'), 'solution.json', 100)), /over the 100 bytes limit/);
    assert.match(reasonOf(await readSolutionFile(join(dir, 'absent.json'), 'solution.json', 100)), /wrote no solution\.json/);
  });

  it('validates the evaluator reply', () => {
    assert.deepEqual(parseEvaluatorReply('noise\n{"valid": true, "objective": 2, "metrics": {"n": 3}, "reason": ""}\n'), {
      ok: true,
      reply: { valid: true, objective: 2, metrics: { n: 3 }, reason: '' },
    });
    assert.equal(parseEvaluatorReply('').ok, false);
    assert.equal(parseEvaluatorReply('{"valid": "yes"}').ok, false);
    assert.equal(parseEvaluatorReply('{"valid": true, "objective": NaN}').ok, false);
  });
});

function reasonOf(read: { ok: true } | { ok: false; reason: string }): string {
  return read.ok ? '(read fine)' : read.reason;
}
