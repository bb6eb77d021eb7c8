// What the loop persists with each committed step beside the programs: the
// step generator's state (a redone step draws the same parents and prompts)
// and the completion tokens spent so far (settings.maxTotalTokens).
import type { RngState } from '../common/rng';
import type { BanditState } from '../llm/models/modelChoice';

export interface EngineState {
  rng: RngState;
  completionTokens: number;
  /** US dollars spent so far (priced models; thetaevolve.maxCostUsd). Absent before a priced reply. */
  costUsd?: number;
  /** What the last committed step cost: the estimate of the next one (a step that would pass the budget is not started). */
  lastStepCostUsd?: number;
  /** The UCB bandit's counts (several models): a resumed run draws as the uninterrupted one would. */
  bandit?: BanditState;
  /** The chance of each model at the next step's draws (shown per model; several models only). */
  modelProbabilities?: Record<string, number>;
}

export function isEngineState(value: unknown): value is EngineState {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return Array.isArray(v.rng) && v.rng.length === 4 && v.rng.every((w) => typeof w === 'number') && typeof v.completionTokens === 'number';
}
