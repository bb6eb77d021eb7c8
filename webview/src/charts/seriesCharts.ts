// The per-step charts: progress (best, best so far, mean, 10/50/90th
// percentiles, target, policy changes with RL), outcomes (stacked), throughput, request latency,
// step time (generation / evaluation).
import { OUTCOME_GROUPS, pointRates, type RunView, type SeriesPoint, type SeriesView } from '../../../src/protocol/dashboardMessages';
import type { Scale } from 'chart.js';
import type { ThemeColours } from '../theme';
import { withAlpha } from '../theme';
import { type DatasetSpec, LiveChart } from './liveChart';

const perStep = (value: number, p: SeriesPoint): number => value / p.steps;

function objectiveTitle(run: RunView | null): string {
  return run ? `objective: ${run.directionLabel}` : 'objective';
}

function outcomeColour(theme: ThemeColours, id: (typeof OUTCOME_GROUPS)[number]['id']): string {
  switch (id) {
    case 'no_diff':
      return theme.red;
    case 'no_change':
      return theme.orange;
    // Purple between orange and yellow: light themes' orange and yellow are close.
    case 'no_solution':
      return theme.purple;
    case 'invalid':
      return theme.yellow;
    case 'valid':
      return theme.green;
    case 'request_failed':
    case 'evaluation_failed':
      return theme.muted;
  }
}

export interface SeriesCanvases {
  progress: HTMLCanvasElement;
  outcomes: HTMLCanvasElement;
  throughput: HTMLCanvasElement;
  latency: HTMLCanvasElement;
  stepTime: HTMLCanvasElement;
}

export class SeriesCharts {
  private readonly charts: LiveChart[];
  private readonly progress: LiveChart;
  private target: number | null = null;
  private run: RunView | null = null;
  private bucketSteps = 1;
  private meanExact = true;

