// The `slurm` evaluation backend (product.md "Beyond one machine"): each
// candidate is one task of a SLURM job array that runs ThetaEvolve's own
// `evaluate` on a compute node, so the sandbox (bubblewrap, limits, our
// wall-clock limit) applies there too. Everything a job needs is staged on
// the shared filesystem: the candidate, a copy of the task and of our bundled
// CLI. One sbatch per wave, one squeue per poll for all jobs of the run.
// A job that left the queue without a result file is lost, never "still
// running"; lost jobs are resubmitted, then the sample ends as
// evaluation_failed (no score: not the model's fault).
import { constants } from 'node:fs';
import { copyFile, cp, lstat, mkdir, mkdtemp, open, readdir, rm, rmdir, writeFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { cancelledResult } from '../sandbox/evaluator';
import type { IsolationKind } from '../sandbox/isolation';
import { percentile } from '../common/stats';
import type { Task } from '../task/task';
import type { EvaluationResult, FailedEvaluationResult, ScoredEvaluationResult } from '../common/types';
import type { EvaluateOptions, EvaluationBackend } from './backend';
import { type NodeProbe, NodeProbeSchema } from './nodeProbe';
import { type AccountingEntry, jobNameOfRun, type QueueEntry, type SchedulerCalls, SlurmCli, SlurmError } from './slurmCli';
import { EvaluateJsonSchema, resultOfEvaluateJson } from './evaluateJson';
import type { SlurmClusterOptions } from './slurmSettings';
import { errorMessage } from '../common/errors';

/** Files of ours a job needs beside the task: the CLI that evaluates and the probe. */
export const BUNDLE_FILES = ['cli.js', 'nodeProbe.js'] as const;
/** The folder of Python files the CLI needs for other systems' task folders (src/engine/task/foreign, copied into dist/). */
export const BUNDLE_FOREIGN_DIR = 'foreign';
/** Seconds a job may take beyond the candidate's and the evaluator's limits (Node start, copying, scoring). */
const JOB_TIME_MARGIN_SEC = 120;
const PROBE_TIME_MINUTES = 5;
/** SLURM's default MaxArraySize is 1001. */
const MAX_ARRAY_TASKS = 1000;
/** Polls a job must be missing from the queue, without a result, before it counts as lost (shared filesystems show files late). */
const MISSING_POLLS_BEFORE_LOST = 2;
const SUBMIT_FAILURES_BEFORE_GIVING_UP = 3;
/** KillWait (30 s by default) plus a margin: a job that ignores SIGTERM is gone only after SIGKILL. */
const GONE_TIMEOUT_MS = 45_000;
const GONE_POLL_MS = 100;
const RESULT_MAX_BYTES = 1024 * 1024;
/** How often done/ is listed between polls. */
const DONE_CHECK_MS = 250;
const TAIL_CHARS = 400;
const MIN_NODE_MAJOR = 20;
/** Pending reasons that only mean "wait your turn"; any other is told once, it may never clear (ReqNodeNotAvail, a limit, ...). */
const ORDINARY_PENDING_REASONS = new Set(['None', 'Priority', 'Resources', 'JobArrayTaskLimit', 'BeginTime', 'Dependency', 'Prolog']);
/** Folders of a task folder that are never staged: runs, version control, dependencies. */
const NOT_STAGED = new Set(['.thetaevolve', '.git', 'node_modules', '__pycache__']);

/** The sandbox limits a compute node applies, as the settings name them. */
export interface SandboxLimits {
  memoryLimitMb: number;
  outputLimitKb: number;
}

/** `--set` arguments that give the node's `evaluate` the run's sandbox limits. */
export function sandboxLimitArguments(limits: SandboxLimits | undefined): string {
  if (!limits) return '';
  return ` --set sandbox.memoryLimitMb=${Math.floor(limits.memoryLimitMb)} --set sandbox.outputLimitKb=${Math.floor(limits.outputLimitKb)}`;
}

export interface SlurmEvaluatorOptions extends SlurmClusterOptions {
  runId: string;
  /** Folder holding the bundled cli.js and nodeProbe.js (the extension's or the npm package's dist/). */
  bundleDirectory: string;
  /** Overrides task.runtimeLimitSec (as the local sandbox's option does). */
  runtimeLimitSec?: number;
  /** thetaevolve.sandbox.* limits the node's `evaluate` applies to each candidate (default: the local sandbox's defaults). */
  sandboxLimits?: SandboxLimits;
  /** Environment SLURM's tools are started from (SLURM_CONF, PATH); default process.env. Only SLURM's own variables are passed on. */
  env?: NodeJS.ProcessEnv;
  /** How long new candidates are gathered into one job array before it is submitted (default 200 ms, at most one poll). */
  gatherMs?: number;
  /** Start even when the compute node has no bubblewrap (its sandbox is the weaker fallback). Default false: refuse. */
  allowFallbackIsolation?: boolean;
  /** Called after every poll, and when results were picked up between polls, with the queue as it stands (status bar, dashboard). */
  onQueue?: (queue: SlurmQueueStats) => void;
  /** Problems that do not end the run (squeue failing for a while, a resubmitted job). */
  onWarning?: (message: string) => void;
}

export interface SlurmQueueStats {
  /** Staged or submitted, not running yet. */
  pending: number;
  running: number;
  /** Ended with a result from the node. */
  done: number;
  /** Jobs that left the queue without a result (each resubmit counts). */
  lost: number;
  /** Samples that ended as evaluation_failed. */
  failed: number;
  /** Median time from submission to the job running, over the jobs that ran. */
  queueWaitMsP50: number | null;
  calls: SchedulerCalls;
}

interface Candidate {
  id: number;
  dir: string;
  options: EvaluateOptions;
  resolve: (result: EvaluationResult) => void;
  calledAt: number;
  submissions: number;
  jobId: string | null;
  submittedAt: number;
  /** Its current job is running (or has run). */
  started: boolean;
  /** onStart was called (once per candidate, whatever the resubmits). */
  startNotified: boolean;
  missingPolls: number;
  lastState: string | null;
  settled: boolean;
  cancelRequested: boolean;
  detach: () => void;
}

/** Quote one word for bash. */
export function shellQuote(word: string): string {
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

function tail(text: string): string {
  const trimmed = text.trim();
  return trimmed.length <= TAIL_CHARS ? trimmed : `...${trimmed.slice(-TAIL_CHARS)}`;
}


async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch {
    return false;
  }
}

/** A small regular file written by a job, read without following links and capped. */
async function readJobFile(path: string, maxBytes = RESULT_MAX_BYTES): Promise<string | null> {
  let handle;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch {
    return null;
  }
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) return null;
    const buffer = Buffer.alloc(Math.min(stat.size, maxBytes));
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    return buffer.subarray(0, bytesRead).toString('utf8');
  } finally {
    await handle.close();
  }
}

