// A run's spend and its per-model table, read back from its database
// (docs/algorithm.md section 12, "Several models and cost"): each step's
// statistics hold what each model did and cost; the engine state holds the
// run's spend and the draw's probabilities for the next step.
import { modelTable, type ModelStats, type ModelUsage, StepModelFieldsSchema, sumModelStats } from '../common/models';

const StepModelsSchema = StepModelFieldsSchema.pick({ models: true, costUsd: true });
/** The engine state's part: the run's spend so far and the next draw's chances. */
const EngineCostSchema = StepModelFieldsSchema.pick({ costUsd: true, modelProbabilities: true });

export type { ModelUsage } from '../common/models';

/** What a database's steps and engine state say of the run's models and spend. */
export function modelUsageOf(steps: readonly { stats: unknown }[], engineState: unknown): ModelUsage {
  const perStep: (Record<string, ModelStats> | undefined)[] = [];
  let stepCosts: number | null = null;
  for (const { stats } of steps) {
    const parsed = StepModelsSchema.safeParse(stats);
    if (!parsed.success) continue;
    perStep.push(parsed.data.models);
    if (parsed.data.costUsd !== undefined) stepCosts = (stepCosts ?? 0) + parsed.data.costUsd;
  }
  const state = EngineCostSchema.safeParse(engineState);
  const costUsd = state.success && state.data.costUsd !== undefined ? state.data.costUsd : stepCosts;
  const probabilities = state.success ? (state.data.modelProbabilities ?? {}) : {};
  return { costUsd, models: modelTable(sumModelStats(perStep), probabilities) };
}
