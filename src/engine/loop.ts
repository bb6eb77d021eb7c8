// The batched ThetaEvolve loop (algorithm.md section 1). Each step samples B
// parents from one database snapshot, asks for n responses per parent,
// evaluates each child as soon as its response arrives (K at once, in the
// evaluator), and commits the step's children after the step, one by one.
// A stopped step is abandoned whole: nothing half-committed.
import type { Settings } from './common/config';
import { databaseConfigFromSettings, type NewProgram, ProgramDatabase, type ProgramRecord } from './database/programDatabase';
import type { EngineEvent, IsolationSummary, RunFinishReason, StepStatistics } from './common/events';
import { buildPrompt } from './prompt';
import { Rng, type RngState } from './common/rng';
import { classifyChild } from './classifyChild';
import { objectiveOfScore, type RewardShaping, resolveRewardShaping, rewardOfSample, stepStatistics } from './common/scoring';
import { codeHash } from './codeHash';
import { writeFileAtomic } from './database/atomicFile';
import { bestSolutionFile } from './runFiles';
import { EvaluationOutputWriter } from './evaluationOutputs';
import { failureSummaryText, summarizeFailures } from './common/failureReasons';
import type { EvaluationBackend } from './evaluation/backend';
import type { Task } from './task/task';
import { type ChatMessage, type GenerationJob, type Outcome, outcomeOfEvaluation, type ResponseSource, type Sample, type SampleResponse } from './common/types';
import { errorMessage } from './common/errors';

/** What the loop needs of an evaluation backend (src/engine/evaluation: local sandbox or SLURM). */
export type CandidateEvaluator = Pick<EvaluationBackend, 'evaluate'>;

/** One scored response, as the RL trainer bridge receives it. */
export interface ScoredSample {
  index: number;
  outcome: Outcome;
  /** Combined score with penalties; null for request_failed and evaluation_failed. */
  score: number | null;
  objective: number | null;
  /** Shaped reward (algorithm.md section 5); null for request_failed and evaluation_failed. */
  reward: number | null;
  childId: string | null;
  response: SampleResponse | null;
  error: string | null;
}

/** One prompt's group of n responses. */
export interface ScoredGroup {
  key: string;
  step: number;
  parentId: string;
  messages: ChatMessage[];
  samples: ScoredSample[];
}

export interface CommittedStep {
  step: number;
  stats: StepStatistics;
  groups: ScoredGroup[];
}

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
  onEvent: (event: EngineEvent) => void;
  /**
   * Called with each step's groups (child ids still null) right before the
   * step's database commit; a throw abandons the step uncommitted. The trainer
   * bridge spools them here, so a crash right after the commit loses nothing.
   */
  beforeCommit?: (committed: CommittedStep, signal: AbortSignal) => Promise<void>;
  /** Called after each committed step, with the same groups and their child ids, before the next starts (the trainer bridge waits here in synchronous mode). */
  afterCommit?: (committed: CommittedStep, signal: AbortSignal) => Promise<void>;
}

interface EngineState {
  rng: RngState;
  completionTokens: number;
}

function isEngineState(value: unknown): value is EngineState {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return Array.isArray(v.rng) && v.rng.length === 4 && v.rng.every((w) => typeof w === 'number') && typeof v.completionTokens === 'number';
}

interface SampleRecord {
  outcome: Outcome;
  score: number | null;
  objective: number | null;
  reason: string;
  child: NewProgram | null;
  response: SampleResponse | null;
  error: string | null;
  /** The solution file's text of a valid child (kept for the best). */
  solution?: string;
}

class StopSignal extends Error {}

/** A step in which no request succeeded: abandoned uncommitted, redone or ending the run (settings.maxFailedSteps). */
class FailedStep extends Error {}

export class EvolutionRun {
  private readonly spec: EvolutionRunSpec;
  private readonly stopController = new AbortController();
  private paused = false;
  private resumeWaiters: (() => void)[] = [];
  private db: ProgramDatabase | null = null;
  /** The whole output of each failed evaluation, beside the database. */
  private readonly outputs: EvaluationOutputWriter;
  private readonly shaping: RewardShaping;
  private warnedNoTokenIds = false;

  constructor(spec: EvolutionRunSpec) {
    this.spec = spec;
    this.shaping = resolveRewardShaping(spec.settings, spec.task.rewardShaping);
    this.outputs = new EvaluationOutputWriter(spec.dbFile, (message) => this.emit({ type: 'error', time: Date.now(), fatal: false, message }));
  }

