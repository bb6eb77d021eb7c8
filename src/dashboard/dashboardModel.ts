// Data shaping for the dashboard (pure; the extension host runs it, the page
// only draws): per-step points in the task's own objective, bucketing so a
// 1,000+ step run stays a few hundred points, MAP-Elites heat-map binning,
// the score histogram, and the model that turns engine inputs into the
// protocol's snapshot and incremental messages.
import { describePythonEnvironment } from '../engine/common/pythonEnvironment';
import { type ModelStats, type ModelUsage, modelTable, sumModelStats } from '../engine/common/models';
import {
  type BackendView,
  type BestView,
  type DashboardBestInput,
  type DashboardDatabaseInput,
  type DashboardRunInput,
  type DashboardState,
  type DashboardStepInput,
  type DatabaseView,
  emptyDashboardState,
  HEAT_EMPTY,
  HEAT_PENALTY,
  HEAT_SHADES,
  type HostMessage,
  type ObjectiveStats,
  OUTCOME_GROUPS,
  type RunStateView,
  type RunView,
  type SeriesPoint,
  type SeriesView,
  type SummaryView,
  type TrainerView,
} from '../protocol/dashboardMessages';
import type { TrainerStateEvent } from '../engine/common/events';
import { displayObjective } from '../engine/common/scoring';
import { mean, percentileOfSorted } from '../engine/common/stats';
import { type Direction, evaluatedCount } from '../engine/common/types';
import { programName, programNameDetail } from '../engine/common/format';

/** Points kept per series before the bucket width doubles (1,000 steps draw as 250 points of 4 steps). */
export const DEFAULT_MAX_POINTS = 300;
/** Heat-map cells per side at most; finer MAP-Elites grids are merged (best score per merged cell). */
export const DEFAULT_MAX_HEAT_BINS = 32;
export const HISTOGRAM_BINS = 30;

// ---------------------------------------------------------------------------
// Objective display

export function directionLabel(direction: Direction): string {
  return direction === 'minimize' ? 'minimise (lower is better)' : 'maximise (higher is better)';
}

export { displayObjective };

/** Whether objective `a` is better than `b` in the task's direction. */
export function isBetterObjective(a: number, b: number, direction: Direction): boolean {
  return direction === 'maximize' ? a > b : a < b;
}

function betterOf(a: number | null, b: number | null, direction: Direction): number | null {
  if (a === null) return b;
  if (b === null) return a;
  return isBetterObjective(a, b, direction) ? a : b;
}

/** Best, mean and 10/50/90th percentiles of valid objective values (the host can send these per step). */
export function objectiveStats(values: readonly number[], direction: Direction): ObjectiveStats {
  const finite = values.filter((v) => Number.isFinite(v));
  if (finite.length === 0) return { best: null, mean: null, p10: null, p50: null, p90: null };
  const sorted = [...finite].sort((a, b) => a - b);
  return {
    best: direction === 'maximize' ? (sorted[sorted.length - 1] as number) : (sorted[0] as number),
    mean: mean(sorted),
    p10: percentileOfSorted(sorted, 10),
    p50: percentileOfSorted(sorted, 50),
    p90: percentileOfSorted(sorted, 90),
  };
}

/**
 * A step's valid-sample statistics in the task's objective. With the host's
 * exact objective statistics they are used as they are. Otherwise they come
 * from the score statistics: for a minimise task 1/x reverses order, so the
 * objective's p10 is 1/(score p90); the mean becomes 1/(mean score), the
 * harmonic mean of the objectives (`meanExact` false).
 */
export function stepObjectiveStats(
  input: Pick<DashboardStepInput, 'best' | 'mean' | 'p10' | 'p50' | 'p90' | 'objective'>,
  direction: Direction,
): ObjectiveStats & { meanExact: boolean } {
  if (input.objective) return { ...input.objective, meanExact: true };
  const o = (score: number | null): number | null => displayObjective(score, direction);
  if (direction === 'maximize') {
    return { best: o(input.best), mean: o(input.mean), p10: o(input.p10), p50: o(input.p50), p90: o(input.p90), meanExact: true };
  }
  return { best: o(input.best), mean: o(input.mean), p10: o(input.p90), p50: o(input.p50), p90: o(input.p10), meanExact: false };
}

// ---------------------------------------------------------------------------
// Series points and bucketing

