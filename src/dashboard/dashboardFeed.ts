// What feeds the dashboard, without VS Code: a run's history read from its
// database, then the active run's engine events (with the database queries
// they call for). A run's dashboard is a function of its database: a new, a
// resumed and a reloaded run are all first read from it the same way, so the
// numbers agree live, after a resume and after a reload. The extension feeds
// its DashboardHost through this module, and the tests feed a DashboardModel
// through the same code, so a wiring regression shows in both.
import { inferenceJobText } from '../engine/common/inferenceJobs';
import { evolveBlockContent } from '../engine/common/diff';
import { forDisplay } from '../engine/common/displayText';
import { feedbackOf, feedbackText } from '../engine/common/feedback';
import { errorMessage } from '../engine/common/errors';
import type { EngineEvent, EvaluationQueueEvent, RunStartedEvent } from '../engine/common/events';
import { MUTATE_SAMPLER_LABEL } from '../engine/llm/mutateSampler';
import type { RunMeta } from '../engine/common/runMeta';
import { StepsInFlight } from '../engine/common/stepsInFlight';
import { loadTask } from '../engine/task/task';
import { RunElapsed } from '../engine/common/runElapsed';
import { IN_SANDBOX_TRUST_REASON } from '../engine/common/types';
import {
  type BackendView,
  BEST_CODE_MAX_CHARS,
  BEST_FEEDBACK_MAX_CHARS,
  type DashboardBestInput,
  type DashboardDatabaseInput,
  type DashboardRunInput,
  type DashboardStepInput,
  type RunStateView,
  type TrainerView,
} from '../protocol/dashboardMessages';
import type { Query, QueryKind, QueryResult } from '../protocol/workerMessages';
import { type DashboardModel, trainerView } from './dashboardModel';
import { solutionPicture } from './solutionPicture';

/** Where the feed puts what it learns: a DashboardHost (model + open page), or a bare model in tests. */
export interface DashboardSink {
  readonly model: DashboardModel;
  setRun(input: DashboardRunInput): void;
  setRunState(state: RunStateView): void;
  addStep(input: DashboardStepInput): void;
  /** The database's state; `scores`: its valid programs' combined scores (the histogram). */
  setDatabase(input: DashboardDatabaseInput, scores: readonly number[]): void;
  setBest(input: DashboardBestInput | null): void;
  setTrainer(trainer: TrainerView): void;
  setBackend(part: Partial<BackendView>): void;
  /** The run's source label as it is now (an endpoint pool's servers change). */
  setSourceLabel(label: string): void;
  /** Feed a whole history at once (a run from disk); an open page gets one snapshot. */
  load(feed: (model: DashboardModel) => void): void;
  /** A notice on the page (a bare model drops it). */
  notify(level: 'info' | 'warning' | 'error', text: string): void;
}

/** The events that move a step from generating to evaluating to committed. */
const STEP_PHASE_EVENTS: ReadonlySet<EngineEvent['type']> = new Set(['step_started', 'generation_finished', 'step_committed']);

/** A DashboardModel as a sink (what a page would be sent is dropped). */
export function modelSink(model: DashboardModel): DashboardSink {
  return {
    model,
    setRun: (input) => void model.setRun(input),
    setRunState: (state) => void model.setRunState(state),
    addStep: (input) => void model.addStep(input),
    setDatabase: (input, scores) => void model.setDatabase(input, scores),
    setBest: (input) => void model.setBest(input),
    setTrainer: (trainer) => void model.setTrainer(trainer),
    setBackend: (part) => void model.setBackend(part),
    setSourceLabel: (label) => void model.setSourceLabel(label),
    load: (feed) => feed(model),
    notify: () => undefined,
  };
}

/** The engine worker's read-only queries about run databases. */
export type RunQuery = <K extends QueryKind>(query: Extract<Query, { kind: K }>) => Promise<QueryResult<K>>;

/**
 * Feeds a sink with a run: on run_started, its history from its database
 * (the steps a resumed run committed before, its best, its database), then
 * its events as they come (events arriving while the history is read wait
 * for it). Database state and the best program's lineage are asked of the
 * worker as the events call for them; `settled()` resolves once every answer
 * asked for so far has been fed.
 */
export class DashboardFeed {
  private pending: Promise<void> = Promise.resolve();
  private elapsed = new RunElapsed();
  /** The last step the sink holds: a step event at or before it is already in the history read. */
  private lastStep = -1;
  /** Events that came while the run's history was read (null: none is being read). */
  private waiting: { event: EngineEvent; dbFile: string | undefined }[] | null = null;
  /** Counts run starts: a history read for an earlier run is dropped. */
  private generation = 0;
  /** What the running steps are doing: the run state's line while it runs ("step 7 evaluating, step 8 generating"). */
  private steps = new StepsInFlight();

