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
// slurmctld starts queued batch jobs on a pass of its background loop, about
// once a second, so a job waits 0 to 1 s for it whoever submits it: with a
// few rounds that wait alone moved the ratio by +-0.3. So each round draws
// one moment of that cycle, and every measurement of the round submits its
// sbatch at that moment (found from a no-op job seen to start, then the
// round's offset): the step and its floor wait alike, their difference is
// what ThetaEvolve adds, and over the rounds the moments cover the cycle, so
// the raw times are not flattered. A first step, not measured, lets `auto`
// packing learn the candidates' runtime and times how long the step takes
// to reach its sbatch (the floor's sbatch is issued that much later).
// Needs the built bundle (npm run build) and SLURM's Debian packages.
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { SlurmEvaluator } from '../src/engine/evaluation/slurm';
import { totalSchedulerCalls } from '../src/engine/evaluation/slurmCli';
import { packGroups } from '../src/engine/evaluation/slurmPacking';
import { Evaluator } from '../src/engine/sandbox/evaluator';
import { percentile } from '../src/engine/common/stats';
import { loadTask } from '../src/engine/task/task';
import type { EvaluationResult } from '../src/engine/common/types';
import type { EvaluateOptions } from '../src/engine/evaluation/backend';
import { type SlurmCluster, slurmUnavailableReason, startSlurmCluster } from '../test/support/slurmCluster';

const CANDIDATES = 16;
const FEW_CANDIDATES = 4;
const ROUNDS = 5;
/** slurmctld's background loop, which starts queued batch jobs, runs about once a second. */
const SCHEDULER_CYCLE_MS = 1000;
/** The product default (thetaevolve.slurm.pollSeconds): results come from done/ between polls. */
const POLL_SECONDS = 5;

function candidate(i: number): string {
  return `import json, time\ntime.sleep(1)\nwith open("solution.json", "w") as f:\n    json.dump({"value": ${i + 1}}, f)\n`;
}

/** What one step was: its length, when it began and ended and its sbatch returned (epoch ms), and its jobs. */
interface StepRecord {
  ms: number;
  startedAt: number;
  submittedAt: number;
  endedAt: number;
  jobIds: Set<string>;
}

const epochNow = (): number => performance.timeOrigin + performance.now();

/** One step; `submittedAfter` gets how long after its start the first sbatch returned. */
async function stepRecord(
  evaluate: (code: string, options: EvaluateOptions) => Promise<EvaluationResult>,
  count: number,
  submittedAfter?: (ms: number) => void,
): Promise<StepRecord> {
  const started = performance.now();
  let submittedAt = Number.NaN;
  const jobIds = new Set<string>();
  const onSubmitted = (jobId: string): void => {
    if (jobIds.size === 0) {
      submittedAfter?.(performance.now() - started);
      submittedAt = epochNow();
    }
    jobIds.add(jobId);
  };
  const results = await Promise.all(Array.from({ length: count }, (_, i) => evaluate(candidate(i), { onSubmitted })));
  const bad = results.find((r) => r.status !== 'ok');
  if (bad) throw new Error(`a candidate failed: ${bad.status} ${bad.reason}`);
  const ms = performance.now() - started;
  return { ms, startedAt: performance.timeOrigin + started, submittedAt, endedAt: epochNow(), jobIds };
}

async function step(
  evaluate: (code: string, options: EvaluateOptions) => Promise<EvaluationResult>,
  count: number,
  submittedAfter?: (ms: number) => void,
): Promise<number> {
  return (await stepRecord(evaluate, count, submittedAfter)).ms;
}

/** Where a SLURM step's time went, along its last job (the one whose last result came last), in ms. */
interface Phases {
  /** Step start to sbatch returned (staging the candidates, the burst's quiet time, sbatch). */
  submit: number;
  /** sbatch returned to the last job's script starting (slurmctld's scheduling pass, slurmd's launch: the floor's part). */
  queue: number;
  /** The job script starting to Node running (bash, exec). */
  nodeStart: number;
  /** Node running to our CLI loaded (the bundle). */
  cliLoad: number;
  /** CLI loaded to evaluating (the task, the interpreter, the sandbox). */
  setup: number;
  /** Evaluating to its last result written (the candidates in their sandboxes). */
  evaluate: number;
  /** Last result written to the step's end (the watch on done/, reading the result). */
  pickup: number;
}

const PHASE_NAMES: (keyof Phases)[] = ['submit', 'queue', 'nodeStart', 'cliLoad', 'setup', 'evaluate', 'pickup'];

