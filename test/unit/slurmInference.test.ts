// Inference servers as SLURM jobs (thetaevolve.slurm.inference.*) on a real
// single-node cluster (test/support/slurmCluster.ts): each job runs the
// project's OpenAI-compatible test server (test/server/main.ts) as its
// command, and `thetaevolve run` (the built CLI, as a user runs it) evolves a
// task with them.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { inferenceJobName } from '../../src/engine/llm/slurmInferenceJobs';
import { newRunToken } from '../../src/engine/llm/slurmInferencePool';
import { startTestServer } from '../server/openaiTestServer';
import { type SlurmCluster, slurmUnavailableReason, startSlurmCluster } from '../support/slurmCluster';
import { tempDir } from '../support/tempDirs';
import { testServerJobCommand } from '../support/testServerJob';

const ROOT = resolve(__dirname, '../..');
const DIST = join(ROOT, 'dist');
const TASK = join(ROOT, 'test/fixtures/tasks/quadratic');
/** What each inference job runs: our test server, on the port and host the job picked. */
const SERVER_COMMAND = testServerJobCommand(ROOT);

interface JobView {
  index: number;
  jobId: string;
  state: string;
  requests: number;
  resubmits: number;
}

/** The jobs of an `inference jobs:` line of the CLI. */
function jobsOf(line: string): JobView[] | null {
  const m = /inference jobs: (.*)$/.exec(line);
  if (!m) return null;
  return (m[1] as string).split('; ').map((part) => {
    const head = /^server (\d+) job (\S+) (\S+)/.exec(part);
    return {
      index: Number(head?.[1]),
      jobId: head?.[2] ?? '-',
      state: head?.[3] ?? '?',
      requests: Number(/, (\d+) requests/.exec(part)?.[1] ?? 0),
      resubmits: Number(/resubmitted (\d+)x/.exec(part)?.[1] ?? 0),
    };
  });
}

/** A running `thetaevolve run` whose stderr lines and stdout step lines can be waited on. */
class RunningCli {
  readonly stderr: string[] = [];
  readonly steps: number[] = [];
  private readonly wakers = new Set<() => void>();
  readonly exited: Promise<number | null>;

  constructor(readonly child: ChildProcess) {
    createInterface({ input: child.stderr as NodeJS.ReadableStream }).on('line', (line) => {
      this.stderr.push(line);
      this.wake();
    });
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      if (line.startsWith('{')) this.steps.push((JSON.parse(line) as { step: number }).step);
      this.wake();
    });
    this.exited = new Promise((r) =>
      child.once('exit', (code) => {
        r(code);
        this.wake();
      }),
    );
  }

  private wake(): void {
    for (const w of this.wakers) w();
  }

  /** Resolves with the first value `check` gives (checked on every line); fails naming `what` when the CLI exits first. */
  async until<T>(what: string, check: () => T | null | undefined): Promise<T> {
    let exited = false;
    void this.exited.then(() => (exited = true));
    for (;;) {
      const value = check();
      if (value !== null && value !== undefined) return value;
      if (exited || this.child.exitCode !== null)
        throw new Error(
          `the CLI exited before ${what}:\n${this.stderr.filter((l) => / ended /.test(l)).join('\n')}\n${this.stderr.slice(-30).join('\n')}`,
        );
      await new Promise<void>((r) => {
        const waker = (): void => {
          this.wakers.delete(waker);
          r();
        };
        this.wakers.add(waker);
      });
    }
  }

  lastJobs(): JobView[] | null {
    for (let i = this.stderr.length - 1; i >= 0; i--) {
      const jobs = jobsOf(this.stderr[i] as string);
      if (jobs) return jobs;
    }
    return null;
  }
}

