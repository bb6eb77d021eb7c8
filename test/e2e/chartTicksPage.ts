// Bundled into a blank Chromium page by chartTicks.e2e.ts: the dashboard's
// own charts (LiveChart and SeriesCharts with the dashboard's options, real
// chart.js) and probes that report where tick labels are drawn and which
// axis titles are longer than their axes.
import { OUTCOME_GROUPS, type SeriesPoint } from '../../src/protocol/dashboardMessages';
import { SeriesCharts } from '../../webview/src/charts/seriesCharts';
import { LiveChart } from '../../webview/src/charts/liveChart';
import { applyChartDefaults, Chart } from '../../webview/src/charts/setup';
import { readTheme } from '../../webview/src/theme';
import type { CartesianScaleOptions, FontSpec } from 'chart.js';
import { toFont } from 'chart.js/helpers';

export interface TickLabel {
  label: string;
  /** Where the label's left and right edges are, in CSS pixels. */
  left: number;
  right: number;
}

declare global {
  interface Window {
    /** Draws steps 0..lastStep in a chart `width` pixels wide; resolves with its x-axis tick labels as drawn, left to right. */
    xTickLabels: (width: number, lastStep: number) => Promise<TickLabel[]>;
  }
}

window.xTickLabels = async (width, lastStep) => {
  const theme = readTheme();
  applyChartDefaults(theme);
  document.body.innerHTML = `<div style="position:relative;width:${width}px;height:220px"><canvas></canvas></div>`;
  const canvas = document.querySelector('canvas') as HTMLCanvasElement;
  const chart = new LiveChart(
    canvas,
    [{ label: 'best', type: 'line', value: (p) => p.step, style: () => ({}) }],
    theme,
    () => undefined,
    'score',
  );
  // Only the step matters to this chart.
  const points = Array.from({ length: lastStep + 1 }, (_, step) => ({ step }) as SeriesPoint);
  chart.reset(points, 'step');
  await new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
  const drawn = Chart.getChart(canvas);
  const scale = drawn?.scales.x;
  if (!drawn || !scale) throw new Error('no chart drawn');
  const ctx = drawn.ctx;
  // The dashboard's tick labels use the default font (applyChartDefaults sets it).
  ctx.font = toFont(Chart.defaults.font).string;
  const labels = scale.ticks.map((tick, i) => {
    const label = String(tick.label ?? '');
    const centre = scale.getPixelForTick(i);
    const half = ctx.measureText(label).width / 2;
    return { label, left: centre - half, right: centre + half };
  });
  drawn.destroy();
  return labels;
};

export interface TitleOverflow {
  chart: string;
  axis: string;
  title: string;
  /** The title's length and the axis' length it is centred on, in CSS pixels. */
  titlePx: number;
  axisPx: number;
}

declare global {
  interface Window {
    /** Draws the dashboard's per-step charts in panels `width` pixels wide (the page's own box heights); resolves with every axis title longer than its axis. */
    axisTitleOverflows: (width: number) => Promise<TitleOverflow[]>;
  }
}

const SERIES_CHARTS = ['progress', 'outcomes', 'throughput', 'latency', 'stepTime'] as const;
type SeriesChartName = (typeof SERIES_CHARTS)[number];

function seriesPoint(step: number): SeriesPoint {
  return {
    step,
    lastStep: step,
    steps: 1,
    best: 1 + step / 10,
    bestSoFar: 1 + step / 10,
    mean: 0.8,
    p10: 0.5,
    p50: 0.8,
    p90: 1,
    outcomes: OUTCOME_GROUPS.map((_, i) => (i === 0 ? 10 : 1)),
    samples: 16,
    valid: 10,
    evaluations: 14,
    promptTokens: 20_000,
    completionTokens: 9_000,
    generationMs: 4_000,
    evaluationMs: 2_000,
    totalMs: 5_000,
    latencyMsP50: 2_000,
    latencyMsP95: 3_800,
  };
}

/** The dashboard's per-step charts in boxes `width` pixels wide (the page's own heights: dashboard.css), steps 1..lastStep drawn. */
async function drawSeriesCharts(width: number, lastStep: number): Promise<Map<SeriesChartName, Chart>> {
  const theme = readTheme();
  applyChartDefaults(theme);
  document.body.innerHTML = SERIES_CHARTS.map(
    (name) =>
      `<div style="position:relative;width:${width}px;height:${name === 'progress' ? 340 : 240}px"><canvas id="${name}"></canvas></div>`,
  ).join('');
  const canvas = (name: SeriesChartName) => document.getElementById(name) as HTMLCanvasElement;
  const charts = new SeriesCharts(
    {
      progress: canvas('progress'),
      outcomes: canvas('outcomes'),
      throughput: canvas('throughput'),
      latency: canvas('latency'),
      stepTime: canvas('stepTime'),
    },
    theme,
  );
  charts.setRun(null);
  charts.reset({ bucketSteps: 1, points: Array.from({ length: lastStep }, (_, i) => seriesPoint(i + 1)) }, true);
  await new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
  const drawn = new Map<SeriesChartName, Chart>();
  for (const name of SERIES_CHARTS) {
    const chart = Chart.getChart(canvas(name));
    if (!chart) throw new Error(`no ${name} chart drawn`);
    drawn.set(name, chart);
  }
  return drawn;
}

window.axisTitleOverflows = async (width) => {
  const overflows: TitleOverflow[] = [];
  for (const [name, drawn] of await drawSeriesCharts(width, 12)) {
    for (const [axis, scale] of Object.entries(drawn.scales)) {
      // Every axis the dashboard draws is cartesian (linear or category), with a title option.
      const title = (scale.options as Partial<CartesianScaleOptions>).title;
      if (!title?.display) continue;
      const text = String(title.text);
      drawn.ctx.font = toFont(title.font as Partial<FontSpec>).string; // resolved by the chart: no longer scriptable
      const titlePx = drawn.ctx.measureText(text).width;
      const axisPx = scale.isHorizontal() ? scale.width : scale.height;
      if (titlePx > axisPx) overflows.push({ chart: name, axis, title: text, titlePx, axisPx });
    }
    drawn.destroy();
  }
  return overflows;
};

declare global {
  interface Window {
    /** Each bar chart's plot width as a share of its box, and the share of the plot its bars cover, with steps 1..lastStep drawn. */
    barCoverage: (width: number, lastStep: number) => Promise<Record<string, { plot: number; bars: number }>>;
  }
}

window.barCoverage = async (width, lastStep) => {
  const coverage: Record<string, { plot: number; bars: number }> = {};
  for (const [name, drawn] of await drawSeriesCharts(width, lastStep)) {
    const bars = drawn.data.datasets.flatMap((_, i) => (drawn.getDatasetMeta(i).type === 'bar' ? drawn.getDatasetMeta(i).data : []));
    if (bars.length > 0) {
      const { left, right } = drawn.chartArea;
      const edges = bars.map((bar) => {
        const { x, width: w } = bar.getProps(['x', 'width'], true) as { x: number; width: number };
        return [Math.max(left, x - w / 2), Math.min(right, x + w / 2)] as const;
      });
      const covered = Math.max(...edges.map((e) => e[1])) - Math.min(...edges.map((e) => e[0]));
      coverage[name] = { plot: (right - left) / width, bars: covered / (right - left) };
    }
    drawn.destroy();
  }
  return coverage;
};
