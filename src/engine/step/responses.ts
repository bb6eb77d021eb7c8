// A step's responses (docs/algorithm.md section 1): the plan's jobs go to the
// source; each response is checked (classifyChild) and its child evaluated as
// soon as it arrives (K at once, in the evaluator), while the others are still
// being generated. What becomes of each goes to the step's ledger. A stop
// abandons the step: nothing recorded after it.
import { CROSSOVER_PARENT_METRIC } from '../operators/crossover';
import type { StepNovelty } from '../operators/novelty/noveltyGate';
import type { Settings } from '../common/config';
import { classifyChild } from '../classifyChild';
import type { EngineEvent } from '../common/events';
import type { EvaluationBackend } from '../evaluation/backend';
import type { EvaluationOutputWriter } from '../evaluationOutputs';
import type { NewProgram, ProgramDatabase } from '../database/programDatabase';
import {
  type GenerationJob,
  OUTCOME_PENALTY,
  outcomeOfEvaluation,
  type ResponseSource,
  type Sample,
  type SampleResponse,
} from '../common/types';
import type { Task } from '../task/task';
import { StopSignal } from './abandoned';
import { outputKeptOf, resampleRoundsOf, type SlotOutcome, StepLedger, viewOfSlot } from './ledger';
import type { StepPlan } from './plan';

/** What the loop needs of an evaluation backend (src/engine/evaluation: local sandbox or SLURM). */
export type CandidateEvaluator = Pick<EvaluationBackend, 'evaluate'>;

export interface StepResponsesInput {
  plan: StepPlan;
  task: Task;
  settings: Settings;
  db: ProgramDatabase;
  source: ResponseSource;
  evaluator: CandidateEvaluator;
  /** The whole output of each failed evaluation, beside the database. */
  outputs: EvaluationOutputWriter;
  emit: (event: EngineEvent) => void;
  /** The run's stop: it abandons the step. */
  runSignal: AbortSignal;
  stepStarted: number;
  /**
   * Code hashes the steps committed after this one was planned brought into
   * the database (steps overlapping): the lazy check leaves them out, so what
   * a child is checked against does not depend on when it arrives; the
   * step's commit penalises such children (StepLedger.penaliseLateDuplicates).
   */
  committedSincePlan: ReadonlySet<string>;
  /** Novelty rejection (operators/novelty): the step's check before a child is evaluated; absent when off. */
  novelty?: StepNovelty;
}

/** How long the step's two phases took. */
export interface StepTimings {
  /** From the step's start to its last response. */
  generationMs: number;
  /** From the first evaluation's start to the last one's end (0 without evaluations). */
  evaluationMs: number;
}

export class StepResponses {
  readonly ledger: StepLedger;
  private readonly input: StepResponsesInput;
  private readonly stepAbort = new AbortController();
  private readonly onStop = (): void => this.stepAbort.abort();
  private readonly evaluations: Promise<void>[] = [];
  private readonly rounds: number;
  private readonly jobByKey: Map<string, GenerationJob>;
  private firstEvalStart = Number.POSITIVE_INFINITY;
  private lastEvalEnd = 0;
  private lastResponseAt: number;
  private generationOver = false;
  private markGenerated: () => void = () => undefined;
  /** Resolves once the step has all its responses (or was abandoned): a pipelined loop may then start the next step. */
  readonly generated: Promise<void>;

  /** Listens to the run's stop from here on: call stopListening() when the step is over. */
  constructor(input: StepResponsesInput) {
    this.input = input;
    input.runSignal.addEventListener('abort', this.onStop, { once: true });
    this.lastResponseAt = input.stepStarted;
    this.rounds = resampleRoundsOf(input.settings);
    this.ledger = new StepLedger(input.plan.jobs, {
      resampling: this.rounds > 0,
      announce: (jobKey, index, slot) => this.announce(jobKey, index, slot),
    });
    this.jobByKey = new Map(input.plan.jobs.map((j) => [j.key, j]));
    this.generated = new Promise<void>((resolve) => {
      this.markGenerated = resolve;
    });
  }

  /** Whether the step has all its responses (or was abandoned). */
  get generationDone(): boolean {
    return this.generationOver;
  }

  /** Abandons the step alone (a step before it in a pipelined loop failed): collect() throws StopSignal, nothing is recorded. */
  abandon(): void {
    this.stepAbort.abort();
  }

