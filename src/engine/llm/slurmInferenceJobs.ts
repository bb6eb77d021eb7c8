// Inference servers as SLURM jobs (docs/architecture.md "Inference servers"):
// `slurm.inference.count` jobs named thetaevolve-<run>-server-<k>, each
// running `slurm.inference.command` on a port it picks. A job writes its host
// and port into the staging folder; the server joins the endpoint pool once
// /v1/models answers there, leaves it when its job ends (or is preempted),
// and the job is submitted again (`slurm.inference.maxResubmits`). The job
// ids are recorded beside the staging folder, so that a run resumed after a
// kill -9 cancels the servers its dead process left running.
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { errorMessage } from '../common/errors';
import { jobNameOfRun, type QueueEntry, SlurmCli } from '../evaluation/slurmCli';
import { MISSING_POLLS_BEFORE_LOST, type PendingJob, PendingNotices, pendingJobsLine, waitUntilGone } from '../evaluation/slurmQueue';
import type { SlurmClusterOptions, SlurmInferenceOptions } from '../evaluation/slurmSettings';
import { privateStagingFolder, readJobFile, readJobFileEnd, shellQuote, tail } from '../evaluation/slurmStaging';

/** One inference job as people are shown it (CLI, events). */
export interface InferenceJobState {
  /** k in thetaevolve-<run>-server-<k>. */
  index: number;
  /** Its current job (null between an end and its resubmit). */
  jobId: string | null;
  /** squeue's state (PENDING, RUNNING, ...), `ENDED` once gone, `GIVEN_UP` after the last resubmit. */
  state: string;
  /** Why it is pending (squeue's reason), null otherwise. */
  reason: string | null;
  /** Where it runs, once the job said so. */
  host: string | null;
  /** Its base URL while it is in the endpoint pool. */
  baseURL: string | null;
  resubmits: number;
}

export interface SlurmInferenceJobsOptions extends SlurmInferenceOptions {
  runId: string;
  cluster: Pick<SlurmClusterOptions, 'partition' | 'account' | 'exportVariables' | 'stagingDirectory' | 'pollSeconds'>;
  /** Environment SLURM's tools start from (SLURM_CONF, PATH); default process.env. */
  env?: NodeJS.ProcessEnv;
  /**
   * The key the run's servers require: written to a 0600 file of the 0700 staging folder and passed to each server as
   * --api-key (vLLM's and SGLang's flag), so the pool sends it, never the user's API key, to job servers.
   */
  token: string;
  /** Add the server to the endpoint pool; throws while it does not answer yet (tried again at the next poll). */
  onServerUp: (baseURL: string) => Promise<void>;
  onServerDown: (baseURL: string) => void;
  /** After any change of a job's state. */
  onChange?: (jobs: InferenceJobState[]) => void;
  /** Things people should hear of: a server up (info); a job ended and resubmitted, orphans cancelled, a failing tool (warning). */
  onNotice: (message: string, level: 'info' | 'warning') => void;
}

/** What a job writes once it picked its port (host as the node names itself). */
const ServerFileSchema = z.object({ host: z.string().regex(/^[A-Za-z0-9.-]+$/), port: z.number().int().min(1).max(65535) }).strict();
const RecordSchema = z.object({ count: z.number().int().nonnegative(), jobIds: z.array(z.string().regex(/^\d+$/)) });

interface Job extends InferenceJobState {
  missingPolls: number;
  /** When its current job was submitted (performance.now()). */
  submittedAt: number;
}

/** The job name of inference server k of a run. */
export function inferenceJobName(runId: string, index: number): string {
  return `${jobNameOfRun(runId)}-server-${index}`;
}

export class SlurmInferenceJobs {
  private readonly cli: SlurmCli;
  private readonly jobs: Job[];
  private readonly dir: string;
  private readonly script: string;
  private pollTimer: NodeJS.Timeout | null = null;
  private polling: Promise<void> = Promise.resolve();
  private closing: Promise<void> | null = null;
  private squeueFailures = 0;
  private readonly pendingNotices = new PendingNotices();
  private readonly readyWaiters = new Set<{ resolve: () => void; reject: (err: Error) => void }>();

