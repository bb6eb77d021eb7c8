// What the window knows of the run it drives (the status bar, the Runs view,
// menus and commands read it) and how the engine's events change it. A run
// is over for this window only when the worker closed it (runClosed: its
// lock, sandboxes and trainer released), not at its run_finished event: until
// then it is `stopping`, so nothing says "stopped" while Start Run on its
// program would still find it in the way (docs/architecture.md "VS Code
// adapters"). Nothing of `vscode` at run time: the unit tests follow a run here.
import type * as vscode from 'vscode';
import type { Settings } from '../engine/common/config';
import type { EndpointServersEvent, EngineEvent, EvaluationQueueEvent, IsolationSummary, RunFinishReason } from '../engine/common/events';
import type { Direction } from '../engine/common/types';

/** One vocabulary with the dashboard's run states, plus `pausing` (asked to pause; the step in flight still commits). */
export type RunState = 'starting' | 'running' | 'pausing' | 'paused' | 'stopping' | 'finished' | 'error';

/** What the window knows of the active (or last) run. */
export interface TrackedRun {
  runId: string;
  dbFile: string;
  /** The file the run evolves (undefined when it is not a local file). */
  fileUri: vscode.Uri | undefined;
  /** The program's extension without the dot ("py"). */
  extension: string;
  /** The file's text when the run started: Apply to File asks before overwriting later edits. */
  textAtRunStart: string | undefined;
  taskName: string;
  taskTitle: string;
  direction: Direction;
  settings: Settings;
  state: RunState;
  lastStep: number;
  bestScore: number | null;
  bestId: string | null;
  samplesPerSecond: number | null;
  /** US dollars the run's replies cost so far (priced models of thetaevolve.models), else null. */
  costUsd: number | null;
  /** Evaluations finished in the step in flight. */
  evaluationsThisStep: number;
  /** The response source, once the run started ("model at server", or the offline sampler). */
  sourceLabel: string | null;
  /** Why the run ended, once it did. */
  finishReason: RunFinishReason | null;
  /** The inference server is away (restarting, loading) and requests wait for it. */
  waitingForServer: boolean;
  /** The run waits for the RL trainer (synchronous step or staleness bound): named in the status bar. */
  waitingForTrainer: string | null;
  /** The request to the trainer unanswered for seconds (TrainerState.awaiting), null when none. */
  trainerAwaiting: string | null;
  /** The sandbox the run's candidates get, once the run started. */
  isolation: IsolationSummary | null;
  /** The SLURM queue of the run's evaluation jobs (null: evaluated on this machine). */
  queue: Pick<EvaluationQueueEvent, 'pending' | 'running' | 'done' | 'lost' | 'failed' | 'queueWaitMsP50'> | null;
  /** The inference servers run as SLURM jobs and the pool's servers (their requests, throughput); null: the run has none. */
  inferenceJobs: Required<Pick<EndpointServersEvent, 'jobs' | 'servers'>> | null;
  message: string;
  /** Read back from its database (after a window reload): no process drives it in this window. */
  readFromDisk?: true;
}

/** A run as its start is asked for (or its resume): nothing known of it yet but what the window gave it. */
export function startingRun(
  spec: Pick<
    TrackedRun,
    'runId' | 'dbFile' | 'fileUri' | 'extension' | 'textAtRunStart' | 'taskName' | 'taskTitle' | 'direction' | 'settings'
  >,
  resume: boolean,
): TrackedRun {
  return {
    runId: spec.runId,
    dbFile: spec.dbFile,
    fileUri: spec.fileUri,
    extension: spec.extension,
    textAtRunStart: spec.textAtRunStart,
    taskName: spec.taskName,
    taskTitle: spec.taskTitle,
    direction: spec.direction,
    settings: spec.settings,
    state: 'starting',
    lastStep: -1,
    bestScore: null,
    bestId: null,
    samplesPerSecond: null,
    costUsd: null,
    evaluationsThisStep: 0,
    sourceLabel: null,
    finishReason: null,
    waitingForServer: false,
    waitingForTrainer: null,
    trainerAwaiting: null,
    isolation: null,
    queue: null,
    inferenceJobs: null,
    message: resume ? 'resuming' : 'starting',
  };
}

