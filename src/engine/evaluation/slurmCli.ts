// SLURM's own command-line tools, the cluster's stable interface (docs/architecture.md
// "Evaluation backends"): sbatch --parsable, one squeue per poll for all jobs
// of a run, scancel. Every reply is parsed strictly; a line we do not
// understand fails the call rather than being guessed at. The tools run with
// a minimal environment: no API key of ours ever reaches SLURM.
import { tmpdir, userInfo } from 'node:os';
import { z } from 'zod';
import { runProcess } from '../sandbox/process';
import { ThetaEvolveError } from '../common/errors';

const TOOL_TIMEOUT_MS = 60_000;
const TOOL_OUTPUT_LIMIT = 4 * 1024 * 1024;
/** Variables the tools need: where they are, who we are, and SLURM's own (SLURM_CONF, SBATCH_ACCOUNT, ...). */
const KEPT_VARIABLES = new Set(['PATH', 'HOME', 'USER', 'LOGNAME', 'LANG', 'LC_ALL', 'TZ', 'TMPDIR']);
const KEPT_PREFIXES = ['SLURM_', 'SBATCH_', 'SQUEUE_', 'SCANCEL_'];

export class SlurmError extends ThetaEvolveError {
  override readonly name = 'SlurmError';
}

/** What SLURM's tools say when they find no slurm.conf (no SLURM_CONF, no /etc/slurm/slurm.conf, no DNS SRV record). */
const NO_CONFIGURATION = /Could not establish a configuration source/;

/** Job states a job can be in while it is still in the queue and may yet run or finish. */
const LIVE_STATES = new Set([
  'PENDING',
  'CONFIGURING',
  'RUNNING',
  'COMPLETING',
  'SUSPENDED',
  'REQUEUED',
  'REQUEUE_FED',
  'REQUEUE_HOLD',
  'RESIZING',
  'SIGNALING',
  'STAGE_OUT',
  'STOPPED',
  'RESV_DEL_HOLD',
  'SPECIAL_EXIT',
]);

export interface QueueEntry {
  /** `123_4` for array task 4 of array job 123, `123` for a plain job. */
  id: string;
  state: string;
  /** Why a pending job waits ("Resources", "Priority", ...), "None" otherwise. */
  reason: string;
  /** False for states a job only passes through on its way out (FAILED, NODE_FAIL, PREEMPTED, CANCELLED, TIMEOUT, ...). */
  live: boolean;
  /** What it asks of the cluster (a pending job's request; a running job's allocation). */
  request: JobRequest;
}

/** What a job asks of the cluster, as squeue prints it. */
export interface JobRequest {
  /** CPUs (squeue %C). */
  cpus: number;
  /** Memory (squeue %m: "2000M", "8G"; "0" where the job asked for none, so it gets the cluster's default). */
  memory: string;
  /** Generic resources such as GPUs (squeue %b: "gres:gpu:1"; "N/A" where none). */
  gres: string;
  partition: string;
}

const JobIdSchema = z.string().regex(/^\d+(_\d+)?$/);
const SbatchReplySchema = z.string().regex(/^(\d+)(;[^\s;]+)?$/, 'sbatch --parsable printed something other than a job id');
/** squeue's -o: id, state, CPUs, memory, gres, partition, then the reason last (free text). */
const QUEUE_FORMAT = '%i|%T|%C|%m|%b|%P|%r';
const QueueLinePattern = /^(\d+(?:_\d+)?)\|([A-Z_]+)\|(\d+)\|([^|]*)\|([^|]*)\|([^|]*)\|(.*)$/;
const QueueLineSchema = z
  .string()
  .regex(QueueLinePattern, 'squeue printed a line that is not JOBID|STATE|CPUS|MEMORY|GRES|PARTITION|REASON')
  .transform((line): QueueEntry => {
    const [, id, state, cpus, memory, gres, partition, reason] = QueueLinePattern.exec(line) as RegExpExecArray;
    return {
      id: id as string,
      state: state as string,
      reason: reason as string,
      live: LIVE_STATES.has(state as string),
      request: { cpus: Number(cpus), memory: memory as string, gres: gres as string, partition: partition as string },
    };
  });