  /** The open database (null before start() opened it and after it finished). */
  get database(): ProgramDatabase | null {
    return this.db;
  }

  /** Abandon the in-flight step (nothing of it is committed) and end the run. */
  stop(): void {
    this.stopController.abort();
    this.releasePause();
  }

  /** Pause after the in-flight step commits. */
  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.releasePause();
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
    try {
      this.db = await ProgramDatabase.open(this.spec.dbFile, {
        config: databaseConfigFromSettings(settings),
        meta: {
          runId: this.spec.runId,
          task: task.name,
          taskDir: task.dir,
          direction: task.direction,
          language: task.language,
          programPath: this.spec.startPath ?? task.initialProgramPath,
          startCode: this.spec.startCode ?? task.initialProgram,
          source: this.spec.source.label,
          createdAt: Date.now(),
          evaluatorTrust: task.evaluatorTrust,
        },
      });
      const db = this.db;
      const resumedFromStep = db.lastStep >= 0 ? db.lastStep : null;
      this.emit({
        type: 'run_started',
        time: Date.now(),
        runId: this.spec.runId,
        task: { name: task.name, title: task.title, direction: task.direction, dir: task.dir, targetValue: task.targetValue, evaluatorTrust: task.evaluatorTrust },
        dbFile: this.spec.dbFile,
        source: { kind: this.spec.source.kind, label: this.spec.source.label },
        ...(this.spec.isolation ? { isolation: this.spec.isolation } : {}),
        settings: runSettingsSummary(settings),
        resumedFromStep,
      });
      await this.spec.source.check(this.stopController.signal, { waitForServer: true });

      const saved = db.engineState();
      const state: EngineState = isEngineState(saved) ? saved : { rng: Rng.fromSeed(settings.seed ^ 0x5eed).state(), completionTokens: 0 };
      if (db.lastStep < 0) await this.addInitialProgram(db);

      let stepsDone = 0;
      let failedInARow = 0;
      for (;;) {
        const limit = this.limitReached(db, state, stepsDone);
        if (limit) {
          reason = limit;
          break;
        }
        if (this.paused) await this.waitWhilePaused(db.lastStep);
        if (this.stopController.signal.aborted) throw new StopSignal();
        let committed: CommittedStep;
        try {
          committed = await this.runStep(db, state, started);
        } catch (err) {
          if (!(err instanceof FailedStep)) throw err;
          failedInARow++;
          if (failedInARow >= settings.maxFailedSteps) {
            const tries = settings.maxFailedSteps > 1 ? ` (${failedInARow} tries in a row; thetaevolve.maxFailedSteps)` : '';
            throw new Error(`${err.message}${tries}; the run stops, every committed step is kept.`);
          }
          this.emit({ type: 'error', time: Date.now(), fatal: false, message: `${err.message}; the step is redone (try ${failedInARow + 1} of ${settings.maxFailedSteps})` });
          continue;
        }
        failedInARow = 0;
        stepsDone++;
        if (this.spec.afterCommit) await this.spec.afterCommit(committed, this.stopController.signal);
      }
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
    const db = this.db;
    const best = db?.best() ?? null;
    const lastStep = db?.lastStep ?? -1;
    if (!message) message = finishMessage(reason, lastStep);
    this.emit({ type: 'run_finished', time: Date.now(), reason, lastStep, best: best ? { id: best.id, score: best.score } : null, message });
    if (db) await db.close();
    this.db = null;
    return { reason, lastStep, best };
  }

  private limitReached(db: ProgramDatabase, state: EngineState, stepsDone: number): RunFinishReason | null {
    const { settings, task } = this.spec;
    if (this.stopController.signal.aborted) return 'stopped';
    const best = db.best();
    if (task.targetValue !== null && best && best.outcome === 'valid') {
      const objective = objectiveOfScore(best.score, task.direction);
      if (task.direction === 'maximize' ? objective >= task.targetValue : objective <= task.targetValue) return 'target_reached';
    }
    if (settings.maxSteps > 0 && db.lastStep >= settings.maxSteps) return 'steps_done';
    if (this.spec.stepsThisInvocation !== undefined && stepsDone >= this.spec.stepsThisInvocation) return 'steps_done';
    if (this.spec.untilStep !== undefined && db.lastStep >= this.spec.untilStep) return 'steps_done';
    if (settings.maxTotalTokens > 0 && state.completionTokens >= settings.maxTotalTokens) return 'token_limit';
    return null;
  }

