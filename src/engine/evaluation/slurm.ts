// The `slurm` evaluation backend (docs/architecture.md "Evaluation backends"): each
// candidate is one task of a SLURM job array that runs ThetaEvolve's own
// `evaluate` on a compute node, so the sandbox (bubblewrap, limits, our
// wall-clock limit) applies there too. Everything a job needs is staged on
// the shared filesystem: the candidate, a copy of the task and of our bundled
// CLI. One sbatch per wave, one squeue per poll for all jobs of the run.
// A job that left the queue without a result file is lost, never "still
// running"; lost jobs are resubmitted, then the sample ends as
// evaluation_failed (no score: not the model's fault). Short candidates are
// packed, several to an array task (slurmPacking.ts), and results are picked
// up the moment a job writes them (a watch on done/, a listing as fallback).
// This file is the evaluator (waves, polls, resubmits); the staged files and
// what jobs write back are slurmStaging.ts, the shared queue calls
// slurmQueue.ts, the probe job slurmProbe.ts.
import { type FSWatcher, rmSync, watch } from 'node:fs';
import { mkdir, readdir, rm, rmdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { cancelledResult } from '../sandbox/trustedEvaluator';
import type { IsolationKind } from '../sandbox/isolation';
import { percentile } from '../common/stats';
import type { Task } from '../task/task';
import type { EvaluationResult, FailedEvaluationResult } from '../common/types';
import type { EvaluateOptions, EvaluationBackend } from './backend';
import type { NodeProbe } from './nodeProbe';
import { type AccountingEntry, jobNameOfRun, type QueueEntry, type SchedulerCalls, SlurmCli } from './slurmCli';
import type { SlurmClusterOptions } from './slurmSettings';
import { errorMessage } from '../common/errors';
import {
  cancelRunJobs,
  commonSbatchArguments,
  MISSING_POLLS_BEFORE_LOST,
  type PendingJob,
  PendingNotices,
  pendingJobsLine,
  type SlurmQueueStats,
  waitUntilGone,
} from './slurmQueue';
import { runProbe } from './slurmProbe';
import {
  autoCandidatesPerJob,
  candidatesPerJobLimit,
  cpusPerTaskArguments,
  packGroups,
  packingNodeCpus,
  RUNTIME_WINDOW,
} from './slurmPacking';
import {
  jobTimeLimitMinutes,
  readJobFile,
  readJobResult,
  removeStaleStaging,
  type SandboxLimits,
  stage,
  type Staging,
  tail,
} from './slurmStaging';

export { cancelOrphans, findOrphans, type SlurmQueueStats } from './slurmQueue';
export {
  BUNDLE_FILES,
  BUNDLE_FOREIGN_DIR,
  jobTimeLimitMinutes,
  type SandboxLimits,
  sandboxLimitArguments,
  shellQuote,
} from './slurmStaging';

/** SLURM's default MaxArraySize is 1001. */
const MAX_ARRAY_TASKS = 1000;
const SUBMIT_FAILURES_BEFORE_GIVING_UP = 3;
/** How often done/ is listed between polls (where the watch hears nothing: a filesystem shared over the network). */
const DONE_CHECK_MS = 250;
/** A burst of children (a step's responses) has ended once no new candidate came for this long: its wave is submitted then. */
const QUIET_MS = 25;

export interface SlurmEvaluatorOptions extends SlurmClusterOptions {
  runId: string;
  /** Folder holding the bundled evaluateJob.js and nodeProbe.js (the extension's or the npm package's dist/). */
  bundleDirectory: string;
  /** Overrides task.runtimeLimitSec (as the local sandbox's option does). */
  runtimeLimitSec?: number;
  /** thetaevolve.sandbox.* limits the node's `evaluate` applies to each candidate (default: the local sandbox's defaults). */
  sandboxLimits?: SandboxLimits;
  /** Environment SLURM's tools are started from (SLURM_CONF, PATH); default process.env. Only SLURM's own variables are passed on. */
  env?: NodeJS.ProcessEnv;
  /** The longest new candidates are gathered into one array (default 200 ms, at most one poll); a burst that ends sooner goes then. */
  gatherMs?: number;
  /** Start even when the compute node has no bubblewrap (its sandbox is the weaker fallback). Default false: refuse. */
  allowFallbackIsolation?: boolean;
  /** Called after every poll, and when results were picked up between polls, with the queue as it stands (status bar, dashboard). */
  onQueue?: (queue: SlurmQueueStats) => void;
  /** Problems that do not end the run (squeue failing for a while, a resubmitted job). */
  onWarning?: (message: string) => void;
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

function failedResult(reason: string, durationMs: number): FailedEvaluationResult {
  return { status: 'evaluation_failed', score: null, objective: null, metrics: {}, reason, durationMs, stdout: '', stderr: '' };
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
  /** Submitted candidates by candidate id (a packed job holds several). */
  private readonly submitted = new Map<number, Candidate>();
  /** Recent evaluation times on the nodes, for candidatesPerJob `auto`. */
  private readonly runtimesMs: number[] = [];
  private doneWatcher: FSWatcher | null = null;
  private doneCheckQueued = false;
  private readonly queueWaits: number[] = [];
  private readonly pendingNotices = new PendingNotices();
  private readonly counts = { done: 0, lost: 0, failed: 0 };
  private nextId = 0;
  private nextWave = 0;
  private submitFailures = 0;
  private lastSubmitAt = Number.NEGATIVE_INFINITY;
  private accountingAvailable = true;
  private squeueFailures = 0;
  private chain: Promise<void> = Promise.resolve();
  private submitTimer: NodeJS.Timeout | null = null;
  /** When the first candidate of the wave being gathered was staged (null: none is being gathered). */
  private gatherStartedAt: number | null = null;
  /** The armed submit is a retry after sbatch failed: new candidates do not bring it forward. */
  private submitIsRetry = false;
  /** Candidates whose files are still being written: the burst is not over while one is (a loaded host can stage slower than QUIET_MS). */
  private candidatesStaging = 0;
  private pollTimer: NodeJS.Timeout | null = null;
  private doneTimer: NodeJS.Timeout | null = null;
  private cancelScheduled = false;
  private closing: Promise<void> | null = null;
  private readonly pollMs: number;
  private readonly gatherMs: number;
  private readonly doneCheckMs: number;
  private readonly timeMinutes: number;
  private readonly runtimeLimitSec: number;

  private constructor(
    readonly task: Task,
    private readonly options: SlurmEvaluatorOptions,
    private readonly staging: Staging,
    cli: SlurmCli,
    probe: NodeProbe,
    /** The fewest CPUs a node of the partition has (null: sinfo did not say). */
    private readonly nodeCpus: number | null,
  ) {
    this.cli = cli;
    this.node = probe;
    this.jobName = jobNameOfRun(options.runId);
    this.isolation = probe.isolation;
    this.pollMs = options.pollSeconds * 1000;
    this.gatherMs = Math.min(options.gatherMs ?? 200, this.pollMs);
    this.doneCheckMs = Math.min(DONE_CHECK_MS, this.pollMs);
    this.runtimeLimitSec = options.runtimeLimitSec ?? task.runtimeLimitSec;
    this.timeMinutes = jobTimeLimitMinutes(this.runtimeLimitSec, task.evaluatorTimeLimitSec);
    const where = options.partition ? `partition ${options.partition}` : 'the default partition';
    const sandbox = probe.isolation.kind === 'bwrap' ? 'bubblewrap' : 'fallback sandbox: no bubblewrap';
    this.description = `SLURM jobs on ${where}, up to ${options.maxJobs} at once; ${sandbox} on ${probe.host} (Node ${probe.node})`;
    this.watchDone();
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
    const cli = new SlurmCli(options.env ?? process.env, options.exportVariables);
    const jobName = jobNameOfRun(options.runId);
    // A run has one SLURM backend at a time: jobs and staging folders of this
    // run still around were left by a ThetaEvolve that died (resume after a crash).
    const orphans = await cancelRunJobs(cli, jobName);
    if (orphans > 0)
      options.onWarning?.(`cancelled ${orphans} SLURM job(s) of run ${options.runId} that an earlier ThetaEvolve left in the queue`);
    await removeStaleStaging(options.stagingDirectory, jobName);
    const runtimeLimitSec = options.runtimeLimitSec ?? task.runtimeLimitSec;
    const staging = await stage(task, options, jobName, runtimeLimitSec);
    try {
      const probe = await runProbe(cli, options, staging, jobName, signal);
      const nodeCpus = await packingNodeCpus(cli, options);
      return new SlurmEvaluator(task, options, staging, cli, probe, nodeCpus);
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
      // A signal of its own that follows the caller's: a step's hundreds of candidates share one signal, which warns past 10 listeners.
      const signal = options.signal && AbortSignal.any([options.signal]);
      if (signal) {
        const onAbort = (): void => this.requestCancel(candidate);
        signal.addEventListener('abort', onAbort, { once: true });
        candidate.detach = () => signal.removeEventListener('abort', onAbort);
      }
      this.candidatesStaging++;
      void (async () => {
        try {
          await mkdir(dir);
          await writeFile(join(dir, `program.${this.task.language}`), code, { mode: 0o644 });
        } catch (err) {
          this.finish(
            candidate,
            failedResult(`the candidate could not be staged in ${dir}: ${errorMessage(err)}`, performance.now() - calledAt),
          );
          return;
        } finally {
          this.candidatesStaging--;
        }
        if (candidate.cancelRequested || this.closing) {
          this.finish(candidate, cancelledResult());
          return;
        }
        this.pending.push(candidate);
        this.candidateStaged();
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
      // A job's Node can outlive the job in the queue where the cluster tracks processes by parentage
      // (proctrack/linuxproc loses one whose shell was killed first) and still write as it exits (the code cache in
      // bundle/): a folder that filled again while it was removed (ENOTEMPTY) is removed again.
      await rm(this.staging.root, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 }).catch((err: unknown) =>
        this.warn(`the run's SLURM staging folder ${this.staging.root} could not be removed: ${errorMessage(err)}`),
      );
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

  /**
   * A job creates its candidate's file in done/ the moment the result is
   * written: the watch picks it up then. Where the filesystem tells no one
   * (NFS written from another host), the listing every DONE_CHECK_MS remains.
   */
  private watchDone(): void {
    try {
      this.doneWatcher = watch(join(this.staging.root, 'done'), () => this.doneLanded());
      this.doneWatcher.on('error', () => this.doneWatcher?.close());
    } catch {
      this.doneWatcher = null;
    }
  }

  private doneLanded(): void {
    if (this.doneCheckQueued || this.closing) return;
    this.doneCheckQueued = true;
    void this.enqueue(() => this.checkDone());
  }

  private clearTimers(): void {
    this.doneWatcher?.close();
    this.doneWatcher = null;
    if (this.submitTimer) clearTimeout(this.submitTimer);
    if (this.pollTimer) clearTimeout(this.pollTimer);
    if (this.doneTimer) clearTimeout(this.doneTimer);
    this.doneTimer = null;
    this.submitTimer = null;
    this.pollTimer = null;
  }

  /**
   * A candidate was staged: its wave goes once its burst is over (none still
   * being staged, and QUIET_MS without another), at the latest gatherMs after
   * the burst began.
   */
  private candidateStaged(): void {
    if (this.closing || (this.submitTimer && this.submitIsRetry)) return;
    const now = performance.now();
    this.gatherStartedAt ??= now;
    const latest = this.gatherStartedAt + this.gatherMs;
    const due = this.candidatesStaging > 0 ? latest : Math.min(latest, now + Math.min(QUIET_MS, this.gatherMs));
    if (this.submitTimer) clearTimeout(this.submitTimer);
    this.submitTimer = null;
    this.scheduleSubmit(due - now);
  }

  /**
   * Submit what is staged after `afterMs`; while jobs of the run are queued,
   * at most one wave per poll (a step's stragglers go in a few arrays, not one
   * sbatch each); with none queued (a new step) waiting gains nothing.
   */
  private scheduleSubmit(afterMs: number, retry = false): void {
    if (this.submitTimer || this.closing) return;
    const throttled = this.submitted.size > 0 ? this.lastSubmitAt + this.pollMs - performance.now() : 0;
    this.submitIsRetry = retry;
    this.submitTimer = setTimeout(
      () => {
        this.submitTimer = null;
        this.gatherStartedAt = null;
        void this.enqueue(() => this.submitWave());
      },
      Math.max(afterMs, throttled),
    );
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
      this.doneLanded();
    }, this.doneCheckMs);
  }

  /**
   * Between two polls: one listing of done/, where each job leaves its
   * candidate's id when it ends, picks results up early. Anything else (a
   * failure, a result not visible yet) waits for the next poll.
   */
  private async checkDone(): Promise<void> {
    this.doneCheckQueued = false;
    if (this.closing || this.submitted.size === 0) return;
    const doneDir = join(this.staging.root, 'done');
    const names = await readdir(doneDir).catch(() => []);
    if (names.length > 0) {
      for (const name of names) {
        await rm(join(doneDir, name), { force: true });
        const c = this.submitted.get(Number(name));
        if (!c) continue;
        const result = await readJobResult(c.dir);
        if (result.kind !== 'result') continue;
        this.resultArrived(c, result.result);
      }
      if (this.pending.length > 0) await this.submitWave();
      // Results picked up between polls change the queue too: the status bar must not go on showing them running.
      this.options.onQueue?.(this.queueStats());
    }
    this.scheduleDoneCheck();
  }

  /** Jobs of this run in the queue (a packed job counts once). */
  private jobsInQueue(): number {
    return new Set([...this.submitted.values()].map((c) => c.jobId)).size;
  }

  /**
   * Candidates one job runs: the setting, or `auto` from the recent
   * evaluation times (the task's runtime limit before any); never more than
   * the partition's nodes fit (candidatesPerJobLimit).
   */
  candidatesPerJob(): number {
    const setting = this.options.candidatesPerJob;
    const limit = candidatesPerJobLimit(this.nodeCpus, setting === 'auto');
    if (setting !== 'auto') return Math.min(setting, limit);
    const expectedMs = this.runtimesMs.length > 0 ? percentile(this.runtimesMs, 50) : this.runtimeLimitSec * 1000;
    return Math.min(autoCandidatesPerJob(expectedMs / 1000), limit);
  }

  /** One sbatch: a job array of the staged candidates, packed, as many jobs as maxJobs leaves room for. */
  private async submitWave(): Promise<void> {
    if (this.closing) return;
    const perJob = this.candidatesPerJob();
    // Cancelled while waiting: never submitted (cancelRequested() resolves them).
    const room = Math.min(this.options.maxJobs - this.jobsInQueue(), MAX_ARRAY_TASKS) * perJob;
    const wave: Candidate[] = [];
    for (let i = 0; i < this.pending.length && wave.length < room;) {
      const c = this.pending[i] as Candidate;
      if (c.cancelRequested) i++;
      else wave.push(...this.pending.splice(i, 1));
    }
    if (wave.length === 0) return;
    const jobs = packGroups(wave, perJob);
    const largest = Math.max(...jobs.map((job) => job.length));
    this.lastSubmitAt = performance.now();
    const list = join(this.staging.root, 'waves', `${this.nextWave++}.txt`);
    let arrayId: string;
    try {
      await writeFile(list, jobs.map((job) => `${job.map((c) => c.id).join(' ')}\n`).join(''));
      arrayId = await this.cli.submit([
        ...this.commonSbatchArguments(),
        ...cpusPerTaskArguments(this.options.sbatchArguments, largest),
        `--time=${this.timeMinutes}`,
        `--array=0-${jobs.length - 1}%${this.options.maxJobs}`,
        `--output=${join(this.staging.root, 'logs', '%A_%a.log')}`,
        this.staging.jobScript,
        list,
      ]);
      this.submitFailures = 0;
    } catch (err) {
      this.submitFailures++;
      if (this.submitFailures >= SUBMIT_FAILURES_BEFORE_GIVING_UP) {
        for (const c of wave)
          this.endAsFailed(c, `sbatch refused the evaluation job ${this.submitFailures} times in a row: ${errorMessage(err)}`);
        this.submitFailures = 0;
      } else {
        this.pending.unshift(...wave);
        this.warn(`sbatch failed (will retry): ${errorMessage(err)}`);
        this.scheduleSubmit(this.pollMs, true);
      }
      return;
    }
    const now = performance.now();
    jobs.forEach((job, index) => {
      for (const c of job) {
        c.jobId = `${arrayId}_${index}`;
        c.submissions++;
        c.submittedAt = now;
        c.missingPolls = 0;
        c.lastState = null;
        this.submitted.set(c.id, c);
        c.options.onSubmitted?.(c.jobId);
      }
    });
    if (this.pending.length > 0 && this.jobsInQueue() < this.options.maxJobs) this.scheduleSubmit(0);
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
      if (this.squeueFailures === 1 || this.squeueFailures % 10 === 0)
        this.warn(`squeue failed ${this.squeueFailures} time(s) in a row (will retry): ${errorMessage(err)}`);
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
        continue;
      }
      const result = await readJobResult(c.dir);
      if (result.kind === 'result') {
        this.resultArrived(c, result.result);
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
        // The job log holds evaluate's stderr (shared by the candidates of a packed job).
        const log = (await readJobFile(join(this.staging.root, 'logs', `${c.jobId as string}.log`))) ?? '';
        const said = tail(log);
        this.attemptFailed(c, `ThetaEvolve's evaluate exited with code ${failedCode.trim()} on the compute node${said ? `: ${said}` : ''}`);
      } else if (c.missingPolls >= MISSING_POLLS_BEFORE_LOST) {
        lost.push(c);
      }
    }
    if (lost.length > 0) {
      const ended = await this.howJobsEnded(lost.map((c) => c.jobId as string));
      for (const c of lost) {
        const account = ended.get(c.jobId as string);
        const how = account
          ? ` (sacct: ${account.state}, exit ${account.exitCode})`
          : c.lastState && c.lastState !== 'RUNNING'
            ? ` (last seen ${c.lastState})`
            : '';
        this.attemptFailed(c, `left the queue without a result file${how}`);
      }
    }
    // Every job of the run that waits is named within seconds, whatever else of the run runs (its inference jobs too).
    const pendingJobs = new Map<string, PendingJob>();
    for (const c of this.submitted.values()) {
      const entry = queue.get(c.jobId as string);
      if (entry?.state === 'PENDING' && !pendingJobs.has(entry.id))
        pendingJobs.set(entry.id, { id: entry.id, reason: entry.reason, request: entry.request, since: c.submittedAt });
    }
    const waiting = this.pendingNotices.due([...pendingJobs.values()], now);
    if (waiting.length > 0)
      this.warn(
        pendingJobsLine(
          waiting,
          'evaluation',
          now,
          `candidates are evaluated once their job starts (a job asks for one CPU per candidate it runs: thetaevolve.slurm.candidatesPerJob, slurm.sbatchArguments)`,
        ),
      );
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

  /** A result from the node: the candidate is done, and its time tells `auto` packing what to expect. */
  private resultArrived(c: Candidate, result: EvaluationResult): void {
    // Run and done between two polls (squeue never saw it running): its wait is what its own evaluation time leaves
    // of the time since its submission (node start included).
    if (!c.started && c.submittedAt > 0) this.queueWaits.push(Math.max(0, performance.now() - c.submittedAt - result.durationMs));
    this.markStarted(c, null);
    this.counts.done++;
    this.runtimesMs.push(result.durationMs);
    if (this.runtimesMs.length > RUNTIME_WINDOW) this.runtimesMs.shift();
    this.finish(c, result);
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

  /** A lost or failed job: submit the candidate again while resubmits are left, else end it as evaluation_failed. */
  private attemptFailed(c: Candidate, why: string): void {
    const jobId = c.jobId as string;
    this.submitted.delete(c.id);
    this.counts.lost++;
    c.jobId = null;
    c.started = false;
    if (c.submissions <= this.options.maxResubmits) {
      this.warn(`SLURM job ${jobId} ${why}; resubmitting (${c.submissions} of ${this.options.maxResubmits} resubmits)`);
      // What the failed attempt left (a result it wrote as it was stopped) must not pass for the next attempt's: gone before it is submitted.
      for (const name of ['failed', 'result.json']) rmSync(join(c.dir, name), { force: true });
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
    this.submitted.delete(c.id);
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
    // A packed job is cancelled only when all its candidates are; the others' job runs on (a cancelled one's result is not awaited).
    const keep = new Set([...this.submitted.values()].filter((c) => !c.cancelRequested).map((c) => c.jobId));
    const ids = [...new Set(running.map((c) => c.jobId as string))].filter((id) => !keep.has(id));
    for (const c of running) if (keep.has(c.jobId)) this.finish(c, cancelledResult());
    if (ids.length === 0) return;
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
