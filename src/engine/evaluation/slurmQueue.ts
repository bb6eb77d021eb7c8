// The SLURM backend's dealings with the queue that the evaluator and the
// probe job share: the sbatch options every job gets, pending reasons worth
// telling, and cancelling a run's jobs until squeue no longer shows them.
import { setTimeout as delay } from 'node:timers/promises';
import { type JobRequest, jobNameOfRun, type QueueEntry, type SchedulerCalls, SlurmCli, SlurmError } from './slurmCli';
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

/**
 * A job pending this long since its submission is named, whatever else of the run runs: with room on a node a job
 * starts at slurmctld's next scheduling pass (about a second), so one still pending after this waits for something.
 */
export const PENDING_NOTICE_MS = 3000;

/** A job of the run seen pending at a look at the queue. */
export interface PendingJob {
  id: string;
  /** squeue's reason. */
  reason: string;
  request: JobRequest;
  /** When it was submitted (performance.now()). */
  since: number;
}

/**
 * Which pending jobs of the run to name now (docs/architecture.md "Evaluation backends"): each job once it has pended
 * PENDING_NOTICE_MS, at once for a reason that may never clear (not ORDINARY_PENDING_REASONS), and again only when
 * its reason turns into such a one. A job that leaves the pending state is forgotten (pending again: named again).
 */
export class PendingNotices {
  /** Job id -> the reason it was named with. */
  private readonly told = new Map<string, string>();

  /** After a look at the queue: `pending` is every job of the run pending now; returns those to name. */
  due(pending: readonly PendingJob[], now: number): PendingJob[] {
    const seen = new Set(pending.map((p) => p.id));
    for (const id of [...this.told.keys()]) if (!seen.has(id)) this.told.delete(id);
    const due: PendingJob[] = [];
    for (const job of pending) {
      const ordinary = ORDINARY_PENDING_REASONS.has(job.reason);
      const toldReason = this.told.get(job.id);
      const dueNow = toldReason === undefined ? !ordinary || now - job.since >= PENDING_NOTICE_MS : !ordinary && toldReason !== job.reason;
      if (!dueNow) continue;
      this.told.set(job.id, job.reason);
      due.push(job);
    }
    return due;
  }
}

/** `123_[0-3,7], 125` for array tasks 123_0 .. 123_3, 123_7 and job 125. */
export function compactJobIds(ids: readonly string[]): string {
  const arrays = new Map<string, number[]>();
  const order: string[] = [];
  for (const id of ids) {
    const [job, task] = id.split('_') as [string, string | undefined];
    if (!arrays.has(job)) {
      arrays.set(job, []);
      order.push(job);
    }
    if (task !== undefined) arrays.get(job)?.push(Number(task));
  }
  return order
    .map((job) => {
      const tasks = [...new Set(arrays.get(job))].sort((a, b) => a - b);
      if (tasks.length === 0) return job;
      if (tasks.length === 1) return `${job}_${tasks[0] as number}`;
      const ranges: string[] = [];
      for (let i = 0; i < tasks.length;) {
        let j = i;
        while (j + 1 < tasks.length && (tasks[j + 1] as number) === (tasks[j] as number) + 1) j++;
        ranges.push(i === j ? String(tasks[i]) : `${tasks[i] as number}-${tasks[j] as number}`);
        i = j + 1;
      }
      return `${job}_[${ranges.join(',')}]`;
    })
    .join(', ');
}

/** What a job asks for, in words: "8 CPUs, memory 2000M, no GRES, partition main". */
export function describeRequest(request: JobRequest): string {
  const memory = request.memory === '0' || request.memory === '' ? "the partition's default memory" : `memory ${request.memory}`;
  const gres = request.gres === 'N/A' || request.gres === '' ? 'no GRES' : `GRES ${request.gres}`;
  return `${request.cpus} CPU${request.cpus === 1 ? '' : 's'}, ${memory}, ${gres}, partition ${request.partition}`;
}

/**
 * One line naming waiting jobs: per reason and request, their ids, how long they have pended, squeue's reason and
 * what each asks for. `what` says which jobs ("evaluation", "probe", "inference"), `then` what waits on them.
 */
export function pendingJobsLine(jobs: readonly PendingJob[], what: string, now: number, then: string): string {
  const groups = new Map<string, PendingJob[]>();
  for (const job of jobs) {
    const key = `${job.reason}|${describeRequest(job.request)}`;
    groups.set(key, [...(groups.get(key) ?? []), job]);
  }
  const parts = [...groups.values()].map((group) => {
    const first = group[0] as PendingJob;
    const waited = Math.max(0, Math.round((now - Math.min(...group.map((j) => j.since))) / 1000));
    const mayNotClear = ORDINARY_PENDING_REASONS.has(first.reason) ? '' : ', which may not clear by itself';
    const each = group.length > 1 ? 'each asks for' : 'asks for';
    return `${compactJobIds(group.map((j) => j.id))} pending ${waited} s (squeue: ${first.reason}${mayNotClear}; ${each} ${describeRequest(first.request)})`;
  });
  const plural = jobs.length > 1;
  return `SLURM ${what} job${plural ? 's' : ''} of this run ${plural ? 'wait' : 'waits'} in the queue: ${parts.join('; ')}; ${then}`;
}
