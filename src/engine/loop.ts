// The batched ThetaEvolve loop (docs/algorithm.md section 1): runs steps until a
// limit, a stop or an error. Each step (src/engine/step) plans B parents'
// generation jobs from one database snapshot, collects n responses per parent
// while their children are evaluated as they arrive (K at once, in the
// evaluator), and commits the step's children after the step, one by one.
// A stopped step is abandoned whole: nothing half-committed.
import type { Settings } from './common/config';
import { databaseConfigFromSettings, ProgramDatabase, type ProgramRecord } from './database/programDatabase';
import { NOT_GENERATED } from './database/records';
import type { EngineEvent, IsolationSummary, RunFinishReason } from './common/events';
import { Rng } from './common/rng';
import { objectiveOfScore, type RewardShaping, resolveRewardShaping } from './common/scoring';
import { codeHash } from './codeHash';
import { EvaluationOutputWriter } from './evaluationOutputs';
import type { Task } from './task/task';
import { type GenerationJob, outcomeOfEvaluation, type ResponseSource, type SampleResponse } from './common/types';
import { errorMessage } from './common/errors';
import type { PythonEnvironment } from './common/pythonEnvironment';
import { FailedStep, StopSignal } from './step/abandoned';
import { keepBestSolution } from './step/bestSolution';
import { type CommittedStep, commitStep, TokenIdsCheck } from './step/commit';
import { type EngineState, isEngineState } from './step/engineState';
import { planStep, type StepPlan } from './step/plan';
import { type CandidateEvaluator, StepResponses, type StepTimings } from './step/responses';
import { applySteer } from './steering/applySteer';
import {
  environmentImportFailure,
  finishMessage,
  oneLine,
  recordedOperatorsMeta,
  runSettingsSummary,
  startFailure,
  steeredMessage,
} from './runMessages';
import { readInbox, removeRequest } from './steering/inbox';
import { type RunControlRequest, watchRunControl } from './steering/runControl';
import { withRecordedOperators } from './operators/recorded';
import { patienceSpent } from './operators/patience';
import type { NoveltyGate } from './operators/novelty/noveltyGate';
import { noveltyGateFor } from './operators/novelty/setup';
import { metaRound } from './operators/metaRound';
import { ModelChoice } from './llm/models/modelChoice';
import { costOfTokens, hasPrice, trainedModelOf } from './common/models';
import { modelOfJob } from './llm/models/modelAccounting';

export type { CandidateEvaluator } from './step/responses';
export type { CommittedStep, ScoredGroup, ScoredSample } from './step/commit';

export interface EvolutionRunSpec {
  runId: string;
  task: Task;
  settings: Settings;
  dbFile: string;
  /** Program text to start from (default: the task's initial program). Ignored when the database resumes. */
  startCode?: string;
  /** Where that text came from (recorded in the database's meta). */
  startPath?: string;
  source: ResponseSource;
  evaluator: CandidateEvaluator;
  /** Steps to run in this invocation (CLI --steps); settings.maxSteps bounds the whole run. */
  stepsThisInvocation?: number;
  /** Stop once this step is committed, counting steps a resumed database already has (a requeued cluster job finishes the same work). */
  untilStep?: number;
  /** The sandbox candidates get, announced with run_started. */
  isolation?: IsolationSummary;
  /** The interpreter everything Python ran with (recorded in the run meta, announced with run_started); absent: the task runs no Python. */
  python?: PythonEnvironment;
  onEvent: (event: EngineEvent) => void;
  /** The run's API key, for novelty rejection's embeddings when they go to the run's own endpoint. */
  apiKey?: string;
  /**
   * Called with each step's groups (child ids still null) right before the
   * step's database commit; a throw abandons the step uncommitted. The trainer
   * bridge spools them here, so a crash right after the commit loses nothing.
   */
  beforeCommit?: (committed: CommittedStep, signal: AbortSignal) => Promise<void>;
  /** Called after each committed step, with the same groups and their child ids, before the next starts (the trainer bridge waits here in synchronous mode). */
  afterCommit?: (committed: CommittedStep, signal: AbortSignal) => Promise<void>;
  /**
   * Whether a step may start before the one before it is committed and
   * handed to afterCommit (settings.pipelineDepth); asked before each step.
   * The trainer bridge says no in synchronous mode. Default yes.
   */
  stepsMayOverlap?: () => boolean;
}