function failedResult(reason: string, durationMs: number): FailedEvaluationResult {
  return { status: 'evaluation_failed', score: null, objective: null, metrics: {}, reason, durationMs, stdout: '', stderr: '' };
}

/** The time limit of one evaluation job: the candidate's and the evaluator's limits plus a margin, in whole minutes (SLURM rounds up anyway). */
export function jobTimeLimitMinutes(runtimeLimitSec: number, evaluatorTimeLimitSec: number): number {
  return Math.max(1, Math.ceil((runtimeLimitSec + evaluatorTimeLimitSec + JOB_TIME_MARGIN_SEC) / 60));
}

interface Staging {
  root: string;
  jobScript: string;
  probeScript: string;
}

async function stage(task: Task, options: SlurmEvaluatorOptions, jobName: string, runtimeLimitSec: number): Promise<Staging> {
  for (const file of BUNDLE_FILES) {
    if (!(await exists(join(options.bundleDirectory, file)))) {
      throw new SlurmError(`${join(options.bundleDirectory, file)} is missing: the SLURM backend stages ThetaEvolve's bundled CLI for its jobs (build it with npm run build).`);
    }
  }
  // <staging>/<job name>/<one folder per process>: a run's folders, and only its, are under its job name.
  const runDir = join(resolve(options.stagingDirectory), jobName);
  await mkdir(runDir, { recursive: true });
  const root = await mkdtemp(join(runDir, 'process-'));
  try {
    for (const sub of ['bundle', 'candidates', 'waves', 'logs', 'done']) await mkdir(join(root, sub));
    for (const file of BUNDLE_FILES) await copyFile(join(options.bundleDirectory, file), join(root, 'bundle', file));
    // The Python wrapper OpenEvolve and ShinkaEvolve folders are evaluated through (beside the bundled CLI, as in dist/).
    await cp(join(options.bundleDirectory, BUNDLE_FOREIGN_DIR), join(root, 'bundle', BUNDLE_FOREIGN_DIR), { recursive: true, filter: (source) => !source.includes('__pycache__') });
    const stagingRoot = resolve(options.stagingDirectory);
    await cp(task.dir, join(root, 'task'), {
      recursive: true,
      filter: (source) => !NOT_STAGED.has(basename(source)) && resolve(source) !== stagingRoot,
    });
    const q = shellQuote(root);
    const setup = options.setupCommands.length > 0 ? ['# slurm.setupCommands', ...options.setupCommands] : [];
    const jobScript = join(root, 'job.sh');
    await writeFile(
      jobScript,
      [
        '#!/bin/bash',
        '# ThetaEvolve evaluation job: array task i evaluates the candidate named on line i+1 of the list file ($1)',
        "# with ThetaEvolve's own `evaluate`, so the sandbox applies on this node too.",
        ...setup,
        `stage=${q}`,
        'id=$(sed -n "$((SLURM_ARRAY_TASK_ID + 1))p" "$1")',
        'dir="$stage/candidates/$id"',
        `${options.nodeCommand} "$stage/bundle/cli.js" evaluate "$stage/task" "$dir/program.${task.language}" --json --timeout ${runtimeLimitSec}${sandboxLimitArguments(options.sandboxLimits)} > "$dir/result.json.part" 2> "$dir/stderr.txt"`,
        'code=$?',
        'if [ "$code" -eq 0 ]; then mv -f "$dir/result.json.part" "$dir/result.json"; else echo "$code" > "$dir/failed"; fi',
        '# One folder to list instead of a file per candidate to look at: results are picked up between two polls.',
        'touch "$stage/done/$id"',
        '',
      ].join('\n'),
      { mode: 0o755 },
    );
    const probeScript = join(root, 'probe.sh');
    await writeFile(
      probeScript,
      [
        '#!/bin/bash',
        "# ThetaEvolve's probe job: which Node.js and which sandbox this compute node offers.",
        ...setup,
        `cd ${q} || exit 1`,
        `${options.nodeCommand} --version > probe.version 2> probe.stderr`,
        `${options.nodeCommand} bundle/nodeProbe.js > probe.json.part 2>> probe.stderr && mv -f probe.json.part probe.json`,
        'touch probe.done',
        '',
      ].join('\n'),
      { mode: 0o755 },
    );
    return { root, jobScript, probeScript };
  } catch (err) {
    await rm(root, { recursive: true, force: true });
    throw err;
  }
}