/** Job names ThetaEvolve gives a run's jobs: `thetaevolve-<run>` (the characters SLURM and shells take safely). */
export function jobNameOfRun(runId: string): string {
  const safe = runId.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 100);
  if (safe === '') throw new SlurmError('a run id is needed to name its SLURM jobs');
  return `thetaevolve-${safe}`;
}

/**
 * The environment SLURM's tools run with, and so (sbatch passes it on) the
 * environment of every job: only what they need and the variables the user
 * named (slurm.exportVariables), never API keys or tokens.
 */
export function slurmToolEnvironment(env: NodeJS.ProcessEnv, exportVariables: readonly string[] = []): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    if (KEPT_VARIABLES.has(name) || KEPT_PREFIXES.some((p) => name.startsWith(p)) || exportVariables.includes(name)) kept[name] = value;
  }
  return kept;
}

export interface SchedulerCalls {
  sbatch: number;
  squeue: number;
  scancel: number;
  /** Only for jobs that left the queue without a result, and only where accounting exists. */
  sacct: number;
  /** Once per backend start: the CPUs of the partition's nodes (packing never asks for more). */
  sinfo: number;
}

/** Every call to the scheduler's tools, whichever tool (the queue event and the bench count this). */
export function totalSchedulerCalls(calls: SchedulerCalls): number {
  return calls.sbatch + calls.squeue + calls.scancel + calls.sacct + calls.sinfo;
}

/** How a finished job ended, as accounting (sacct) remembers it. */
export interface AccountingEntry {
  id: string;
  /** COMPLETED, FAILED, NODE_FAIL, PREEMPTED, OUT_OF_MEMORY, TIMEOUT, "CANCELLED by 1000", ... */
  state: string;
  exitCode: string;
}

const AccountingLineSchema = z
  .string()
  .regex(/^(\d+(?:_\d+)?)\|([A-Z_]+(?: by \d+)?)\|(\d+:\d+)$/, 'sacct printed a line that is not JOBID|STATE|EXITCODE')
  .transform((line): AccountingEntry => {
    const [, id, state, exitCode] = /^(\d+(?:_\d+)?)\|([A-Z_]+(?: by \d+)?)\|(\d+:\d+)$/.exec(line) as RegExpExecArray;
    return { id: id as string, state: state as string, exitCode: exitCode as string };
  });

const NodeCpusLinePattern = /^([^|\s]+)\|(\d+)\+?$/;
const NodeCpusLineSchema = z.string().regex(NodeCpusLinePattern, 'sinfo printed a line that is not PARTITION|CPUS');

/** One cluster as seen through its tools, counting every call (the scheduler's load is part of the benchmark). */
export class SlurmCli {
  readonly calls: SchedulerCalls = { sbatch: 0, squeue: 0, scancel: 0, sacct: 0, sinfo: 0 };
  private readonly env: Record<string, string>;
  private readonly user: string;

  constructor(env: NodeJS.ProcessEnv = process.env, exportVariables: readonly string[] = []) {
    this.env = slurmToolEnvironment(env, exportVariables);
    this.user = userInfo().username;
  }

  /** `sbatch --parsable ARGS`: the new job's id (the cluster name of a federation dropped). */
  async submit(args: readonly string[]): Promise<string> {
    this.calls.sbatch++;
    const out = await this.tool('sbatch', ['--parsable', ...args]);
    const reply = SbatchReplySchema.safeParse(out.trim());
    if (!reply.success) throw new SlurmError(`sbatch --parsable replied ${JSON.stringify(out.trim().slice(0, 200))}, not a job id`);
    return reply.data.split(';')[0] as string;
  }

  /** Every job of ours named `name` still in the queue, array tasks one by one: one squeue call. */
  async queue(name: string): Promise<Map<string, QueueEntry>> {
    this.calls.squeue++;
    const out = await this.tool('squeue', ['-h', '-r', '-u', this.user, '-n', name, '-o', QUEUE_FORMAT]);
    const entries = new Map<string, QueueEntry>();
    for (const line of out.split('\n')) {
      if (line.trim() === '') continue;
      const parsed = QueueLineSchema.safeParse(line.trim());
      if (!parsed.success) throw new SlurmError(`squeue printed ${JSON.stringify(line.slice(0, 200))}, not ${QUEUE_FORMAT}`);
      entries.set(parsed.data.id, parsed.data);
    }
    return entries;
  }