  constructor(
    private readonly sink: DashboardSink,
    private readonly query: RunQuery,
    /** A query that failed (the page keeps what it had). */
    private readonly onQueryError: (what: string, message: string) => void = () => undefined,
  ) {}

  /** One event of the run whose database is `dbFile`. */
  handle(event: EngineEvent, dbFile: string | undefined): void {
    if (event.type === 'run_started') return this.start(event, dbFile);
    if (this.waiting) {
      this.waiting.push({ event, dbFile });
      return;
    }
    this.apply(event, dbFile);
  }

  /** Resolves once every query asked for so far has answered and been fed. */
  settled(): Promise<void> {
    return this.pending;
  }

  private start(event: RunStartedEvent, dbFile: string | undefined): void {
    const generation = ++this.generation;
    this.elapsed = new RunElapsed();
    this.steps = new StepsInFlight();
    this.lastStep = -1;
    const input = runInputOfEvent(event);
    const runState: RunStateView = {
      state: 'running',
      message: event.resumedFromStep !== null ? `resumed after step ${event.resumedFromStep}` : 'running',
    };
    if (!dbFile) {
      this.waiting = null;
      this.sink.setRun(input);
      this.sink.setRunState(runState);
      return;
    }
    const waiting: { event: EngineEvent; dbFile: string | undefined }[] = [];
    this.waiting = waiting;
    this.ask('run history', async () => {
      let history: RunHistory | null = null;
      try {
        history = await readRunHistory(this.query, dbFile);
      } finally {
        if (generation === this.generation) {
          const read = history;
          this.sink.load((model) => {
            model.setRun(input);
            if (read) this.lastStep = feedHistory(model, read, this.elapsed);
            model.setRunState(runState);
          });
          this.waiting = null;
          for (const later of waiting) this.apply(later.event, later.dbFile);
        }
      }
    });
  }

  private apply(event: EngineEvent, dbFile: string | undefined): void {
    const sink = this.sink;
    // Only a running run has steps in flight (none after paused or run_finished).
    if (this.steps.apply(event) && STEP_PHASE_EVENTS.has(event.type))
      sink.setRunState({ state: 'running', message: this.steps.text() || 'running' });
    switch (event.type) {
      case 'step_committed':
        if (event.step <= this.lastStep) return;
        this.lastStep = event.step;
        sink.addStep({ ...event, ...this.elapsed.step(event) });
        // Why requests failed in the step: each distinct reason once, with its count.
        for (const failure of event.failures ?? [])
          sink.notify('warning', `step ${event.step}: ${failure.count} request(s) failed: ${failure.message}`);
        if (dbFile) this.refreshDatabase(dbFile);
        return;
      case 'new_best': {
        if (!dbFile) return;
        const best = { id: event.id, step: event.step, score: event.score, objective: event.objective, parentId: event.parentId };
        this.ask('best', async () => {
          const [lineageDepth, program, solution] = await Promise.all([
            this.query({ kind: 'lineageDepth', dbFile, programId: event.id }),
            this.query({ kind: 'program', dbFile, programId: event.id }),
            this.query({ kind: 'bestSolution', dbFile }),
          ]);
          const picture = solution?.id === event.id ? solutionPicture(solution.solution) : undefined;
          sink.setBest({
            ...best,
            lineageDepth,
            stepRank: program?.stepRank ?? null,
            code: program ? bestCode(program.code) : undefined,
            ...(picture ? { picture } : {}),
            ...(program ? bestFeedback(program.metrics) : {}),
          });
        });
        return;
      }
      case 'paused':
        sink.setRunState({ state: 'paused', message: `paused after step ${event.step}` });
        return;
      case 'resumed':
        sink.setRunState({ state: 'running', message: 'running' });
        return;
      case 'run_finished':
        // Stopped or failed runs can go on from their last committed step; one that reached its target or limit is done.
        sink.setRunState({
          state: event.reason === 'error' ? 'error' : 'finished',
          message: event.message,
          resumable: event.reason === 'stopped' || event.reason === 'error',
        });
        return;
      case 'endpoint_state':
        sink.notify(event.waiting ? 'warning' : 'info', event.message);
        return;
      case 'evaluation_queue':
        sink.setBackend({ queue: queueText(event) });
        return;
      case 'endpoint_servers':
        sink.setBackend({
          servers: event.servers.map((server) => ({
            url: server.baseURL,
            healthy: server.healthy,
            requests: server.requests,
            failures: server.failures,
            tokensPerSecond: server.tokensPerSecond,
            lastError: server.lastError === null ? null : forDisplay(server.lastError),
          })),
          ...(event.jobs
            ? { jobs: event.jobs.map((job) => ({ text: forDisplay(inferenceJobText(job, event.servers)), up: job.baseURL !== null })) }
            : {}),
        });
        if (event.label !== undefined) sink.setSourceLabel(forDisplay(event.label));
        return;
      case 'trainer_state':
        sink.setTrainer(trainerView(event.state));
        return;
      case 'steered':
        // A steer request the run took changes what the database part shows (the guidance in force, the population).
        if (event.ok && dbFile) this.refreshDatabase(dbFile);
        return;
      default:
        return;
    }
  }