/** Jobs of a run left in the queue, e.g. by a ThetaEvolve that was killed: id, state and pending reason each. */
export async function findOrphans(runId: string, env: NodeJS.ProcessEnv = process.env): Promise<QueueEntry[]> {
  const queue = await new SlurmCli(env).queue(jobNameOfRun(runId));
  return [...queue.values()];
}

/** scancel every job of a run (resume after a crash) and wait until none is left; resolves with how many there were. SlurmEvaluator.start() does this itself. */
export async function cancelOrphans(runId: string, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  return cancelRunJobs(new SlurmCli(env), jobNameOfRun(runId));
}

async function cancelRunJobs(cli: SlurmCli, name: string): Promise<number> {
  const before = await cli.queue(name);
  if (before.size === 0) return 0;
  await cli.cancelByName(name);
  await waitUntilGone(cli, name, null);
  return before.size;
}

/** Staging folders of this run's earlier processes (their jobs are gone now). */
async function removeStaleStaging(stagingDirectory: string, jobName: string): Promise<void> {
  const runDir = join(resolve(stagingDirectory), jobName);
  for (const name of await readdir(runDir).catch(() => [])) await rm(join(runDir, name), { recursive: true, force: true });
}

/** Poll until none of `ids` (null: no job of `name` at all) is in the queue; a cancelled job lingers briefly while it completes. */
async function waitUntilGone(cli: SlurmCli, name: string, ids: readonly string[] | null): Promise<void> {
  const deadline = Date.now() + GONE_TIMEOUT_MS;
  for (;;) {
    const queue = await cli.queue(name);
    const left = ids === null ? [...queue.keys()] : ids.filter((id) => queue.has(id));
    if (left.length === 0) return;
    if (Date.now() > deadline) throw new SlurmError(`SLURM jobs ${left.slice(0, 10).join(', ')} were still in the queue ${GONE_TIMEOUT_MS / 1000} s after scancel`);
    await delay(GONE_POLL_MS);
  }
}

export class SlurmEvaluator implements EvaluationBackend {
  readonly kind = 'slurm';
  readonly isolation: { kind: IsolationKind; warning: string | null };
  readonly description: string;
  /** What the probe job found on the compute node. */
  readonly node: NodeProbe;
  readonly jobName: string;

  private readonly cli: SlurmCli;
  private readonly pending: Candidate[] = [];
  private readonly submitted = new Map<string, Candidate>();
  private readonly queueWaits: number[] = [];
  private readonly toldReasons = new Set<string>();
  private readonly counts = { done: 0, lost: 0, failed: 0 };
  private nextId = 0;
  private nextWave = 0;
  private submitFailures = 0;
  private lastSubmitAt = Number.NEGATIVE_INFINITY;
  private accountingAvailable = true;
  private squeueFailures = 0;
  private chain: Promise<void> = Promise.resolve();
  private submitTimer: NodeJS.Timeout | null = null;
  private pollTimer: NodeJS.Timeout | null = null;
  private doneTimer: NodeJS.Timeout | null = null;
  private cancelScheduled = false;
  private closing: Promise<void> | null = null;
  private readonly pollMs: number;
  private readonly gatherMs: number;
  private readonly doneCheckMs: number;
  private readonly timeMinutes: number;