export function outcomeGroupCounts(counts: DashboardStepInput['counts']): number[] {
  return OUTCOME_GROUPS.map((g) => g.outcomes.reduce((sum: number, o) => sum + counts[o], 0));
}

function evaluationsOf(input: DashboardStepInput): number {
  if (input.evaluations !== undefined) return input.evaluations;
  return evaluatedCount(input.counts);
}

/** One step as a series point (a bucket of one), in the task's objective; `policyChange`: the policy version that took over with it. */
export function stepPoint(
  input: DashboardStepInput,
  direction: Direction,
  bestSoFar: number | null,
  policyChange: string | null = null,
): SeriesPoint {
  const stats = stepObjectiveStats(input, direction);
  return {
    step: input.step,
    lastStep: input.step,
    steps: 1,
    best: stats.best,
    bestSoFar: betterOf(bestSoFar, stats.best, direction),
    mean: stats.mean,
    p10: stats.p10,
    p50: stats.p50,
    p90: stats.p90,
    outcomes: outcomeGroupCounts(input.counts),
    samples: input.samples,
    valid: input.counts.valid,
    evaluations: evaluationsOf(input),
    promptTokens: input.tokens.prompt,
    completionTokens: input.tokens.completion,
    generationMs: input.timings.generationMs,
    evaluationMs: input.timings.evaluationMs,
    totalMs: input.timings.totalMs,
    latencyMsP50: input.latencyMsP50 ?? null,
    latencyMsP95: input.latencyMsP95 ?? null,
    ...(policyChange !== null ? { policyChange } : {}),
  };
}

function weightedMean(a: number | null, wa: number, b: number | null, wb: number): number | null {
  if (a === null || wa === 0) return b === null || wb === 0 ? (a ?? b) : b;
  if (b === null || wb === 0) return a;
  return (a * wa + b * wb) / (wa + wb);
}

function maxOrNull(a: number | null, b: number | null): number | null {
  if (a === null) return b;
  if (b === null) return a;
  return Math.max(a, b);
}

/**
 * Merge two consecutive points (`a` before `b`). Counts, tokens and times
 * add exactly; best is the better one; best-so-far is `b`'s; mean and
 * percentiles are means weighted by valid counts (percentiles of a merged
 * bucket are approximate); latencies take the worse; a policy change is the
 * later one.
 */
export function mergePoints(a: SeriesPoint, b: SeriesPoint, direction: Direction): SeriesPoint {
  const policyChange = b.policyChange ?? a.policyChange;
  return {
    step: a.step,
    lastStep: b.lastStep,
    steps: a.steps + b.steps,
    best: betterOf(a.best, b.best, direction),
    bestSoFar: betterOf(a.bestSoFar, b.bestSoFar, direction),
    mean: weightedMean(a.mean, a.valid, b.mean, b.valid),
    p10: weightedMean(a.p10, a.valid, b.p10, b.valid),
    p50: weightedMean(a.p50, a.valid, b.p50, b.valid),
    p90: weightedMean(a.p90, a.valid, b.p90, b.valid),
    outcomes: a.outcomes.map((v, i) => v + (b.outcomes[i] ?? 0)),
    samples: a.samples + b.samples,
    valid: a.valid + b.valid,
    evaluations: a.evaluations + b.evaluations,
    promptTokens: a.promptTokens + b.promptTokens,
    completionTokens: a.completionTokens + b.completionTokens,
    generationMs: a.generationMs + b.generationMs,
    evaluationMs: a.evaluationMs + b.evaluationMs,
    totalMs: a.totalMs + b.totalMs,
    latencyMsP50: maxOrNull(a.latencyMsP50, b.latencyMsP50),
    latencyMsP95: maxOrNull(a.latencyMsP95, b.latencyMsP95),
    ...(policyChange !== undefined ? { policyChange } : {}),
  };
}

/** Re-bucket points (already bucketed by `width`-aligned keys) to buckets of `newWidth` steps. */
export function rebucket(points: readonly SeriesPoint[], newWidth: number, direction: Direction): SeriesPoint[] {
  const out: SeriesPoint[] = [];
  for (const p of points) {
    const last = out[out.length - 1];
    if (last && Math.floor(last.step / newWidth) === Math.floor(p.step / newWidth)) out[out.length - 1] = mergePoints(last, p, direction);
    else out.push(p);
  }
  return out;
}