  /** Whether the step was stopped. */
  get abandoned(): boolean {
    return this.stepAbort.signal.aborted;
  }

  /** Generates every response (asking again for failed ones when resampling) and waits for every evaluation; throws StopSignal when stopped. */
  async collect(): Promise<StepTimings> {
    const { source, plan, stepStarted } = this.input;
    const onSample = (sample: Sample): void => this.onSample(sample);
    try {
      await source.generate(plan.jobs, this.stepAbort.signal, onSample);
      await this.resampleFailed(onSample);
    } catch (err) {
      this.endGeneration();
      throw err;
    }
    if (!this.abandoned) this.ledger.announceUnrecovered();
    const generationDone = Math.max(this.lastResponseAt, stepStarted);
    // Said before a pipelined loop can start the next step, so the step's phases read in order.
    if (!this.abandoned)
      this.input.emit({ type: 'generation_finished', time: Date.now(), step: plan.step, generationMs: generationDone - stepStarted });
    this.endGeneration();
    // Evaluations may still be joining the list while earlier ones settle.
    for (let settled = 0; settled < this.evaluations.length;) {
      const batch = this.evaluations.slice(settled);
      await Promise.all(batch);
      settled += batch.length;
    }
    if (this.abandoned) throw new StopSignal('the run was stopped');
    return {
      generationMs: generationDone - stepStarted,
      evaluationMs: Number.isFinite(this.firstEvalStart) ? Math.max(0, this.lastEvalEnd - this.firstEvalStart) : 0,
    };
  }

  private endGeneration(): void {
    this.generationOver = true;
    this.markGenerated();
  }

  stopListening(): void {
    this.input.runSignal.removeEventListener('abort', this.onStop);
  }

  /** Waits for the evaluations still running (a stopped step's, which end on the abort). */
  allSettled(): Promise<unknown> {
    return Promise.allSettled(this.evaluations);
  }

  /** One evaluation_finished per response, when the ledger says what became of it. */
  private announce(jobKey: string, index: number, slot: SlotOutcome): void {
    const view = viewOfSlot(slot);
    const outputKept = outputKeptOf(slot);
    this.input.emit({
      type: 'evaluation_finished',
      time: Date.now(),
      step: this.input.plan.step,
      jobKey,
      sampleIndex: index,
      childId: null,
      outcome: view.outcome,
      score: view.score,
      objective: view.objective,
      durationMs: view.durationMs,
      reason: view.reason,
      ...(outputKept ? { outputKept } : {}),
    });
  }

