// The SLURM backend's dealings with the queue that the evaluator and the
// probe job share: the sbatch options every job gets, pending reasons worth
// telling, and cancelling a run's jobs until squeue no longer shows them.
import { setTimeout as delay } from 'node:timers/promises';
import { jobNameOfRun, type QueueEntry, type SchedulerCalls, SlurmCli, SlurmError } from './slurmCli';
import type { SlurmClusterOptions } from './slurmSettings';

/** Polls a job must be missing from the queue, without a result, before it counts as lost (shared filesystems show files late). */
export const MISSING_POLLS_BEFORE_LOST = 2;
/** KillWait (30 s by default) plus a margin: a job that ignores SIGTERM is gone only after SIGKILL. */
const GONE_TIMEOUT_MS = 45_000;
const GONE_POLL_MS = 100;
/** The queue of a run's evaluation jobs as it stands (status bar, dashboard). */
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

/** Pending reasons that only mean "wait your turn"; any other is told once, it may never clear (ReqNodeNotAvail, a limit, ...). */
export const ORDINARY_PENDING_REASONS = new Set([
  'None',
  'Priority',
  'Resources',
  'JobArrayTaskLimit',
  'BeginTime',
  'Dependency',
  'Prolog',
]);

/** Jobs of a run left in the queue, e.g. by a ThetaEvolve that was killed: id, state and pending reason each. */
export async function findOrphans(runId: string, env: NodeJS.ProcessEnv = process.env): Promise<QueueEntry[]> {
  const queue = await new SlurmCli(env).queue(jobNameOfRun(runId));
  return [...queue.values()];
}

/** scancel every job of a run (resume after a crash) and wait until none is left; resolves with how many there were. SlurmEvaluator.start() does this itself. */
export async function cancelOrphans(runId: string, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  return cancelRunJobs(new SlurmCli(env), jobNameOfRun(runId));
}

/** scancel every job named `name` and wait until squeue shows none; resolves with how many there were. */
export async function cancelRunJobs(cli: SlurmCli, name: string): Promise<number> {
  const before = await cli.queue(name);
  if (before.size === 0) return 0;
  await cli.cancelByName(name);
  await waitUntilGone(cli, name, null);
  return before.size;
}

/** Poll until none of `ids` (null: no job of `name` at all) is in the queue; a cancelled job lingers briefly while it completes. */
export async function waitUntilGone(cli: SlurmCli, name: string, ids: readonly string[] | null): Promise<void> {
  const deadline = Date.now() + GONE_TIMEOUT_MS;
  for (;;) {
    const queue = await cli.queue(name);
    const left = ids === null ? [...queue.keys()] : ids.filter((id) => queue.has(id));
    if (left.length === 0) return;
    if (Date.now() > deadline)
      throw new SlurmError(`SLURM jobs ${left.slice(0, 10).join(', ')} were still in the queue ${GONE_TIMEOUT_MS / 1000} s after scancel`);
    await delay(GONE_POLL_MS);
  }
}

/** The sbatch options of every job of a run (evaluation arrays and the probe). */
export function commonSbatchArguments(
  options: Pick<SlurmClusterOptions, 'partition' | 'account' | 'sbatchArguments'>,
  jobName: string,
  root: string,
): string[] {
  return [
    // sbatch's default (--export=ALL) passes on the environment sbatch runs
    // with, which is scrubbed to an allow-list (slurmToolEnvironment): no API
    // key reaches a job or slurmd's spool. --export=NONE (the login
    // environment) costs slurmd about 1.4 s per job; slurm.sbatchArguments
    // can still ask for it.
    `--job-name=${jobName}`,
    `--chdir=${root}`,
    ...(options.partition ? [`--partition=${options.partition}`] : []),
    ...(options.account ? [`--account=${options.account}`] : []),
    ...options.sbatchArguments,
  ];
}

/** Jobs pending this long with none of the run's running are said to wait (once per wait), with why and what they ask for. */
const PENDING_NOTICE_MS = 60_000;

/**
 * Jobs may pend for long on a busy cluster, for ordinary reasons too (a job
 * that asks for more than is free): once the run's jobs have pended
 * PENDING_NOTICE_MS with none running, it is said once (why, and what each
 * asks for); again only after something of the run ran.
 */
export class PendingWatch {
  /** When a job of the run was last seen running or a result came. */
  private lastProgressAt = Number.NEGATIVE_INFINITY;
  private told = false;

  progressed(now: number): void {
    this.lastProgressAt = now;
    this.told = false;
  }

  /** After a poll: the notice to give, or null. */
  observe(pending: { jobId: string; submittedAt: number; reason: string }[], running: boolean, now: number, perJob: number): string | null {
    if (running) this.progressed(now);
    if (pending.length === 0 || running) return null;
    // Waiting since the later of its oldest pending job's submission and the last time anything of the run ran.
    const since = Math.max(Math.min(...pending.map((p) => p.submittedAt)), this.lastProgressAt);
    if (this.told || now - since < PENDING_NOTICE_MS) return null;
    this.told = true;
    const reasons = [...new Set(pending.map((p) => p.reason))].join(', ');
    const jobs = new Set(pending.map((p) => p.jobId)).size;
    return (
      `${jobs} SLURM evaluation job(s) of this run have been pending for ${Math.round((now - since) / 1000)} s with none running (squeue: ${reasons}); ` +
      `each runs up to ${perJob} candidate(s), one CPU each (thetaevolve.slurm.candidatesPerJob, slurm.sbatchArguments)`
    );
  }
}
