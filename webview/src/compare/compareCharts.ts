// The comparison's charts: progress (best so far and step mean of each run,
// by step or by elapsed time, with a marker where a run's policy version
// changed), outcomes (each run's share of every outcome) and throughput.
// Built on the dashboard's chart.js setup (charts/setup.ts).
import type { ChartDataset } from 'chart.js';
import type { ComparedRun, ProgressPanel, RunComparison } from '../../../src/engine/common/runComparison';
import { forDisplay } from '../../../src/engine/common/displayText';
import { OUTCOMES } from '../../../src/engine/common/types';
import { baseOptions, Chart, type XY, xy } from '../charts/setup';
import { formatValue } from '../format';
import type { ThemeColours } from '../theme';
import { withAlpha } from '../theme';

export type ProgressAxis = 'step' | 'time';

/** Each run's colour, in the order of the runs. */
export function runColours(theme: ThemeColours): string[] {
  return [theme.blue, theme.orange, theme.green, theme.purple, theme.red, theme.yellow];
}

export function runColour(theme: ThemeColours, index: number): string {
  const colours = runColours(theme);
  return colours[index % colours.length] as string;
}

function xOf(axis: ProgressAxis, step: ComparedRun['steps'][number]): number {
  return axis === 'step' ? step.step : step.elapsedMs / 60_000;
}

type LineDataset = ChartDataset<'line', XY[]>;

/** The runs of a panel with their index in the comparison (which gives each its colour on every chart). */
function panelRuns(comparison: RunComparison, panel: ProgressPanel): { run: ComparedRun; i: number }[] {
  return panel.runIndexes.flatMap((i) => {
    const run = comparison.runs[i];
    return run ? [{ run, i }] : [];
  });
}

/** A progress chart's datasets: per run of its panel its best so far, its step mean and its policy changes. */
function progressDatasets(comparison: RunComparison, panel: ProgressPanel, axis: ProgressAxis, theme: ThemeColours): LineDataset[] {
  return panelRuns(comparison, panel).flatMap(({ run, i }): LineDataset[] => {
    const colour = runColour(theme, i);
    const byStep = new Map(run.steps.map((s) => [s.step, s]));
    const datasets: LineDataset[] = [
      {
        label: `${forDisplay(run.label)}: best so far`,
        data: run.steps.map((s) => xy(xOf(axis, s), s.bestSoFar)),
        borderColor: colour,
        backgroundColor: colour,
        borderWidth: 2,
        pointRadius: 0,
        stepped: axis === 'step' ? 'before' : false,
      },
      {
        label: `${forDisplay(run.label)}: step mean`,
        data: run.steps.map((s) => xy(xOf(axis, s), s.mean)),
        borderColor: withAlpha(colour, 0.6),
        backgroundColor: withAlpha(colour, 0.6),
        borderWidth: 1,
        borderDash: [5, 4],
        // A step without a valid child is a gap; a mean between gaps shows as its point.
        pointRadius: 1.5,
      },
    ];
    if (run.policyChanges.length > 0) {
      datasets.push({
        label: `${forDisplay(run.label)}: policy changed`,
        data: run.policyChanges.map((c) => {
          const s = byStep.get(c.step);
          return s ? xy(xOf(axis, s), s.bestSoFar ?? s.mean) : xy(c.step, null);
        }),
        showLine: false,
        pointStyle: 'triangle',
        pointRadius: 6,
        pointHoverRadius: 8,
        borderColor: colour,
        backgroundColor: theme.background,
        borderWidth: 2,
      });
    }
    return datasets;
  });
}

/** What a progress chart draws, in words (its canvas's accessible name). */
export function progressDescription(comparison: RunComparison, panel: ProgressPanel): string {
  const shown = panelRuns(comparison, panel).map(({ run }) => run);
  const runs = shown.map((run) => {
    const last = run.steps[run.steps.length - 1];
    const policy =
      run.policyChanges.length > 0 ? `; policy changed at step ${run.policyChanges.map((c) => c.step).join(', ')}` : '; no policy versions';
    return `${forDisplay(run.label)}: ${run.steps.length} steps, best ${formatValue(last?.bestSoFar ?? null)}${policy}`;
  });
  const of = panel.heading === null ? '' : ` of ${panel.heading}`;
  return `Progress of ${shown.length} run${shown.length === 1 ? '' : 's'}${of}. ${runs.join('. ')}.`;
}

/** The progress of the runs of one task and direction (progressLayout): only those share its axis. */
export class ProgressChart {
  private readonly chart: Chart<'line', XY[]>;

