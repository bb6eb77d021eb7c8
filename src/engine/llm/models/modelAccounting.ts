// What each model did in a step and what its replies cost (docs/algorithm.md
// section 12, "Several models and cost"): samples, valid children,
// improvements on their parents (the bandit's reward), tokens from each
// reply's usage (or counted from the text), dollars from the model's prices.
import { costOfTokens, emptyModelStats, type ModelSpec, type ModelStats } from '../../common/models';
import type { GenerationJob, SampleResponse } from '../../common/types';
import type { SlotOutcome } from '../../step/ledger';

/** One job's slots and its parent's score. */
export interface JobSlots {
  job: GenerationJob;
  parentScore: number;
  slots: readonly SlotOutcome[];
}

/** The model a job's responses came from: the drawn one, else the run's single model. */
export function modelOfJob(job: GenerationJob, models: readonly ModelSpec[]): ModelSpec | null {
  return (job.model !== undefined ? models.find((m) => m.name === job.model) : models[0]) ?? null;
}

function responseOf(slot: SlotOutcome): SampleResponse | null {
  return slot.kind === 'request_failed' ? null : slot.response;
}

/** Per-model statistics of a step (keyed by model name). */
export function modelStepStats(
  jobs: readonly JobSlots[],
  models: readonly ModelSpec[],
  defaultFormat: 'diff' | 'rewrite',
): Record<string, ModelStats> {
  const out: Record<string, ModelStats> = {};
  for (const { job, parentScore, slots } of jobs) {
    const model = modelOfJob(job, models);
    if (!model) continue;
    const stats = (out[model.name] ??= emptyModelStats(job.editFormat ?? model.mode ?? defaultFormat));
    for (const slot of slots) {
      stats.samples++;
      const outcome = slot.kind === 'scored' ? slot.child.outcome : slot.kind === 'rejected_early' ? slot.outcome : slot.kind;
      stats.counts[outcome] = (stats.counts[outcome] ?? 0) + 1;
      if (slot.kind === 'scored' || slot.kind === 'rejected_early') {
        stats.rewarded++;
        if (slot.kind === 'scored' && slot.child.outcome === 'valid') {
          stats.valid++;
          if (slot.child.score > parentScore) stats.improvements++;
        }
      }
      const response = responseOf(slot);
      if (!response) continue;
      const prompt = response.billedPromptTokens ?? response.promptTokens;
      stats.promptTokens += prompt;
      stats.completionTokens += response.completionTokens;
      if (response.usageEstimated) stats.estimatedTokens += prompt + response.completionTokens;
      const cost = costOfTokens(model, prompt, response.completionTokens);
      if (cost !== null) stats.costUsd = (stats.costUsd ?? 0) + cost;
    }
  }
  return out;
}

/** Dollars of a step over its models; null when none has a price. */
export function stepCost(stats: Readonly<Record<string, ModelStats>>): number | null {
  const costs = Object.values(stats).flatMap((s) => (s.costUsd === null ? [] : [s.costUsd]));
  return costs.length === 0 ? null : costs.reduce((a, c) => a + c, 0);
}