/** Where the trainer waits are told (the ThetaEvolve log). */
export interface TrackedRunLog {
  warn(message: string): void;
  info(message: string): void;
}

/** A run that is over but not yet closed by the worker: a new start waits for it rather than being refused. */
export function isClosing(run: TrackedRun): boolean {
  return run.state === 'stopping';
}

/** The run's view after one of its engine events. */
export function applyRunEvent(run: TrackedRun, event: EngineEvent, log: TrackedRunLog): void {
  switch (event.type) {
    case 'run_started':
      run.state = 'running';
      run.sourceLabel = event.source.label;
      run.isolation = event.isolation ?? null;
      run.lastStep = event.resumedFromStep ?? -1;
      run.message = event.resumedFromStep !== null ? `resumed after step ${event.resumedFromStep}` : 'running';
      return;
    case 'step_started':
      run.evaluationsThisStep = 0;
      return;
    case 'evaluation_finished':
      run.evaluationsThisStep++;
      return;
    case 'step_committed':
      run.lastStep = event.step;
      run.samplesPerSecond = event.samplesPerSecond;
      if (event.runCostUsd !== undefined) run.costUsd = event.runCostUsd;
      if (event.bestEver !== null) run.bestScore = event.bestEver;
      if (run.state === 'running') run.message = `step ${event.step} committed`;
      return;
    case 'new_best':
      run.bestScore = event.score;
      run.bestId = event.id;
      return;
    case 'paused':
      run.state = 'paused';
      run.message = `paused after step ${event.step}`;
      return;
    case 'resumed':
      run.state = 'running';
      run.message = 'running';
      return;
    case 'run_finished':
      // Its steps are over; its lock, sandboxes and trainer are released when the worker closes it (closeTrackedRun).
      run.state = 'stopping';
      run.finishReason = event.reason;
      run.message = event.message;
      if (event.best) {
        run.bestScore = event.best.score;
        run.bestId = event.best.id;
      }
      return;
    case 'error':
      if (event.fatal) run.message = event.message;
      return;
    case 'trainer_state': {
      const awaiting = event.state.enabled ? (event.state.awaiting ?? null) : null;
      if (awaiting !== null && awaiting !== run.trainerAwaiting)
        log.warn(`[${run.runId}] the ${event.state.protocol} trainer at ${event.state.url}: awaiting its answer to ${awaiting}`);
      run.trainerAwaiting = awaiting;
      // A request it leaves unanswered is a wait for it too (the status bar names it).
      const waitingFor = event.state.enabled && (event.state.waiting || awaiting !== null) ? event.state.url : null;
      // The log says when a wait for the trainer begins and ends, naming it (the status bar shows it meanwhile).
      if (waitingFor !== null && run.waitingForTrainer === null)
        log.warn(`[${run.runId}] waiting for the ${event.state.protocol} trainer at ${waitingFor} (${event.state.mode} mode)`);
      if (waitingFor === null && run.waitingForTrainer !== null)
        log.info(`[${run.runId}] the wait for the trainer at ${run.waitingForTrainer} is over`);
      run.waitingForTrainer = waitingFor;
      return;
    }
    case 'endpoint_state':
      run.waitingForServer = event.waiting;
      run.message = event.message;
      return;
    case 'evaluation_queue':
      run.queue = {
        pending: event.pending,
        running: event.running,
        done: event.done,
        lost: event.lost,
        failed: event.failed,
        queueWaitMsP50: event.queueWaitMsP50,
      };
      return;
    case 'endpoint_servers':
      // Only inference jobs on SLURM are shown; a pool of thetaevolve.endpoint's servers alone has no jobs.
      run.inferenceJobs = event.jobs?.length ? { jobs: event.jobs, servers: event.servers } : null;
      return;
    default:
      return;
  }
}

/** The worker closed the run (its lock released), or lost it (`failure`): its final state. */
export function closeTrackedRun(run: TrackedRun, failure: string | undefined): void {
  if (run.state === 'finished' || run.state === 'error') return;
  run.state = failure !== undefined || run.finishReason === 'error' ? 'error' : 'finished';
  if (failure !== undefined) run.message = failure;
}