  /** The database's state and its valid programs (the histogram), as after a reload. */
  private refreshDatabase(dbFile: string): void {
    this.ask('database snapshot', async () => {
      const [snapshot, scores] = await Promise.all([this.query({ kind: 'snapshot', dbFile }), this.query({ kind: 'validScores', dbFile })]);
      this.sink.setDatabase(snapshot, scores);
    });
  }

  private ask(what: string, work: () => Promise<void>): void {
    const done = work().catch((err: unknown) => this.onQueryError(what, errorMessage(err)));
    this.pending = this.pending.then(() => done);
  }
}

/** The run card of a live run, from its run_started event. */
function runInputOfEvent(event: RunStartedEvent): DashboardRunInput {
  return {
    runId: event.runId,
    taskName: event.task.name,
    taskTitle: event.task.title,
    direction: event.task.direction,
    targetValue: event.task.targetValue,
    source: event.source,
    batchSize: typeof event.settings.batchSize === 'number' ? event.settings.batchSize : null,
    samplesPerPrompt: typeof event.settings.samplesPerPrompt === 'number' ? event.settings.samplesPerPrompt : null,
    resumedFromStep: event.resumedFromStep,
    ...(event.isolation ? { isolation: event.isolation } : {}),
    ...(event.python ? { python: event.python } : {}),
    ...(event.task.evaluatorTrust === 'in-sandbox' ? { scoreUnprotected: IN_SANDBOX_TRUST_REASON } : {}),
  };
}

/** What the page shows of a program: its EVOLVE-BLOCK content, cut to BEST_CODE_MAX_CHARS (the whole text when it has no usable region). */
export function bestCode(code: string): string {
  let text: string;
  try {
    text = evolveBlockContent(code);
  } catch {
    text = code;
  }
  // Candidate text is shown as text only, without control characters (escape sequences), newlines and tabs kept.
  const shown = forDisplay(text);
  return shown.length > BEST_CODE_MAX_CHARS ? `${shown.slice(0, BEST_CODE_MAX_CHARS)}\n...` : shown;
}

/** The best program's evaluator feedback for the page, cut to BEST_FEEDBACK_MAX_CHARS; nothing when it has none. */
export function bestFeedback(metrics: Readonly<Record<string, unknown>>): { feedback?: string } {
  const feedback = feedbackOf(metrics);
  return feedback === '' ? {} : { feedback: feedbackText(feedback, BEST_FEEDBACK_MAX_CHARS) };
}

/** The SLURM queue in one line (the dashboard and the status bar's tooltip). */
export function queueText(
  queue: Pick<EvaluationQueueEvent, 'pending' | 'running' | 'done' | 'lost' | 'failed' | 'queueWaitMsP50'>,
): string {
  return (
    `SLURM: ${queue.pending} pending, ${queue.running} running, ${queue.done} done` +
    (queue.lost > 0 ? `, ${queue.lost} lost` : '') +
    (queue.failed > 0 ? `, ${queue.failed} failed` : '') +
    (queue.queueWaitMsP50 !== null ? `; queue wait ${(queue.queueWaitMsP50 / 1000).toFixed(1)} s` : '')
  );
}

/** A run on disk, as the replay found it. */
export interface ReplayedRun {
  runId: string;
  dbFile: string;
  meta: RunMeta;
  lastStep: number;
  taskTitle: string;
  /** The run's best combined score (null: nothing valid yet). */
  bestScore: number | null;
  /** How its last step was sampled (null: none committed, or written before it was recorded). */
  sampling: { batchSize: number; samplesPerPrompt: number } | null;
}

/** What a run's database holds of its history, as the dashboard shows it. */
interface RunHistory {
  info: QueryResult<'runInfo'>;
  steps: QueryResult<'steps'>;
  snapshot: QueryResult<'snapshot'>;
  improvements: QueryResult<'improvements'>;
  validScores: QueryResult<'validScores'>;
  best: DashboardBestInput | null;
}

