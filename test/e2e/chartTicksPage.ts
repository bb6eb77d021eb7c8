// Bundled into a blank Chromium page by chartTicks.e2e.ts: the dashboard's
// own step chart (LiveChart with the dashboard's options, real chart.js) and
// a probe that reports where its x-axis tick labels are drawn.
import type { SeriesPoint } from '../../src/protocol/dashboardMessages';
import { LiveChart } from '../../webview/src/charts/liveChart';
import { applyChartDefaults, Chart } from '../../webview/src/charts/setup';
import { readTheme } from '../../webview/src/theme';
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
