// What evaluating on SLURM costs over evaluating locally: one step of 16
// candidates of about 1 s each, on a real single-node cluster on this machine
// (test/support/slurmCluster.ts, 16 job slots) and on the local backend
// (K = 16), interleaved, medians compared. Target: ratio <= 1.5. Also the
// scheduler calls one step makes (sbatch + squeue + scancel): one array per
// wave and one squeue per poll, so independent of the number of candidates.
// Printed beside them: SLURM's own floor, a no-op job array of as many tasks
// with the same sbatch arguments (slurmctld starts batch jobs on its next
// scheduling pass, not at submit; --export=NONE would make slurmd load the
// user's login environment first), so the part ThetaEvolve adds is visible:
// slurm-overhead-above-floor is (SLURM step - floor) / local step. Candidates
// are packed by default (slurm.candidatesPerJob auto), so the array submitted
// has fewer tasks: the floor of that shape is printed beside it too.
// The default is sbatch's --export=ALL with a scrubbed environment; the
// --export=NONE variant (slurm.sbatchArguments) is measured beside it.
// Needs the built bundle (npm run build) and SLURM's Debian packages.
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { SlurmEvaluator } from '../src/engine/evaluation/slurm';
import type { SchedulerCalls } from '../src/engine/evaluation/slurmCli';
import { Evaluator } from '../src/engine/sandbox/evaluator';
import { percentile } from '../src/engine/common/stats';
import { loadTask } from '../src/engine/task/task';
import type { EvaluationResult } from '../src/engine/common/types';
import { type SlurmCluster, slurmUnavailableReason, startSlurmCluster } from '../test/support/slurmCluster';

const CANDIDATES = 16;
const FEW_CANDIDATES = 4;
const ROUNDS = 3;
/** The product default (thetaevolve.slurm.pollSeconds): results come from done/ between polls. */
const POLL_SECONDS = 5;

function candidate(i: number): string {
  return `import json, time\ntime.sleep(1)\nwith open("solution.json", "w") as f:\n    json.dump({"value": ${i + 1}}, f)\n`;
}

async function step(evaluate: (code: string) => Promise<EvaluationResult>, count: number): Promise<number> {
  const started = performance.now();
  const results = await Promise.all(Array.from({ length: count }, (_, i) => evaluate(candidate(i))));
  const bad = results.find((r) => r.status !== 'ok');
  if (bad) throw new Error(`a candidate failed: ${bad.status} ${bad.reason}`);
  return performance.now() - started;
}

/** SLURM alone: sbatch of a no-op array of `count` tasks until every task has run (the same --export as ThetaEvolve's jobs). */
async function noOpArray(cluster: SlurmCluster, folder: string, count: number, exportMode: string): Promise<number> {
  await rm(folder, { recursive: true, force: true });
  await mkdir(join(folder, 'ran'), { recursive: true });
  const script = join(folder, 'job.sh');
  await writeFile(script, `#!/bin/bash\ntouch ${folder}/ran/$SLURM_ARRAY_TASK_ID\n`, { mode: 0o755 });
  const started = performance.now();
  const submitted = await cluster.client('sbatch', [
    '--parsable',
    exportMode,
    `--partition=${cluster.partition}`,
    '--job-name=thetaevolve-bench-floor',
    `--chdir=${folder}`,
    `--array=0-${count - 1}`,
    '--output=/dev/null',
    script,
  ]);
  if (submitted.code !== 0) throw new Error(`sbatch failed: ${submitted.stderr}`);
  // A benchmark's own stopwatch: look every 10 ms until all have run.
  while ((await readdir(join(folder, 'ran'))).length < count) await new Promise((r) => setTimeout(r, 10));
  return performance.now() - started;
}

function totalCalls(calls: SchedulerCalls): number {
  return calls.sbatch + calls.squeue + calls.scancel + calls.sacct;
}