  private async waitWhilePaused(step: number): Promise<void> {
    this.emit({ type: 'paused', time: Date.now(), step });
    while (this.paused && !this.stopController.signal.aborted) {
      await new Promise<void>((resolve) => this.resumeWaiters.push(resolve));
    }
    if (!this.stopController.signal.aborted) this.emit({ type: 'resumed', time: Date.now(), step });
  }

  /**
   * With the RL trainer on, ask the source again (trainer.resampleRounds
   * rounds) for the responses whose requests failed after retries: GRPO
   * trains on whole groups of n, and a short group is not sent. The new
   * responses take the failed ones' places; seeds differ from the first
   * round's (job.seed + n x round + i), and the step's random generator is
   * not touched, so a redone step still draws the same parents.
   */
  private resampleRounds(): number {
    const { settings } = this.spec;
    return settings['trainer.enabled'] ? settings['trainer.resampleRounds'] : 0;
  }

  private async resampleFailed(jobs: GenerationJob[], failed: Map<string, Set<number>>, signal: AbortSignal, onSample: (sample: Sample) => void): Promise<void> {
    const { source } = this.spec;
    const rounds = this.resampleRounds();
    for (let round = 1; round <= rounds && !signal.aborted; round++) {
      const again: ResampleJob[] = [];
      for (const job of jobs) {
        const indices = [...(failed.get(job.key) ?? [])].sort((a, b) => a - b);
        if (indices.length === 0) continue;
        again.push({ job: { ...job, key: `${job.key}#resample${round}`, n: indices.length, seed: (job.seed + job.n * round) >>> 0 }, groupKey: job.key, indices });
      }
      if (again.length === 0) return;
      const count = again.reduce((a, r) => a + r.indices.length, 0);
      this.emit({ type: 'error', time: Date.now(), fatal: false, message: `asking again for ${count} response(s) of ${again.length} prompt(s) whose requests failed (round ${round} of ${rounds}): the RL trainer needs whole groups` });
      const byKey = new Map(again.map((r) => [r.job.key, r]));
      await source.generate(
        again.map((r) => r.job),
        signal,
        (sample) => {
          const target = byKey.get(sample.jobKey);
          const index = target?.indices[sample.index];
          if (!target || index === undefined) return;
          onSample({ ...sample, jobKey: target.groupKey, index });
        },
      );
    }
  }

  /** The best program's solution file, beside the database (the dashboard draws it); a failure to write it costs the picture only. */
  private async keepBestSolution(id: string, solution: string): Promise<void> {
    await writeFileAtomic(bestSolutionFile(this.spec.dbFile), Buffer.from(JSON.stringify({ id, solution }))).catch((err: unknown) =>
      this.emit({ type: 'error', time: Date.now(), message: `could not keep the best program's solution for the dashboard: ${errorMessage(err)}`, fatal: false }),
    );
  }

  private async addInitialProgram(db: ProgramDatabase): Promise<void> {
    const { task } = this.spec;
    const code = this.spec.startCode ?? task.initialProgram;
    this.emit({ type: 'evaluation_started', time: Date.now(), step: 0, jobKey: 'initial', sampleIndex: 0 });
    await this.outputs.startStep(0);
    const result = await this.spec.evaluator.evaluate(code, { signal: this.stopController.signal });
    if (this.stopController.signal.aborted) throw new StopSignal();
    const outcome = outcomeOfEvaluation(result.status);
    const outputKept = result.status !== 'ok';
    if (outputKept) await this.outputs.add({ step: 0, jobKey: 'initial', sampleIndex: 0, outcome, reason: result.reason, stdout: result.stdout, stderr: result.stderr });
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
    // Without the starting program's score there is nothing to evolve from.
    if (result.status === 'evaluation_failed') throw new Error(`the starting program could not be evaluated: ${result.reason}`);
    const record = await db.addInitial({
      parentId: null,
      step: 0,
      code,
      codeHash: codeHash(code, task.language),
      score: result.score,
      objective: result.objective,
      outcome,
      metrics: result.metrics,
      metaInfoId: null,
      response: null,
      reasoning: null,
      generationMs: 0,
      evaluationMs: result.durationMs,
      promptTokens: 0,
      completionTokens: 0,
    });
    if (outcome === 'valid') {
      if (result.solution !== undefined) await this.keepBestSolution(record.id, result.solution);
      this.emit({ type: 'new_best', time: Date.now(), id: record.id, step: 0, score: record.score, objective: record.objective, parentId: null });
    } else {
      this.emit({
        type: 'error',
        time: Date.now(),
        fatal: false,
        message: `the starting program is not valid (${result.status}: ${result.reason}); evolving from it anyway`,
      });
    }
  }

