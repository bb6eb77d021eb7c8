// What a run database says of its operators (docs/algorithm.md section 12),
// for `thetaevolve db`: the operator settings it recorded, the cascade's
// stage counts summed over its steps, and the model's meta-recommendations.
// Empty for the paper's loop.
import { z } from 'zod';
import { forDisplay } from '../common/displayText';
import type { RecommendationsVersion } from '../common/steering';
import type { ProgramDatabase } from '../database/programDatabase';
import { OPERATORS_META_KEY } from './recorded';

const CascadeOfStep = z.object({ cascade: z.record(z.string(), z.number()) });

export interface OperatorReport {
  operators?: Record<string, unknown>;
  /** Evaluated children that stopped at each stage of the cascade, over the whole run. */
  cascade?: Record<string, number>;
  /** Every meta-recommendations version, oldest first: written by the model after `afterStep`, edited by `editedBy` (null: nobody); text null where removed. */
  recommendations?: RecommendationsVersion[];
}

export function operatorReport(db: ProgramDatabase): OperatorReport {
  const out: OperatorReport = {};
  const recorded = db.meta()[OPERATORS_META_KEY];
  if (recorded !== null && typeof recorded === 'object') out.operators = { ...(recorded as Record<string, unknown>) };
  for (const { stats } of db.steps()) {
    const parsed = CascadeOfStep.safeParse(stats);
    if (!parsed.success) continue;
    out.cascade ??= {};
    for (const [stage, n] of Object.entries(parsed.data.cascade)) out.cascade[stage] = (out.cascade[stage] ?? 0) + n;
  }
  const recommendations = db.recommendationsHistory();
  if (recommendations.length > 0) out.recommendations = recommendations;
  return out;
}

/** The report's lines for people (none for the paper's loop). */
export function operatorReportLines(report: OperatorReport): string[] {
  const lines: string[] = [];
  if (report.operators && Object.keys(report.operators).length > 0)
    lines.push(
      `  operators     ${Object.entries(report.operators)
        .map(([key, value]) => `${key}=${String(value)}`)
        .join(', ')}`,
    );
  if (report.cascade)
    lines.push(
      `  cascade       ${Object.entries(report.cascade)
        .map(([stage, n]) => `${n} stopped at stage ${stage}`)
        .join(', ')}`,
    );
  const recommendations = report.recommendations?.at(-1);
  if (recommendations) {
    const who = `by the model${recommendations.afterStep !== null ? ` after step ${recommendations.afterStep}` : ''}${recommendations.editedBy ? `, edited by the ${recommendations.editedBy}` : ''}`;
    lines.push(
      recommendations.text === null
        ? `  recommendations removed at step ${recommendations.step}`
        : `  recommendations ${who}, from step ${recommendations.step}: ${forDisplay(recommendations.text).split('\n')[0]}`,
    );
  }
  return lines;
}
