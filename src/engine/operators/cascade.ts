// A cascade of evaluator stages (docs/algorithm.md section 12; OpenEvolve's
// evaluate_stage1/2/3 with cascade_thresholds): cheaper stages run first, and a
// solution scoring under a stage's threshold stops there, scored by what that
// stage reported, so the full evaluator only runs on promising solutions.
import type { EvaluationResult } from '../common/types';

/**
 * The metric saying which stage (1-based) a solution's result comes from, of how many: "1 of 2". Ours, not the
 * evaluator's: a text, so that whoever averages the numeric metrics (as OpenEvolve ranks a folder without
 * combined_score) gets the evaluator's numbers only (docs/algorithm.md section 12).
 */
export const CASCADE_STAGE_METRIC = 'cascade_stage';

/** The metric's value: stage `stage` of `stages`. */
export function cascadeStageText(stage: number, stages: number): string {
  return `${stage} of ${stages}`;
}

/** The stage a metric value names: "2 of 3", or a number (runs of earlier versions stored it so); null for anything else. */
export function cascadeStageOf(value: unknown): number | null {
  if (typeof value === 'number') return Number.isInteger(value) && value >= 1 ? value : null;
  const match = typeof value === 'string' ? /^(\d+) of \d+$/.exec(value) : null;
  return match ? Number(match[1]) : null;
}

export interface CascadeStage {
  command: readonly string[];
  threshold: number;
}

/**
 * Runs `stages` then `finalCommand` through `score` until one stops the
 * solution: a stage whose result is not `ok` or scores under its threshold.
 * Without stages, `score(finalCommand)` unchanged. Metrics of the stages run
 * are merged (later stages win) and say the stage reached.
 */
export async function scoreThroughCascade(
  stages: readonly CascadeStage[],
  finalCommand: readonly string[],
  score: (command: readonly string[]) => Promise<EvaluationResult>,
): Promise<EvaluationResult> {
  if (stages.length === 0) return score(finalCommand);
  const total = stages.length + 1;
  let metrics: EvaluationResult['metrics'] = {};
  const reached = (result: EvaluationResult, stage: number): EvaluationResult => ({
    ...result,
    metrics: { ...metrics, ...result.metrics, [CASCADE_STAGE_METRIC]: cascadeStageText(stage, total) },
  });
  for (const [i, stage] of stages.entries()) {
    const result = await score(stage.command);
    if (result.status !== 'ok' || result.score < stage.threshold) return reached(result, i + 1);
    metrics = { ...metrics, ...result.metrics };
  }
  return reached(await score(finalCommand), total);
}

/** How many of a step's scored children stopped at each stage ("1", "2", ...); null when none went through a cascade. */
export function cascadeCounts(metricsOfChildren: Iterable<Readonly<Record<string, unknown>>>): Record<string, number> | null {
  let counts: Record<string, number> | null = null;
  for (const metrics of metricsOfChildren) {
    const stage = cascadeStageOf(metrics[CASCADE_STAGE_METRIC]);
    if (stage === null) continue;
    counts ??= {};
    counts[String(stage)] = (counts[String(stage)] ?? 0) + 1;
  }
  return counts;
}