  private async runStep(db: ProgramDatabase, state: EngineState, runStarted: number): Promise<CommittedStep> {
    const { task, settings, source, evaluator } = this.spec;
    const step = db.lastStep + 1;
    const stepStarted = Date.now();
    await this.outputs.startStep(step);
    // Every random choice of the step comes from the persisted generator; a
    // step redone after a crash or stop draws the same parents and prompts.
    const rng = Rng.fromState(state.rng);
    const parents = db.sampleParents(settings.batchSize);
    const top = settings.topPrograms > 0 ? db.topPrograms(settings.topPrograms) : [];
    const n = settings.samplesPerPrompt;
    const jobs: GenerationJob[] = [];
    const metaInfo = new Map<string, string | null>();
    const parentOf = new Map<string, ProgramRecord>();
    for (const [i, parent] of parents.entries()) {
      const prompt = buildPrompt({ task, parent, rng, topPrograms: top.filter((p) => p.id !== parent.id) });
      const key = `s${step}-p${i}`;
      metaInfo.set(key, prompt.metaInfoId);
      parentOf.set(key, parent);
      jobs.push({ key, messages: prompt.messages, n, seed: rng.nextUint32(), parentId: parent.id, parentCode: parent.code });
    }
    this.emit({ type: 'step_started', time: Date.now(), step, parents: parents.map((p) => ({ id: p.id, score: p.score, island: p.island })) });

    const stepAbort = new AbortController();
    const onStop = (): void => stepAbort.abort();
    this.stopController.signal.addEventListener('abort', onStop, { once: true });
    const records = new Map<string, SampleRecord[]>(jobs.map((j) => [j.key, new Array<SampleRecord>(n)]));
    const jobByKey = new Map(jobs.map((j) => [j.key, j]));
    const evaluations: Promise<void>[] = [];
    let firstEvalStart = Number.POSITIVE_INFINITY;
    let lastEvalEnd = 0;
    let lastResponseAt = stepStarted;

    const record = (jobKey: string, index: number, r: SampleRecord, durationMs: number, announce = true, outputKept = false): void => {
      const slot = records.get(jobKey);
      if (slot) slot[index] = r;
      if (!announce) return;
      this.emit({
        type: 'evaluation_finished',
        time: Date.now(),
        step,
        jobKey,
        sampleIndex: index,
        childId: null,
        outcome: r.outcome,
        score: r.score,
        objective: r.objective,
        durationMs,
        reason: r.reason,
        ...(outputKept ? { outputKept } : {}),
      });
    };

    /** Responses whose requests failed after retries, by job (asked for again when a trainer needs whole groups). */
    const failed = new Map<string, Set<number>>();
    // One evaluation_finished per response: a failure asked for again is announced only if it stays failed.
    const resampling = this.resampleRounds() > 0;
    const onSample = (sample: Sample): void => {
      lastResponseAt = Date.now();
      const job = jobByKey.get(sample.jobKey);
      if (!job || stepAbort.signal.aborted) return;
      if (!sample.ok) {
        record(job.key, sample.index, { outcome: 'request_failed', score: null, objective: null, reason: sample.error, child: null, response: null, error: sample.error }, 0, !resampling);
        failed.set(job.key, (failed.get(job.key) ?? new Set()).add(sample.index));
        return;
      }
      failed.get(job.key)?.delete(sample.index);
      const parent = parentOf.get(job.key) as ProgramRecord;
      const classified = classifyChild({
        parentCode: job.parentCode,
        answer: sample.content,
        language: task.language,
        maxCodeLength: task.maxCodeLength,
        seen: settings.lazyPenalty ? (hash) => db.hasCodeHash(hash) : undefined,
      });
      const base = {
        parentId: parent.id,
        step,
        metaInfoId: metaInfo.get(job.key) ?? null,
        response: sample.content,
        reasoning: sample.reasoning,
        generationMs: sample.latencyMs,
        promptTokens: sample.promptTokens,
        completionTokens: sample.completionTokens,
      };
      if (classified.kind === 'rejected') {
        // An over-long child is a program that never ran: it is not stored.
        record(job.key, sample.index, { outcome: classified.outcome, score: classified.score, objective: null, reason: classified.reason, child: null, response: sample, error: null }, 0);
        return;
      }
      evaluations.push(
        (async () => {
          let schedulerJobId: string | null = null;
          const result = await evaluator.evaluate(classified.child, {
            signal: stepAbort.signal,
            onSubmitted: (id) => {
              schedulerJobId = id;
            },
            onStart: () => {
              firstEvalStart = Math.min(firstEvalStart, Date.now());
              this.emit({ type: 'evaluation_started', time: Date.now(), step, jobKey: job.key, sampleIndex: sample.index, ...(schedulerJobId !== null ? { schedulerJobId } : {}) });
            },
          });
          lastEvalEnd = Math.max(lastEvalEnd, Date.now());
          if (stepAbort.signal.aborted) return;
          const outputKept = result.status !== 'ok';
          if (outputKept) {
            const kept = { step, jobKey: job.key, sampleIndex: sample.index, outcome: outcomeOfEvaluation(result.status), reason: result.reason, stdout: result.stdout, stderr: result.stderr };
            await this.outputs.add(kept);
            if (stepAbort.signal.aborted) return;
          }
          if (result.status === 'evaluation_failed') {
            // Our machinery failed, not the model: no score, no database row, no rollout (like request_failed).
            record(job.key, sample.index, { outcome: 'evaluation_failed', score: null, objective: null, reason: result.reason, child: null, response: sample, error: result.reason }, result.durationMs, true, outputKept);
            return;
          }
          const outcome = outcomeOfEvaluation(result.status);
          const child: NewProgram = {
            ...base,
            code: classified.child,
            codeHash: classified.codeHash,
            score: result.score,
            objective: result.objective,
            outcome,
            metrics: result.metrics,
            evaluationMs: result.durationMs,
          };
          record(
            job.key,
            sample.index,
            { outcome, score: result.score, objective: result.objective, reason: result.reason, child, response: sample, error: null, ...(result.solution !== undefined ? { solution: result.solution } : {}) },
            result.durationMs,
            true,
            outputKept,
          );
        })(),
      );
    };

    try {
      await source.generate(jobs, stepAbort.signal, onSample);
      await this.resampleFailed(jobs, failed, stepAbort.signal, onSample);
      if (resampling && !stepAbort.signal.aborted) {
        for (const [jobKey, indices] of failed) for (const index of indices) record(jobKey, index, (records.get(jobKey) as SampleRecord[])[index] as SampleRecord, 0);
      }
      const generationDone = Math.max(lastResponseAt, stepStarted);
      // Evaluations may still be joining the list while earlier ones settle.
      for (let settled = 0; settled < evaluations.length; ) {
        const batch = evaluations.slice(settled);
        await Promise.all(batch);
        settled += batch.length;
      }
      if (stepAbort.signal.aborted) throw new StopSignal();

      const flat: SampleRecord[] = [];
      for (const job of jobs) {
        const slot = records.get(job.key) as SampleRecord[];
        for (let i = 0; i < n; i++) {
          slot[i] ??= { outcome: 'request_failed', score: null, objective: null, reason: 'no response delivered', child: null, response: null, error: 'no response delivered' };
          flat.push(slot[i] as SampleRecord);
        }
      }
      const failures = summarizeFailures(flat.flatMap((r) => (r.outcome === 'request_failed' ? [r.error ?? r.reason] : [])));
      if (flat.length > 0 && flat.every((r) => r.outcome === 'request_failed')) {
        throw new FailedStep(`no request of step ${step} succeeded (${flat.length} failed): ${failureSummaryText(failures)}`);
      }
      this.checkTokenIds(step, flat);
      const finished = Date.now();
      const stats: StepStatistics = stepStatistics({
        step,
        samples: flat.map((r) => ({ outcome: r.outcome, score: r.score, promptTokens: r.response?.promptTokens ?? 0, completionTokens: r.response?.completionTokens ?? 0, latencyMs: r.response?.latencyMs ?? null })),
        generationMs: generationDone - stepStarted,
        evaluationMs: Number.isFinite(firstEvalStart) ? Math.max(0, lastEvalEnd - firstEvalStart) : 0,
        totalMs: finished - stepStarted,
      });
      // Recorded with the step, so a run read back from its database shows the time the live run showed.
      stats.elapsedMs = finished - runStarted;
      // Siblings never see each other: identical children of one step are all
      // scored, but only the first enters the database.
      const children: NewProgram[] = [];
      const childSlot = new Map<NewProgram, SampleRecord>();
      const hashes = new Set<string>();
      for (const r of flat) {
        if (!r.child || hashes.has(r.child.codeHash)) continue;
        hashes.add(r.child.codeHash);
        children.push(r.child);
        childSlot.set(r.child, r);
      }
      const groupsWith = (ids: Map<SampleRecord, string>): ScoredGroup[] =>
        jobs.map((job) => ({
          key: job.key,
          step,
          parentId: job.parentId,
          messages: job.messages,
          samples: (records.get(job.key) as SampleRecord[]).map((r, index) => ({
            index,
            outcome: r.outcome,
            score: r.score,
            objective: r.objective,
            reward: r.score === null ? null : rewardOfSample({ score: r.score, objective: r.objective }, task.direction, this.shaping),
            childId: ids.get(r) ?? null,
            response: r.response,
            error: r.error,
          })),
        }));
      if (this.spec.beforeCommit) await this.spec.beforeCommit({ step, stats, groups: groupsWith(new Map()) }, this.stopController.signal);
      state.completionTokens += stats.tokens.completion;
      state.rng = rng.state();
      const previousBest = db.best();
      const commit = await db.commitStep({ step, children, stats, engineState: state });
      const ids = new Map<SampleRecord, string>();
      commit.inserted.forEach((rec, i) => {
        const source = childSlot.get(children[i] as NewProgram);
        if (source) ids.set(source, rec.id);
      });
      const best = db.best();
      const newBest = commit.newBest !== null && (previousBest === null || commit.newBest.score > previousBest.score);
      this.emit({
        type: 'step_committed',
        time: Date.now(),
        ...stats,
        dbSize: db.size,
        bestEver: best && best.outcome === 'valid' ? best.score : null,
        newBest,
        elapsedMs: finished - runStarted,
        ...(failures.length > 0 ? { failures } : {}),
      });
      if (newBest && commit.newBest) {
        const b = commit.newBest;
        const source = [...ids].find(([, id]) => id === b.id)?.[0];
        if (source?.solution !== undefined) await this.keepBestSolution(b.id, source.solution);
        this.emit({ type: 'new_best', time: Date.now(), id: b.id, step, score: b.score, objective: b.objective, parentId: b.parentId });
      }
      return { step, stats, groups: groupsWith(ids) };
    } finally {
      this.stopController.signal.removeEventListener('abort', onStop);
      if (stepAbort.signal.aborted) await Promise.allSettled(evaluations);
    }
  }