  private constructor(private readonly options: SlurmInferenceJobsOptions) {
    this.cli = new SlurmCli(options.env ?? process.env, options.cluster.exportVariables);
    this.dir = join(resolve(options.cluster.stagingDirectory), `${jobNameOfRun(options.runId)}-servers`);
    this.script = join(this.dir, 'server.sh');
    this.jobs = Array.from({ length: options.count }, (_, index) => ({
      index,
      jobId: null,
      state: 'SUBMITTING',
      reason: null,
      host: null,
      baseURL: null,
      resubmits: 0,
      missingPolls: 0,
      submittedAt: 0,
    }));
  }

  /** Cancel what an earlier process of the run left running, then submit the servers' jobs; polls until close(). */
  static async start(options: SlurmInferenceJobsOptions): Promise<SlurmInferenceJobs> {
    const jobs = new SlurmInferenceJobs(options);
    await jobs.cancelOrphans();
    await jobs.writeScript();
    for (const job of jobs.jobs) await jobs.submit(job);
    jobs.changed();
    jobs.schedulePoll();
    return jobs;
  }

  /** The jobs as they stand. */
  states(): InferenceJobState[] {
    return this.jobs.map(({ missingPolls: _m, submittedAt: _s, ...state }) => ({ ...state }));
  }

  /** Resolves once one server is in the endpoint pool; rejects when every job was given up, or on abort. */
  firstReady(signal?: AbortSignal): Promise<void> {
    if (this.jobs.some((j) => j.baseURL !== null)) return Promise.resolve();
    return new Promise((resolvePromise, reject) => {
      const waiter = {
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolvePromise();
        },
        reject: (err: Error) => {
          signal?.removeEventListener('abort', onAbort);
          reject(err);
        },
      };
      const onAbort = (): void => {
        this.readyWaiters.delete(waiter);
        reject(new Error('stopped while waiting for the inference jobs'));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.readyWaiters.add(waiter);
    });
  }

  /** What the run waits for while no server is up, in one line. */
  waitingLine(): string {
    const parts = this.jobs.map((j) => {
      const why = j.reason && j.reason !== 'None' ? ` (${j.reason})` : '';
      const what = j.state === 'RUNNING' ? 'running, its server not answering yet' : j.state.toLowerCase();
      return `job ${j.jobId ?? '-'} (server ${j.index}) ${what}${why}`;
    });
    return `waiting for the SLURM inference jobs: ${parts.join('; ')}`;
  }

  /** scancel every inference job of the run and wait until the queue shows none. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      if (this.pollTimer) clearTimeout(this.pollTimer);
      this.pollTimer = null;
      await this.polling;
      for (const waiter of this.readyWaiters) waiter.reject(new Error('the inference jobs were stopped'));
      this.readyWaiters.clear();
      const ids = this.jobs.map((j) => j.jobId).filter((id): id is string => id !== null);
      try {
        if (ids.length > 0) {
          await this.cli.cancel(ids);
          await waitUntilGone(this.cli, this.names(this.jobs.length), ids);
        }
      } catch (err) {
        this.options.onNotice(`cancelling the inference jobs ${ids.join(', ')} failed: ${errorMessage(err)}`, 'warning');
      }
      // Each keeps its last job id: the last report says which job was cancelled.
      for (const job of this.jobs) {
        if (job.baseURL) this.options.onServerDown(job.baseURL);
        job.baseURL = null;
        job.state = 'CANCELLED';
      }
      this.changed();
      await rm(this.dir, { recursive: true, force: true }).catch(() => undefined);
    })();
    return this.closing;
  }

  /** Where job `jobId` of server `index` writes its output (`%j`: sbatch's pattern for the id). */
  private logFile(index: number, jobId: string): string {
    return join(this.dir, 'logs', `${index}-${jobId}.log`);
  }

  private names(count: number): string {
    return Array.from({ length: count }, (_, k) => inferenceJobName(this.options.runId, k)).join(',');
  }

  /** Jobs an earlier process of this run left (its record names how many servers it had). */
  private async cancelOrphans(): Promise<void> {
    const recordText = await readFile(join(this.dir, 'jobs.json'), 'utf8').catch(() => null);
    let recordedCount = 0;
    if (recordText !== null) {
      const parsed = RecordSchema.safeParse(JSON.parse(recordText) as unknown);
      if (parsed.success) recordedCount = parsed.data.count;
    }
    const queue = await this.cli.queue(this.names(Math.max(this.jobs.length, recordedCount)));
    const ids = [...queue.keys()];
    if (ids.length > 0) {
      await this.cli.cancel(ids);
      await waitUntilGone(this.cli, this.names(Math.max(this.jobs.length, recordedCount)), ids);
      this.options.onNotice(
        `cancelled ${ids.length} SLURM inference job(s) of run ${this.options.runId} that an earlier ThetaEvolve left running`,
        'warning',
      );
    }
    await rm(this.dir, { recursive: true, force: true });
  }

