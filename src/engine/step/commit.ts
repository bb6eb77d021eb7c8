// A step's commit (docs/algorithm.md section 1): the step's statistics, its
// children deduplicated, the groups of n scored responses for the RL trainer
// (beforeCommit sees them before the database commit, so a crash right after
// it loses nothing), the database's step transaction, and the events that
// say so (step_committed, then new_best).
import type { Settings } from '../common/config';
import type { EngineEvent, StepStatistics } from '../common/events';
import { failureSummaryText, summarizeFailures } from '../common/failureReasons';
import type { Rng } from '../common/rng';
import { type RewardProcess, type RewardShaping, rewardOfChild, stepStatistics } from '../common/scoring';
import type { ChatMessage, GenerationJob, Outcome, SampleResponse } from '../common/types';
import type { NewProgram, ProgramDatabase } from '../database/programDatabase';
import type { Task } from '../task/task';
import { FailedStep } from './abandoned';
import { cascadeCounts } from '../operators/cascade';
import type { NoveltyGate } from '../operators/novelty/noveltyGate';
import { keepBestSolution } from './bestSolution';
import type { EngineState } from './engineState';
import { type ScoredSlot, type SlotOutcome, type StepLedger, viewOfSlot } from './ledger';
import type { StepPlan } from './plan';
import type { StepTimings } from './responses';
import type { ModelSpec } from '../common/models';
import { modelOfJob, modelStepStats, stepCost } from '../llm/models/modelAccounting';
import { type BanditState, updateBandit } from '../llm/models/modelChoice';