/**
 * The per-step series, bucketed: steps fall into buckets of `bucketSteps`
 * consecutive step numbers (aligned on multiples, so re-bucketing is
 * deterministic); when the points exceed `maxPoints` the width doubles.
 */
export class StepSeries {
  private width = 1;
  private points: SeriesPoint[] = [];
  private bestSoFar: number | null = null;
  /** The policy version of the last step that named one. */
  private policyVersion: string | null = null;

  constructor(
    private readonly direction: Direction,
    private readonly maxPoints = DEFAULT_MAX_POINTS,
  ) {
    if (maxPoints < 2) throw new Error('StepSeries: maxPoints must be at least 2');
  }

  get bucketSteps(): number {
    return this.width;
  }

  view(): SeriesView {
    return { bucketSteps: this.width, points: this.points.map((p) => ({ ...p, outcomes: [...p.outcomes] })) };
  }

  /** Best objective of the run so far. */
  get best(): number | null {
    return this.bestSoFar;
  }

  /** Add a step; says how the page's series changes. */
  add(input: DashboardStepInput): { kind: 'append' | 'replaceLast'; point: SeriesPoint } | { kind: 'rebucketed'; series: SeriesView } {
    const version = input.sampling?.policyVersion ?? null;
    const point = stepPoint(input, this.direction, this.bestSoFar, version !== null && version !== this.policyVersion ? version : null);
    this.bestSoFar = point.bestSoFar;
    if (version !== null) this.policyVersion = version;
    const last = this.points[this.points.length - 1];
    if (last && input.step <= last.lastStep) {
      throw new Error(`StepSeries: step ${input.step} is not after step ${last.lastStep}`);
    }
    if (last && Math.floor(last.step / this.width) === Math.floor(point.step / this.width)) {
      const merged = mergePoints(last, point, this.direction);
      this.points[this.points.length - 1] = merged;
      return { kind: 'replaceLast', point: merged };
    }
    this.points.push(point);
    if (this.points.length <= this.maxPoints) return { kind: 'append', point };
    while (this.points.length > this.maxPoints) {
      this.width *= 2;
      this.points = rebucket(this.points, this.width, this.direction);
    }
    return { kind: 'rebucketed', series: this.view() };
  }
}

// ---------------------------------------------------------------------------
// Heat maps and histogram

/**
 * One island's MAP-Elites grid as a dense heat map, merged down to at most
 * `maxBins` per side (best score per merged cell). A cell is HEAT_EMPTY,
 * HEAT_PENALTY (only penalty scores, <= 0) or the shade 0..HEAT_SHADES of its
 * best score within `shadeRange` (the valid scores of all islands).
 */
export function binHeatMap(
  cells: readonly { scoreBin: number; lengthBin: number; score: number }[],
  bins: number,
  maxBins: number,
  shadeRange: { min: number; max: number } | null,
): { bins: number; grid: number[] } {
  const factor = Math.max(1, Math.ceil(bins / Math.max(1, maxBins)));
  const outBins = Math.ceil(bins / factor);
  const best = new Float64Array(outBins * outBins).fill(Number.NEGATIVE_INFINITY);
  for (const c of cells) {
    const row = Math.min(outBins - 1, Math.floor(c.scoreBin / factor));
    const col = Math.min(outBins - 1, Math.floor(c.lengthBin / factor));
    const key = row * outBins + col;
    if (c.score > (best[key] as number)) best[key] = c.score;
  }
  const grid = new Array<number>(best.length);
  for (let i = 0; i < best.length; i++) {
    const score = best[i] as number;
    if (score === Number.NEGATIVE_INFINITY) grid[i] = HEAT_EMPTY;
    else if (score <= 0) grid[i] = HEAT_PENALTY;
    else {
      let shade = 1;
      if (shadeRange && shadeRange.max > shadeRange.min) shade = (score - shadeRange.min) / (shadeRange.max - shadeRange.min);
      grid[i] = Math.round(Math.min(1, Math.max(0, shade)) * HEAT_SHADES);
    }
  }
  return { bins: outBins, grid };
}

/** The smallest round width (1, 2, 2.5 or 5 times a power of ten) at least `raw`. */
export function roundBinWidth(raw: number): number {
  if (!(raw > 0) || !Number.isFinite(raw)) return 1;
  const power = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * power >= raw * (1 - 1e-9)) return m * power;
  return 10 * power;
}