  private constructor(
    readonly task: Task,
    private readonly options: SlurmEvaluatorOptions,
    private readonly staging: Staging,
    cli: SlurmCli,
    probe: NodeProbe,
  ) {
    this.cli = cli;
    this.node = probe;
    this.jobName = jobNameOfRun(options.runId);
    this.isolation = probe.isolation;
    this.pollMs = options.pollSeconds * 1000;
    this.gatherMs = Math.min(options.gatherMs ?? 200, this.pollMs);
    this.doneCheckMs = Math.min(DONE_CHECK_MS, this.pollMs);
    this.timeMinutes = jobTimeLimitMinutes(options.runtimeLimitSec ?? task.runtimeLimitSec, task.evaluatorTimeLimitSec);
    const where = options.partition ? `partition ${options.partition}` : 'the default partition';
    const sandbox = probe.isolation.kind === 'bwrap' ? 'bubblewrap' : 'fallback sandbox: no bubblewrap';
    this.description = `SLURM jobs on ${where}, up to ${options.maxJobs} at once; ${sandbox} on ${probe.host} (Node ${probe.node})`;
  }

  /**
   * Stage the CLI and the task, then run the probe job: resolves once a
   * compute node showed it can evaluate (Node.js >= 20, a sandbox), throws a
   * SlurmError saying what is missing otherwise.
   */
  static async start(task: Task, options: SlurmEvaluatorOptions, signal?: AbortSignal): Promise<SlurmEvaluator> {
    if (!(options.maxJobs >= 1) || !(options.pollSeconds > 0) || !(options.maxResubmits >= 0)) {
      throw new RangeError('SlurmEvaluator needs maxJobs >= 1, pollSeconds > 0 and maxResubmits >= 0');
    }
    const cli = new SlurmCli(options.env ?? process.env);
    const jobName = jobNameOfRun(options.runId);
    // A run has one SLURM backend at a time: jobs and staging folders of this
    // run still around were left by a ThetaEvolve that died (resume after a crash).
    const orphans = await cancelRunJobs(cli, jobName);
    if (orphans > 0) options.onWarning?.(`cancelled ${orphans} SLURM job(s) of run ${options.runId} that an earlier ThetaEvolve left in the queue`);
    await removeStaleStaging(options.stagingDirectory, jobName);
    const runtimeLimitSec = options.runtimeLimitSec ?? task.runtimeLimitSec;
    const staging = await stage(task, options, jobName, runtimeLimitSec);
    try {
      const probe = await runProbe(cli, options, staging, jobName, signal);
      return new SlurmEvaluator(task, options, staging, cli, probe);
    } catch (err) {
      await rm(staging.root, { recursive: true, force: true });
      throw err;
    }
  }

  /** Where this evaluator stages its files (removed by close()). */
  get stagingRoot(): string {
    return this.staging.root;
  }

  /** The scheduler calls made so far, for the benchmark and the dashboard. */
  get calls(): SchedulerCalls {
    return { ...this.cli.calls };
  }

  queueStats(): SlurmQueueStats {
    let running = 0;
    for (const c of this.submitted.values()) if (c.started) running++;
    return {
      pending: this.pending.length + this.submitted.size - running,
      running,
      done: this.counts.done,
      lost: this.counts.lost,
      failed: this.counts.failed,
      queueWaitMsP50: this.queueWaits.length > 0 ? percentile(this.queueWaits, 50) : null,
      calls: this.calls,
    };
  }

  evaluate(code: string, options: EvaluateOptions = {}): Promise<EvaluationResult> {
    const calledAt = performance.now();
    if (this.closing) return Promise.resolve({ ...cancelledResult(), reason: 'the evaluator is closed' });
    if (options.signal?.aborted) return Promise.resolve(cancelledResult());
    const id = this.nextId++;
    const dir = join(this.staging.root, 'candidates', String(id));
    return new Promise<EvaluationResult>((resolvePromise) => {
      const candidate: Candidate = {
        id,
        dir,
        options,
        resolve: resolvePromise,
        calledAt,
        submissions: 0,
        jobId: null,
        submittedAt: 0,
        started: false,
        startNotified: false,
        missingPolls: 0,
        lastState: null,
        settled: false,
        cancelRequested: false,
        detach: () => undefined,
      };
      const signal = options.signal;
      if (signal) {
        const onAbort = (): void => this.requestCancel(candidate);
        signal.addEventListener('abort', onAbort, { once: true });
        candidate.detach = () => signal.removeEventListener('abort', onAbort);
      }
      void (async () => {
        try {
          await mkdir(dir);
          await writeFile(join(dir, `program.${this.task.language}`), code, { mode: 0o644 });
        } catch (err) {
          this.finish(candidate, failedResult(`the candidate could not be staged in ${dir}: ${errorMessage(err)}`, performance.now() - calledAt));
          return;
        }
        if (candidate.cancelRequested || this.closing) {
          this.finish(candidate, cancelledResult());
          return;
        }
        this.pending.push(candidate);
        this.scheduleSubmit(this.gatherMs);
      })();
    });
  }