/** One scored response, as the RL trainer bridge receives it. */
export interface ScoredSample {
  index: number;
  outcome: Outcome;
  /** Combined score with penalties; null for request_failed and evaluation_failed. */
  score: number | null;
  objective: number | null;
  /** Shaped reward (docs/algorithm.md section 5); null for request_failed and evaluation_failed. */
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

export interface CommitInput {
  plan: StepPlan;
  ledger: StepLedger;
  timings: StepTimings;
  stepStarted: number;
  runStarted: number;
  /** Updated with the step's tokens and the generator's state, and committed with the step. */
  state: EngineState;
  /** The step's generator, as the plan left it. */
  rng: Rng;
  db: ProgramDatabase;
  task: Task;
  dbFile: string;
  shaping: RewardShaping;
  /** thetaevolve.rewardShaping.process: ours, or one of the release's reward processes. */
  rewardProcess: RewardProcess;
  tokenIds: TokenIdsCheck;
  emit: (event: EngineEvent) => void;
  /** Code hashes committed since the step was planned, when the lazy penalty is on (StepLedger.penaliseLateDuplicates). */
  committedSincePlan: ReadonlySet<string>;
  /** The run's stop, handed to beforeCommit. */
  runSignal: AbortSignal;
  /** Novelty rejection (operators/novelty): its new vectors are stored with the step; null when off. */
  novelty?: NoveltyGate | null;
  beforeCommit?: (committed: CommittedStep, signal: AbortSignal) => Promise<void>;
  /** The run's models (thetaevolve.models; empty: one model, nothing recorded per model) and the one the RL trainer trains. */
  models?: {
    specs: readonly ModelSpec[];
    trainedModel: string;
    defaultFormat: 'diff' | 'rewrite';
    /** The draw's chances given the bandit after this step (recorded for the per-model table). */
    probabilities: (bandit: BanditState) => Record<string, number>;
  };
}

/**
 * Commits the step, or throws FailedStep (nothing committed) when none of its
 * requests succeeded, or when every evaluation it ran failed on our side (the
 * sandbox, the task's evaluator, a node): such a step says nothing about the
 * model, so it is redone or ends the run as thetaevolve.maxFailedSteps says.
 */
export async function commitStep(input: CommitInput): Promise<CommittedStep> {
  const { plan, ledger, timings, stepStarted, runStarted, state, rng, db, emit } = input;
  const { step } = plan;
  ledger.penaliseLateDuplicates(input.committedSincePlan);
  const slots = ledger.allSlots();
  const failures = summarizeFailures(slots.flatMap((slot) => (slot.kind === 'request_failed' ? [slot.error] : [])));
  if (slots.length > 0 && slots.every((slot) => slot.kind === 'request_failed')) {
    throw new FailedStep(`no request of step ${step} succeeded (${slots.length} failed): ${failureSummaryText(failures)}`);
  }
  const infrastructure = slots.flatMap((slot) => (slot.kind === 'evaluation_failed' ? [slot.reason.split('\n')[0] ?? ''] : []));
  if (infrastructure.length > 0 && !slots.some((slot) => slot.kind === 'scored')) {
    throw new FailedStep(
      `no evaluation of step ${step} could run (${infrastructure.length} failed on our side, not the model's): ${failureSummaryText(summarizeFailures(infrastructure))}`,
    );
  }
  const views = slots.map(viewOfSlot);
  input.tokenIds.check(
    step,
    views.flatMap((v) => (v.response ? [v.response] : [])),
  );
  const finished = Date.now();
  const stats: StepStatistics = stepStatistics({
    step,
    samples: views.map((v) => ({
      outcome: v.outcome,
      score: v.score,
      promptTokens: v.response?.promptTokens ?? 0,
      completionTokens: v.response?.completionTokens ?? 0,
      latencyMs: v.response?.latencyMs ?? null,
    })),
    generationMs: timings.generationMs,
    evaluationMs: timings.evaluationMs,
    totalMs: finished - stepStarted,
  });
  // Recorded with the step, so a run read back from its database shows the time the live run showed.
  stats.elapsedMs = finished - runStarted;
  stats.sessionStartedAt = runStarted;
  const cascade = cascadeCounts(slots.flatMap((slot) => (slot.kind === 'scored' ? [slot.child.metrics] : [])));
  if (cascade) stats.cascade = cascade;
  // Several models: what each did and cost, the bandit's rewards (docs/algorithm.md section 12).
  const models = input.models && input.models.specs.length > 0 ? input.models : null;
  const modelOfSlot = new Map<SlotOutcome, string>();
  if (models) {
    const perModel = modelStepStats(
      plan.jobs.map((job, i) => {
        const jobSlots = ledger.filledSlots(job.key);
        const name = modelOfJob(job, models.specs)?.name;
        if (name !== undefined) for (const slot of jobSlots) modelOfSlot.set(slot, name);
        return { job, parentScore: plan.parents[i]?.score ?? Number.POSITIVE_INFINITY, slots: jobSlots };
      }),
      models.specs,
      models.defaultFormat,
    );
    stats.models = perModel;
    const cost = stepCost(perModel);
    if (cost !== null) stats.costUsd = cost;
  }
  const { children, slotOfChild } = distinctChildren(slots);
  if (input.beforeCommit) await input.beforeCommit({ step, stats, groups: scoredGroups(input, new Map()) }, input.runSignal);
  state.completionTokens += stats.tokens.completion;
  state.rng = rng.state();
  if (stats.costUsd !== undefined) {
    state.costUsd = (state.costUsd ?? 0) + stats.costUsd;
    state.lastStepCostUsd = stats.costUsd;
  }
  if (models && stats.models) {
    state.bandit = updateBandit(state.bandit ?? { pulls: {}, rewards: {} }, stats.models);
    state.modelProbabilities = models.probabilities(state.bandit);
    stats.modelProbabilities = state.modelProbabilities;
  }
  const previousBest = db.best();
  const commit = await db.commitStep({
    step,
    children,
    stats,
    engineState: state,
    parentDraw: plan.draw,
    ...(input.novelty ? { embeddings: () => (input.novelty as NoveltyGate).toStore(db) } : {}),
    // Which model wrote each child, by the id the commit gave it.
    beforeWrite: models
      ? (inserted) => {
          const childModels: Record<string, string> = {};
          inserted.forEach((rec, i) => {
            const slot = slotOfChild.get(children[i] as NewProgram);
            const name = slot ? modelOfSlot.get(slot) : undefined;
            if (name !== undefined) childModels[rec.id] = name;
          });
          stats.childModels = childModels;
        }
      : undefined,
  });
  input.novelty?.afterCommit(step, db);
  const ids = new Map<SlotOutcome, string>();
  commit.inserted.forEach((rec, i) => {
    const slot = slotOfChild.get(children[i] as NewProgram);
    if (slot) ids.set(slot, rec.id);
  });
  const best = db.best();
  const newBest = commit.newBest !== null && (previousBest === null || commit.newBest.score > previousBest.score);
  emit({
    type: 'step_committed',
    time: Date.now(),
    ...stats,
    dbSize: db.size,
    bestEver: best && best.outcome === 'valid' ? best.score : null,
    newBest,
    elapsedMs: finished - runStarted,
    ...(state.costUsd !== undefined ? { runCostUsd: state.costUsd } : {}),
    ...(failures.length > 0 ? { failures } : {}),
  });
  if (newBest && commit.newBest) {
    const b = commit.newBest;
    const slot = [...ids].find(([, id]) => id === b.id)?.[0];
    if (slot?.kind === 'scored' && slot.solution !== null) await keepBestSolution(input.dbFile, b.id, slot.solution, emit);
    emit({ type: 'new_best', time: Date.now(), id: b.id, step, score: b.score, objective: b.objective, parentId: b.parentId });
  }
  return { step, stats, groups: scoredGroups(input, ids) };
}

/**
 * The step's children for the database. Siblings never see each other:
 * identical children of one step are all scored, but only the first enters
 * the database.
 */
function distinctChildren(slots: readonly SlotOutcome[]): { children: NewProgram[]; slotOfChild: Map<NewProgram, ScoredSlot> } {
  const children: NewProgram[] = [];
  const slotOfChild = new Map<NewProgram, ScoredSlot>();
  const hashes = new Set<string>();
  for (const slot of slots) {
    if (slot.kind !== 'scored' || hashes.has(slot.child.codeHash)) continue;
    hashes.add(slot.child.codeHash);
    children.push(slot.child);
    slotOfChild.set(slot.child, slot);
  }
  return { children, slotOfChild };
}

/** The step's groups for the trainer, with the child ids the commit gave (none before it). */
function scoredGroups(
  input: Pick<CommitInput, 'plan' | 'ledger' | 'task' | 'shaping' | 'rewardProcess' | 'models'>,
  ids: ReadonlyMap<SlotOutcome, string>,
): ScoredGroup[] {
  const { plan, ledger, task, shaping, rewardProcess } = input;
  const parentScores = new Map(plan.parents.map((p) => [p.id, p.score]));
  // Several models: the trainer trains one, so only its groups are rollouts; the others stay in the database.
  const trained = input.models && input.models.specs.length > 1 ? input.models.trainedModel : null;
  const jobs = trained === null ? plan.jobs : plan.jobs.filter((job) => job.model === undefined || job.model === trained);
  return jobs.map((job: GenerationJob) => ({
    key: job.key,
    step: plan.step,
    parentId: job.parentId,
    messages: job.messages,
    samples: ledger.filledSlots(job.key).map((slot, index): ScoredSample => {
      const v = viewOfSlot(slot);
      return {
        index,
        outcome: v.outcome,
        score: v.score,
        objective: v.objective,
        reward:
          v.score === null
            ? null
            : rewardOfChild(
                { score: v.score, objective: v.objective },
                parentScores.get(job.parentId) ?? null,
                task.direction,
                shaping,
                rewardProcess,
              ),
        childId: ids.get(slot) ?? null,
        response: v.response,
        error: v.error,
      };
    }),
  }));
}

/** An atropos trainer needs token ids: says once per run when a step's responses carry none, or the trainer receives nothing. */
export class TokenIdsCheck {
  private warned = false;
  private readonly settings: Settings;
  private readonly emit: (event: EngineEvent) => void;

  constructor(settings: Settings, emit: (event: EngineEvent) => void) {
    this.settings = settings;
    this.emit = emit;
  }

  check(step: number, responses: readonly SampleResponse[]): void {
    if (this.warned || !this.settings['trainer.enabled'] || this.settings['trainer.protocol'] !== 'atropos') return;
    if (responses.length === 0 || responses.some((r) => r.tokens)) return;
    this.warned = true;
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