/**
 * Counts of `values` in bins of one round width (roundBinWidth) whose edges
 * are multiples of it, at most about `bins` of them over the values' range,
 * so the axis reads 0.3, 0.35, 0.4 (null when empty). `min` and `max` are
 * the first bin's lower edge and the last one's upper edge; all values
 * equal: one bin at that value.
 */
export function histogram(values: ArrayLike<number>, bins = HISTOGRAM_BINS): { min: number; max: number; counts: number[] } | null {
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  let n = 0;
  for (let i = 0; i < values.length; i++) {
    const v = values[i] as number;
    if (!Number.isFinite(v)) continue;
    n++;
    if (v < min) min = v;
    if (v > max) max = v;
  }
  if (n === 0) return null;
  if (max === min) return { min, max, counts: [n] };
  const width = roundBinWidth((max - min) / bins);
  // Edges on multiples of the width, computed from integers so they stay round.
  const first = Math.floor(min / width + 1e-9);
  const count = Math.max(1, Math.floor(max / width + 1e-9) - first + 1);
  const counts = new Array<number>(count).fill(0);
  for (let i = 0; i < values.length; i++) {
    const v = values[i] as number;
    if (!Number.isFinite(v)) continue;
    const bin = Math.min(count - 1, Math.max(0, Math.floor(v / width + 1e-9) - first));
    counts[bin] = (counts[bin] as number) + 1;
  }
  const decimals = Math.max(0, -Math.floor(Math.log10(width) + 1e-9) + 1);
  const edge = (k: number): number => Number((k * width).toFixed(Math.min(20, decimals)));
  return { min: edge(first), max: edge(first + count), counts };
}

/** The heat map's axes when a task names behaviour dimensions (rows: the first, columns: the second). */
function featureAxes(axes: readonly { metric: string; range: { min: number; max: number } | null }[] | undefined): {
  axes?: DatabaseView['heatmaps']['axes'];
} {
  const [rows, columns] = axes ?? [];
  if (!rows) return {};
  return {
    axes: {
      rows: { metric: rows.metric, range: rows.range },
      columns: columns ? { metric: columns.metric, range: columns.range } : null,
    },
  };
}

export function databaseView(
  input: DashboardDatabaseInput,
  direction: Direction,
  histogramInput: { label: string; values: ArrayLike<number> } | null,
  maxHeatBins = DEFAULT_MAX_HEAT_BINS,
): DatabaseView {
  // Shades span the valid scores in the grids, so the best cell is always the brightest.
  let lo = Number.POSITIVE_INFINITY;
  let hi = Number.NEGATIVE_INFINITY;
  for (const island of input.mapElites.islands) {
    for (const c of island.cells) {
      if (c.score <= 0) continue;
      lo = Math.min(lo, c.score);
      hi = Math.max(hi, c.score);
    }
  }
  const shadeRange = lo <= hi ? { min: lo, max: hi } : null;
  const heat = input.mapElites.islands.map((island) => ({
    island: island.island,
    occupied: island.occupied,
    ...binHeatMap(island.cells, input.mapElites.bins, maxHeatBins, shadeRange),
  }));
  const bins = heat[0]?.bins ?? Math.min(input.mapElites.bins, maxHeatBins);
  // The objectives the shades span: valid programs' only (a penalty score is no objective).
  let scoreRange: { min: number; max: number } | null = null;
  if (shadeRange) {
    const a = displayObjective(shadeRange.min, direction);
    const b = displayObjective(shadeRange.max, direction);
    if (a !== null && b !== null) scoreRange = { min: Math.min(a, b), max: Math.max(a, b) };
  }
  const hist = histogramInput ? histogram(histogramInput.values) : null;
  return {
    programs: input.programs,
    populationSize: input.populationSize,
    currentIsland: input.currentIsland,
    islands: input.islands.map((i) => ({ island: i.island, size: i.size, best: displayObjective(i.best?.score ?? null, direction) })),
    heatmaps: {
      bins,
      scoreRange,
      codeLengthRange: input.mapElites.ranges.codeLength,
      ...featureAxes(input.mapElites.axes),
      islands: heat.map((h) => ({ island: h.island, occupied: h.occupied, grid: h.grid })),
    },
    archive: {
      size: input.archive.size,
      capacity: input.archive.capacity,
      worst: displayObjective(input.archive.minScore, direction),
      best: displayObjective(input.archive.maxScore, direction),
    },
    migrations: { ...input.migrations },
    guidance: input.guidance ?? null,
    recommendations: input.recommendations ?? null,
    histogram: hist && histogramInput ? { label: histogramInput.label, ...hist } : null,
  };
}