async function main(): Promise<void> {
  const unavailable = slurmUnavailableReason();
  if (unavailable) throw new Error(`bench slurm-step-overhead needs a SLURM test cluster: ${unavailable}`);
  const root = join(__dirname, '..');
  const task = await loadTask(join(root, 'test/fixtures/hostile'));
  const cluster = await startSlurmCluster({ cpus: CANDIDATES });
  const staging = await mkdtemp(join(tmpdir(), 'te-bench-slurm-'));
  const local = new Evaluator(task, { concurrency: CANDIDATES, memoryLimitMb: 4096, outputLimitBytes: 64 * 1024 });
  const started: SlurmEvaluator[] = [];
  try {
    const startSlurm = async (runId: string, sbatchArguments: string[]): Promise<SlurmEvaluator> => {
      const evaluator = await SlurmEvaluator.start(task, {
        runId,
        bundleDirectory: join(root, 'dist'),
        stagingDirectory: staging,
        partition: cluster.partition,
        account: '',
        sbatchArguments,
        setupCommands: [],
        nodeCommand: process.execPath,
        maxJobs: CANDIDATES,
        pollSeconds: POLL_SECONDS,
        maxResubmits: 2,
        exportVariables: [],
        // The default: short candidates are packed several to a job.
        candidatesPerJob: 'auto',
        env: cluster.env,
      });
      started.push(evaluator);
      return evaluator;
    };
    // The default: sbatch passes on ThetaEvolve's scrubbed environment (--export=ALL, sbatch's own default).
    const onSlurm = await startSlurm('bench', []);
    // The slower start some sites want: jobs start from the login environment on the node.
    const onSlurmNone = await startSlurm('bench-none', ['--export=NONE']);
    const localTimes: number[] = [];
    const slurmTimes: number[] = [];
    const slurmNoneTimes: number[] = [];
    const floorTimes: number[] = [];
    const floorNoneTimes: number[] = [];
    /** The floor of the array ThetaEvolve submits once candidates are packed (fewer tasks than candidates). */
    const packedFloorTimes: number[] = [];
    const packedTasks = (): number => Math.ceil(CANDIDATES / onSlurm.candidatesPerJob());
    const callsPerStep: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const before = totalCalls(onSlurm.calls);
      // Rotate the order so drift hits all alike.
      const runs = [
        async () => localTimes.push(await step((code) => local.evaluate(code), CANDIDATES)),
        async () => slurmTimes.push(await step((code) => onSlurm.evaluate(code), CANDIDATES)),
        async () => slurmNoneTimes.push(await step((code) => onSlurmNone.evaluate(code), CANDIDATES)),
        async () => floorTimes.push(await noOpArray(cluster, join(staging, 'floor'), CANDIDATES, '--export=ALL')),
        async () => floorNoneTimes.push(await noOpArray(cluster, join(staging, 'floor'), CANDIDATES, '--export=NONE')),
        async () => packedFloorTimes.push(await noOpArray(cluster, join(staging, 'floor'), packedTasks(), '--export=ALL')),
      ];
      for (let k = 0; k < runs.length; k++) await (runs[(k + round) % runs.length] as () => Promise<number>)();
      callsPerStep.push(totalCalls(onSlurm.calls) - before);
    }
    const beforeFew = totalCalls(onSlurm.calls);
    const fewMs = await step((code) => onSlurm.evaluate(code), FEW_CANDIDATES);
    const fewCalls = totalCalls(onSlurm.calls) - beforeFew;

    const localMs = percentile(localTimes, 50);
    const slurmMs = percentile(slurmTimes, 50);
    const slurmNoneMs = percentile(slurmNoneTimes, 50);
    const floorMs = percentile(floorTimes, 50);
    const floorNoneMs = percentile(floorNoneTimes, 50);
    const packedFloorMs = percentile(packedFloorTimes, 50);
    console.log(
      `bench slurm-step-overhead: ${(slurmMs / localMs).toFixed(2)} x (one step of ${CANDIDATES} candidates of ~1 s: SLURM ${(slurmMs / 1000).toFixed(2)} s vs local ${(localMs / 1000).toFixed(2)} s, medians of ${ROUNDS}; ` +
        `with --export=NONE in slurm.sbatchArguments ${(slurmNoneMs / localMs).toFixed(2)} x (${(slurmNoneMs / 1000).toFixed(2)} s); ` +
        `SLURM's own floor, a no-op array of ${CANDIDATES} with the same sbatch arguments: ${(floorMs / 1000).toFixed(2)} s (${((localMs + floorMs) / localMs).toFixed(2)} x if added to the local step), ${(floorNoneMs / 1000).toFixed(2)} s with --export=NONE; ` +
        `single-node cluster on this machine (${availableParallelism()} cores), ${POLL_SECONDS} s poll; target <= 1.5)`,
    );
    console.log(
      `bench slurm-overhead-above-floor: ${((slurmMs - floorMs) / localMs).toFixed(2)} x ((SLURM step ${(slurmMs / 1000).toFixed(2)} s - SLURM's floor ${(floorMs / 1000).toFixed(2)} s) / local step ${(localMs / 1000).toFixed(2)} s: what ThetaEvolve adds, not SLURM; ` +
        `with --export=NONE ${((slurmNoneMs - floorNoneMs) / localMs).toFixed(2)} x; ` +
        `against the floor of the packed array (${packedTasks()} tasks of ${onSlurm.candidatesPerJob()} candidates, ${(packedFloorMs / 1000).toFixed(2)} s) ${((slurmMs - packedFloorMs) / localMs).toFixed(2)} x; target <= 1.25)`,
    );
    console.log(
      `bench slurm-scheduler-calls-per-step: ${percentile(callsPerStep, 50)} calls (sbatch + squeue + scancel + sacct for one step of ${CANDIDATES} candidates, median of ${ROUNDS}; ` +
        `${fewCalls} for a step of ${FEW_CANDIDATES} candidates (${(fewMs / 1000).toFixed(1)} s); one sbatch (job array) per wave and one squeue per ${POLL_SECONDS} s poll, so the count follows the step's length, not its candidates; ` +
        `target: independent of the number of candidates)`,
    );
  } finally {
    for (const evaluator of started) await evaluator.close();
    await local.close();
    await cluster.stop();
    await rm(staging, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
