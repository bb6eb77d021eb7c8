// Which model writes a prompt's responses (docs/algorithm.md section 12,
// "Several models and cost"): drawn by weight from the step's generator, or
// by a UCB bandit over whether each model's children improved on their
// parents. The bandit's state is part of the engine state committed with
// each step, so a resumed run draws exactly as the uninterrupted one would.
import type { ModelSpec, ModelStats } from '../../common/models';
import type { Rng } from '../../common/rng';

export type ModelSelection = 'weights' | 'ucb';

/** Per model: rewarded samples and the improvements among them. */
export interface BanditState {
  pulls: Record<string, number>;
  rewards: Record<string, number>;
}

export function emptyBanditState(): BanditState {
  return { pulls: {}, rewards: {} };
}

export function isBanditState(value: unknown): value is BanditState {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  const numbers = (x: unknown) =>
    typeof x === 'object' && x !== null && Object.values(x).every((n) => typeof n === 'number' && Number.isFinite(n));
  return numbers(v.pulls) && numbers(v.rewards);
}

/** The exploration weight of UCB1 (rewards are 0 or 1). */
const EXPLORATION = Math.SQRT2;
/** How sharply the bandit's probabilities follow its UCB scores (a score 0.1 higher: e times likelier). */
const TEMPERATURE = 0.1;

export class ModelChoice {
  constructor(
    readonly models: readonly ModelSpec[],
    readonly selection: ModelSelection,
  ) {}

  /** The models a draw may pick: a weight of 0 switches a model off. */
  private get drawable(): ModelSpec[] {
    return this.models.filter((m) => (m.weight ?? 1) > 0);
  }

  /**
   * The chance of each model at the next draw. Weights: proportional to them.
   * UCB: models never rewarded first (evenly); then a softmax of each
   * model's mean reward plus sqrt(2 ln N / n_i).
   */
  probabilities(bandit: BanditState): Record<string, number> {
    const models = this.drawable;
    const out: Record<string, number> = Object.fromEntries(this.models.map((m) => [m.name, 0]));
    if (this.selection === 'weights') {
      const total = models.reduce((a, m) => a + (m.weight ?? 1), 0);
      for (const m of models) out[m.name] = (m.weight ?? 1) / total;
      return out;
    }
    const unseen = models.filter((m) => (bandit.pulls[m.name] ?? 0) === 0);
    if (unseen.length > 0) {
      for (const m of unseen) out[m.name] = 1 / unseen.length;
      return out;
    }
    const total = models.reduce((a, m) => a + (bandit.pulls[m.name] ?? 0), 0);
    const scores = models.map((m) => {
      const n = bandit.pulls[m.name] ?? 0;
      return (bandit.rewards[m.name] ?? 0) / n + EXPLORATION * Math.sqrt(Math.log(total) / n);
    });
    const top = Math.max(...scores);
    const weights = scores.map((u) => Math.exp((u - top) / TEMPERATURE));
    const sum = weights.reduce((a, w) => a + w, 0);
    models.forEach((m, i) => (out[m.name] = (weights[i] as number) / sum));
    return out;
  }

  /**
   * One model for a prompt. With a single model nothing is drawn, so the
   * generator is left exactly as a one-model run leaves it.
   */
  draw(rng: Rng, probabilities: Readonly<Record<string, number>>): ModelSpec {
    const models = this.drawable;
    if (models.length === 1) return models[0] as ModelSpec;
    return models[rng.weightedIndex(models.map((m) => probabilities[m.name] ?? 0))] as ModelSpec;
  }
}

/** The bandit after a committed step: each model's rewarded samples and improvements added. */
export function updateBandit(bandit: BanditState, step: Readonly<Record<string, ModelStats>>): BanditState {
  const next: BanditState = { pulls: { ...bandit.pulls }, rewards: { ...bandit.rewards } };
  for (const [name, s] of Object.entries(step)) {
    next.pulls[name] = (next.pulls[name] ?? 0) + s.rewarded;
    next.rewards[name] = (next.rewards[name] ?? 0) + s.improvements;
  }
  return next;
}