  /** The new responses take the failed ones' places in their groups. */
  private async resampleFailed(onSample: (sample: Sample) => void): Promise<void> {
    const { source, emit } = this.input;
    const signal = this.stepAbort.signal;
    for (let round = 1; round <= this.rounds && !signal.aborted; round++) {
      const again = this.ledger.resampleJobs(round);
      if (again.length === 0) return;
      const count = again.reduce((a, r) => a + r.indices.length, 0);
      emit({
        type: 'error',
        time: Date.now(),
        fatal: false,
        message: `asking again for ${count} response(s) of ${again.length} prompt(s) whose requests failed (round ${round} of ${this.rounds}): the RL trainer needs whole groups`,
      });
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

  private onSample(sample: Sample): void {
    const { plan, task, settings, db } = this.input;
    this.lastResponseAt = Date.now();
    const job = this.jobByKey.get(sample.jobKey);
    if (!job || this.abandoned) return;
    if (!sample.ok) {
      this.ledger.requestFailed(job.key, sample.index, sample.error);
      return;
    }
    this.ledger.responseArrived(job.key, sample.index);
    const classified = classifyChild({
      parentCode: job.parentCode,
      answer: sample.content,
      language: task.language,
      maxCodeLength: task.maxCodeLength,
      seen: settings.lazyPenalty ? (hash) => db.hasCodeHash(hash) && !this.input.committedSincePlan.has(hash) : undefined,
      editFormat: job.editFormat,
    });
    if (classified.kind === 'rejected') {
      // An over-long child is a program that never ran: it is not stored.
      this.ledger.settle(job.key, sample.index, {
        kind: 'rejected_early',
        outcome: classified.outcome,
        score: classified.score,
        reason: classified.reason,
        response: sample,
      });
      return;
    }
    const child = {
      parentId: job.parentId,
      step: plan.step,
      metaInfoId: plan.metaInfoIds.get(job.key) ?? null,
      response: sample.content,
      reasoning: sample.reasoning,
      generationMs: sample.latencyMs,
      promptTokens: sample.promptTokens,
      completionTokens: sample.completionTokens,
      code: classified.child,
      codeHash: classified.codeHash,
    };
    const novelty = this.input.novelty;
    this.evaluations.push(novelty ? this.evaluateIfNovel(novelty, job, sample, child) : this.evaluate(job.key, sample, child));
  }

  /** Novelty rejection first (docs/algorithm.md section 12): a child too close to a program of its island is not evaluated. */
  private async evaluateIfNovel(
    novelty: StepNovelty,
    job: GenerationJob,
    sample: SampleResponse,
    child: Omit<NewProgram, 'score' | 'objective' | 'outcome' | 'metrics' | 'evaluationMs'>,
  ): Promise<void> {
    const island = this.input.plan.parents.find((p) => p.id === job.parentId)?.island ?? 0;
    const verdict = await novelty.check({ code: child.code, codeHash: child.codeHash, island, job, sampleIndex: sample.index });
    if (this.abandoned) return;
    if (verdict.kind === 'not_novel') {
      // The model repeated itself: the lazy penalty's score (docs/algorithm.md section 4), no evaluation, no database row.
      this.ledger.settle(job.key, sample.index, {
        kind: 'rejected_early',
        outcome: 'not_novel',
        score: OUTCOME_PENALTY.not_novel,
        reason: `not novel: ${verdict.reason}`,
        response: sample,
      });
      return;
    }
    await this.evaluate(job.key, sample, child);
  }

  /** Evaluates one child and settles its slot (unless the step was stopped meanwhile). */
  private async evaluate(
    jobKey: string,
    sample: SampleResponse,
    child: Omit<NewProgram, 'score' | 'objective' | 'outcome' | 'metrics' | 'evaluationMs'>,
  ): Promise<void> {
    const { plan, evaluator, outputs, emit } = this.input;
    const step = plan.step;
    const signal = this.stepAbort.signal;
    let schedulerJobId: string | null = null;
    const result = await evaluator.evaluate(child.code, {
      signal,
      onSubmitted: (id) => {
        schedulerJobId = id;
      },
      onStart: () => {
        this.firstEvalStart = Math.min(this.firstEvalStart, Date.now());
        emit({
          type: 'evaluation_started',
          time: Date.now(),
          step,
          jobKey,
          sampleIndex: sample.index,
          ...(schedulerJobId !== null ? { schedulerJobId } : {}),
        });
      },
    });
    this.lastEvalEnd = Math.max(this.lastEvalEnd, Date.now());
    if (signal.aborted) return;
    const outputKept = result.status !== 'ok';
    if (outputKept) {
      await outputs.add({
        step,
        jobKey,
        sampleIndex: sample.index,
        outcome: outcomeOfEvaluation(result.status),
        reason: result.reason,
        stdout: result.stdout,
        stderr: result.stderr,
      });
      if (signal.aborted) return;
    }
    if (result.status === 'evaluation_failed') {
      this.ledger.settle(jobKey, sample.index, {
        kind: 'evaluation_failed',
        reason: result.reason,
        response: sample,
        durationMs: result.durationMs,
        outputKept,
      });
      return;
    }
    this.ledger.settle(jobKey, sample.index, {
      kind: 'scored',
      child: {
        ...child,
        score: result.score,
        objective: result.objective,
        outcome: outcomeOfEvaluation(result.status),
        metrics: withSecondParent(result.metrics, plan.secondParents?.get(jobKey)),
        evaluationMs: result.durationMs,
      },
      reason: result.reason,
      response: sample,
      durationMs: result.durationMs,
      outputKept,
      solution: result.solution ?? null,
    });
  }
}

/** A crossover child's metrics name its second parent (operators/crossover.ts); others' are the evaluator's as they are. */
function withSecondParent(metrics: NewProgram['metrics'], secondParentId: string | undefined): NewProgram['metrics'] {
  return secondParentId === undefined ? metrics : { ...metrics, [CROSSOVER_PARENT_METRIC]: secondParentId };
}