  private async writeScript(): Promise<void> {
    await privateStagingFolder(this.dir);
    await mkdir(join(this.dir, 'logs'), { recursive: true, mode: 0o700 });
    await writeFile(join(this.dir, 'token'), `${this.options.token}\n`, { mode: 0o600 });
    // {token} where the command wants it; else --api-key "$token" after it (the server's command comes last).
    const withToken = this.options.command.includes('{token}') ? this.options.command : `${this.options.command} --api-key {token}`;
    const command = withToken.replaceAll('{port}', '${port}').replaceAll('{host}', '${host}').replaceAll('{token}', '"$token"');
    const setup = this.options.setupCommands.length > 0 ? ['# slurm.inference.setupCommands', ...this.options.setupCommands] : [];
    await writeFile(
      this.script,
      [
        '#!/bin/bash',
        '# ThetaEvolve inference server: picks a free port, says where it listens (ThetaEvolve adds it to the',
        '# endpoint pool once /v1/models answers there), then runs thetaevolve.slurm.inference.command.',
        ...setup,
        `dir=${shellQuote(this.dir)}`,
        'host=$(hostname)',
        'token=$(cat "$dir/token")',
        // Below the kernel's ephemeral range where it has one: a port in it may be held by an outgoing connection or its
        // TIME_WAIT, which the connect test below does not see and the server's bind then fails on (EADDRINUSE).
        'low=20000 high=60000',
        'if read -r ephemeral _ < /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null && [ "$ephemeral" -gt 11000 ]; then low=10000 high=$ephemeral; fi',
        'for attempt in $(seq 1 200); do',
        '  port=$((low + RANDOM % (high - low)))',
        '  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || break',
        'done',
        `printf '{"host":"%s","port":%s}\\n' "$host" "$port" > "$dir/$1-$SLURM_JOB_ID.json.part" && mv -f "$dir/$1-$SLURM_JOB_ID.json.part" "$dir/$1-$SLURM_JOB_ID.json"`,
        command,
        '',
      ].join('\n'),
      { mode: 0o755 },
    );
  }

  private async submit(job: Job): Promise<void> {
    const name = inferenceJobName(this.options.runId, job.index);
    try {
      job.jobId = await this.cli.submit([
        `--job-name=${name}`,
        `--chdir=${this.dir}`,
        ...(this.options.cluster.partition ? [`--partition=${this.options.cluster.partition}`] : []),
        ...(this.options.cluster.account ? [`--account=${this.options.cluster.account}`] : []),
        `--output=${this.logFile(job.index, '%j')}`,
        ...this.options.sbatchArguments,
        this.script,
        String(job.index),
      ]);
      job.state = 'PENDING';
      job.missingPolls = 0;
      job.submittedAt = performance.now();
    } catch (err) {
      job.jobId = null;
      job.state = 'SUBMIT_FAILED';
      this.options.onNotice(`sbatch of inference server ${job.index} failed (will retry): ${errorMessage(err)}`, 'warning');
    }
    await this.record();
  }

  private async record(): Promise<void> {
    const jobIds = this.jobs.map((j) => j.jobId).filter((id): id is string => id !== null);
    await writeFile(join(this.dir, 'jobs.json'), JSON.stringify({ count: this.jobs.length, jobIds })).catch(() => undefined);
  }

  private schedulePoll(): void {
    if (this.closing) return;
    this.pollTimer = setTimeout(() => {
      this.pollTimer = null;
      this.polling = this.poll()
        .catch((err: unknown) => this.options.onNotice(`watching the inference jobs: ${errorMessage(err)}`, 'warning'))
        .finally(() => this.schedulePoll());
    }, this.options.cluster.pollSeconds * 1000);
  }

