// Scores, reward shaping and per-step statistics
// (docs/algorithm.md sections 4 and 5).
import type { Settings } from './config';
import type { StepStatistics } from './events';
import { mean, percentileOfSorted } from './stats';
import { type Direction, emptyOutcomeCounts, type Outcome, OUTCOME_PENALTY } from './types';

/** Combined score (higher is better): the objective when maximising, 1/objective when minimising. */
export function combinedScore(objective: number, direction: Direction): number {
  return direction === 'maximize' ? objective : 1 / objective;
}

/** Below every positive combined_score anyone reports, above every penalty: where non-positive ones are ranked. */
const NON_POSITIVE_SCORE_CEILING = 1e-300;

/**
 * The score of a valid objective. Our task.json: combinedScore (a positive
 * objective, 1/objective when minimising). Other systems' folders: their
 * combined_score exactly, higher is better. A valid combined_score of 0 or
 * below cannot keep its value (scores <= 0 are our penalties, -0.4..-0.1):
 * it is ranked in (0, 1e-300], in its own order, below every positive score
 * and above every penalty; the objective keeps the exact value.
 */
export function scoreOfObjective(objective: number, task: { direction: Direction; scoreRule: 'direction' | 'combined_score' }): number {
  if (task.scoreRule === 'direction') return combinedScore(objective, task.direction);
  if (objective > 0) return objective;
  return Math.max(Number.MIN_VALUE, NON_POSITIVE_SCORE_CEILING / (1 - objective));
}

/** The task's own objective back from a valid combined score (for display). */
export function objectiveOfScore(score: number, direction: Direction): number {
  return direction === 'maximize' ? score : 1 / score;
}

/**
 * The task's own objective of a combined score, as people read it everywhere
 * (status bar, Runs view, dashboard): the score itself when maximising,
 * 1/score for a minimise task's valid (positive) score. Penalties (<= 0) have
 * no objective: null.
 */
export function displayObjective(score: number | null, direction: Direction): number | null {
  if (score === null || !Number.isFinite(score)) return null;
  if (direction === 'maximize') return score;
  return score > 0 ? 1 / score : null;
}

/** Whether a combined score is a valid program's (finite and > 0); penalties are < 0. */
export function isValidScore(score: number): boolean {
  return Number.isFinite(score) && score > 0;
}

// ---------------------------------------------------------------------------
// Reward shaping (RL only)

export interface RewardShaping {
  enabled: boolean;
  lower: number;
  upper: number;
  alpha: number;
  k: number;
}

/**
 * R(s) for an objective s in the task's own units: s itself when negative (a
 * penalty) or when shaping is off, else k * clip(H(s), 0, 1)^alpha with
 * H = (s - L) / (U - L) when maximising and (U - s) / (U - L) when minimising.
 */
export function shapeReward(s: number, direction: Direction, shaping: RewardShaping): number {
  if (s < 0 || !shaping.enabled) return s;
  const range = shaping.upper - shaping.lower;
  if (!(range > 0)) throw new RangeError(`reward shaping needs upper > lower (got L ${shaping.lower}, U ${shaping.upper})`);
  const h = direction === 'maximize' ? (s - shaping.lower) / range : (shaping.upper - s) / range;
  const clipped = Math.min(1, Math.max(0, h));
  return shaping.k * clipped ** shaping.alpha;
}

/**
 * The reward of one scored sample: penalties pass through; a valid child is
 * shaped from its objective when shaping is on, else its combined score is
 * the reward.
 */
export function rewardOfSample(sample: { score: number; objective: number | null }, direction: Direction, shaping: RewardShaping): number {
  if (sample.score < 0 || !shaping.enabled || sample.objective === null) return sample.score;
  return shapeReward(sample.objective, direction, shaping);
}

export type RewardProcess = Settings['rewardShaping.process'];

/** The release's format errors (error_constants.py FORMAT_ERRORS): no diff, no valid change (a duplicate is scored as one). */
const FORMAT_PENALTIES: readonly number[] = [OUTCOME_PENALTY.no_diff, OUTCOME_PENALTY.no_change];
/** The release gym's bounds on a reward, and what a reward that is no number becomes (evolving_gym_rm.py). */
const RELEASE_REWARD_BOUND = 10;
const RELEASE_LOW_REWARD = -1;
/** improve_reward: a child improves on its parent by more than this. */
const IMPROVE_EPSILON = 1e-6;

function releaseSanitised(reward: number): number {
  if (!Number.isFinite(reward)) return RELEASE_LOW_REWARD;
  return Math.min(RELEASE_REWARD_BOUND, Math.max(-RELEASE_REWARD_BOUND, reward));
}

/**
 * The reward of one scored child under `rewardShaping.process`: 'task' is
 * rewardOfSample; the others are the ThetaEvolve release's reward processes
 * (docs/algorithm.md section 5), computed from the same score, objective and
 * the parent's score. Penalties are negative in all of them.
 */