  /** An atropos trainer needs token ids: say once when a step's responses carry none, or the trainer receives nothing. */
  private checkTokenIds(step: number, samples: readonly SampleRecord[]): void {
    const { settings } = this.spec;
    if (this.warnedNoTokenIds || !settings['trainer.enabled'] || settings['trainer.protocol'] !== 'atropos') return;
    const responses = samples.filter((r) => r.response !== null);
    if (responses.length === 0 || responses.some((r) => r.response?.tokens)) return;
    this.warnedNoTokenIds = true;
    this.emit({
      type: 'error',
      time: Date.now(),
      fatal: false,
      message:
        `no response of step ${step} carried token ids, so the atropos trainer receives nothing from it: ` +
        'serve the model with vLLM >= 0.10.2 (return_token_ids) or SGLang, or use the slime trainer protocol, which re-tokenises',
    });
  }
}

/** A job asking again for some responses of a group: which of the group's indices its responses 0..k-1 stand for. */
interface ResampleJob {
  job: GenerationJob;
  groupKey: string;
  indices: number[];
}

function finishMessage(reason: RunFinishReason, lastStep: number): string {
  switch (reason) {
    case 'steps_done':
      return `finished after step ${lastStep}`;
    case 'target_reached':
      return `target reached at step ${lastStep}`;
    case 'token_limit':
      return `token limit reached at step ${lastStep}`;
    case 'stopped':
      return `stopped after step ${lastStep}`;
    case 'error':
      return 'failed';
  }
}

/** The settings that shape a run, for the run_started event (never secrets). */
function runSettingsSummary(s: Settings): Record<string, string | number | boolean | null> {
  return {
    sampler: s.sampler,
    endpoint: s.sampler === 'llm' ? s.endpoint : null,
    model: s.model || null,
    batchSize: s.batchSize,
    samplesPerPrompt: s.samplesPerPrompt,
    temperature: s.temperature,
    topP: s.topP,
    maxTokens: s.maxTokens,
    evaluationConcurrency: s.evaluationConcurrency,
    databasePreset: s['database.preset'],
    lazyPenalty: s.lazyPenalty,
    seed: s.seed,
  };
}