  close(): Promise<void> {
    this.closing ??= this.enqueue(async () => {
      this.clearTimers();
      for (const c of this.pending.splice(0)) this.finish(c, { ...cancelledResult(), reason: 'the evaluator is closed' });
      try {
        await this.cli.cancelByName(this.jobName);
        await waitUntilGone(this.cli, this.jobName, null);
      } catch (err) {
        this.warn(`cancelling the run's SLURM jobs failed: ${errorMessage(err)}`);
      }
      for (const c of [...this.submitted.values()]) this.finish(c, { ...cancelledResult(), reason: 'the evaluator is closed' });
      // The last word on the queue: nothing of this run is queued or running any more (the dashboard keeps showing it).
      this.options.onQueue?.(this.queueStats());
      await rm(this.staging.root, { recursive: true, force: true }).catch(() => undefined);
      // The run's folder too, once no other process of the run uses it.
      await rmdir(dirname(this.staging.root)).catch(() => undefined);
    });
    return this.closing;
  }

  // -------------------------------------------------------------------------
  // Everything that talks to the cluster runs one at a time, in this chain.

  private enqueue(op: () => Promise<void>): Promise<void> {
    const next = this.chain.then(op).catch((err: unknown) => this.warn(`SLURM backend: ${errorMessage(err)}`));
    this.chain = next;
    return next;
  }

  private clearTimers(): void {
    if (this.submitTimer) clearTimeout(this.submitTimer);
    if (this.pollTimer) clearTimeout(this.pollTimer);
    if (this.doneTimer) clearTimeout(this.doneTimer);
    this.doneTimer = null;
    this.submitTimer = null;
    this.pollTimer = null;
  }

  /**
   * Submit what is staged after `afterMs`, but at most one wave per poll
   * interval: responses that trickle in over a step are gathered into a few
   * arrays rather than one sbatch each.
   */
  private scheduleSubmit(afterMs: number): void {
    if (this.submitTimer || this.closing) return;
    const wait = Math.max(afterMs, this.lastSubmitAt + this.pollMs - performance.now());
    this.submitTimer = setTimeout(() => {
      this.submitTimer = null;
      void this.enqueue(() => this.submitWave());
    }, wait);
  }

  private schedulePoll(): void {
    this.scheduleDoneCheck();
    if (this.pollTimer || this.closing || this.submitted.size === 0) return;
    this.pollTimer = setTimeout(() => {
      this.pollTimer = null;
      void this.enqueue(() => this.poll());
    }, this.pollMs);
  }

  private scheduleDoneCheck(): void {
    if (this.doneTimer || this.closing || this.submitted.size === 0 || this.doneCheckMs >= this.pollMs) return;
    this.doneTimer = setTimeout(() => {
      this.doneTimer = null;
      void this.enqueue(() => this.checkDone());
    }, this.doneCheckMs);
  }

  /**
   * Between two polls: one listing of done/, where each job leaves its
   * candidate's id when it ends, picks results up early. Anything else (a
   * failure, a result not visible yet) waits for the next poll.
   */
  private async checkDone(): Promise<void> {
    if (this.closing || this.submitted.size === 0) return;
    const doneDir = join(this.staging.root, 'done');
    const names = await readdir(doneDir).catch(() => []);
    if (names.length > 0) {
      const byId = new Map([...this.submitted.values()].map((c) => [String(c.id), c]));
      for (const name of names) {
        await rm(join(doneDir, name), { force: true });
        const c = byId.get(name);
        if (!c) continue;
        const result = await this.readResult(c);
        if (result.kind !== 'result') continue;
        this.markStarted(c, null);
        this.counts.done++;
        this.finish(c, result.result);
      }
      if (this.pending.length > 0) await this.submitWave();
      // Results picked up between polls change the queue too: the status bar must not go on showing them running.
      this.options.onQueue?.(this.queueStats());
    }
    this.scheduleDoneCheck();
  }