/** Per stage, in order: the children that reached it (stopped there or later) and those that stopped there. */
export function cascadeStages(stoppedAt: Readonly<Record<string, number>>): NonNullable<SummaryView['cascade']> {
  const stages = Object.entries(stoppedAt)
    .map(([stage, n]) => ({ stage: Number(stage), stopped: n }))
    .filter((s) => Number.isInteger(s.stage) && s.stage >= 1)
    .sort((a, b) => a.stage - b.stage);
  let reached = stages.reduce((sum, s) => sum + s.stopped, 0);
  return stages.map((s) => {
    const row = { stage: s.stage, reached, stopped: s.stopped };
    reached -= s.stopped;
    return row;
  });
}

// ---------------------------------------------------------------------------
// The model

export function runView(input: DashboardRunInput): RunView {
  const details: string[] = [];
  if (input.batchSize !== null && input.samplesPerPrompt !== null) {
    details.push(`B ${input.batchSize} x n ${input.samplesPerPrompt} = ${input.batchSize * input.samplesPerPrompt} samples per step`);
  }
  if (input.resumedFromStep !== null) details.push(`resumed after step ${input.resumedFromStep}`);
  // Results depend on the environment (docs/architecture.md "The researcher's Python").
  if (input.python) details.push(describePythonEnvironment(input.python));
  return {
    runId: input.runId,
    taskName: input.taskName,
    taskTitle: input.taskTitle,
    direction: input.direction,
    directionLabel: directionLabel(input.direction),
    targetValue: input.targetValue,
    source: { ...input.source },
    details,
    ...(input.scoreUnprotected ? { scoreWarning: input.scoreUnprotected } : {}),
    ...(input.isolation
      ? {
          isolation: {
            text: `sandbox: ${input.isolation.summary}${input.isolation.weak ? ` (weaker than the full sandbox: ${input.isolation.missing.join('; ')})` : ''}`,
            weak: input.isolation.weak,
          },
        }
      : {}),
  };
}

/**
 * What the dashboard shows, kept by the extension host whether or not the
 * panel is open. Each `set*`/`add*` returns the message to post to an open
 * page; `snapshot()` is the whole state (on `ready`, and after a reload).
 */
export class DashboardModel {
  private state: DashboardState = emptyDashboardState();
  private direction: Direction = 'maximize';
  private series: StepSeries;
  private lastDatabase: DashboardDatabaseInput | null = null;
  private meanExact = true;
  /** Several models: each model's statistics summed over the steps shown, and the next draw's chances. */
  private modelTotals: Record<string, ModelStats> = {};
  private modelProbabilities: Record<string, number> = {};
  /** A task with an evaluator cascade: children that stopped at each stage, over the steps shown. */
  private cascadeTotals: Record<string, number> = {};

  constructor(
    private readonly maxPoints = DEFAULT_MAX_POINTS,
    private readonly maxHeatBins = DEFAULT_MAX_HEAT_BINS,
  ) {
    this.series = new StepSeries('maximize', maxPoints);
  }

  /** A new run (or the same run after a reload): clears steps, database and best; keeps trainer state. */
  setRun(input: DashboardRunInput): HostMessage {
    const trainer = this.state.trainer;
    this.state = emptyDashboardState();
    this.state.trainer = trainer;
    this.direction = input.direction;
    this.series = new StepSeries(input.direction, this.maxPoints);
    this.lastDatabase = null;
    this.meanExact = true;
    this.modelTotals = {};
    this.modelProbabilities = {};
    this.cascadeTotals = {};
    this.state.run = runView(input);
    this.state.runState = { state: 'starting', message: `Starting ${input.taskTitle}.` };
    return this.snapshotMessage();
  }