  constructor(canvases: SeriesCanvases, theme: ThemeColours) {
    const line =
      (colour: (t: ThemeColours) => string, extra: Record<string, unknown> = {}) =>
      (t: ThemeColours) => ({
        borderColor: colour(t),
        backgroundColor: colour(t),
        borderWidth: t.highContrast ? 2 : 1.5,
        pointRadius: 0,
        pointHoverRadius: 3,
        pointStyle: 'line',
        spanGaps: false,
        ...extra,
      });
    const progressSpecs: DatasetSpec[] = [
      {
        label: 'best so far',
        type: 'line',
        value: (p) => p.bestSoFar,
        style: line((t) => t.foreground, { borderWidth: 2.5, stepped: 'after', spanGaps: true }),
      },
      {
        label: 'best of step',
        type: 'line',
        value: (p) => p.best,
        style: (t) => ({ ...line((c) => c.green)(t), showLine: false, pointRadius: 2, pointStyle: 'circle' }),
      },
      { label: 'mean', type: 'line', value: (p) => p.mean, style: line((t) => t.blue) },
      { label: 'median', type: 'line', value: (p) => p.p50, style: line((t) => t.purple, { borderDash: [4, 3] }) },
      {
        label: '10th–90th pct',
        type: 'line',
        value: (p) => p.p90,
        style: (t) => ({
          ...line((c) => withAlpha(c.blue, 0.6), { borderWidth: 1 })(t),
          fill: '+1',
          backgroundColor: withAlpha(t.blue, 0.15),
          pointStyle: 'rect',
        }),
      },
      { label: '10th pct', type: 'line', value: (p) => p.p10, style: line((t) => withAlpha(t.blue, 0.6), { borderWidth: 1 }) },
      {
        // With RL on: where the policy (the model's weights) changed, on the best-so-far line.
        label: 'policy changed',
        type: 'line',
        value: (p) => (p.policyChange !== undefined ? (p.bestSoFar ?? p.mean) : null),
        style: (t) => ({
          ...line((c) => c.orange)(t),
          showLine: false,
          pointStyle: 'triangle',
          pointRadius: 5,
          pointHoverRadius: 6,
          backgroundColor: t.background,
          borderWidth: 2,
        }),
      },
      {
        label: 'target',
        type: 'line',
        // One point per step like the others: chart.js's index-mode tooltip reads every dataset at the same index.
        value: () => this.target,
        style: line((t) => t.red, { borderDash: [6, 4], borderWidth: 1.5 }),
      },
    ];
    this.progress = new LiveChart(
      canvases.progress,
      progressSpecs,
      theme,
      (options) => {
        const labels = options.plugins?.legend?.labels;
        // The band's lower edge needs no legend entry; policy changes have one only in a run that has them.
        if (labels)
          labels.filter = (item, data) =>
            item.text !== '10th pct' &&
            (item.text !== 'policy changed' ||
              (data.datasets[item.datasetIndex ?? -1]?.data ?? []).some((point) => Number.isFinite((point as { y?: number } | null)?.y)));
      },
      'objective',
    );

    const outcomeSpecs: DatasetSpec[] = OUTCOME_GROUPS.map((group, i) => ({
      label: group.label,
      type: 'bar',
      value: (p: SeriesPoint) => perStep(p.outcomes[i] ?? 0, p),
      style: (t: ThemeColours) => ({
        backgroundColor: outcomeColour(t, group.id),
        borderColor: outcomeColour(t, group.id),
        borderWidth: 0,
        barPercentage: 1,
        categoryPercentage: 1,
        stack: 'outcomes',
        pointStyle: 'rect',
      }),
    }));
    const stacked = (options: Parameters<ConstructorParameters<typeof LiveChart>[3]>[0]) => {
      const scales = options.scales ?? {};
      // Each step's bar spans [step - 0.5, step + 0.5] and the axis those of the steps drawn: from 0, one step's
      // bar sat half outside the plot at its right edge with the rest of the plot empty.
      if (scales.x) {
        const { min: _fromZero, ...x } = scales.x as typeof scales.x & { min?: number };
        scales.x = {
          ...x,
          stacked: true,
          offset: false,
          afterDataLimits: (scale: Scale) => {
            // Steps are whole numbers; chart.js widens a single step's range by 5% first.
            scale.min = Math.ceil(scale.min) - 0.5;
            scale.max = Math.floor(scale.max) + 0.5;
          },
          // chart.js rounds the last tick up past the axis' end (1.5 -> 2) and narrows the plot to print it.
          afterBuildTicks: (scale: Scale) => {
            scale.ticks = scale.ticks.filter((tick) => tick.value >= scale.min && tick.value <= scale.max);
            x.afterBuildTicks?.(scale);
          },
          ticks: { ...x.ticks, includeBounds: false },
        } as typeof scales.x;
      }
      if (scales.y) scales.y = { ...scales.y, stacked: true, beginAtZero: true } as typeof scales.y;
    };
    const outcomes = new LiveChart(canvases.outcomes, outcomeSpecs, theme, stacked, 'samples per step');

    const rate = (pick: 'samplesPerSecond' | 'evaluationsPerSecond' | 'tokensPerSecond') => (p: SeriesPoint) => pointRates(p)[pick];
    const throughput = new LiveChart(
      canvases.throughput,
      [
        { label: 'samples/s', type: 'line', value: rate('samplesPerSecond'), style: line((t) => t.blue) },
        { label: 'evaluations/s', type: 'line', value: rate('evaluationsPerSecond'), style: line((t) => t.green) },
        { label: 'tokens/s (right)', type: 'line', value: rate('tokensPerSecond'), style: line((t) => t.orange, { yAxisID: 'tokens' }) },
      ],
      theme,
      (options, t) => {
        const scales = options.scales ?? {};
        if (scales.y) scales.y = { ...scales.y, beginAtZero: true } as typeof scales.y;
        scales.tokens = {
          type: 'linear',
          position: 'right',
          beginAtZero: true,
          title: { display: true, text: 'completion tokens/s', color: t.muted },
          ticks: { color: t.foreground, maxTicksLimit: 8 },
          grid: { drawOnChartArea: false },
        };
        options.scales = scales;
      },
      // The panel's note says "of step wall time": the whole phrase is longer than the axis (clipped).
      'per second',
    );
    const latency = new LiveChart(
      canvases.latency,
      [
        { label: 'p50', type: 'line', value: (p) => (p.latencyMsP50 === null ? null : p.latencyMsP50 / 1000), style: line((t) => t.blue) },
        {
          label: 'p95',
          type: 'line',
          value: (p) => (p.latencyMsP95 === null ? null : p.latencyMsP95 / 1000),
          style: line((t) => t.orange),
        },
      ],
      theme,
      (options) => {
        const y = options.scales?.y;
        if (y && options.scales) options.scales.y = { ...y, beginAtZero: true } as typeof y;
      },
      'request latency (s)',
    );
    const bar = (colour: (t: ThemeColours) => string) => (t: ThemeColours) => ({
      backgroundColor: colour(t),
      borderColor: colour(t),
      borderWidth: 0,
      barPercentage: 1,
      categoryPercentage: 1,
      stack: 'time',
      pointStyle: 'rect',
    });
    const stepTime = new LiveChart(
      canvases.stepTime,
      [
        { label: 'generation', type: 'bar', value: (p) => perStep(p.generationMs, p) / 1000, style: bar((t) => t.blue) },
        { label: 'evaluation', type: 'bar', value: (p) => perStep(p.evaluationMs, p) / 1000, style: bar((t) => t.green) },
      ],
      theme,
      stacked,
      'seconds per step',
    );
    this.charts = [this.progress, outcomes, throughput, latency, stepTime];
  }

  setRun(run: RunView | null): void {
    this.run = run;
    this.target = run?.targetValue ?? null;
    this.progress.setYTitle(objectiveTitle(run));
  }

  reset(series: SeriesView, meanExact: boolean): void {
    this.bucketSteps = series.bucketSteps;
    this.setMeanExact(meanExact);
    for (const c of this.charts) c.reset(series.points, this.xTitle());
  }

  /** An incremental step; false when the bucket width differs (the caller resets instead). */
  step(bucketSteps: number, point: SeriesPoint, replaceLast: boolean, meanExact: boolean): boolean {
    if (bucketSteps !== this.bucketSteps) return false;
    this.setMeanExact(meanExact);
    for (const c of this.charts) {
      if (replaceLast) c.replaceLast(point);
      else c.append(point);
    }
    return true;
  }

  applyTheme(theme: ThemeColours): void {
    for (const c of this.charts) c.applyTheme(theme);
    this.setRun(this.run);
  }

  /** Points drawn (the progress chart's), for the page's self-check. */
  get pointCount(): number {
    return this.progress.length;
  }

  private setMeanExact(exact: boolean): void {
    if (exact === this.meanExact) return;
    this.meanExact = exact;
    // A minimise task without exact objective statistics: the mean is the harmonic mean of the objectives.
    this.progress.setDatasetLabel(2, exact ? 'mean' : 'mean (harmonic)');
  }

  private xTitle(): string {
    return this.bucketSteps === 1 ? 'step' : `step (each point: ${this.bucketSteps} steps; counts and times per step)`;
  }
}