  /** One sbatch: a job array of the staged candidates, as many as maxJobs leaves room for. */
  private async submitWave(): Promise<void> {
    if (this.closing) return;
    // Cancelled while waiting: never submitted (cancelRequested() resolves them).
    const room = Math.min(this.options.maxJobs - this.submitted.size, MAX_ARRAY_TASKS);
    const wave: Candidate[] = [];
    for (let i = 0; i < this.pending.length && wave.length < room; ) {
      const c = this.pending[i] as Candidate;
      if (c.cancelRequested) i++;
      else wave.push(...this.pending.splice(i, 1));
    }
    if (wave.length === 0) return;
    this.lastSubmitAt = performance.now();
    const list = join(this.staging.root, 'waves', `${this.nextWave++}.txt`);
    let arrayId: string;
    try {
      await writeFile(list, wave.map((c) => `${c.id}\n`).join(''));
      arrayId = await this.cli.submit([
        ...this.commonSbatchArguments(),
        `--time=${this.timeMinutes}`,
        `--array=0-${wave.length - 1}%${this.options.maxJobs}`,
        `--output=${join(this.staging.root, 'logs', '%A_%a.log')}`,
        this.staging.jobScript,
        list,
      ]);
      this.submitFailures = 0;
    } catch (err) {
      this.submitFailures++;
      if (this.submitFailures >= SUBMIT_FAILURES_BEFORE_GIVING_UP) {
        for (const c of wave) this.endAsFailed(c, `sbatch refused the evaluation job ${this.submitFailures} times in a row: ${errorMessage(err)}`);
        this.submitFailures = 0;
      } else {
        this.pending.unshift(...wave);
        this.warn(`sbatch failed (will retry): ${errorMessage(err)}`);
        this.scheduleSubmit(this.pollMs);
      }
      return;
    }
    const now = performance.now();
    wave.forEach((c, index) => {
      c.jobId = `${arrayId}_${index}`;
      c.submissions++;
      c.submittedAt = now;
      c.missingPolls = 0;
      c.lastState = null;
      this.submitted.set(c.jobId, c);
      c.options.onSubmitted?.(c.jobId);
    });
    if (this.pending.length > 0 && this.submitted.size < this.options.maxJobs) this.scheduleSubmit(0);
    this.schedulePoll();
  }

  /** One squeue for every job of the run, then the result files of the jobs that may have one. */
  private async poll(): Promise<void> {
    if (this.closing || this.submitted.size === 0) return;
    let queue: Map<string, QueueEntry>;
    try {
      queue = await this.cli.queue(this.jobName);
      this.squeueFailures = 0;
    } catch (err) {
      // Never guess: without the queue no job counts as lost.
      this.squeueFailures++;
      if (this.squeueFailures === 1 || this.squeueFailures % 10 === 0) this.warn(`squeue failed ${this.squeueFailures} time(s) in a row (will retry): ${errorMessage(err)}`);
      this.schedulePoll();
      return;
    }
    const now = performance.now();
    const lost: Candidate[] = [];
    for (const c of [...this.submitted.values()]) {
      const entry = queue.get(c.jobId as string);
      if (entry) c.lastState = entry.state;
      if (entry?.state === 'RUNNING') this.markStarted(c, now);
      if (entry?.state === 'PENDING') {
        c.missingPolls = 0;
        if (!ORDINARY_PENDING_REASONS.has(entry.reason) && !this.toldReasons.has(entry.reason)) {
          this.toldReasons.add(entry.reason);
          this.warn(`SLURM job ${entry.id} of this run is pending with reason ${entry.reason} (squeue); it may not start until that changes`);
        }
        continue;
      }
      const result = await this.readResult(c);
      if (result.kind === 'result') {
        this.markStarted(c, null);
        this.counts.done++;
        this.finish(c, result.result);
        continue;
      }
      if (result.kind === 'broken') {
        this.attemptFailed(c, result.why);
        continue;
      }
      if (entry?.live) {
        c.missingPolls = 0;
        continue;
      }
      c.missingPolls++;
      const failedCode = await readJobFile(join(c.dir, 'failed'), 64);
      if (failedCode !== null) {
        const stderr = (await readJobFile(join(c.dir, 'stderr.txt'))) ?? '';
        const log = (await readJobFile(join(this.staging.root, 'logs', `${c.jobId as string}.log`))) ?? '';
        const said = tail(`${log}\n${stderr}`);
        this.attemptFailed(c, `ThetaEvolve's evaluate exited with code ${failedCode.trim()} on the compute node${said ? `: ${said}` : ''}`);
      } else if (c.missingPolls >= MISSING_POLLS_BEFORE_LOST) {
        lost.push(c);
      }
    }
    if (lost.length > 0) {
      const ended = await this.howJobsEnded(lost.map((c) => c.jobId as string));
      for (const c of lost) {
        const account = ended.get(c.jobId as string);
        const how = account ? ` (sacct: ${account.state}, exit ${account.exitCode})` : c.lastState && c.lastState !== 'RUNNING' ? ` (last seen ${c.lastState})` : '';
        this.attemptFailed(c, `left the queue without a result file${how}`);
      }
    }
    this.options.onQueue?.(this.queueStats());
    if (this.pending.length > 0) await this.submitWave();
    this.schedulePoll();
  }

