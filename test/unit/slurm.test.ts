// The SLURM evaluation backend against a real single-node cluster (munge +
// slurmctld + slurmd started by the test, test/support/slurmCluster.ts) and
// ThetaEvolve's real bundle (dist/, built before the unit tests by npm test).
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { parseSettings } from '../../src/engine/common/config';
import {
  cancelOrphans,
  createEvaluationBackend,
  evaluationQueueEvent,
  findOrphans,
  SlurmEvaluator,
  type SlurmQueueStats,
} from '../../src/engine/evaluation';
import { type EngineEvent, EngineEventSchema, type EvaluationStartedEvent, type StepCommittedEvent } from '../../src/engine/common/events';
import { EvolutionRun } from '../../src/engine/loop';
import { MutateSampler } from '../../src/engine/llm/mutateSampler';
import { shellQuote, type SlurmEvaluatorOptions } from '../../src/engine/evaluation/slurm';
import { Evaluator, evaluatorOptionsFromSettings } from '../../src/engine/sandbox/evaluator';
import { findExecutable } from '../../src/engine/sandbox/isolation';
import { loadTask, type Task } from '../../src/engine/task/task';
import type { EvaluationResult } from '../../src/engine/common/types';
import { type SlurmCluster, slurmUnavailableReason, startSlurmCluster } from '../support/slurmCluster';
import { tempDir } from '../support/tempDirs';
import { waitFor } from '../support/waitFor';

const ROOT = resolve(__dirname, '../..');
const DIST = join(ROOT, 'dist');
const FIXTURE = join(ROOT, 'test/fixtures/hostile');
const SECRET = 'sk-thetaevolve-slurm-test-secret-7d1f0c';

/** A candidate of the fixture task that sleeps, then writes {"value": value}. */
function sleeper(seconds: number, value: number): string {
  return `import json, time\ntime.sleep(${seconds})\nwith open("solution.json", "w") as f:\n    json.dump({"value": ${value}}, f)\n`;
}

function withoutRuntime(metrics: EvaluationResult['metrics']): EvaluationResult['metrics'] {
  const { runtime_seconds: _ignored, ...rest } = metrics;
  return rest;
}

/** Every file under `dir` (job scripts, environments, spool) that contains `needle`. */
async function filesContaining(dir: string, needle: string): Promise<string[]> {
  const found: string[] = [];
  const entries = await readdir(dir, { withFileTypes: true, recursive: true }).catch(() => []);
  for (const entry of entries) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    const text = await readFile(path).catch(() => Buffer.alloc(0));
    if (text.includes(needle)) found.push(path);
  }
  return found;
}

/** Environments of the processes the jobs of `jobName` run (read from /proc), once our evaluate runs in `count` of them. */
async function jobEnvironments(jobName: string, count: number): Promise<string[]> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const environments: string[] = [];
    let evaluating = 0;
    for (const pid of await readdir('/proc')) {
      if (!/^\d+$/.test(pid)) continue;
      const environ = await readFile(`/proc/${pid}/environ`, 'utf8').catch(() => '');
      if (!environ.split('\0').includes(`SLURM_JOB_NAME=${jobName}`)) continue;
      environments.push(environ);
      const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
      if (cmdline.includes('jobStart.js\0')) evaluating++;
    }
    if (evaluating >= count) return environments;
    // The job's login environment is loaded before its script starts: look again until evaluate runs.
    if (Date.now() > deadline) throw new Error(`evaluate did not start in ${count} jobs of ${jobName} within 30 s`);
    await new Promise((r) => setImmediate(r));
  }
}

/** Resolves when `predicate` holds for the evaluator's queue, checked after each poll. */
function queueReaches(
  options: Partial<SlurmEvaluatorOptions>,
  predicate: (running: number) => boolean,
): { options: Partial<SlurmEvaluatorOptions>; reached: Promise<void> } {
  let done: () => void = () => undefined;
  const reached = new Promise<void>((r) => (done = r));
  return {
    options: { ...options, onQueue: (q) => (predicate(q.running) ? done() : undefined) },
    reached,
  };
}

/** Warnings as they come; next() resolves on the first (or next) one that matches, or fails after `deadlineMs` naming what came. */
class Warnings {
  readonly all: string[] = [];
  private readonly waiters: { pattern: RegExp; resolve: (line: string) => void }[] = [];

  add(line: string): void {
    this.all.push(line);
    for (const waiter of [...this.waiters])
      if (waiter.pattern.test(line)) {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        waiter.resolve(line);
      }
  }