  private async poll(): Promise<void> {
    let queue: Map<string, QueueEntry>;
    try {
      queue = await this.cli.queue(this.names(this.jobs.length));
      this.squeueFailures = 0;
    } catch (err) {
      // Never guess: without the queue no server counts as gone.
      this.squeueFailures++;
      if (this.squeueFailures === 1 || this.squeueFailures % 10 === 0)
        this.options.onNotice(`squeue failed ${this.squeueFailures} time(s) in a row (will retry): ${errorMessage(err)}`, 'warning');
      return;
    }
    // Every inference job that waits is named within seconds, whatever else of the run runs (another server, evaluations).
    const now = performance.now();
    const pending: PendingJob[] = [];
    for (const job of this.jobs) {
      const entry = job.jobId === null ? undefined : queue.get(job.jobId);
      if (entry?.state === 'PENDING') pending.push({ id: entry.id, reason: entry.reason, request: entry.request, since: job.submittedAt });
    }
    const waiting = this.pendingNotices.due(pending, now);
    if (waiting.length > 0)
      this.options.onNotice(pendingJobsLine(waiting, 'inference', now, 'their servers join the endpoint pool once they run'), 'warning');
    let changed = false;
    for (const job of this.jobs) {
      if (this.closing) return;
      if (job.jobId === null) {
        if (job.state === 'SUBMIT_FAILED') {
          await this.submit(job);
          changed = true;
        }
        continue;
      }
      const entry = queue.get(job.jobId);
      if (entry?.live) {
        job.missingPolls = 0;
        const reason = entry.state === 'PENDING' ? entry.reason : null;
        if (entry.state !== job.state || reason !== job.reason) changed = true;
        job.state = entry.state;
        job.reason = reason;
        if (entry.state === 'RUNNING' && job.baseURL === null) changed = (await this.tryJoin(job)) || changed;
        continue;
      }
      if (entry === undefined && ++job.missingPolls < MISSING_POLLS_BEFORE_LOST) continue;
      await this.ended(job, entry?.state ?? 'left the queue');
      changed = true;
    }
    if (changed) this.changed();
  }

  /** The job runs: where its server listens (its file), and whether it answers there. */
  private async tryJoin(job: Job): Promise<boolean> {
    const text = await readJobFile(join(this.dir, `${job.index}-${job.jobId as string}.json`), 4096);
    if (text === null) return false;
    let where: z.infer<typeof ServerFileSchema>;
    try {
      where = ServerFileSchema.parse(JSON.parse(text) as unknown);
    } catch {
      return false;
    }
    const baseURL = `http://${where.host}:${where.port}/v1`;
    job.host = where.host;
    try {
      await this.options.onServerUp(baseURL);
    } catch {
      // Loading (vLLM takes minutes): tried again at the next poll.
      return false;
    }
    job.baseURL = baseURL;
    this.options.onNotice(
      `inference job ${job.jobId as string} (server ${job.index}) answers at ${baseURL}: it joins the endpoint pool`,
      'info',
    );
    for (const waiter of this.readyWaiters) waiter.resolve();
    this.readyWaiters.clear();
    return true;
  }

  /** The job is gone (ended, preempted, cancelled from outside): its server leaves the pool and the job is submitted again. */
  private async ended(job: Job, how: string): Promise<void> {
    const jobId = job.jobId as string;
    // Why it ended is in its output (a server that failed to start, a port in use, CUDA out of memory): said with the end.
    // (The run's token is kept out of it: vLLM, for one, prints its arguments.)
    const output = ((await readJobFileEnd(this.logFile(job.index, jobId))) ?? '').replaceAll(this.options.token, '<token>').trim();
    const why = output === '' ? how : `${how}; its output ends with: ${tail(output).replace(/\s*\n\s*/g, ' | ')}`;
    if (job.baseURL) this.options.onServerDown(job.baseURL);
    job.baseURL = null;
    job.host = null;
    job.jobId = null;
    job.reason = null;
    if (job.resubmits < this.options.maxResubmits) {
      job.resubmits++;
      this.options.onNotice(
        `inference job ${jobId} (server ${job.index}) ended (${why}); submitting it again (${job.resubmits} of ${this.options.maxResubmits} resubmits)`,
        'warning',
      );
      await this.submit(job);
      return;
    }
    job.state = 'GIVEN_UP';
    this.options.onNotice(
      `inference job ${jobId} (server ${job.index}) ended (${why}) and its ${this.options.maxResubmits} resubmits are used up: that server is given up`,
      'warning',
    );
    if (this.jobs.every((j) => j.state === 'GIVEN_UP')) {
      for (const waiter of this.readyWaiters)
        waiter.reject(
          new Error(`every SLURM inference job ended and was given up (the last: job ${jobId} of server ${job.index}, ${why})`),
        );
      this.readyWaiters.clear();
    }
  }

  private changed(): void {
    this.options.onChange?.(this.states());
  }
}