  addStep(input: DashboardStepInput): HostMessage {
    if (this.direction === 'minimize' && !input.objective) this.meanExact = false;
    const change = this.series.add(input);
    const s = this.state.summary;
    this.state.summary = {
      lastStep: input.step,
      bestEver: displayObjective(input.bestEver, this.direction) ?? this.series.best,
      dbSize: input.dbSize,
      elapsedMs: input.elapsedMs,
      ...(input.session && input.session.count > 1 ? { session: { ...input.session } } : {}),
      samples: s.samples + input.samples,
      completionTokens: s.completionTokens + input.tokens.completion,
      meanExact: this.meanExact,
      ...this.modelUsageAfter(input, s.modelUsage),
      ...this.cascadeAfter(input),
    };
    if (change.kind === 'rebucketed') return { type: 'series', series: change.series, summary: this.summaryCopy() };
    return {
      type: 'step',
      bucketSteps: this.series.bucketSteps,
      point: change.point,
      replaceLast: change.kind === 'replaceLast',
      summary: this.summaryCopy(),
    };
  }

  /** The cascade's stage counts with this step's added (a task with evaluator stages only). */
  private cascadeAfter(input: DashboardStepInput): { cascade?: NonNullable<SummaryView['cascade']> } {
    if (input.cascade)
      for (const [stage, n] of Object.entries(input.cascade)) this.cascadeTotals[stage] = (this.cascadeTotals[stage] ?? 0) + n;
    return Object.keys(this.cascadeTotals).length > 0 ? { cascade: cascadeStages(this.cascadeTotals) } : {};
  }

  /** The run's spend and per-model table with this step added (several models or priced replies only). */
  private modelUsageAfter(input: DashboardStepInput, before: ModelUsage | undefined): { modelUsage?: ModelUsage } {
    if (!input.models && input.costUsd === undefined && !before) return {};
    this.modelTotals = sumModelStats([this.modelTotals, input.models]);
    if (input.modelProbabilities) this.modelProbabilities = input.modelProbabilities;
    const costUsd = input.costUsd === undefined ? (before?.costUsd ?? null) : (before?.costUsd ?? 0) + input.costUsd;
    return { modelUsage: { costUsd, models: modelTable(this.modelTotals, this.modelProbabilities) } };
  }

  /**
   * The database's state after a commit, with the combined scores of the
   * valid programs it holds (the histogram: live, resumed or reloaded, the
   * same count).
   */
  setDatabase(input: DashboardDatabaseInput, scores: readonly number[]): HostMessage {
    this.lastDatabase = input;
    const values: number[] = [];
    for (const s of scores) {
      const o = displayObjective(s, this.direction);
      if (o !== null) values.push(o);
    }
    const hist = { label: `valid programs in the database (${values.length.toLocaleString('en-US')})`, values };
    this.state.database = databaseView(input, this.direction, hist, this.maxHeatBins);
    return { type: 'database', database: this.state.database };
  }

  setBest(input: DashboardBestInput | null): HostMessage {
    this.state.best = input ? bestView(input, this.direction) : null;
    return { type: 'best', best: this.state.best };
  }

  setTrainer(trainer: TrainerView): HostMessage {
    this.state.trainer = { ...trainer };
    return { type: 'trainer', trainer: this.state.trainer };
  }

  /** The SLURM queue (evaluation_queue events) or the inference servers (endpoint_servers events); each keeps the other's part. */
  setBackend(part: Partial<BackendView>): HostMessage {
    this.state.backend = { queue: null, servers: [], ...this.state.backend, ...part };
    return { type: 'backend', backend: this.state.backend };
  }

  /** The run's source as it is now (the servers of a pool join and leave); a page is sent a snapshot only when it changed. */
  setSourceLabel(label: string): HostMessage | null {
    const run = this.state.run;
    if (!run || run.source.label === label) return null;
    run.source = { ...run.source, label };
    return this.snapshotMessage();
  }

  setRunState(runState: RunStateView): HostMessage {
    this.state.runState = { ...runState };
    return { type: 'runState', runState: this.state.runState };
  }

  get lastDatabaseInput(): DashboardDatabaseInput | null {
    return this.lastDatabase;
  }

  /** A run has been set (live, or loaded from its database). */
  get hasRun(): boolean {
    return this.state.run !== null;
  }

  snapshot(): DashboardState {
    // The series lives in StepSeries (copying it into the state per step would be O(points) each time).
    return structuredClone({ ...this.state, series: this.series.view() });
  }

  snapshotMessage(): HostMessage {
    return { type: 'snapshot', state: this.snapshot() };
  }

  private summaryCopy(): SummaryView {
    return { ...this.state.summary };
  }
}

