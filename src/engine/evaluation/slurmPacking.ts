// Candidate packing for the SLURM backend (docs/architecture.md "Evaluation
// backends"): several short candidates share one array task, run at once by
// one `evaluate` on the node (each in its own sandbox, each result written on
// its own), so a job's start (the scheduler's launch, Node.js loading our CLI)
// is paid once for several candidates instead of once each.

import { errorMessage } from '../common/errors';
import type { SlurmCli } from './slurmCli';
import type { SlurmClusterOptions } from './slurmSettings';

/** What packing needs of the backend's options. */
interface PackingOptions extends Pick<SlurmClusterOptions, 'partition' | 'sbatchArguments' | 'candidatesPerJob'> {
  onWarning?: (message: string) => void;
}

/** What one job's start costs, about, in seconds (slurmd's launch plus Node.js loading our evaluate). */
const JOB_START_SEC = 1;
/** `auto` packs until a job's start is at most this share of each candidate's expected runtime. */
const START_SHARE = 0.1;
/** `auto` never packs more than this many candidates into one job (one CPU each). */
export const AUTO_MAX_CANDIDATES_PER_JOB = 16;
/** How many recent evaluation times `auto` takes the median of. */
export const RUNTIME_WINDOW = 64;

/** thetaevolve.slurm.candidatesPerJob: a number, or `auto` (from the expected runtime). */
export type CandidatesPerJob = number | 'auto';

/**
 * `auto`'s choice for candidates whose evaluation is expected to take
 * `expectedSec`: 1 for a candidate of 10 s or more (a job's start is noise
 * then), about 10 for one of a second, at most AUTO_MAX_CANDIDATES_PER_JOB.
 */
export function autoCandidatesPerJob(expectedSec: number): number {
  if (!(expectedSec > 0)) return AUTO_MAX_CANDIDATES_PER_JOB;
  return Math.max(1, Math.min(AUTO_MAX_CANDIDATES_PER_JOB, Math.ceil(JOB_START_SEC / (START_SHARE * expectedSec))));
}

/**
 * The most candidates one job may run, for nodes of `nodeCpus` CPUs (null:
 * unknown, no limit). A packed job asks for one CPU per candidate: `auto`
 * asks for at most half the smallest node, since a job that needs a whole
 * node waits until the node is idle and never starts beside anything that
 * stays (an inference job of the run's own); a number set by hand is kept up
 * to a whole node (a bigger job could never start).
 */
export function candidatesPerJobLimit(nodeCpus: number | null, auto: boolean): number {
  if (nodeCpus === null || !(nodeCpus >= 1)) return Number.POSITIVE_INFINITY;
  return auto ? Math.max(1, Math.floor(nodeCpus / 2)) : nodeCpus;
}

/** The partition a job of these options is submitted to: slurm.partition, else one named in slurm.sbatchArguments, else null (the default). */
export function partitionOfJobs(partition: string, sbatchArguments: readonly string[]): string | null {
  if (partition) return partition;
  for (const [i, word] of sbatchArguments.entries()) {
    const inline = /^(?:--partition=|-p)(.+)$/.exec(word);
    if (inline) return inline[1] as string;
    if ((word === '--partition' || word === '-p') && sbatchArguments[i + 1]) return sbatchArguments[i + 1] as string;
  }
  return null;
}

/** The CPUs of the partition's smallest node, which packed jobs must fit in (one sinfo); null (no limit) where sinfo cannot tell, which is said. */
export async function packingNodeCpus(cli: SlurmCli, options: PackingOptions): Promise<number | null> {
  let cpus: number | null;
  try {
    cpus = await cli.nodeCpus(partitionOfJobs(options.partition, options.sbatchArguments));
  } catch (err) {
    options.onWarning?.(
      `sinfo could not say how many CPUs the partition's nodes have, so packed jobs are not sized to them: ${errorMessage(err)}`,
    );
    return null;
  }
  const setting = options.candidatesPerJob;
  if (cpus !== null && setting !== 'auto' && setting > cpus) {
    options.onWarning?.(
      `thetaevolve.slurm.candidatesPerJob is ${setting}, but the partition's smallest node has ${cpus} CPUs (sinfo): a job runs at most ${cpus} candidates, one CPU each`,
    );
  }
  return cpus;
}

/**
 * Split `items` into groups of at most `perJob`, of sizes as even as possible (jobs of one array end together). Every
 * task of an array asks for the CPUs of the largest group, so uneven groups ask for CPUs no candidate uses (16 in
 * groups of 6, 5, 5 ask for 18: on a 16-CPU node the third job waits for the first to end). So the number of groups
 * is the one from as few as possible to twice that which asks for the fewest unused CPUs (16 by 7: four of 4).
 */
export function packGroups<T>(items: readonly T[], perJob: number): T[][] {
  if (items.length === 0) return [];
  const n = items.length;
  const fewest = Math.ceil(n / Math.max(1, Math.floor(perJob)));
  let groups = fewest;
  const unused = (g: number): number => g * Math.ceil(n / g) - n;
  for (let g = fewest + 1; g <= Math.min(n, 2 * fewest); g++) if (unused(g) < unused(groups)) groups = g;
  const out: T[][] = [];
  let at = 0;
  for (let g = 0; g < groups; g++) {
    const size = Math.floor(n / groups) + (g < n % groups ? 1 : 0);
    out.push(items.slice(at, at + size));
    at += size;
  }
  return out;
}

/**
 * The CPUs a packed job asks for: one per candidate it runs at once, unless
 * the user's own sbatch arguments say how many (theirs win).
 */
export function cpusPerTaskArguments(sbatchArguments: readonly string[], candidatesInJob: number): string[] {
  if (candidatesInJob <= 1) return [];
  if (sbatchArguments.some((w) => /^(--cpus-per-task(=|$)|-c)/.test(w))) return [];
  return [`--cpus-per-task=${candidatesInJob}`];
}