export class EvolutionRun {
  /** Its settings take the operator settings the database recorded once the database is open (operators/recorded.ts). */
  private spec: EvolutionRunSpec;
  private readonly stopController = new AbortController();
  private paused = false;
  private resumeWaiters: (() => void)[] = [];
  private db: ProgramDatabase | null = null;
  /** The whole output of each failed evaluation, beside the database. */
  private readonly outputs: EvaluationOutputWriter;
  private readonly shaping: RewardShaping;
  /** Says once per run when an atropos trainer gets responses without token ids. */
  private readonly tokenIds: TokenIdsCheck;
  /** Several models (thetaevolve.models): how each prompt's model is drawn; null with one model. */
  private readonly modelChoice: ModelChoice | null;
  /** Novelty rejection (operators/novelty), made once the database (and its recorded operators) is open; null when off. */
  private novelty: NoveltyGate | null = null;

  constructor(spec: EvolutionRunSpec) {
    this.spec = spec;
    const { settings } = spec;
    this.modelChoice =
      settings.sampler === 'llm' && settings.models.length > 0 ? new ModelChoice(settings.models, settings.modelSelection) : null;
    this.shaping = resolveRewardShaping(spec.settings, spec.task.rewardShaping);
    this.tokenIds = new TokenIdsCheck(spec.settings, (event) => this.emit(event));
    this.outputs = new EvaluationOutputWriter(spec.dbFile, (message) =>
      this.emit({ type: 'error', time: Date.now(), fatal: false, message }),
    );
  }

  /** The open database (null before start() opened it and after it finished). */
  get database(): ProgramDatabase | null {
    return this.db;
  }

  /** Abandon the steps in flight (nothing of them is committed) and end the run. */
  stop(): void {
    this.stopController.abort();
    this.releasePause();
  }

