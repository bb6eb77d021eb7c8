// Several models (docs/algorithm.md section 12, "Several models and cost"):
// the shape of one entry of thetaevolve.models, what a step records per model
// (samples, valid, improvements, tokens, cost, outcome counts) and the sum of
// those over a run. Browser-safe: the dashboard and Compare Runs read them.
import { z } from 'zod';
import { forDisplay } from './displayText';
import { OUTCOMES, type Outcome } from './types';

const finite = z.number().finite();
const count = z.number().int().min(0);
const price = z
  .number({ message: 'a price must be a number (US dollars per million tokens)' })
  .finite()
  .min(0, 'a price cannot be negative');

export const EDIT_FORMATS = ['diff', 'rewrite'] as const;
export type EditFormat = (typeof EDIT_FORMATS)[number];

/**
 * One model of thetaevolve.models. A weighted list of the release's configs
 * (`llm.models: [{name, weight}]`) is this list as it is.
 */
export const ModelSpecSchema = z
  .object({
    name: z.string().trim().min(1, 'a model needs a name'),
    /** Base URL(s) of its server; default thetaevolve.endpoint. */
    endpoint: z.string().trim().min(1).optional(),
    /** Relative weight of the draw; default 1. */
    weight: z.number({ message: 'a weight must be a number' }).finite().min(0, 'a weight cannot be below 0').optional(),
    /** The environment variable (CLI) or stored secret (editor) holding its API key; default the run's key. */
    apiKeyName: z.string().trim().min(1).optional(),
    mode: z.enum(EDIT_FORMATS).optional(),
    pricePerMillionInput: price.optional(),
    pricePerMillionOutput: price.optional(),
    maxTokens: z.number().int().min(1).max(1048576).optional(),
    temperature: z.number().finite().min(0).max(2).optional(),
  })
  .strict();
export type ModelSpec = z.infer<typeof ModelSpecSchema>;

/** The list: names unique, at least one positive weight (a list of zeros could never draw). */
export const ModelListSchema = z.array(ModelSpecSchema).superRefine((models, ctx) => {
  const seen = new Set<string>();
  for (const [i, m] of models.entries()) {
    if (seen.has(m.name)) ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `the model "${m.name}" is listed twice` });
    seen.add(m.name);
  }
  if (models.length > 0 && !models.some((m) => (m.weight ?? 1) > 0))
    ctx.addIssue({ code: 'custom', path: [], message: 'every weight is 0: at least one model needs a positive weight' });
});

/** What one model did in one step (or, summed, in a run). */
export const ModelStatsSchema = z.object({
  /** Samples it was asked for, request failures included. */
  samples: count,
  /** Children that scored valid. */
  valid: count,
  /** Children that scored above their parent (the bandit's reward). */
  improvements: count,
  /** Samples that had a reward (a scored child or an early rejection; failures on our side have none). */
  rewarded: count,
  promptTokens: count,
  completionTokens: count,
  /** Tokens counted from the text because the server sent no usage. */
  estimatedTokens: count,
  /** null: the model has no price (tokens only). */
  costUsd: finite.min(0).nullable(),
  editFormat: z.enum(EDIT_FORMATS),
  counts: z.object(Object.fromEntries(OUTCOMES.map((o) => [o, count])) as Record<Outcome, typeof count>).partial(),
});
export type ModelStats = z.infer<typeof ModelStatsSchema>;

/**
 * What a step records of its models (a step's statistics), and what the
 * engine state keeps of them (costUsd: the run's so far; modelProbabilities:
 * the next draw's). One shape for events, the database and the dashboard.
 */
export const StepModelFieldsSchema = z.object({
  /** Several models (thetaevolve.models): what each did in the step. Absent with one model and in older databases. */
  models: z.record(z.string(), ModelStatsSchema).optional(),
  /** Which model wrote each child the step added, by child id (several models only). */
  childModels: z.record(z.string(), z.string()).optional(),
  /** US dollars the step's replies cost (priced models only); absent when no model has a price. */
  costUsd: finite.min(0).optional(),
  /** The chance of each model at the next step's draws, after this step (several models only). */
  modelProbabilities: z.record(z.string(), finite).optional(),
});
export type StepModelFields = z.infer<typeof StepModelFieldsSchema>;

export function emptyModelStats(editFormat: EditFormat): ModelStats {
  return {
    samples: 0,
    valid: 0,
    improvements: 0,
    rewarded: 0,
    promptTokens: 0,
    completionTokens: 0,
    estimatedTokens: 0,
    costUsd: null,
    editFormat,
    counts: {},
  };
}

/** Adds b into a (costs: null only while neither has one). */
export function addModelStats(a: ModelStats, b: ModelStats): ModelStats {
  const counts: Partial<Record<Outcome, number>> = { ...a.counts };
  for (const [o, n] of Object.entries(b.counts) as [Outcome, number][]) counts[o] = (counts[o] ?? 0) + n;
  return {
    samples: a.samples + b.samples,
    valid: a.valid + b.valid,
    improvements: a.improvements + b.improvements,
    rewarded: a.rewarded + b.rewarded,
    promptTokens: a.promptTokens + b.promptTokens,
    completionTokens: a.completionTokens + b.completionTokens,
    estimatedTokens: a.estimatedTokens + b.estimatedTokens,
    costUsd: a.costUsd === null && b.costUsd === null ? null : (a.costUsd ?? 0) + (b.costUsd ?? 0),
    editFormat: b.editFormat,
    counts,
  };
}