  /** What accounting says of jobs that left the queue without a result; nothing where the cluster keeps none (then sacct is not asked again). */
  private async howJobsEnded(ids: string[]): Promise<Map<string, AccountingEntry>> {
    if (!this.accountingAvailable) return new Map();
    try {
      return await this.cli.accounting(ids);
    } catch {
      this.accountingAvailable = false;
      return new Map();
    }
  }

  /** `now` when squeue showed the job running (its queue wait is known), null when only its result showed it ran. */
  private markStarted(c: Candidate, now: number | null): void {
    if (c.started) return;
    c.started = true;
    if (now !== null) this.queueWaits.push(now - c.submittedAt);
    // A resubmitted candidate started once already as far as the caller knows.
    if (!c.startNotified) c.options.onStart?.();
    c.startNotified = true;
  }

  private async readResult(c: Candidate): Promise<{ kind: 'none' } | { kind: 'broken'; why: string } | { kind: 'result'; result: ScoredEvaluationResult }> {
    const text = await readJobFile(join(c.dir, 'result.json'));
    if (text === null) return { kind: 'none' };
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      return { kind: 'broken', why: 'wrote a result file that is not JSON' };
    }
    const parsed = EvaluateJsonSchema.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      return { kind: 'broken', why: `wrote a malformed result (${issue?.path.join('.') || 'top level'}: ${issue?.message ?? 'invalid'})` };
    }
    const r = parsed.data;
    // evaluate reports an interrupted evaluation as cancelled: here that is
    // SLURM stopping the job (time limit, preemption), not a candidate's result.
    if (r.metrics.cancelled === true) return { kind: 'broken', why: 'was stopped on the node before the evaluation finished (time limit or preemption)' };
    return { kind: 'result', result: resultOfEvaluateJson(r) };
  }

  /** A lost or failed job: submit the candidate again while resubmits are left, else end it as evaluation_failed. */
  private attemptFailed(c: Candidate, why: string): void {
    const jobId = c.jobId as string;
    this.submitted.delete(jobId);
    this.counts.lost++;
    c.jobId = null;
    c.started = false;
    if (c.submissions <= this.options.maxResubmits) {
      this.warn(`SLURM job ${jobId} ${why}; resubmitting (${c.submissions} of ${this.options.maxResubmits} resubmits)`);
      void rm(join(c.dir, 'failed'), { force: true });
      this.pending.push(c);
      return;
    }
    const times = c.submissions === 1 ? 'once' : `${c.submissions} times`;
    this.endAsFailed(c, `the SLURM evaluation job ended without a result ${times} (last: job ${jobId} ${why})`);
  }

  private endAsFailed(c: Candidate, reason: string): void {
    this.counts.failed++;
    this.finish(c, failedResult(reason, performance.now() - c.calledAt));
  }

  private finish(c: Candidate, result: EvaluationResult): void {
    if (c.settled) return;
    c.settled = true;
    c.detach();
    if (c.jobId) this.submitted.delete(c.jobId);
    const index = this.pending.indexOf(c);
    if (index !== -1) this.pending.splice(index, 1);
    void rm(c.dir, { recursive: true, force: true }).catch(() => undefined);
    c.resolve(result);
  }

  /** Cancellations of one step arrive together: one scancel for all of them. */
  private requestCancel(c: Candidate): void {
    c.cancelRequested = true;
    if (this.cancelScheduled) return;
    this.cancelScheduled = true;
    setImmediate(() => {
      this.cancelScheduled = false;
      void this.enqueue(() => this.cancelRequested());
    });
  }

  private async cancelRequested(): Promise<void> {
    const waiting = this.pending.filter((c) => c.cancelRequested);
    for (const c of waiting) this.finish(c, cancelledResult());
    const running = [...this.submitted.values()].filter((c) => c.cancelRequested);
    if (running.length === 0) return;
    const ids = running.map((c) => c.jobId as string);
    try {
      await this.cli.cancel(ids);
      await waitUntilGone(this.cli, this.jobName, ids);
    } catch (err) {
      this.warn(`scancel of ${ids.length} cancelled evaluation job(s) failed: ${errorMessage(err)}`);
    }
    for (const c of running) this.finish(c, cancelledResult());
  }

  private commonSbatchArguments(): string[] {
    return commonSbatchArguments(this.options, this.jobName, this.staging.root);
  }

  private warn(message: string): void {
    this.options.onWarning?.(message);
  }
}