/** The phases of a step from its jobs' .times files (written by the job script and the node's evaluate). */
async function phasesOf(stagingRoot: string, record: StepRecord): Promise<Phases> {
  let last: { jobStart: number; nodeStart: number; cliLoaded: number; ready: number; lastResult: number } | null = null;
  for (const jobId of record.jobIds) {
    const text = await readFile(join(stagingRoot, 'logs', `${jobId}.times`), 'utf8');
    const times = new Map<string, number>();
    let lastResult = Number.NEGATIVE_INFINITY;
    for (const line of text.split('\n')) {
      const words = line.trim().split(' ');
      const value = Number(words.at(-1));
      if (words[0] === 'result') lastResult = Math.max(lastResult, value);
      else if (words[0]) times.set(words[0], value);
    }
    const job = {
      jobStart: (times.get('job-start-us') ?? Number.NaN) / 1000,
      nodeStart: times.get('node-start') ?? Number.NaN,
      cliLoaded: times.get('cli-loaded') ?? Number.NaN,
      ready: times.get('ready') ?? Number.NaN,
      lastResult,
    };
    if (!last || job.lastResult > last.lastResult) last = job;
  }
  if (!last) throw new Error('a SLURM step without jobs');
  return {
    submit: record.submittedAt - record.startedAt,
    queue: last.jobStart - record.submittedAt,
    nodeStart: last.nodeStart - last.jobStart,
    cliLoad: last.cliLoaded - last.nodeStart,
    setup: last.ready - last.cliLoaded,
    evaluate: last.lastResult - last.ready,
    pickup: record.endedAt - last.lastResult,
  };
}

function phasesText(phases: Phases): string {
  return PHASE_NAMES.map((name) => `${name} ${Math.round(phases[name])}`).join(', ');
}

/** Until every file `count` names is in `folder` (a benchmark's own stopwatch: it looks every 5 ms). */
async function allRan(folder: string, count: number): Promise<void> {
  while ((await readdir(folder)).length < count) await delay(5);
}

/**
 * Returns at a known moment of slurmctld's scheduling cycle: right after a
 * no-op job was seen to start (its start is that cycle's pass).
 */