describe('SLURM inference jobs (real single-node cluster)', function () {
  this.timeout(240_000);
  let cluster: SlurmCluster;
  let staging: string;

  before(async function () {
    const unavailable = slurmUnavailableReason();
    if (unavailable) {
      console.log(`    skipped: ${unavailable}`);
      this.skip();
    }
    if (!existsSync(join(DIST, 'cli.js')))
      throw new Error(`${join(DIST, 'cli.js')} is missing: run \`npm run build\` first (npm test does)`);
    cluster = await startSlurmCluster();
    staging = tempDir('te-slurm-inference-');
  });

  after(async () => {
    if (cluster) await cluster.stop();
  });

  /** The run is named after its database (`--db <run>.sqlite`): its jobs are thetaevolve-<run>-server-<k>. */
  function startCli(work: string, run: string, extra: string[]): RunningCli {
    const child = spawn(
      process.execPath,
      [
        join(DIST, 'cli.js'),
        'run',
        TASK,
        '--backend',
        'slurm',
        '--batch',
        '2',
        '--samples',
        '2',
        '--db',
        join(work, `${run}.sqlite`),
        '--json',
        '--set',
        `slurm.partition=${cluster.partition}`,
        '--set',
        `slurm.nodeCommand=${process.execPath}`,
        '--set',
        'slurm.pollSeconds=0.2',
        '--set',
        'slurm.inference.count=2',
        '--set',
        `slurm.inference.command=${SERVER_COMMAND}`,
        ...extra,
      ],
      // A process group of its own, as a job step or `timeout` gives it: a stop can be sent to the group.
      { cwd: work, env: { ...cluster.env, OPENAI_API_KEY: 'sk-test' }, detached: true },
    );
    return new RunningCli(child);
  }

  it('evolves a task with two inference jobs, both used; one scancelled from outside is resubmitted and the run goes on; Stop leaves no job', async () => {
    const work = await mkdtemp(join(staging, 'run-'));
    const cli = startCli(work, 'inference-run', ['--steps', '500']);
    try {
      // The run says what it waits for while the jobs start.
      await cli.until('a line naming the inference jobs it waits for', () =>
        cli.stderr.find((l) => /waiting for the SLURM inference jobs: job \d+ \(server 0\)/.test(l)),
      );
      const both = await cli.until('both inference servers answering requests', () => {
        const jobs = cli.lastJobs();
        return jobs && jobs.length === 2 && jobs.every((j) => j.state === 'RUNNING' && j.requests > 0) ? jobs : null;
      });
      const first = both[0] as JobView;
      const scancelled = await cluster.client('scancel', [first.jobId]);
      assert.equal(scancelled.code, 0, scancelled.stderr);
      const stepsBefore = cli.steps.length;
      await cli.until('server 0 resubmitted, answering again', () => {
        const server0 = cli.lastJobs()?.[0];
        return server0 && server0.resubmits === 1 && server0.jobId !== first.jobId && server0.state === 'RUNNING' && server0.requests > 0
          ? server0
          : null;
      });
      assert.ok(
        cli.stderr.some((l) => l.includes(`inference job ${first.jobId} (server 0) ended`) && /submitting it again/.test(l)),
        cli.stderr.join('\n'),
      );
      // The run went on through it.
      await cli.until('a step committed after the resubmit', () => (cli.steps.length > stepsBefore ? true : null));
      assert.deepEqual(
        cli.steps,
        cli.steps.map((_, i) => i + 1),
      );
      // Stop as timeout(1) or a scheduler sends it, SIGTERM to the process, then to its group (one request, not "again"):
      // the run ends after its step, and cancels every inference job.
      const pid = cli.child.pid as number;
      process.kill(pid, 'SIGTERM');
      await cli.until('the stop heard', () => cli.stderr.find((l) => l.includes('stopping after the current step is settled')));
      process.kill(-pid, 'SIGTERM');
      assert.equal(await cli.exited, 0, cli.stderr.slice(-20).join('\n'));
      assert.ok(
        cli.stderr.some((l) => /thetaevolve run: stopped/.test(l)),
        cli.stderr.slice(-5).join('\n'),
      );
      assert.deepEqual(await cluster.queuedJobs(), []);
    } finally {
      if (cli.child.exitCode === null) cli.child.kill('SIGKILL');
    }
  });

  it('a run resumed after kill -9 cancels the inference jobs the dead process left running', async () => {
    const work = await mkdtemp(join(staging, 'killed-'));
    const killed = startCli(work, 'inference-killed', ['--steps', '500']);
    const jobs = await killed.until('both inference jobs submitted', () => {
      const view = killed.lastJobs();
      return view && view.every((j) => /^\d+$/.test(j.jobId)) ? view : null;
    });
    // One step committed, so the database exists to resume.
    await killed.until('a committed step', () => (killed.steps.length > 0 ? true : null));
    killed.child.kill('SIGKILL');
    await killed.exited;
    const left = await cluster.queuedJobs();
    for (const job of jobs)
      assert.ok(
        left.includes(job.jobId),
        `${job.jobId} still queued after kill -9: ${left.join(' ')}\n${killed.stderr.filter((l) => / ended /.test(l)).join('\n')}`,
      );

    const resumed = startCli(work, 'inference-killed', ['--steps', '1']);
    assert.equal(await resumed.exited, 0, resumed.stderr.slice(-20).join('\n'));
    assert.ok(
      resumed.stderr.some((l) => /cancelled 2 SLURM inference job\(s\) of run .* that an earlier ThetaEvolve left running/.test(l)),
      resumed.stderr.join('\n'),
    );
    assert.deepEqual(await cluster.queuedJobs(), []);
  });

  it('an inference job that ends at once is named with the end of its output, and the run that is given up says why', async () => {
    const work = await mkdtemp(join(staging, 'failing-'));
    // A server that cannot start (as vLLM without its weights): says so and exits; its --api-key {token} is appended.
    const cli = startCli(work, 'inference-failing', [
      '--steps',
      '1',
      '--set',
      'slurm.inference.command=echo "no weights at /models/missing (port {port})" && false',
      '--set',
      'slurm.inference.maxResubmits=1',
    ]);
    assert.equal(await cli.exited, 1, cli.stderr.join('\n'));
    const ended = cli.stderr.filter((l) => /inference job \d+ \(server \d\) ended \(/.test(l));
    assert.ok(ended.length >= 2, cli.stderr.join('\n'));
    for (const line of ended) assert.match(line, /its output ends with: no weights at \/models\/missing \(port \d+\)/, line);
    assert.match(
      cli.stderr.at(-1) ?? '',
      /every SLURM inference job ended and was given up \(the last: job \d+ of server \d, .*its output ends with: no weights at \/models\/missing/,
    );
    assert.deepEqual(await cluster.queuedJobs(), []);
  });

  it('mixes the servers of thetaevolve.endpoint with job servers: the run starts on the first and uses both', async () => {
    const own = await startTestServer({ latencyMs: 20 });
    const work = await mkdtemp(join(staging, 'mixed-'));
    const cli = startCli(work, 'inference-mixed', ['--steps', '500', '--endpoint', own.baseURL, '--set', 'slurm.inference.count=1']);
    try {
      // The run needs no job server to start: it has the one it was given.
      await cli.until('a committed step', () => (cli.steps.length > 0 ? true : null));
      await cli.until('the job server answering requests beside it', () => {
        const job = cli.lastJobs()?.[0];
        return job && job.state === 'RUNNING' && job.requests > 0 ? job : null;
      });
      assert.ok(own.counters.chatRequests > 0);
      assert.equal(cli.lastJobs()?.length, 1);
      cli.child.kill('SIGINT');
      assert.equal(await cli.exited, 0, cli.stderr.slice(-20).join('\n'));
      assert.deepEqual(await cluster.queuedJobs(), []);
    } finally {
      if (cli.child.exitCode === null) cli.child.kill('SIGKILL');
      await own.close();
    }
  });

  /** The request log lines the job servers of `work` wrote (test/server/main.ts --request-log). */
  function requestLog(work: string): Array<{ method: string; path: string; authorization: string | null }> {
    const file = join(work, 'requests.log');
    if (!existsSync(file)) return [];
    return readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as { method: string; path: string; authorization: string | null });
  }

  it("job servers get the run's own token, never the user's API key; the staging folder and token file are private", async () => {
    const work = await mkdtemp(join(staging, 'token-'));
    const logged = `${SERVER_COMMAND} --request-log ${join(work, 'requests.log')}`;
    const cli = startCli(work, 'inference-token', [
      '--steps',
      '500',
      '--set',
      'slurm.inference.count=1',
      '--set',
      `slurm.inference.command=${logged}`,
    ]);
    try {
      await cli.until('the job server answering requests', () => {
        const job = cli.lastJobs()?.[0];
        return job && job.state === 'RUNNING' && job.requests > 0 ? job : null;
      });
      const dir = join(work, 'slurm', 'thetaevolve-inference-token-servers');
      assert.equal(statSync(dir).mode & 0o777, 0o700, 'the staging folder is 0700');
      assert.equal(statSync(join(dir, 'token')).mode & 0o777, 0o600, 'the token file is 0600');
      const token = readFileSync(join(dir, 'token'), 'utf8').trim();
      assert.ok(token.length >= 32);
      cli.child.kill('SIGINT');
      assert.equal(await cli.exited, 0, cli.stderr.slice(-20).join('\n'));
      const log = requestLog(work);
      assert.ok(
        log.some((r) => r.path === '/v1/chat/completions'),
        'the job server was asked for completions',
      );
      // Each request carries the run's token, but the probe that checks the server requires it (no key at all).
      for (const entry of log)
        if (entry.authorization === null) assert.equal(entry.path, '/v1/models', JSON.stringify(entry));
        else assert.equal(entry.authorization, `Bearer ${token}`, JSON.stringify(entry));
      assert.ok(!readFileSync(join(work, 'requests.log'), 'utf8').includes('sk-test'), "the user's key never reached the job server");
    } finally {
      if (cli.child.exitCode === null) cli.child.kill('SIGKILL');
    }
  });

  it('a job server that answers without the token is not joined, and one line says why', async () => {
    const own = await startTestServer({ latencyMs: 20 });
    const work = await mkdtemp(join(staging, 'open-'));
    // {token} placed where the server never reads it: the server requires no key.
    const open = `UNUSED={token} ${SERVER_COMMAND} --request-log ${join(work, 'requests.log')}`;
    const cli = startCli(work, 'inference-open', [
      '--steps',
      '500',
      '--endpoint',
      own.baseURL,
      '--set',
      'slurm.inference.count=1',
      '--set',
      `slurm.inference.command=${open}`,
    ]);
    try {
      const line = await cli.until('the line saying why the server is not joined', () =>
        cli.stderr.find((l) => /answers without this run's token: not joined/.test(l)),
      );
      assert.match(line, /slurm\.inference\.command must pass \{token\}/);
      await cli.until('a committed step on the own server', () => (cli.steps.length > 0 ? true : null));
      cli.child.kill('SIGINT');
      assert.equal(await cli.exited, 0, cli.stderr.slice(-20).join('\n'));
      assert.equal(cli.stderr.filter((l) => /answers without this run's token/.test(l)).length, 1, 'said once');
      const log = requestLog(work);
      assert.ok(log.length > 0, 'the job server was probed');
      assert.ok(
        log.every((r) => r.authorization === null && r.path === '/v1/models'),
        JSON.stringify(log),
      );
    } finally {
      if (cli.child.exitCode === null) cli.child.kill('SIGKILL');
      await own.close();
    }
  });

  it('names inference jobs thetaevolve-<run>-server-<k>', () => {
    assert.equal(inferenceJobName('quadratic-20261125-140000', 1), 'thetaevolve-quadratic-20261125-140000-server-1');
  });
});

describe('SLURM inference jobs: the run token', () => {
  it("is never read as an option by the server's argument parser (no token begins with '-')", () => {
    // base64url keys began with '-' one time in 64: `--api-key -Xy...` failed every job of that run at start.
    for (let i = 0; i < 5000; i++) {
      const token = newRunToken();
      assert.match(token, /^[0-9a-f]{64}$/, token);
    }
  });
});