function commonSbatchArguments(options: SlurmEvaluatorOptions, jobName: string, root: string): string[] {
  return [
    // The job starts from the user's login environment on the node, not ours:
    // no API key reaches a job or slurmd's spool (sbatch runs with a minimal
    // environment besides, see slurmToolEnvironment).
    '--export=NONE',
    `--job-name=${jobName}`,
    `--chdir=${root}`,
    ...(options.partition ? [`--partition=${options.partition}`] : []),
    ...(options.account ? [`--account=${options.account}`] : []),
    ...options.sbatchArguments,
  ];
}

/** The probe job: Node.js and the sandbox on a compute node, or a SlurmError saying what is missing. */
async function runProbe(cli: SlurmCli, options: SlurmEvaluatorOptions, staging: Staging, jobName: string, signal: AbortSignal | undefined): Promise<NodeProbe> {
  const jobId = await cli.submit([
    ...commonSbatchArguments(options, jobName, staging.root),
    `--time=${PROBE_TIME_MINUTES}`,
    `--output=${join(staging.root, 'logs', 'probe-%j.log')}`,
    staging.probeScript,
  ]);
  const done = join(staging.root, 'probe.done');
  let missingPolls = 0;
  let lastState: string | null = null;
  const toldReasons = new Set<string>();
  for (;;) {
    if (signal?.aborted) {
      await cli.cancel([jobId]).then(() => waitUntilGone(cli, jobName, [jobId])).catch(() => undefined);
      throw new SlurmError('stopped while waiting for the SLURM probe job');
    }
    const queue = await cli.queue(jobName);
    const entry = queue.get(jobId);
    if (entry) lastState = entry.state;
    if (entry?.state === 'PENDING' && !ORDINARY_PENDING_REASONS.has(entry.reason) && !toldReasons.has(entry.reason)) {
      toldReasons.add(entry.reason);
      options.onWarning?.(`the SLURM probe job ${jobId} is pending with reason ${entry.reason} (squeue); the run starts once it has run`);
    }
    if (await exists(done)) break;
    if (entry?.live) missingPolls = 0;
    else if (++missingPolls >= MISSING_POLLS_BEFORE_LOST) {
      const log = (await readJobFile(join(staging.root, 'logs', `probe-${jobId}.log`))) ?? '';
      throw new SlurmError(
        `the SLURM probe job ${jobId} left the queue${lastState ? ` (last seen ${lastState})` : ''} without reporting back in ${staging.root}. ` +
          `Is thetaevolve.slurm.stagingDirectory on a filesystem the compute nodes share?${log.trim() ? ` Its output ends with: ${tail(log)}` : ''}`,
      );
    }
    await delay(Math.min(options.pollSeconds * 1000, 1000), undefined, signal ? { signal } : {}).catch(() => undefined);
  }
  const version = ((await readJobFile(join(staging.root, 'probe.version'), 200)) ?? '').trim();
  const stderr = (await readJobFile(join(staging.root, 'probe.stderr'))) ?? '';
  const how = `set thetaevolve.slurm.nodeCommand, or load Node.js with thetaevolve.slurm.setupCommands (e.g. module load nodejs/20)`;
  const major = /^v(\d+)\./.exec(version);
  if (!major) throw new SlurmError(`Node.js could not be started on the compute node with \`${options.nodeCommand}\`${stderr.trim() ? ` (${tail(stderr)})` : ''}: ${how}.`);
  if (Number(major[1]) < MIN_NODE_MAJOR) throw new SlurmError(`the compute node runs Node.js ${version}; ThetaEvolve's jobs need Node.js ${MIN_NODE_MAJOR} or newer: ${how}.`);
  const text = await readJobFile(join(staging.root, 'probe.json'));
  let probe: NodeProbe;
  try {
    probe = NodeProbeSchema.parse(JSON.parse(text ?? ''));
  } catch {
    throw new SlurmError(`the probe on the compute node did not report its sandbox${stderr.trim() ? ` (${tail(stderr)})` : ''}`);
  }
  if (probe.isolation.kind !== 'bwrap' && !options.allowFallbackIsolation) {
    throw new SlurmError(
      `the compute node ${probe.host} has no working bubblewrap sandbox (${probe.isolation.warning ?? 'fallback'}). Install bubblewrap on the compute nodes, or pick nodes that have it with thetaevolve.slurm.partition or slurm.sbatchArguments.`,
    );
  }
  return probe;
}