async function schedulerPass(cluster: SlurmCluster, folder: string): Promise<void> {
  await rm(folder, { recursive: true, force: true });
  await mkdir(folder, { recursive: true });
  const submitted = await cluster.client('sbatch', [
    '--parsable',
    `--partition=${cluster.partition}`,
    '--job-name=thetaevolve-bench-pass',
    '--output=/dev/null',
    `--wrap=touch ${join(folder, 'ran')}`,
  ]);
  if (submitted.code !== 0) throw new Error(`sbatch failed: ${submitted.stderr}`);
  await allRan(folder, 1);
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
  await allRan(join(folder, 'ran'), count);
  return performance.now() - started;
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
    const packedTasks = (): number => packGroups(Array.from({ length: CANDIDATES }), onSlurm.candidatesPerJob()).length;
    const callsPerStep: number[] = [];
    const slurmPhases: Phases[] = [];
    // Not measured: `auto` learns the runtime (packing as in a run's later steps), and the time to the sbatch is known.
    const submitOffsets: number[] = [];
    await step(
      (code, options) => onSlurm.evaluate(code, options),
      CANDIDATES,
      (ms) => submitOffsets.push(ms),
    );
    await step((code, options) => onSlurmNone.evaluate(code, options), CANDIDATES);
    const passFolder = join(staging, 'pass');
    for (let round = 0; round < ROUNDS; round++) {
      // This round's moment of the scheduling cycle (spread evenly over the rounds): every SLURM measurement submits then.
      const phaseMs = ((round + 0.5) / ROUNDS) * SCHEDULER_CYCLE_MS;
      const atPhase = async (extraMs: number): Promise<void> => {
        await schedulerPass(cluster, passFolder);
        await delay(phaseMs + extraMs);
      };
      // A floor's sbatch is issued when the step's would be: the step reaches its sbatch that long after it starts.
      const floorAfter = (): number => percentile(submitOffsets, 50);
      const before = totalSchedulerCalls(onSlurm.calls);
      // Rotate the order so drift hits all alike.
      const runs = [
        async () => localTimes.push(await step((code) => local.evaluate(code), CANDIDATES)),
        async () => {
          await atPhase(0);
          const record = await stepRecord(
            (code, options) => onSlurm.evaluate(code, options),
            CANDIDATES,
            (ms) => submitOffsets.push(ms),
          );
          slurmTimes.push(record.ms);
          slurmPhases.push(await phasesOf(onSlurm.stagingRoot, record));
        },
        async () => {
          await atPhase(0);
          slurmNoneTimes.push(await step((code, options) => onSlurmNone.evaluate(code, options), CANDIDATES));
        },
        async () => {
          await atPhase(floorAfter());
          floorTimes.push(await noOpArray(cluster, join(staging, 'floor'), CANDIDATES, '--export=ALL'));
        },
        async () => {
          await atPhase(floorAfter());
          floorNoneTimes.push(await noOpArray(cluster, join(staging, 'floor'), CANDIDATES, '--export=NONE'));
        },
        async () => {
          await atPhase(floorAfter());
          packedFloorTimes.push(await noOpArray(cluster, join(staging, 'floor'), packedTasks(), '--export=ALL'));
        },
      ];
      for (let k = 0; k < runs.length; k++) await (runs[(k + round) % runs.length] as () => Promise<void>)();
      callsPerStep.push(totalSchedulerCalls(onSlurm.calls) - before);
    }
    const beforeFew = totalSchedulerCalls(onSlurm.calls);
    const fewMs = await step((code) => onSlurm.evaluate(code), FEW_CANDIDATES);
    const fewCalls = totalSchedulerCalls(onSlurm.calls) - beforeFew;

    const localMs = percentile(localTimes, 50);
    const slurmMs = percentile(slurmTimes, 50);
    const slurmNoneMs = percentile(slurmNoneTimes, 50);
    const floorMs = percentile(floorTimes, 50);
    const floorNoneMs = percentile(floorNoneTimes, 50);
    const packedFloorMs = percentile(packedFloorTimes, 50);
    // Every round, not only the median: (its SLURM step - its floor) / its local step.
    const roundsAboveFloor = slurmTimes.slice(0, ROUNDS).map((slurm, i) => (slurm - (floorTimes[i] as number)) / (localTimes[i] as number));
    console.log(
      `bench slurm-step-overhead: ${(slurmMs / localMs).toFixed(2)} x (one step of ${CANDIDATES} candidates of ~1 s: SLURM ${(slurmMs / 1000).toFixed(2)} s vs local ${(localMs / 1000).toFixed(2)} s, medians of ${ROUNDS}; ` +
        `with --export=NONE in slurm.sbatchArguments ${(slurmNoneMs / localMs).toFixed(2)} x (${(slurmNoneMs / 1000).toFixed(2)} s); ` +
        `SLURM's own floor, a no-op array of ${CANDIDATES} with the same sbatch arguments: ${(floorMs / 1000).toFixed(2)} s (${((localMs + floorMs) / localMs).toFixed(2)} x if added to the local step), ${(floorNoneMs / 1000).toFixed(2)} s with --export=NONE; ` +
        `single-node cluster on this machine (${availableParallelism()} cores), ${POLL_SECONDS} s poll, sbatch at ${ROUNDS} moments spread over slurmctld's ~1 s scheduling cycle; target <= 1.5)`,
    );
    console.log(
      `bench slurm-overhead-above-floor: ${((slurmMs - floorMs) / localMs).toFixed(2)} x ((SLURM step ${(slurmMs / 1000).toFixed(2)} s - SLURM's floor ${(floorMs / 1000).toFixed(2)} s) / local step ${(localMs / 1000).toFixed(2)} s: what ThetaEvolve adds, not SLURM; ` +
        `with --export=NONE ${((slurmNoneMs - floorNoneMs) / localMs).toFixed(2)} x; ` +
        `against the floor of the packed array (${packedTasks()} tasks, at most ${onSlurm.candidatesPerJob()} candidates each, ${(packedFloorMs / 1000).toFixed(2)} s) ${((slurmMs - packedFloorMs) / localMs).toFixed(2)} x; ` +
        `each round: ${roundsAboveFloor.map((r) => r.toFixed(2)).join(', ')} x (worst ${Math.max(...roundsAboveFloor).toFixed(2)}); target <= 1.25)`,
    );
    // Each round as measured (the machine may be loaded: compare within a round), with where the SLURM step's time went.
    for (let i = 0; i < ROUNDS; i++) {
      const [local, slurm, floor] = [localTimes[i], slurmTimes[i], floorTimes[i]] as [number, number, number];
      console.log(
        `bench slurm-round ${i + 1}: above floor ${((slurm - floor) / local).toFixed(2)} x; local ${(local / 1000).toFixed(2)} s, SLURM ${(slurm / 1000).toFixed(2)} s, floor ${(floor / 1000).toFixed(2)} s; ` +
          `SLURM step in ms: ${phasesText(slurmPhases[i] as Phases)}`,
      );
    }
    const medianPhases = Object.fromEntries(
      PHASE_NAMES.map((name) => [
        name,
        percentile(
          slurmPhases.map((p) => p[name]),
          50,
        ),
      ]),
    ) as unknown as Phases;
    console.log(`bench slurm-step-phases: ${phasesText(medianPhases)} ms (medians of ${ROUNDS}, along each step's last job)`);
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