/** Whether the model has a price (either direction). */
export function hasPrice(model: Pick<ModelSpec, 'pricePerMillionInput' | 'pricePerMillionOutput'>): boolean {
  return model.pricePerMillionInput !== undefined || model.pricePerMillionOutput !== undefined;
}

/** US dollars of one reply: its tokens times the model's prices per million; null without a price. */
export function costOfTokens(model: ModelSpec, promptTokens: number, completionTokens: number): number | null {
  if (!hasPrice(model)) return null;
  return (promptTokens * (model.pricePerMillionInput ?? 0) + completionTokens * (model.pricePerMillionOutput ?? 0)) / 1e6;
}

/** One row of the per-model table (db --json, report, dashboard, Compare Runs). */
export const ModelTableRowSchema = ModelStatsSchema.extend({
  name: z.string(),
  /** Share of the samples that scored valid (0..1), null without samples. */
  validShare: finite.nullable(),
  /** improvements / rewarded, null before any. */
  meanReward: finite.nullable(),
  /** The chance the next draw picks it (weights or bandit), null when not known. */
  probability: finite.nullable(),
});
export type ModelTableRow = z.infer<typeof ModelTableRowSchema>;

/** A run's spend and its per-model table (db --json, report, Compare Runs, the dashboard). */
export const ModelUsageSchema = z.object({
  /** US dollars the run's replies cost; null when no model has a price. */
  costUsd: finite.min(0).nullable(),
  /** One row per model (empty for a one-model run). */
  models: z.array(ModelTableRowSchema),
});
export type ModelUsage = z.infer<typeof ModelUsageSchema>;

/** Per-model rows from the summed stats and the current draw probabilities. */
export function modelTable(totals: Readonly<Record<string, ModelStats>>, probabilities: Readonly<Record<string, number>>): ModelTableRow[] {
  const names = [...new Set([...Object.keys(probabilities), ...Object.keys(totals)])];
  return names.map((name) => {
    const s = totals[name] ?? emptyModelStats('diff');
    return {
      name,
      ...s,
      validShare: s.samples > 0 ? s.valid / s.samples : null,
      meanReward: s.rewarded > 0 ? s.improvements / s.rewarded : null,
      probability: probabilities[name] ?? null,
    };
  });
}

/** Per-model stats summed over steps. */
export function sumModelStats(steps: readonly (Readonly<Record<string, ModelStats>> | undefined)[]): Record<string, ModelStats> {
  const totals: Record<string, ModelStats> = {};
  for (const step of steps) {
    if (!step) continue;
    for (const [name, s] of Object.entries(step)) totals[name] = addModelStats(totals[name] ?? emptyModelStats(s.editFormat), s);
  }
  return totals;
}

/** With RL on and several models, what the trainer receives (CLI and dashboard); `trained` null: not known here. */
export function trainedModelOnlyText(trained: string | null): string {
  const whose = trained === null ? 'thetaevolve.trainer.model (default the first model)' : forDisplay(trained);
  return `RL on: only the rollouts of ${whose} go to the trainer; the other models' children stay in the database only.`;
}

/** The model the trainer trains: thetaevolve.trainer.model, else the first of thetaevolve.models. */
export function trainedModelOf(settings: { 'trainer.model': string; models: readonly { name: string }[] }): string {
  return settings['trainer.model'] || (settings.models[0]?.name ?? '');
}

/** Dollars for people: cents above a dollar, four significant digits below ("$12.34", "$0.004321"). */
export function formatUsd(usd: number): string {
  if (!Number.isFinite(usd)) return '$?';
  return usd >= 1 ? `$${usd.toFixed(2)}` : `$${Number(usd.toPrecision(4))}`;
}

const percent = (x: number | null): string => (x === null ? '-' : `${Math.round(x * 100)}%`);

/** The per-model table's columns, for the CLI's text, the report, the dashboard and Compare Runs alike. */
export const MODEL_TABLE_HEADER = ['model', 'format', 'samples', 'valid', 'improved', 'reward', 'tokens', 'cost', 'next draw'] as const;

/** One row's cells, in MODEL_TABLE_HEADER's order (the name through forDisplay). */
export function modelTableCells(r: ModelTableRow): string[] {
  return [
    forDisplay(r.name),
    r.editFormat,
    String(r.samples),
    percent(r.validShare),
    String(r.improvements),
    r.meanReward === null ? '-' : r.meanReward.toFixed(3),
    `${r.promptTokens + r.completionTokens}${r.estimatedTokens > 0 ? ' (est.)' : ''}`,
    r.costUsd === null ? 'no price' : formatUsd(r.costUsd),
    percent(r.probability),
  ];
}

/** The per-model table as text lines (CLI `db`, the report's plain form); none for a one-model run. */
export function modelTableLines(rows: readonly ModelTableRow[]): string[] {
  if (rows.length === 0) return [];
  const header: readonly string[] = MODEL_TABLE_HEADER;
  const body = rows.map(modelTableCells);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => (row[i] as string).length)));
  return [header, ...body].map((row) =>
    row
      .map((cell, i) => cell.padEnd(widths[i] as number))
      .join('  ')
      .trimEnd(),
  );
}
