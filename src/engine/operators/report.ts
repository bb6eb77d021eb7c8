// What a run database says of its operators (docs/algorithm.md section 12),
// for `thetaevolve db`: the operator settings it recorded, and the cascade's
// stage counts summed over its steps. Empty for the paper's loop.
import { z } from 'zod';
import type { ProgramDatabase } from '../database/programDatabase';
import { OPERATORS_META_KEY } from './recorded';

const CascadeOfStep = z.object({ cascade: z.record(z.string(), z.number()) });

export interface OperatorReport {
  operators?: Record<string, unknown>;
  /** Evaluated children that stopped at each stage of the cascade, over the whole run. */
  cascade?: Record<string, number>;
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
  return lines;
}