  /** Pause once the steps in flight commit (no further one starts meanwhile). */
  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.releasePause();
  }

  /** A control request from another process: said as a `steered` event, then done as the editor's buttons do it. */
  private takeControl(request: RunControlRequest, db: ProgramDatabase): void {
    const what = { pause: 'pauses once the steps in flight commit', resume: 'goes on', stop: 'stops; the steps in flight are abandoned' };
    const message = `${request.action} asked by the ${request.by}: the run ${what[request.action]}`;
    this.emit({ type: 'steered', time: Date.now(), step: db.lastStep + 1, kind: request.action, ok: true, message, id: null });
    if (request.action === 'pause') this.pause();
    else if (request.action === 'resume') this.resume();
    else this.stop();
  }

  private releasePause(): void {
    this.paused = false;
    const waiters = this.resumeWaiters;
    this.resumeWaiters = [];
    for (const w of waiters) w();
  }

  private emit(event: EngineEvent): void {
    this.spec.onEvent(event);
  }

  /** Runs until a limit is reached or stop(); resolves with why it ended. */
  async run(): Promise<{ reason: RunFinishReason; lastStep: number; best: ProgramRecord | null }> {
    const { task, settings } = this.spec;
    const started = Date.now();
    let reason: RunFinishReason = 'steps_done';
    let message = '';
    // The source tells when it waits for its server (restart, loading) and when it answers again.
    const unsubscribe = this.spec.source.addStatusListener?.((status) =>
      this.emit({ type: 'endpoint_state', time: Date.now(), waiting: status.waiting, message: status.message }),
    );
    let stopWatchingControl: (() => void) | null = null;
    try {
      this.db = await ProgramDatabase.open(this.spec.dbFile, {
        // A task's behaviour dimensions shape a new database's grid (docs/algorithm.md section 12); a resumed one keeps its own.
        config: { ...databaseConfigFromSettings(settings), ...(task.features ? { features: task.features } : {}) },
        meta: {
          runId: this.spec.runId,
          task: task.name,
          taskDir: task.source,
          direction: task.direction,
          language: task.language,
          programPath: this.spec.startPath ?? task.initialProgramPath,
          startCode: this.spec.startCode ?? task.initialProgram,
          source: this.spec.source.label,
          createdAt: Date.now(),
          evaluatorTrust: task.evaluatorTrust,
          ...(this.spec.python ? { python: this.spec.python } : {}),
          ...recordedOperatorsMeta(settings),
        },
        // The dashboard reads the sandbox back after a window reload; a resumed run may have another.
        ...(this.spec.isolation ? { sessionMeta: { isolation: this.spec.isolation } } : {}),
      });
      const db = this.db;
      this.spec = { ...this.spec, settings: withRecordedOperators(settings, db.meta()) };
      this.novelty = noveltyGateFor({
        ...this.spec,
        db,
        signal: this.stopController.signal,
        warn: (message) => this.emit({ type: 'error', time: Date.now(), fatal: false, message }),
      });
      // Pause, resume or stop asked by another process (an agent's tools): docs/architecture.md "Agents".
      stopWatchingControl = await watchRunControl(this.spec.dbFile, (request) => this.takeControl(request, db));
      const resumedFromStep = db.lastStep >= 0 ? db.lastStep : null;
      this.emit({
        type: 'run_started',
        time: Date.now(),
        runId: this.spec.runId,
        task: {
          name: task.name,
          title: task.title,
          direction: task.direction,
          dir: task.dir,
          targetValue: task.targetValue,
          evaluatorTrust: task.evaluatorTrust,
        },
        dbFile: this.spec.dbFile,
        source: { kind: this.spec.source.kind, label: this.spec.source.label },
        ...(this.spec.isolation ? { isolation: this.spec.isolation } : {}),
        ...(this.spec.python ? { python: this.spec.python } : {}),
        settings: runSettingsSummary(this.spec.settings),
        resumedFromStep,
      });
      await this.spec.source.check(this.stopController.signal, { waitForServer: true });

      const saved = db.engineState();
      const state: EngineState = isEngineState(saved)
        ? saved
        : { rng: Rng.fromSeed(this.spec.settings.seed ^ 0x5eed).state(), completionTokens: 0 };
      if (db.lastStep < 0) await this.addInitialProgram(db);
      this.sayUnpricedModels();

      reason = await this.runSteps(db, state, started);
    } catch (err) {
      if (err instanceof StopSignal || this.stopController.signal.aborted) {
        reason = 'stopped';
        message = 'stopped; the in-flight step was abandoned and every committed step is kept';
      } else {
        reason = 'error';
        message = errorMessage(err);
        this.emit({ type: 'error', time: Date.now(), message, fatal: true });
      }
    }
    unsubscribe?.();
    stopWatchingControl?.();
    const db = this.db;
    // After a failed write (a full disk) memory is ahead of the file: report what the file holds.
    const durable = db?.failedWrite ? await this.durableState() : null;
    const best = durable ? durable.best : (db?.best() ?? null);
    const lastStep = durable ? durable.lastStep : (db?.lastStep ?? -1);
    if (!message) message = finishMessage(reason, lastStep);
    this.emit({
      type: 'run_finished',
      time: Date.now(),
      reason,
      lastStep,
      best: best ? { id: best.id, score: best.score } : null,
      message,
    });
    if (db) await db.close();
    this.db = null;
    return { reason, lastStep, best };
  }

  /** Why no further step may start, given the steps committed in this invocation and those in flight (planned past the last commit). */
  private limitReached(db: ProgramDatabase, state: EngineState, stepsDone: number, inFlight: number): RunFinishReason | null {
    const { settings, task } = this.spec;
    if (this.stopController.signal.aborted) return 'stopped';
    const best = db.best();
    if (task.targetValue !== null && best && best.outcome === 'valid') {
      const objective = objectiveOfScore(best.score, task.direction);
      if (task.direction === 'maximize' ? objective >= task.targetValue : objective <= task.targetValue) return 'target_reached';
    }
    const lastPlanned = db.lastStep + inFlight;
    if (settings.maxSteps > 0 && lastPlanned >= settings.maxSteps) return 'steps_done';
    if (this.spec.stepsThisInvocation !== undefined && stepsDone + inFlight >= this.spec.stepsThisInvocation) return 'steps_done';
    if (this.spec.untilStep !== undefined && lastPlanned >= this.spec.untilStep) return 'steps_done';
    if (settings.maxTotalTokens > 0 && state.completionTokens >= settings.maxTotalTokens) return 'token_limit';
    if (patienceSpent(db, settings.stopAfterStepsWithoutImprovement)) return 'no_improvement';
    if (settings.maxCostUsd > 0) {
      // A step that would pass the budget is not started: each step in flight and the next are estimated at the last step's cost.
      const spent = state.costUsd ?? 0;
      if (spent + (inFlight + 1) * (state.lastStepCostUsd ?? 0) > settings.maxCostUsd || spent >= settings.maxCostUsd)
        return 'budget_reached';
    }
    return null;
  }

  /** A model without a price counts tokens only: said once, at the start. */
  private sayUnpricedModels(): void {
    const { settings } = this.spec;
    if (this.modelChoice === null) return;
    const unpriced = settings.models.filter((m) => !hasPrice(m)).map((m) => m.name);
    if (unpriced.length === 0) return;
    const budget = settings.maxCostUsd > 0 ? ` and do not count toward thetaevolve.maxCostUsd` : '';
    this.emit({
      type: 'error',
      time: Date.now(),
      fatal: false,
      message:
        unpriced.length === 1 && settings.models.length > 1
          ? `${unpriced[0]} has no price in thetaevolve.models: its tokens are counted, not its cost${budget}`
          : `${unpriced.length === settings.models.length ? 'no model has' : `${unpriced.join(', ')} have`} no price in thetaevolve.models: their tokens are counted, not their cost${budget}`,
    });
  }

  /** How many steps may be in flight beyond the one committing next: none while the trainer takes each step before the next generates. */
  private pipelineDepth(): number {
    return this.spec.stepsMayOverlap && !this.spec.stepsMayOverlap() ? 0 : this.spec.settings.pipelineDepth;
  }

  /**
   * Runs steps until a limit, a stop or an error, and says which limit. With
   * pipelineDepth d, up to d + 1 steps are in flight: the next one starts
   * once the newest has all its responses, and steps commit in order
   * (docs/algorithm.md section 1, "Pipelined steps").
   */
  private async runSteps(db: ProgramDatabase, state: EngineState, runStarted: number): Promise<RunFinishReason> {
    const { settings } = this.spec;
    const inFlight: StepInFlight[] = [];
    let stepsDone = 0;
    let failedInARow = 0;
    try {
      // A run stopped between a commit and its meta round does that round when it resumes.
      await this.metaRound(db, state, 0);
      for (;;) {
        if (this.stopController.signal.aborted) {
          if (inFlight.length === 0) return 'stopped';
          throw new StopSignal('the run was stopped');
        }
        const newest = inFlight.at(-1);
        const depth = this.pipelineDepth();
        const room = newest === undefined || (inFlight.length <= depth && newest.responses.generationDone);
        if (room && !this.paused && this.limitReached(db, state, stepsDone, inFlight.length) === null) {
          inFlight.push(await this.startStep(db, state, newest ?? null));
          continue;
        }
        const oldest = inFlight[0];
        if (oldest === undefined) {
          const limit = this.limitReached(db, state, stepsDone, 0);
          if (limit) return limit;
          await this.waitWhilePaused(db.lastStep);
          if (this.stopController.signal.aborted) throw new StopSignal('the run was stopped');
          continue;
        }
        // Another step may start once the newest has its responses: whichever comes first, that or the oldest's last evaluation.
        if (newest && inFlight.length <= depth && !newest.responses.generationDone && !this.paused) {
          const next = await Promise.race([
            oldest.settled.then(() => 'commit' as const),
            newest.responses.generated.then(() => 'start' as const),
          ]);
          if (next === 'start') continue;
        }
        inFlight.shift();
        let committed: CommittedStep;
        try {
          committed = await this.finishStep(db, state, runStarted, oldest);
        } catch (err) {
          // The steps planned after it drew from its plan: they are abandoned too, and planned again.
          await abandonSteps(inFlight.splice(0));
          if (!(err instanceof FailedStep)) throw err;
          failedInARow++;
          if (failedInARow >= settings.maxFailedSteps) {
            const tries = settings.maxFailedSteps > 1 ? ` (${failedInARow} tries in a row; thetaevolve.maxFailedSteps)` : '';
            throw new Error(`${err.message}${tries}; the run stops, every committed step is kept.`);
          }
          this.emit({
            type: 'error',
            time: Date.now(),
            fatal: false,
            message: `${err.message}; the step is redone (try ${failedInARow + 1} of ${settings.maxFailedSteps})`,
          });
          continue;
        }
        failedInARow = 0;
        stepsDone++;
        if (settings.lazyPenalty) {
          // What the step brought into the database: the steps still in flight were checked without it.
          const hashes = oldest.responses.ledger.allSlots().flatMap((slot) => (slot.kind === 'scored' ? [slot.child.codeHash] : []));
          for (const later of inFlight) for (const hash of hashes) later.committedSincePlan.add(hash);
        }
        if (this.spec.afterCommit) await this.spec.afterCommit(committed, this.stopController.signal);
        await this.metaRound(db, state, inFlight.length);
      }
    } finally {
      // A stop or an error: nothing of the steps still in flight is recorded, and none of their evaluations outlives the run.
      await abandonSteps(inFlight);
    }
  }

  private async waitWhilePaused(step: number): Promise<void> {
    this.emit({ type: 'paused', time: Date.now(), step });
    while (this.paused && !this.stopController.signal.aborted) {
      await new Promise<void>((resolve) => this.resumeWaiters.push(resolve));
    }
    if (!this.stopController.signal.aborted) this.emit({ type: 'resumed', time: Date.now(), step });
  }

  /** The best program and last step the database file holds (read back from disk). */
  private async durableState(): Promise<{ best: ProgramRecord | null; lastStep: number }> {
    try {
      const file = await ProgramDatabase.openReadOnly(this.spec.dbFile);
      try {
        return { best: file.best(), lastStep: file.lastStep };
      } finally {
        await file.close();
      }
    } catch {
      return { best: null, lastStep: -1 };
    }
  }

  private async addInitialProgram(db: ProgramDatabase): Promise<void> {
    const { task } = this.spec;
    const code = this.spec.startCode ?? task.initialProgram;
    this.emit({ type: 'evaluation_started', time: Date.now(), step: 0, jobKey: 'initial', sampleIndex: 0 });
    await this.outputs.startStep(0);
    const result = await this.spec.evaluator.evaluate(code, { signal: this.stopController.signal });
    if (this.stopController.signal.aborted) throw new StopSignal('the run was stopped');
    const outcome = outcomeOfEvaluation(result.status);
    const outputKept = result.status !== 'ok';
    if (outputKept)
      await this.outputs.add({
        step: 0,
        jobKey: 'initial',
        sampleIndex: 0,
        outcome,
        reason: result.reason,
        stdout: result.stdout,
        stderr: result.stderr,
      });
    this.emit({
      type: 'evaluation_finished',
      time: Date.now(),
      step: 0,
      jobKey: 'initial',
      sampleIndex: 0,
      childId: null,
      outcome,
      score: result.score,
      objective: result.objective,
      durationMs: result.durationMs,
      reason: result.reason,
      ...(outputKept ? { outputKept } : {}),
    });
    // The health check: without the starting program's score there is nothing to evolve from, and an
    // evaluator or sandbox that fails on the task's own program would fail every candidate as well.
    // A module the interpreter lacks is the environment's failure, the program's or the evaluator's alike.
    const importFailed = this.spec.python ? environmentImportFailure(task, result, this.spec.python.executable) : null;
    if (importFailed !== null) throw new Error(importFailed);
    if (result.status === 'evaluation_failed') throw new Error(startFailure(task, result.reason, result.metrics.evaluator_failed === true));
    const record = await db.addInitial({
      parentId: null,
      step: 0,
      code,
      codeHash: codeHash(code, task.language),
      score: result.score,
      objective: result.objective,
      outcome,
      metrics: result.metrics,
      // Not written by a model: no prompt, response or cost of its own.
      ...NOT_GENERATED,
      evaluationMs: result.durationMs,
    });
    if (outcome === 'valid') {
      if (result.solution !== undefined) await keepBestSolution(this.spec.dbFile, record.id, result.solution, (event) => this.emit(event));
      this.emit({
        type: 'new_best',
        time: Date.now(),
        id: record.id,
        step: 0,
        score: record.score,
        objective: record.objective,
        parentId: null,
      });
    } else {
      this.emit({
        type: 'error',
        time: Date.now(),
        fatal: false,
        about: 'invalid_start',
        message: `the starting program is not valid (${result.status}: ${oneLine(result.reason)}); evolving from it anyway`,
      });
    }
  }

  /**
   * Counts a request made beside the steps' own (a meta round, a novelty judge's question) toward maxTotalTokens and
   * maxCostUsd like a step's; persisted with the next commit.
   */
  private spendCounter(state: EngineState): (job: GenerationJob, reply: SampleResponse) => void {
    const { settings } = this.spec;
    return (job, reply) => {
      state.completionTokens += reply.completionTokens;
      const model = modelOfJob(job, settings.models);
      const cost = model ? costOfTokens(model, reply.billedPromptTokens ?? reply.promptTokens, reply.completionTokens) : null;
      if (cost !== null) state.costUsd = (state.costUsd ?? 0) + cost;
    };
  }

  /** The meta round after the last committed step, when due (operators/metaRound.ts). */
  private async metaRound(db: ProgramDatabase, state: EngineState, plannedAhead: number): Promise<void> {
    const { settings, task, source, dbFile } = this.spec;
    await metaRound({
      db,
      task,
      settings,
      source,
      dbFile,
      plannedAhead,
      signal: this.stopController.signal,
      emit: (e) => this.emit(e),
      spent: this.spendCounter(state),
    });
    if (this.stopController.signal.aborted) throw new StopSignal('the run was stopped');
  }

  /** Apply the steering inbox's requests in order; a refused one is said and removed, the run goes on. */
  private async takeSteerRequests(db: ProgramDatabase, step: number): Promise<void> {
    for (const item of await readInbox(this.spec.dbFile)) {
      // Applied before a crash that left its file: never twice.
      if (db.appliedRequest(item.id)) {
        await removeRequest(item);
        continue;
      }
      if (item.request === null) {
        this.emit({ type: 'steered', time: Date.now(), step, kind: 'unknown', ok: false, message: item.problem, id: null });
        await removeRequest(item);
        continue;
      }
      const kind = item.request.kind;
      const bestBefore = db.best()?.id ?? null;
      try {
        const result = await applySteer(item.request, {
          db,
          dbFile: this.spec.dbFile,
          language: this.spec.task.language,
          evaluator: this.spec.evaluator,
          signal: this.stopController.signal,
          requestId: item.id,
          step,
        });
        const said = steeredMessage(result);
        // What an agent did is said as its own, where the researcher reads the run's messages.
        const message = item.request.by === 'agent' ? `${said.message} (asked by the agent)` : said.message;
        this.emit({ type: 'steered', time: Date.now(), step, kind, ok: true, id: said.id, message });
        const best = db.best();
        // A researcher's program can be the new best: said like any other.
        if (best && best.id !== bestBefore && best.outcome === 'valid')
          this.emit({
            type: 'new_best',
            time: Date.now(),
            id: best.id,
            step: best.step,
            score: best.score,
            objective: best.objective,
            parentId: best.parentId,
          });
      } catch (err) {
        if (this.stopController.signal.aborted) throw new StopSignal('the run was stopped');
        // A failed write leaves the database unusable: that ends the run like a failed commit.
        if (db.failedWrite !== null) throw err;
        this.emit({ type: 'steered', time: Date.now(), step, kind, ok: false, message: `${kind} refused: ${errorMessage(err)}`, id: null });
      }
      await removeRequest(item);
    }
  }

  /**
   * Plans a step and starts collecting its responses and evaluations: the
   * step after `previous` while that one is in flight (its parents drawn
   * where previous's draw left off, from the steps committed so far), else
   * the step after the last commit.
   */
  private async startStep(db: ProgramDatabase, state: EngineState, previous: StepInFlight | null): Promise<StepInFlight> {
    const { task, settings, source, evaluator } = this.spec;
    const step = previous ? previous.plan.step + 1 : db.lastStep + 1;
    // Steer requests made since the last step take effect now (docs/algorithm.md section 11).
    await this.takeSteerRequests(db, step);
    const stepStarted = Date.now();
    await this.outputs.startStep(step, db.lastStep + 1);
    // Every random choice of the step comes from the persisted generator; a
    // step redone after a crash or stop draws the same parents and prompts.
    const rng = Rng.fromState(previous ? previous.rng.state() : state.rng);
    const committedSincePlan = new Set<string>();
    const choice = this.modelChoice;
    const models = choice ? { choice, probabilities: choice.probabilities(state.bandit ?? { pulls: {}, rewards: {} }) } : null;
    const plan = planStep({ step, db, task, settings, rng, previousDraw: previous?.plan.draw ?? null, models });
    this.emit({
      type: 'step_started',
      time: Date.now(),
      step,
      parents: plan.parents.map((p) => ({ id: p.id, score: p.score, island: p.island })),
    });
    const responses = new StepResponses({
      plan,
      task,
      settings,
      db,
      source,
      evaluator,
      outputs: this.outputs,
      emit: (e) => this.emit(e),
      runSignal: this.stopController.signal,
      stepStarted,
      committedSincePlan,
      ...(this.novelty
        ? {
            novelty: this.novelty.forStep(
              step,
              db,
              plan.parents.map((p) => p.island),
              this.spendCounter(state),
            ),
          }
        : {}),
    });
    const collected = responses.collect();
    return { plan, rng, stepStarted, responses, committedSincePlan, collected, settled: collected.then(noop, noop) };
  }

  /** Waits for a step's evaluations and commits it (throws StopSignal or FailedStep, nothing committed). */
  private async finishStep(db: ProgramDatabase, state: EngineState, runStarted: number, inFlight: StepInFlight): Promise<CommittedStep> {
    const { responses } = inFlight;
    try {
      const timings = await inFlight.collected;
      return await commitStep({
        plan: inFlight.plan,
        ledger: responses.ledger,
        timings,
        stepStarted: inFlight.stepStarted,
        runStarted,
        state,
        rng: inFlight.rng,
        db,
        task: this.spec.task,
        dbFile: this.spec.dbFile,
        shaping: this.shaping,
        rewardProcess: this.spec.settings['rewardShaping.process'],
        tokenIds: this.tokenIds,
        emit: (e) => this.emit(e),
        runSignal: this.stopController.signal,
        beforeCommit: this.spec.beforeCommit,
        committedSincePlan: inFlight.committedSincePlan,
        novelty: this.novelty,
        models: this.modelChoice
          ? {
              specs: this.spec.settings.models,
              trainedModel: trainedModelOf(this.spec.settings),
              defaultFormat: this.spec.settings.editFormat,
              probabilities: (bandit) => (this.modelChoice as ModelChoice).probabilities(bandit),
            }
          : undefined,
      });
    } finally {
      responses.stopListening();
      if (responses.abandoned) await responses.allSettled();
    }
  }
}

/** A step planned and not yet committed. */
interface StepInFlight {
  plan: StepPlan;
  /** The step's generator as its plan left it: committed with the step, and where the next step's generator starts. */
  rng: Rng;
  stepStarted: number;
  responses: StepResponses;
  /** Code hashes the steps committed since its plan brought in (with the lazy penalty on). */
  committedSincePlan: Set<string>;
  /** Its responses and evaluations (a rejection is met where the step commits). */
  collected: Promise<StepTimings>;
  /** Settles with `collected`, never rejects. */
  settled: Promise<void>;
}

function noop(): void {}

/** Abandons steps in flight (nothing of them is recorded) and waits until none of their evaluations runs. */
async function abandonSteps(steps: readonly StepInFlight[]): Promise<void> {
  for (const step of steps) step.responses.abandon();
  for (const step of steps) {
    await step.settled;
    step.responses.stopListening();
    await step.responses.allSettled();
  }
}