  next(pattern: RegExp, deadlineMs: number): Promise<string> {
    const seen = this.all.find((line) => pattern.test(line));
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolveLine, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no warning matching ${String(pattern)} within ${deadlineMs} ms; came: ${this.all.join(' | ')}`)),
        deadlineMs,
      );
      this.waiters.push({
        pattern,
        resolve: (line) => {
          clearTimeout(timer);
          resolveLine(line);
        },
      });
    });
  }
}

describe('SLURM evaluation backend (real single-node cluster)', function () {
  this.timeout(60_000);
  let cluster: SlurmCluster;
  let task: Task;
  let staging: string;
  const started: SlurmEvaluator[] = [];

  before(async function () {
    const unavailable = slurmUnavailableReason();
    if (unavailable) {
      console.log(`    skipped: ${unavailable}`);
      this.skip();
    }
    for (const file of ['cli.js', 'jobStart.js', 'evaluateJob.js', 'nodeProbe.js']) {
      if (!existsSync(join(DIST, file))) throw new Error(`${join(DIST, file)} is missing: run \`npm run build\` first (npm test does)`);
    }
    cluster = await startSlurmCluster();
    task = await loadTask(FIXTURE);
    staging = tempDir('te-slurm-staging-');
  });

  after(async () => {
    for (const e of started) await e.close();
    if (cluster) await cluster.stop();
  });

  function options(runId: string, extra: Partial<SlurmEvaluatorOptions> = {}): SlurmEvaluatorOptions {
    return {
      runId,
      bundleDirectory: DIST,
      stagingDirectory: staging,
      partition: cluster.partition,
      account: '',
      sbatchArguments: [],
      setupCommands: [],
      // The login environment of a job may not have our Node on PATH.
      nodeCommand: process.execPath,
      maxJobs: 16,
      pollSeconds: 0.2,
      maxResubmits: 2,
      exportVariables: [],
      candidatesPerJob: 'auto',
      env: cluster.env,
      ...extra,
    };
  }

  async function start(runId: string, extra: Partial<SlurmEvaluatorOptions> = {}): Promise<SlurmEvaluator> {
    const evaluator = await SlurmEvaluator.start(task, options(runId, extra));
    started.push(evaluator);
    return evaluator;
  }

  it('evaluates a program as a SLURM job with the same result as the local sandbox, and reports the node', async () => {
    // A long poll interval: results are picked up from done/ between polls, with no squeue at all. A long gather window:
    // the three are one burst however slowly a loaded host stages them (the wave goes once none is still staging).
    let reportedAllDone: (queue: SlurmQueueStats) => void = () => undefined;
    const allDone = new Promise<SlurmQueueStats>((r) => (reportedAllDone = r));
    const evaluator = await start('same-result', {
      pollSeconds: 30,
      gatherMs: 30_000,
      onQueue: (q) => (q.done === 3 ? reportedAllDone(q) : undefined),
    });
    const squeueAtStart = evaluator.calls.squeue;
    assert.equal(evaluator.kind, 'slurm');
    assert.equal(evaluator.isolation.kind, 'bwrap');
    assert.match(evaluator.node.node, /^v\d+\./);
    assert.match(evaluator.description, /SLURM jobs on partition main.*bubblewrap/);

    const programs = [task.initialProgram, 'raise SystemExit(3)\n', 'import json\njson.dump({"value": -1}, open("solution.json", "w"))\n'];
    const local = new Evaluator(task, { concurrency: 4, memoryLimitMb: 4096, outputLimitBytes: 64 * 1024 });
    const jobIds: string[] = [];
    try {
      const [onSlurm, onLocal] = await Promise.all([
        Promise.all(programs.map((p) => evaluator.evaluate(p, { onSubmitted: (id) => jobIds.push(id) }))),
        Promise.all(programs.map((p) => local.evaluate(p))),
      ]);
      for (const [i, slurm] of onSlurm.entries()) {
        const here = onLocal[i] as EvaluationResult;
        assert.equal(slurm.status, here.status, slurm.reason);
        assert.equal(slurm.score, here.score);
        assert.equal(slurm.objective, here.objective);
        assert.deepEqual(withoutRuntime(slurm.metrics), withoutRuntime(here.metrics));
        assert.equal(slurm.reason.replace(/\/\S+/g, 'PATH'), here.reason.replace(/\/\S+/g, 'PATH'));
        // The candidate's output and a valid solution come back from the node too (full output, the dashboard's picture).
        assert.equal(slurm.stdout, here.stdout);
        assert.equal(slurm.stderr.replace(/\/\S+/g, 'PATH'), here.stderr.replace(/\/\S+/g, 'PATH'));
        assert.equal(slurm.status !== 'evaluation_failed' && slurm.solution, here.status !== 'evaluation_failed' && here.solution);
      }
      assert.ok(onSlurm[0]?.status === 'ok' && onSlurm[0].solution?.includes('"value"'), 'the valid solution travels back');
      assert.deepEqual(
        onSlurm.map((r) => r.status),
        ['ok', 'no_solution', 'invalid_solution'],
      );
    } finally {
      await local.close();
    }
    // One job array for the three, one job id each.
    assert.equal(new Set(jobIds.map((id) => id.split('_')[0])).size, 1, jobIds.join(' '));
    assert.equal(evaluator.calls.sbatch, 2, 'the probe job and one job array');
    assert.equal(evaluator.calls.squeue, squeueAtStart, 'no squeue was needed to pick up the results');
    // The status bar hears of results picked up between polls: nothing left running or pending.
    const reported = await allDone;
    assert.deepEqual([reported.pending, reported.running, reported.done], [0, 0, 3]);
    const stats = evaluator.queueStats();
    assert.equal(stats.done, 3);
    assert.equal(stats.lost, 0);
    const event = EngineEventSchema.parse(evaluationQueueEvent(stats));
    assert.deepEqual(event.type === 'evaluation_queue' && [event.backend, event.pending, event.running, event.done], ['slurm', 0, 0, 3]);
  });

  it('packs candidates several to a job: each in its own sandbox, results as the local ones, each picked up as it lands', async () => {
    // A long poll interval: only done/ brings results back before the jobs end.
    // A runtime limit of 10 s (local and on the nodes alike) for the candidate that runs into it.
    const evaluator = await start('packed', { candidatesPerJob: 4, pollSeconds: 30, gatherMs: 30_000, runtimeLimitSec: 10 });
    assert.equal(evaluator.candidatesPerJob(), 4);
    const kinds = [
      task.initialProgram,
      'raise SystemExit(3)\n',
      'import json\njson.dump({"value": -1}, open("solution.json", "w"))\n',
      // Runs into the 10 s limit: its job is still running when the others' results come back.
      sleeper(60, 1),
    ];
    const programs = [...kinds, ...kinds];
    const local = new Evaluator(task, { concurrency: 8, memoryLimitMb: 4096, outputLimitBytes: 64 * 1024, runtimeLimitSec: 10 });
    const jobOf: string[] = [];
    const resolvedAt: number[] = [];
    try {
      const [onSlurm, onLocal] = await Promise.all([
        Promise.all(
          programs.map((p, i) =>
            evaluator.evaluate(p, { onSubmitted: (id) => (jobOf[i] = id) }).then((r) => {
              resolvedAt[i] = performance.now();
              return r;
            }),
          ),
        ),
        Promise.all(programs.map((p) => local.evaluate(p))),
      ]);
      for (const [i, slurm] of onSlurm.entries()) {
        const here = onLocal[i] as EvaluationResult;
        assert.equal(slurm.status, here.status, `${i}: ${slurm.reason}`);
        assert.equal(slurm.score, here.score);
        assert.equal(slurm.objective, here.objective);
        assert.deepEqual(withoutRuntime(slurm.metrics), withoutRuntime(here.metrics));
        assert.equal(slurm.stdout, here.stdout);
      }
      assert.deepEqual(
        onSlurm.map((r) => r.status),
        ['ok', 'no_solution', 'invalid_solution', 'timeout', 'ok', 'no_solution', 'invalid_solution', 'timeout'],
      );
    } finally {
      await local.close();
    }
    // Eight candidates, two array tasks of four, one sbatch.
    assert.equal(new Set(jobOf).size, 2, jobOf.join(' '));
    assert.deepEqual(
      [...new Set(jobOf)].map((job) => jobOf.filter((j) => j === job).length),
      [4, 4],
    );
    assert.equal(evaluator.calls.sbatch, 2, 'the probe job and one job array');
    // With a 30 s poll, results read only when a job ends would come back together: the first came seconds before the
    // timeout beside it in the same job, as it landed.
    const gapMs = (resolvedAt[3] as number) - (resolvedAt[0] as number);
    assert.ok(gapMs > 3000, `the first result came back ${Math.round(gapMs)} ms before its job's last`);
    assert.equal(evaluator.queueStats().done, 8);
  });

  it("submits a step's burst of candidates as one array once the burst ends, and a new step at once when the queue is empty", async () => {
    // A 30 s gather window and poll: either one waited out would take the test past these steps' few seconds.
    const evaluator = await start('bursts', { candidatesPerJob: 4, pollSeconds: 30, gatherMs: 120_000 });
    const burst = async (): Promise<{ jobs: Set<string>; submittedAfterMs: number }> => {
      const begun = performance.now();
      let submittedAfterMs = Number.POSITIVE_INFINITY;
      const jobs = new Set<string>();
      const results = await Promise.all(
        Array.from({ length: 8 }, () =>
          evaluator.evaluate(task.initialProgram, {
            onSubmitted: (id) => {
              jobs.add(id);
              submittedAfterMs = Math.min(submittedAfterMs, performance.now() - begun);
            },
          }),
        ),
      );
      assert.deepEqual(
        results.map((r) => r.status),
        Array.from({ length: 8 }, () => 'ok'),
      );
      return { jobs, submittedAfterMs };
    };
    const first = await burst();
    const second = await burst();
    for (const step of [first, second]) {
      assert.equal(step.jobs.size, 2, [...step.jobs].join(' '));
      // Submitted once the burst was whole, not when the gather window (120 s) ran out: a minute means it never did.
      assert.ok(step.submittedAfterMs < 60_000, `submitted ${Math.round(step.submittedAfterMs)} ms after the burst`);
    }
    assert.equal(evaluator.calls.sbatch, 3, 'the probe job and one job array per step');
  });

  it("sizes auto-packed jobs to the partition's nodes: beside a job holding CPUs (an inference server's), evaluations still start", async () => {
    const evaluator = await start('fits', { pollSeconds: 1 });
    // One quick candidate first: `auto` learns the runtime, and would now ask for 16 CPUs a job, the whole node.
    assert.equal((await evaluator.evaluate(task.initialProgram)).status, 'ok');
    assert.equal(evaluator.candidatesPerJob(), 8, "half the node's 16 CPUs (sinfo)");
    const blocker = await cluster.client('sbatch', [
      '--parsable',
      `--partition=${cluster.partition}`,
      '--job-name=thetaevolve-test-blocker',
      '--cpus-per-task=2',
      '--output=/dev/null',
      '--wrap=sleep 600',
    ]);
    assert.equal(blocker.code, 0, blocker.stderr);
    try {
      const results = await Promise.all(Array.from({ length: 16 }, () => evaluator.evaluate(task.initialProgram)));
      assert.deepEqual(new Set(results.map((r) => r.status)), new Set(['ok']));
    } finally {
      await cluster.client('scancel', [blocker.stdout.trim()]);
    }
  });

  it("names every job of the run that waits within seconds (id, squeue's reason, what it asks for), while the run's own inference job fills the node", async () => {
    const warnings = new Warnings();
    const evaluator = await start('crowded', { pollSeconds: 1, onWarning: (w) => warnings.add(w) });
    // The run's own inference server, running and holding every CPU of the node (the product's default poll is 5 s).
    const server = await cluster.client('sbatch', [
      '--parsable',
      `--partition=${cluster.partition}`,
      '--job-name=thetaevolve-crowded-server-0',
      '--cpus-per-task=16',
      '--output=/dev/null',
      '--wrap=sleep 600',
    ]);
    assert.equal(server.code, 0, server.stderr);
    const serverId = server.stdout.trim();
    try {
      await waitFor(() => cluster.client('squeue', ['-h', '-j', serverId, '-o', '%T']), {
        what: 'the inference job to run',
        until: (r) => r.stdout.trim() === 'RUNNING',
      });
      // The starting program's evaluation: its job cannot start while the server runs, and is named within seconds.
      const jobIds: string[] = [];
      const submitted = performance.now();
      const result = evaluator.evaluate(task.initialProgram, { onSubmitted: (id) => jobIds.push(id) });
      const line = await warnings.next(/^SLURM evaluation job of this run waits in the queue/, 60_000);
      const namedAfterMs = performance.now() - submitted;
      const [jobId] = jobIds as [string];
      assert.match(
        line,
        new RegExp(
          `: ${jobId} pending \\d+ s \\(squeue: (Resources|Priority); asks for 1 CPU, .*, no GRES, partition ${cluster.partition}\\);`,
        ),
      );
      // Named while the job waits, not when the evaluation ends or times out: a minute means it never was.
      assert.ok(namedAfterMs < 60_000, `named ${Math.round(namedAfterMs)} ms after its submission`);
      // A second evaluator of another run starting meanwhile: its probe job is named the same way.
      const controller = new AbortController();
      const probeWarnings = new Warnings();
      const starting = SlurmEvaluator.start(task, options('crowded-probe', { onWarning: (w) => probeWarnings.add(w) }), controller.signal);
      const probeLine = await probeWarnings.next(
        /^SLURM probe job of this run waits in the queue: \d+ pending \d+ s \(squeue: (Resources|Priority); asks for 1 CPU/,
        20_000,
      );
      assert.match(probeLine, /the run starts once it has run/);
      controller.abort();
      await assert.rejects(starting, /stopped while waiting for the SLURM probe job/);
      await cluster.client('scancel', [serverId]);
      const evaluated = await result;
      assert.equal(evaluated.status, 'ok', evaluated.reason);
      assert.equal(warnings.all.filter((w) => w.includes(jobId)).length, 1, `named once: ${warnings.all.join(' | ')}`);
    } finally {
      await cluster.client('scancel', [serverId]);
    }
  });

  it('cancelling one candidate of a packed job leaves the job running for the other, which keeps its result', async () => {
    const evaluator = await start('packed-cancel', { candidatesPerJob: 2 });
    const scancelsBefore = evaluator.calls.scancel;
    const controller = new AbortController();
    const jobOf: string[] = [];
    const [cancelled, kept] = await Promise.all([
      evaluator.evaluate(sleeper(3, 1), {
        signal: controller.signal,
        onSubmitted: (id) => jobOf.push(id),
        onStart: () => controller.abort(),
      }),
      evaluator.evaluate(sleeper(1, 2), { onSubmitted: (id) => jobOf.push(id) }),
    ]);
    assert.equal(new Set(jobOf).size, 1, `one job for both: ${jobOf.join(' ')}`);
    assert.equal(cancelled.metrics.cancelled, true);
    assert.equal(kept.status, 'ok', kept.reason);
    assert.equal(kept.objective, 2);
    assert.equal(evaluator.calls.scancel, scancelsBefore, 'the shared job was not cancelled');
    assert.equal(evaluator.queueStats().lost, 0);
  });

  it('evolves a task for a few steps with evaluations on SLURM, committing the same steps as the local backend', async () => {
    const quadratic = await loadTask(join(ROOT, 'test/fixtures/tasks/quadratic'));
    const settings = parseSettings({
      batchSize: 2,
      samplesPerPrompt: 3,
      evaluationConcurrency: 6,
      'database.preset': 'small',
      seed: 7,
      'evaluation.backend': 'slurm',
      'slurm.partition': cluster.partition,
      'slurm.nodeCommand': process.execPath,
      'slurm.pollSeconds': 0.2,
    });
    const evolve = async (
      backend: 'local' | 'slurm',
    ): Promise<{ committed: StepCommittedEvent[]; started: EvaluationStartedEvent[]; jobs: number }> => {
      const runFolder = await mkdtemp(join(staging, `${backend}-`));
      const evaluator =
        backend === 'local'
          ? new Evaluator(quadratic, evaluatorOptionsFromSettings(settings))
          : await createEvaluationBackend(quadratic, settings, { runId: 'evolve', runFolder, bundleDirectory: DIST, env: cluster.env });
      let jobs = 0;
      const events: EngineEvent[] = [];
      const run = new EvolutionRun({
        runId: 'evolve',
        task: quadratic,
        settings,
        dbFile: join(runFolder, 'run.sqlite'),
        source: new MutateSampler({ seed: 7, language: 'py' }),
        evaluator: {
          evaluate: (code, options) =>
            evaluator.evaluate(code, {
              ...options,
              onSubmitted: (id) => {
                jobs++;
                options?.onSubmitted?.(id);
              },
            }),
        },
        stepsThisInvocation: 2,
        onEvent: (e) => events.push(e),
      });
      const result = await run.run();
      await evaluator.close();
      assert.equal(result.reason, 'steps_done');
      return {
        committed: events.filter((e): e is StepCommittedEvent => e.type === 'step_committed'),
        started: events.filter((e): e is EvaluationStartedEvent => e.type === 'evaluation_started' && e.jobKey !== 'initial'),
        jobs,
      };
    };
    const local = await evolve('local');
    const slurm = await evolve('slurm');
    assert.equal(slurm.committed.length, 2);
    assert.ok(slurm.jobs >= 1, 'evaluations ran as SLURM jobs');
    assert.equal(local.jobs, 0);
    // The evaluations terminal shows each SLURM evaluation's job id.
    assert.ok(
      slurm.started.length > 0 && slurm.started.every((e) => /^\d+_\d+$/.test(e.schedulerJobId ?? '')),
      JSON.stringify(slurm.started.slice(0, 2)),
    );
    assert.ok(local.started.every((e) => e.schedulerJobId === undefined));
    for (const [i, step] of slurm.committed.entries()) {
      const here = local.committed[i] as StepCommittedEvent;
      assert.deepEqual(step.counts, here.counts);
      assert.equal(step.best, here.best);
      assert.equal(step.dbSize, here.dbSize);
      assert.equal(step.counts.evaluation_failed, 0);
    }
  });

  it('thetaevolve run --backend slurm evolves a task with every evaluation a SLURM job (the CLI as a user runs it)', async () => {
    const work = await mkdtemp(join(staging, 'cli-'));
    const cli = spawn(
      process.execPath,
      [
        join(DIST, 'cli.js'),
        'run',
        join(ROOT, 'test/fixtures/tasks/quadratic'),
        '--sampler',
        'mutate',
        '--backend',
        'slurm',
        '--steps',
        '2',
        '--batch',
        '2',
        '--samples',
        '2',
        '--db',
        join(work, 'run.sqlite'),
        '--json',
        '--set',
        `slurm.partition=${cluster.partition}`,
        '--set',
        `slurm.nodeCommand=${process.execPath}`,
        '--set',
        'slurm.pollSeconds=0.2',
      ],
      { cwd: work, env: { ...cluster.env, OPENAI_API_KEY: 'sk-never-in-a-job' } },
    );
    let stdout = '';
    let stderr = '';
    cli.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    cli.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((done) => cli.on('close', done));
    assert.equal(code, 0, stderr);
    const steps = stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { step: number; samples: number; counts: Record<string, number> });
    assert.deepEqual(
      steps.map((s) => s.step),
      [1, 2],
    );
    for (const step of steps) assert.equal(step.counts.evaluation_failed, 0, stderr);
    assert.ok(
      steps.some((s) => (s.counts.valid ?? 0) > 0),
      stderr,
    );
    assert.deepEqual(await cluster.queuedJobs(), [], 'no job left behind');
  });

  it('thetaevolve run --backend slurm on a terminal shows the queue while it runs and ends with its last line', async function () {
    if (!findExecutable('script')) {
      console.log('    skipped: script (util-linux) is not installed: no terminal to run the CLI on');
      this.skip();
    }
    const work = await mkdtemp(join(staging, 'cli-tty-'));
    const command = [
      process.execPath,
      join(DIST, 'cli.js'),
      'run',
      join(ROOT, 'test/fixtures/tasks/quadratic'),
      '--sampler',
      'mutate',
      '--backend',
      'slurm',
      '--steps',
      '1',
      '--batch',
      '2',
      '--samples',
      '2',
      '--db',
      join(work, 'run.sqlite'),
      '--set',
      `slurm.partition=${cluster.partition}`,
      '--set',
      `slurm.nodeCommand=${process.execPath}`,
      '--set',
      'slurm.pollSeconds=0.2',
    ];
    // script(1) gives the CLI a terminal, where its progress line rewrites itself.
    const cli = spawn('script', ['-qec', command.map(shellQuote).join(' '), '/dev/null'], { cwd: work, env: cluster.env });
    let output = '';
    cli.stdout.on('data', (d: Buffer) => (output += d.toString()));
    cli.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const code = await new Promise<number | null>((done) => cli.on('close', done));
    assert.equal(code, 0, output);
    const end = output.lastIndexOf('thetaevolve run: finished after step 1');
    assert.ok(
      end > 0 && output.lastIndexOf('SLURM: ') > 0 && output.lastIndexOf('SLURM: ') < end,
      `the queue showed while the run went on, not after its end line:\n${JSON.stringify(output.slice(-300))}`,
    );
    assert.match(output.slice(end), /^[^\r\n]*\r?\n$/, 'nothing follows the end line');
  });

  it('cancelling mid-wave scancels the jobs and leaves none in the queue', async () => {
    const { options: extra, reached } = queueReaches({}, (running) => running === 4);
    const evaluator = await start('cancel-mid-wave', { ...extra, runtimeLimitSec: 60 });
    const controller = new AbortController();
    const results = Promise.all([1, 2, 3, 4].map((v) => evaluator.evaluate(sleeper(50, v), { signal: controller.signal })));
    await reached;
    controller.abort();
    for (const r of await results) {
      assert.equal(r.status, 'no_solution');
      assert.equal(r.metrics.cancelled, true);
    }
    assert.deepEqual(await cluster.queuedJobs(), []);
  });

  it('detects a job scancel-ed behind its back as lost and resubmits it', async () => {
    const warnings: string[] = [];
    const evaluator = await start('outside-scancel', { onWarning: (w) => warnings.push(w) });
    const jobIds: string[] = [];
    let cancelledOutside: Promise<unknown> | null = null;
    const result = await evaluator.evaluate(sleeper(1, 7), {
      onSubmitted: (id) => jobIds.push(id),
      onStart: () => {
        cancelledOutside = cluster.client('scancel', [jobIds[0] as string]);
      },
    });
    assert.ok(cancelledOutside);
    assert.equal(((await cancelledOutside) as { code: number }).code, 0);
    assert.equal(result.status, 'ok', result.reason);
    assert.equal(result.objective, 7);
    assert.equal(jobIds.length, 2, `submitted as ${jobIds.join(', ')}`);
    assert.notEqual(jobIds[0], jobIds[1]);
    assert.equal(evaluator.queueStats().lost, 1);
    // This cluster keeps no accounting: sacct was asked once, then never again.
    assert.equal(evaluator.calls.sacct, 1);
    assert.ok(
      warnings.some((w) => w.includes(`${jobIds[0]}`) && /resubmitting/.test(w)),
      warnings.join('\n'),
    );
  });

  it('ends a sample as evaluation_failed (no score) once the resubmits are used up', async () => {
    // A setup that ends every evaluation job before our evaluate runs (the probe, not an array job, passes).
    const evaluator = await start('lost-for-good', { maxResubmits: 1, setupCommands: ['test -z "$SLURM_ARRAY_TASK_ID" || exit 0'] });
    const jobIds: string[] = [];
    const result = await evaluator.evaluate(task.initialProgram, { onSubmitted: (id) => jobIds.push(id) });
    assert.equal(result.status, 'evaluation_failed');
    assert.equal(result.score, null);
    assert.equal(jobIds.length, 2);
    assert.match(result.reason, /ended without a result 2 times \(last: job \d+_0 left the queue without a result file/);
  });

  it('never counts a job as lost while squeue cannot reach the controller', async () => {
    // A squeue in front of SLURM's own that fails while the flag file exists.
    const tools = await mkdtemp(join(staging, 'tools-'));
    const outage = join(tools, 'outage');
    const realSqueue = execFileSync('bash', ['-c', 'command -v squeue'], { env: cluster.env, encoding: 'utf8' }).trim();
    await writeFile(
      join(tools, 'squeue'),
      `#!/bin/bash\nif [ -e ${outage} ]; then echo "slurm_load_jobs error: Unable to contact slurm controller (connect failure)" >&2; exit 1; fi\nexec ${realSqueue} "$@"\n`,
      { mode: 0o755 },
    );
    const warnings: string[] = [];
    const evaluator = await start('squeue-outage', {
      env: { ...cluster.env, PATH: `${tools}:${cluster.env.PATH ?? ''}` },
      onWarning: (w) => {
        warnings.push(w);
        // Ten failed polls in a row (2 s): the controller is back.
        if (/squeue failed 10 time/.test(w)) void rm(outage);
      },
    });
    const result = await evaluator.evaluate(sleeper(1, 5), { onStart: () => void writeFile(outage, '') });
    assert.equal(result.status, 'ok', result.reason);
    assert.equal(result.objective, 5);
    assert.equal(evaluator.queueStats().lost, 0);
    assert.ok(
      warnings.some((w) => /squeue failed 1 time\(s\) in a row \(will retry\).*Unable to contact slurm controller/.test(w)),
      warnings.join('\n'),
    );
  });

  it("applies the run's thetaevolve.sandbox.* limits on the node (memory and kept output)", async () => {
    const evaluator = await start('sandbox-limits', { sandboxLimits: { memoryLimitMb: 96, outputLimitKb: 1 } });
    const hog = 'hog = bytearray(b"\\x01") * (400 * 1024 * 1024)\nimport json\njson.dump({"value": 1}, open("solution.json", "w"))\n';
    const loud = 'import sys\nsys.stderr.write("x" * 50000 + "\\nTAIL\\n")\nraise SystemExit(5)\n';
    const [held, said] = await Promise.all([evaluator.evaluate(hog), evaluator.evaluate(loud)]);
    // With the default 4096 MiB the 400 MB allocation succeeds; at 96 MiB the sandbox refuses it.
    assert.equal(held.status, 'no_solution', held.reason);
    assert.match(held.reason, /MemoryError|more than 96 MiB/);
    assert.equal(said.status, 'no_solution', said.reason);
    // 1 KiB kept of 50 kB: the node's evaluate truncated the output (the end, with TAIL, is what a reason shows).
    assert.ok(said.reason.length < 4000, `${said.reason.length} characters`);
    assert.ok(said.stderr.length > 0 && said.stderr.length < 2048, `${said.stderr.length} characters of stderr kept (1 KiB asked)`);
  });

  it("reports what ThetaEvolve's evaluate said when it failed on the node", async () => {
    const evaluator = await start('evaluate-fails', { maxResubmits: 0 });
    // The staged task lost its task.json after the probe: evaluate on the node refuses the task.
    await rm(join(evaluator.stagingRoot, 'task', 'task.json'));
    const result = await evaluator.evaluate(task.initialProgram);
    assert.equal(result.status, 'evaluation_failed');
    // (Without task.json the folder is read as another system's layout, which it is not either: evaluate says so.)
    assert.match(
      result.reason,
      /ended without a result once \(last: job \d+_0 ThetaEvolve's evaluate exited with code 1 on the compute node: thetaevolve evaluate: /s,
    );
  });

  for (const exportMode of ['default (sbatch --export=ALL, a scrubbed environment)', '--export=NONE in slurm.sbatchArguments']) {
    it(`keeps the API key out of every job environment and of slurmctld and slurmd spool files, passing only the named variables: ${exportMode}`, async () => {
      const saved = process.env.OPENAI_API_KEY;
      process.env.OPENAI_API_KEY = SECRET;
      try {
        const named = { THETAEVOLVE_TEST_EXPORTED: 'named-in-slurm.exportVariables' };
        const { options: extra, reached } = queueReaches(
          { env: { ...process.env, ...cluster.env, OPENAI_API_KEY: SECRET, ANOTHER_TOKEN: SECRET, ...named } },
          (running) => running === 2,
        );
        const sbatchArguments = exportMode.startsWith('--export=NONE') ? ['--export=NONE'] : [];
        const evaluator = await start(`no-secrets-${sbatchArguments.length}`, {
          ...extra,
          sbatchArguments,
          exportVariables: Object.keys(named),
          runtimeLimitSec: 60,
        });
        const controller = new AbortController();
        const results = Promise.all([1, 2].map((v) => evaluator.evaluate(sleeper(50, v), { signal: controller.signal })));
        await reached;
        const environments = await jobEnvironments(evaluator.jobName, 2);
        for (const environ of environments) assert.ok(!environ.includes(SECRET), 'the API key reached a job');
        // With sbatch's default the named variable goes along; with the login environment it does not.
        if (sbatchArguments.length === 0)
          for (const environ of environments)
            assert.ok(environ.includes('THETAEVOLVE_TEST_EXPORTED=named-in-slurm.exportVariables'), 'the named variable is missing');
        for (const dir of [...cluster.spoolDirs, evaluator.stagingRoot])
          assert.deepEqual(await filesContaining(dir, SECRET), [], `the API key is on disk under ${dir}`);
        controller.abort();
        await results;
      } finally {
        if (saved === undefined) delete process.env.OPENAI_API_KEY;
        else process.env.OPENAI_API_KEY = saved;
      }
    });
  }

  it('finds and cancels the jobs a killed ThetaEvolve left behind (resume after kill -9)', async () => {
    const runId = 'orphaned';
    const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'test/support/slurmOrphanChild.ts')], {
      env: { ...cluster.env, ORPHAN_RUN_ID: runId, ORPHAN_STAGING: staging, ORPHAN_DIST: DIST, ORPHAN_TASK: FIXTURE },
      stdio: ['ignore', 'pipe', 'inherit'],
      cwd: ROOT,
    });
    const submitted: string[] = [];
    for await (const line of createInterface({ input: child.stdout })) {
      const m = /^submitted (\S+)$/.exec(line);
      if (m) submitted.push(m[1] as string);
      if (submitted.length === 2) break;
    }
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;

    const orphans = await findOrphans(runId, cluster.env);
    assert.deepEqual(orphans.map((o) => o.id).sort(), [...submitted].sort());
    const runStaging = join(staging, `thetaevolve-${runId}`);
    const stale = await readdir(runStaging);
    assert.equal(stale.length, 1, 'the killed process left its staging folder');

    // The resumed run's backend cancels them before it starts, and clears the old staging folder.
    const warnings: string[] = [];
    const resumed = await start(runId, { onWarning: (w) => warnings.push(w) });
    // (Its own probe job may still be leaving the queue.)
    assert.deepEqual(
      (await findOrphans(runId, cluster.env)).filter((o) => submitted.includes(o.id)),
      [],
    );
    assert.ok(
      warnings.some((w) => w.startsWith(`cancelled 2 SLURM job(s) of run ${runId}`)),
      warnings.join('\n'),
    );
    assert.deepEqual(await readdir(runStaging), [resumed.stagingRoot.split('/').pop()]);
    await resumed.close();
    assert.equal(await cancelOrphans(runId, cluster.env), 0);
  });

  it('refuses clearly when the compute node cannot start Node.js', async () => {
    await assert.rejects(SlurmEvaluator.start(task, options('no-node', { nodeCommand: '/nonexistent/node' })), (err: Error) => {
      assert.match(err.message, /Node\.js could not be started on the compute node with `\/nonexistent\/node`.*slurm\.nodeCommand/s);
      return true;
    });
  });

  it('tells why the probe job waits, and stops waiting when the run is stopped', async () => {
    const controller = new AbortController();
    const warnings: string[] = [];
    const starting = SlurmEvaluator.start(
      task,
      options('held', {
        sbatchArguments: ['--hold'],
        onWarning: (w) => {
          warnings.push(w);
          controller.abort();
        },
      }),
      controller.signal,
    );
    await assert.rejects(starting, /stopped while waiting for the SLURM probe job/);
    assert.match(
      warnings[0] ?? '',
      /^SLURM probe job of this run waits in the queue: \d+ pending \d+ s \(squeue: JobHeldUser, which may not clear by itself;/,
    );
    assert.deepEqual(await findOrphans('held', cluster.env), []);
  });

  it('close() scancels queued and running jobs and removes the staging folder', async () => {
    const { options: extra, reached } = queueReaches({ maxJobs: 2 }, (running) => running === 2);
    const reports: SlurmQueueStats[] = [];
    const evaluator = await start('close', {
      ...extra,
      runtimeLimitSec: 60,
      onQueue: (q) => {
        reports.push(q);
        extra.onQueue?.(q);
      },
    });
    const results = Promise.all([1, 2, 3].map((v) => evaluator.evaluate(sleeper(50, v))));
    await reached;
    assert.equal(evaluator.queueStats().pending, 1, 'maxJobs keeps the third candidate out of the queue');
    await evaluator.close();
    for (const r of await results) assert.equal(r.metrics.cancelled, true);
    assert.deepEqual(await cluster.queuedJobs(), []);
    // The last report says so too (the dashboard keeps it after the run): nothing queued or running.
    const last = reports.at(-1);
    assert.deepEqual(last && [last.pending, last.running], [0, 0], JSON.stringify(last));
    const left = existsSync(evaluator.stagingRoot) ? readdirSync(evaluator.stagingRoot, { recursive: true }).join(', ') : null;
    assert.equal(left, null, `the staging folder is still there, holding: ${left}`);
    assert.equal(existsSync(join(staging, evaluator.jobName)), false);
  });
});