  constructor(
    canvas: HTMLCanvasElement,
    private readonly panel: ProgressPanel,
    comparison: RunComparison,
    axis: ProgressAxis,
    theme: ThemeColours,
  ) {
    this.chart = new Chart<'line', XY[]>(canvas, { type: 'line', data: { datasets: [] }, options: {} });
    this.update(comparison, axis, theme);
  }

  update(comparison: RunComparison, axis: ProgressAxis, theme: ThemeColours): void {
    const options = baseOptions(theme, this.panel.axisTitle);
    const x = options.scales?.x;
    if (x && x.type === 'linear' && x.title) x.title.text = axis === 'step' ? 'step' : 'elapsed (minutes)';
    if (x && x.type === 'linear' && axis === 'time') {
      x.ticks = { ...x.ticks, precision: undefined };
      x.afterBuildTicks = undefined;
    }
    this.chart.options = options as typeof this.chart.options;
    this.chart.data.datasets = progressDatasets(comparison, this.panel, axis, theme);
    this.chart.canvas.setAttribute('aria-label', progressDescription(comparison, this.panel));
    // The axis title as text too (the canvas draws it as pixels): what the tests read.
    this.chart.canvas.dataset.axisTitle = this.panel.axisTitle;
    this.chart.update('none');
  }
}

/** Each run's share of every outcome, stacked (one bar per run). */
export class OutcomeChart {
  private readonly chart: Chart<'bar', number[], string>;

  constructor(canvas: HTMLCanvasElement, comparison: RunComparison, theme: ThemeColours) {
    this.chart = new Chart<'bar', number[], string>(canvas, { type: 'bar', data: { labels: [], datasets: [] }, options: {} });
    this.update(comparison, theme);
  }

  update(comparison: RunComparison, theme: ThemeColours): void {
    const colours: Record<(typeof OUTCOMES)[number], string> = {
      no_diff: theme.red,
      no_change: theme.orange,
      duplicate: withAlpha(theme.orange, 0.6),
      not_novel: withAlpha(theme.orange, 0.35),
      no_solution: theme.purple,
      timeout: withAlpha(theme.purple, 0.6),
      invalid_solution: theme.yellow,
      valid: theme.green,
      request_failed: theme.muted,
      evaluation_failed: withAlpha(theme.muted, 0.5),
    };
    const totals = comparison.runs.map((r) => OUTCOMES.reduce((n, o) => n + r.outcomes[o], 0));
    this.chart.data.labels = comparison.runs.map((r) => forDisplay(r.label));
    this.chart.data.datasets = OUTCOMES.map((outcome) => ({
      label: outcome.replace('_', ' '),
      data: comparison.runs.map((r, i) => ((totals[i] ?? 0) > 0 ? (100 * r.outcomes[outcome]) / (totals[i] as number) : 0)),
      backgroundColor: colours[outcome],
    }));
    this.chart.options = {
      animation: false,
      responsive: true,
      maintainAspectRatio: false,
      indexAxis: 'y',
      plugins: {
        legend: { position: 'bottom', labels: { color: theme.foreground, boxWidth: 12, boxHeight: 12 } },
        tooltip: { callbacks: { label: (item) => `${item.dataset.label ?? ''}: ${formatValue(item.parsed.x)}%` } },
      },
      scales: {
        x: { stacked: true, max: 100, title: { display: true, text: '% of samples', color: theme.muted }, grid: { color: theme.grid } },
        y: { stacked: true, ticks: { color: theme.foreground }, grid: { color: theme.grid } },
      },
    };
    this.chart.update('none');
  }
}

/** Samples per second of each step, per run. */
export class ThroughputChart {
  private readonly chart: Chart<'line', XY[]>;

  constructor(canvas: HTMLCanvasElement, comparison: RunComparison, theme: ThemeColours) {
    this.chart = new Chart<'line', XY[]>(canvas, { type: 'line', data: { datasets: [] }, options: {} });
    this.update(comparison, theme);
  }

  update(comparison: RunComparison, theme: ThemeColours): void {
    this.chart.options = baseOptions(theme, 'samples / s') as typeof this.chart.options;
    this.chart.data.datasets = comparison.runs.map((run, i) => ({
      label: forDisplay(run.label),
      data: run.steps.map((s) => xy(s.step, s.samplesPerSecond)),
      borderColor: runColour(theme, i),
      backgroundColor: runColour(theme, i),
      borderWidth: 1.5,
      pointRadius: 0,
    }));
    this.chart.update('none');
  }
}
