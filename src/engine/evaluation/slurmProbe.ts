// The SLURM backend's probe job: before a run starts, one job shows that a
// compute node can evaluate (Node.js >= 20, a sandbox) and which sandbox it has.
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { type NodeProbe, NodeProbeSchema } from './nodeProbe';
import { type SlurmCli, SlurmError } from './slurmCli';
import { commonSbatchArguments, MISSING_POLLS_BEFORE_LOST, PendingNotices, pendingJobsLine, waitUntilGone } from './slurmQueue';
import type { SlurmClusterOptions } from './slurmSettings';
import { exists, readJobFile, type Staging, tail } from './slurmStaging';

const PROBE_TIME_MINUTES = 5;
const MIN_NODE_MAJOR = 20;

/** What the probe needs of the backend's options. */
export interface ProbeOptions extends Pick<
  SlurmClusterOptions,
  'partition' | 'account' | 'sbatchArguments' | 'nodeCommand' | 'pollSeconds'
> {
  allowFallbackIsolation?: boolean;
  onWarning?: (message: string) => void;
}

/** The probe job: Node.js and the sandbox on a compute node, or a SlurmError saying what is missing. */
export async function runProbe(
  cli: SlurmCli,
  options: ProbeOptions,
  staging: Staging,
  jobName: string,
  signal: AbortSignal | undefined,
): Promise<NodeProbe> {
  const jobId = await cli.submit([
    ...commonSbatchArguments(options, jobName, staging.root),
    `--time=${PROBE_TIME_MINUTES}`,
    `--output=${join(staging.root, 'logs', 'probe-%j.log')}`,
    staging.probeScript,
  ]);
  const done = join(staging.root, 'probe.done');
  let missingPolls = 0;
  let lastState: string | null = null;
  const submittedAt = performance.now();
  const notices = new PendingNotices();
  for (;;) {
    if (signal?.aborted) {
      await cli
        .cancel([jobId])
        .then(() => waitUntilGone(cli, jobName, [jobId]))
        .catch(() => undefined);
      throw new SlurmError('stopped while waiting for the SLURM probe job');
    }
    const queue = await cli.queue(jobName);
    const entry = queue.get(jobId);
    if (entry) lastState = entry.state;
    const now = performance.now();
    const pending = entry?.state === 'PENDING' ? [{ id: entry.id, reason: entry.reason, request: entry.request, since: submittedAt }] : [];
    const waiting = notices.due(pending, now);
    if (waiting.length > 0)
      options.onWarning?.(
        pendingJobsLine(waiting, 'probe', now, 'the run starts once it has run (it checks that a compute node can evaluate)'),
      );
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
  if (!major)
    throw new SlurmError(
      `Node.js could not be started on the compute node with \`${options.nodeCommand}\`${stderr.trim() ? ` (${tail(stderr)})` : ''}: ${how}.`,
    );
  if (Number(major[1]) < MIN_NODE_MAJOR)
    throw new SlurmError(`the compute node runs Node.js ${version}; ThetaEvolve's jobs need Node.js ${MIN_NODE_MAJOR} or newer: ${how}.`);
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