  /** How these finished jobs ended (one sacct call); throws where the cluster keeps no accounting. */
  async accounting(ids: readonly string[]): Promise<Map<string, AccountingEntry>> {
    for (const id of ids) if (!JobIdSchema.safeParse(id).success) throw new SlurmError(`not a SLURM job id: ${JSON.stringify(id)}`);
    this.calls.sacct++;
    const out = await this.tool('sacct', ['-n', '-P', '-X', '-o', 'JobID,State,ExitCode', '-j', ids.join(',')]);
    const entries = new Map<string, AccountingEntry>();
    for (const line of out.split('\n')) {
      if (line.trim() === '') continue;
      const parsed = AccountingLineSchema.safeParse(line.trim());
      if (!parsed.success) throw new SlurmError(`sacct printed ${JSON.stringify(line.slice(0, 200))}, not JOBID|STATE|EXITCODE`);
      entries.set(parsed.data.id, parsed.data);
    }
    return entries;
  }

  /**
   * The fewest CPUs a node of `partition` has as SLURM counts them (the
   * default partition, marked `*` by sinfo, where null); null where sinfo
   * lists no node. One sinfo call.
   */
  async nodeCpus(partition: string | null): Promise<number | null> {
    this.calls.sinfo++;
    const out = await this.tool('sinfo', ['--noheader', '--format=%P|%c', ...(partition ? [`--partition=${partition}`] : [])]);
    let fewest: number | null = null;
    for (const line of out.split('\n')) {
      if (line.trim() === '') continue;
      const parsed = NodeCpusLineSchema.safeParse(line.trim());
      if (!parsed.success) throw new SlurmError(`sinfo printed ${JSON.stringify(line.slice(0, 200))}, not PARTITION|CPUS`);
      const [, name, cpus] = NodeCpusLinePattern.exec(parsed.data) as RegExpExecArray;
      if (partition === null && !(name as string).endsWith('*')) continue;
      fewest = Math.min(fewest ?? Number.POSITIVE_INFINITY, Number(cpus));
    }
    return fewest;
  }

  /** scancel these jobs (array tasks `123_4` or whole jobs); one call. */
  async cancel(ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    for (const id of ids) if (!JobIdSchema.safeParse(id).success) throw new SlurmError(`not a SLURM job id: ${JSON.stringify(id)}`);
    this.calls.scancel++;
    await this.tool('scancel', [...ids]);
  }

  /** scancel every job of ours named `name`; one call. */
  async cancelByName(name: string): Promise<void> {
    this.calls.scancel++;
    await this.tool('scancel', ['-u', this.user, '-n', name]);
  }

  private async tool(file: string, args: string[]): Promise<string> {
    const run = await runProcess({
      file,
      args,
      cwd: tmpdir(),
      env: this.env,
      timeoutMs: TOOL_TIMEOUT_MS,
      outputLimitBytes: TOOL_OUTPUT_LIMIT,
    });
    if (run.spawnError) {
      throw new SlurmError(
        `${file} could not be started (${run.spawnError}). The SLURM backend uses SLURM's own tools: run ThetaEvolve on a machine that can submit jobs (a login node) with ${file} on PATH.`,
      );
    }
    if (run.timedOut) throw new SlurmError(`${file} did not answer within ${TOOL_TIMEOUT_MS / 1000} s (is slurmctld reachable?)`);
    if (run.exitCode !== 0) {
      const said = run.stderr.trim().split('\n').slice(-3).join(' ').slice(0, 500);
      if (NO_CONFIGURATION.test(run.stderr)) {
        throw new SlurmError(
          `${file} found no SLURM configuration (${said}). Set SLURM_CONF to the cluster's slurm.conf in the environment ThetaEvolve starts with (for VS Code: the one its window or Remote-SSH server starts with), or run it where /etc/slurm/slurm.conf exists (a login node).`,
        );
      }
      throw new SlurmError(
        `${file} ${args.join(' ')} failed (${run.exitSignal ?? `exit ${String(run.exitCode)}`}): ${said || 'no message'}`,
      );
    }
    return run.stdout;
  }
}