export function bestView(input: DashboardBestInput, direction: Direction): BestView {
  return {
    id: input.id,
    step: input.step,
    score: input.score,
    objective: input.objective ?? displayObjective(input.score, direction),
    lineageDepth: input.lineageDepth,
    parentId: input.parentId,
    ...(input.stepRank !== undefined ? { stepRank: input.stepRank } : {}),
    name: programName(input),
    nameDetail: programNameDetail(input),
    ...(input.code !== undefined ? { code: input.code } : {}),
    ...(input.picture !== undefined ? { picture: input.picture } : {}),
    ...(input.feedback !== undefined ? { feedback: input.feedback } : {}),
  };
}

/** The dashboard's RL card from the bridge's state (the trainer_state event); the page shows protocol, URL, policy version and groups sent itself. */
export function trainerView(state: TrainerStateEvent['state']): TrainerView {
  const view = {
    enabled: state.enabled,
    protocol: state.protocol,
    url: state.url,
    lastAckPolicyVersion: state.lastAckedPolicyVersion,
    groupsSent: state.sentGroups,
  };
  const queue =
    `${state.pendingGroups} pending` +
    ((state.releasedGroups ?? 0) > 0 ? `, ${state.releasedGroups} released to the trainer` : '') +
    ((state.queuedGroups ?? 0) > 0 ? `, ${state.queuedGroups} queued for the trainer` : '') +
    (state.rejectedGroups > 0 ? `, ${state.rejectedGroups} refused by the trainer` : '') +
    ((state.resentGroups ?? 0) > 0 ? `, ${state.resentGroups} sent again after a trainer restart` : '') +
    ((state.lostGroups ?? 0) > 0 ? `, ${state.lostGroups} lost in a trainer restart` : '') +
    ((state.droppedGroups ?? 0) > 0 ? `, ${state.droppedGroups} short group(s) dropped` : '');
  // The pill and the text always say the same: off is off, whatever the last error was.
  if (!state.url.trim()) {
    return state.enabled
      ? {
          ...view,
          state: 'not_configured',
          message: state.lastError ?? 'Set thetaevolve.trainer.url to the trainer (an atropos API server or a slime rollout buffer).',
        }
      : { ...view, state: 'off', message: 'Off: this run has no trainer URL (thetaevolve.trainer.url); rollouts are not sent.' };
  }
  if (!state.enabled)
    return {
      ...view,
      state: 'off',
      message:
        `Off: rollouts are not sent${state.pendingGroups > 0 ? ` (${state.pendingGroups} spooled group(s) kept)` : ''}` +
        `${state.lastError !== null ? `; the trainer's last error: ${state.lastError}` : ''}.`,
    };
  if (state.lastError !== null && !state.connected) {
    return { ...view, state: 'error', message: `${state.lastError}; retrying, rollouts are spooled (${queue})` };
  }
  // A request the trainer took and has not answered for seconds is named, whatever the state.
  const awaited = state.awaiting ? ` Awaiting its answer to ${state.awaiting}.` : '';
  if (state.waiting)
    return { ...view, state: 'waiting', message: `${state.mode} mode: the run waits for the trainer; ${queue}.${awaited}` };
  if (state.connected)
    return {
      ...view,
      state: 'ready',
      message: `${state.mode} mode, trainer step ${state.trainerStep ?? 'not reported'}; ${queue}.${awaited}`,
    };
  return { ...view, state: 'connecting', message: `Connecting (${state.mode} mode); ${queue}.${awaited}` };
}

/** The RL card while no run is in progress: what the settings will do to the next one. */
export function trainerViewOfSettings(settings: {
  enabled: boolean;
  protocol: 'atropos' | 'slime';
  url: string;
  mode: 'sync' | 'async';
}): TrainerView {
  const view = { enabled: settings.enabled, protocol: settings.protocol, url: settings.url, lastAckPolicyVersion: null, groupsSent: 0 };
  if (!settings.url.trim()) {
    return {
      ...view,
      state: settings.enabled ? 'not_configured' : 'off',
      message: 'Set thetaevolve.trainer.url to the trainer (an atropos API server or a slime rollout buffer).',
    };
  }
  if (!settings.enabled) return { ...view, state: 'off', message: 'Off: rollouts are not sent.' };
  return { ...view, state: 'next_run', message: `The next run sends its rollouts (${settings.mode} mode).` };
}