async function readRunHistory(query: RunQuery, dbFile: string): Promise<RunHistory> {
  const [info, steps, snapshot, improvements, validScores] = await Promise.all([
    query({ kind: 'runInfo', dbFile }),
    query({ kind: 'steps', dbFile }),
    query({ kind: 'snapshot', dbFile }),
    query({ kind: 'improvements', dbFile }),
    query({ kind: 'validScores', dbFile }),
  ]);
  const program = info.summary.best ? await query({ kind: 'program', dbFile, programId: info.summary.best.id }) : null;
  const lineageDepth = program ? await query({ kind: 'lineageDepth', dbFile, programId: program.id }) : 0;
  const solution = program ? await query({ kind: 'bestSolution', dbFile }) : null;
  const picture = program && solution?.id === program.id ? solutionPicture(solution.solution) : undefined;
  const best: DashboardBestInput | null = program
    ? {
        id: program.id,
        step: program.step,
        score: program.score,
        objective: program.objective,
        parentId: program.parentId,
        lineageDepth,
        stepRank: program.stepRank ?? null,
        code: bestCode(program.code),
        ...(picture ? { picture } : {}),
        ...bestFeedback(program.metrics),
      }
    : null;
  return { info, steps, snapshot, improvements, validScores, best };
}

/** A run's history into a model that holds its run card: steps, database, best. Returns the last step fed (-1: none). */
function feedHistory(model: DashboardModel, history: RunHistory, elapsed: RunElapsed): number {
  const { steps, improvements, snapshot } = history;
  let bestEver: number | null = null;
  let improvement = 0;
  let lastStep = -1;
  for (const row of steps) {
    for (; improvement < improvements.length && (improvements[improvement]?.step ?? Infinity) <= row.step; improvement++) {
      const score = improvements[improvement]?.score ?? null;
      if (score !== null && (bestEver === null || score > bestEver)) bestEver = score;
    }
    // The database keeps no per-step size: the tile shows the current one.
    model.addStep({ ...row.stats, bestEver, dbSize: snapshot.programs, ...elapsed.step(row.stats) });
    lastStep = row.step;
  }
  model.setDatabase(snapshot, history.validScores);
  model.setBest(history.best);
  return lastStep;
}

/**
 * Fill a sink with a run from its database alone (steps, database state,
 * best program and its lineage), as after a window reload. `isStale` is asked
 * once everything was read: true (a run started meanwhile) leaves the sink
 * untouched and returns null.
 */
export async function replayRunFromDisk(
  sink: DashboardSink,
  query: RunQuery,
  run: { runId: string; dbFile: string },
  isStale: () => boolean = () => false,
): Promise<ReplayedRun | null> {
  const { dbFile } = run;
  const history = await readRunHistory(query, dbFile);
  const meta = history.info.meta;
  const task = await loadTask(meta.taskDir).catch(() => null);
  if (isStale()) return null;
  // The run's facts as its database keeps them: B x n of its last step, its latest session's sandbox, its interpreter.
  const sampling = [...history.steps].reverse().find((row) => row.stats.sampling)?.stats.sampling ?? null;
  const taskTitle = task?.title ?? meta.task;
  sink.load((model) => {
    model.setRun({
      runId: run.runId,
      taskName: meta.task,
      taskTitle,
      direction: meta.direction,
      targetValue: task?.targetValue ?? null,
      source: { kind: meta.source === MUTATE_SAMPLER_LABEL ? 'mutate' : 'llm', label: meta.source },
      batchSize: sampling?.batchSize ?? null,
      samplesPerPrompt: sampling?.samplesPerPrompt ?? null,
      resumedFromStep: null,
      ...(meta.isolation ? { isolation: meta.isolation } : {}),
      ...(meta.python ? { python: meta.python } : {}),
      ...(meta.evaluatorTrust === 'in-sandbox' ? { scoreUnprotected: IN_SANDBOX_TRUST_REASON } : {}),
    });
    feedHistory(model, history, new RunElapsed());
    model.setRunState({
      state: 'finished',
      message: `not running: ${history.steps.length} committed step(s) in ${dbFile.split(/[\\/]/).pop() ?? dbFile}; Resume continues it`,
      resumable: true,
    });
  });
  return {
    runId: run.runId,
    dbFile,
    meta,
    lastStep: history.info.lastStep,
    taskTitle,
    bestScore: history.info.summary.best?.score ?? null,
    sampling: sampling ? { batchSize: sampling.batchSize, samplesPerPrompt: sampling.samplesPerPrompt } : null,
  };
}