export function rewardOfChild(
  sample: { score: number; objective: number | null },
  parentScore: number | null,
  direction: Direction,
  shaping: RewardShaping,
  process: RewardProcess,
): number {
  const { score } = sample;
  switch (process) {
    case 'task':
      return rewardOfSample(sample, direction, shaping);
    case 'original_reward':
      return releaseSanitised(score);
    case 'rl_normalized_reward':
      return releaseSanitised(rewardOfSample(sample, direction, { ...shaping, enabled: true }));
    case 'format_reward':
      return FORMAT_PENALTIES.includes(score) ? score : 1;
    case 'validation_reward':
      return score < 0 ? score : 1;
    case 'improve_reward':
      if (score < 0) return score;
      return score > (parentScore ?? RELEASE_LOW_REWARD) + IMPROVE_EPSILON ? 1 : 0;
  }
}

/** The shaping a run uses: the task's, switched on/off by `rewardShaping.mode`, parameters overridden on request. */
export function resolveRewardShaping(
  settings: Pick<
    Settings,
    | 'rewardShaping.mode'
    | 'rewardShaping.lower'
    | 'rewardShaping.upper'
    | 'rewardShaping.alpha'
    | 'rewardShaping.scale'
    | 'rewardShaping.override'
  >,
  task: RewardShaping,
): RewardShaping {
  const mode = settings['rewardShaping.mode'];
  const enabled = mode === 'task' ? task.enabled : mode === 'on';
  if (!settings['rewardShaping.override']) return { ...task, enabled };
  return {
    enabled,
    lower: settings['rewardShaping.lower'],
    upper: settings['rewardShaping.upper'],
    alpha: settings['rewardShaping.alpha'],
    k: settings['rewardShaping.scale'],
  };
}

/**
 * GRPO advantages within one group: (r - mean) / (std + 1e-6). The std is
 * the sample standard deviation (n - 1), as torch's default in slime; a group
 * of one has advantage 0.
 */
export function groupAdvantages(rewards: readonly number[], options: { unbiasedStd?: boolean; epsilon?: number } = {}): number[] {
  const n = rewards.length;
  if (n === 0) return [];
  const m = mean(rewards);
  const dof = options.unbiasedStd === false ? n : n - 1;
  if (dof <= 0) return rewards.map(() => 0);
  const variance = rewards.reduce((acc, r) => acc + (r - m) ** 2, 0) / dof;
  const std = Math.sqrt(variance);
  const eps = options.epsilon ?? 1e-6;
  return rewards.map((r) => (r - m) / (std + eps));
}

// ---------------------------------------------------------------------------
// Per-step statistics

export interface StepSampleRecord {
  outcome: Outcome;
  /** null for request_failed. */
  score: number | null;
  promptTokens: number;
  completionTokens: number;
  /** Request latency of the response (null for a request that failed). */
  latencyMs: number | null;
}

function finiteOrNull(x: number): number | null {
  return Number.isFinite(x) ? x : null;
}

/** Statistics of one step for the step_committed event, `run --json` and the dashboard. */
export function stepStatistics(input: {
  step: number;
  samples: readonly StepSampleRecord[];
  generationMs: number;
  evaluationMs: number;
  totalMs: number;
}): StepStatistics {
  const counts = emptyOutcomeCounts();
  const valid: number[] = [];
  const scored: number[] = [];
  let promptTokens = 0;
  let completionTokens = 0;
  for (const s of input.samples) {
    counts[s.outcome]++;
    promptTokens += s.promptTokens;
    completionTokens += s.completionTokens;
    if (s.score !== null && Number.isFinite(s.score)) {
      scored.push(s.score);
      if (s.outcome === 'valid') valid.push(s.score);
    }
  }
  const sorted = [...valid].sort((a, b) => a - b);
  const latencies = input.samples
    .flatMap((s) => (s.latencyMs !== null && Number.isFinite(s.latencyMs) ? [s.latencyMs] : []))
    .sort((a, b) => a - b);
  const totalMs = Math.max(0, input.totalMs);
  return {
    step: input.step,
    samples: input.samples.length,
    counts,
    best: sorted.length > 0 ? (sorted[sorted.length - 1] as number) : null,
    mean: finiteOrNull(mean(valid)),
    p10: finiteOrNull(percentileOfSorted(sorted, 10)),
    p50: finiteOrNull(percentileOfSorted(sorted, 50)),
    p90: finiteOrNull(percentileOfSorted(sorted, 90)),
    meanAll: finiteOrNull(mean(scored)),
    tokens: { prompt: promptTokens, completion: completionTokens },
    timings: { generationMs: Math.max(0, input.generationMs), evaluationMs: Math.max(0, input.evaluationMs), totalMs },
    samplesPerSecond: totalMs > 0 ? (input.samples.length * 1000) / totalMs : 0,
    latencyMsP50: finiteOrNull(percentileOfSorted(latencies, 50)),
    latencyMsP95: finiteOrNull(percentileOfSorted(latencies, 95)),
  };
}
