// chart.js with only the pieces the dashboard draws, animations off (live data).
import {
  BarController,
  BarElement,
  CategoryScale,
  Chart,
  type ChartOptions,
  Filler,
  Legend,
  LinearScale,
  LineController,
  LineElement,
  PointElement,
  Tooltip,
} from 'chart.js';
import { formatValue } from '../format';
import type { ThemeColours } from '../theme';

Chart.register(LineController, BarController, LineElement, PointElement, BarElement, LinearScale, CategoryScale, Filler, Legend, Tooltip);

export { Chart };

/** A point as chart.js stores it with parsing off; gaps are NaN (null would draw as 0). */
export interface XY {
  x: number;
  y: number;
}

export function xy(x: number, y: number | null | undefined): XY {
  return { x, y: y === null || y === undefined || !Number.isFinite(y) ? Number.NaN : y };
}

export function applyChartDefaults(theme: ThemeColours): void {
  Chart.defaults.color = theme.foreground;
  Chart.defaults.borderColor = theme.grid;
  Chart.defaults.font.family = getComputedStyle(document.body).getPropertyValue('--vscode-font-family').trim() || 'sans-serif';
  Chart.defaults.font.size = 11;
  Chart.defaults.animation = false;
}

/** Options shared by the per-step charts: linear step axis, no animation, index tooltips. */
export function baseOptions(theme: ThemeColours, yTitle: string): ChartOptions<'line' | 'bar'> {
  return {
    animation: false,
    responsive: true,
    maintainAspectRatio: false,
    parsing: false,
    normalized: true,
    interaction: { mode: 'index', intersect: false },
    plugins: {
      legend: { position: 'bottom', labels: { color: theme.foreground, boxWidth: 12, boxHeight: 12, usePointStyle: true } },
      tooltip: {
        callbacks: {
          label: (item) => `${item.dataset.label ?? ''}: ${formatValue(item.parsed.y)}`,
        },
      },
    },
    scales: {
      x: {
        type: 'linear',
        // From 0 (round ticks) to the last step, not to the next round tick.
        bounds: 'data',
        min: 0,
        title: { display: true, text: 'step', color: theme.muted },
        ticks: { color: theme.foreground, precision: 0, maxTicksLimit: 10 },
        // chart.js always ends a 'data'-bounded axis with a tick at the last step (includeBounds
        // cannot drop it without a max option): next to a round tick it printed "2021" for 20 and 21.
        afterBuildTicks: (scale) => {
          const ticks = scale.ticks;
          const [before, previous, last] = ticks.slice(-3).map((t) => t.value);
          if (
            ticks.length >= 3 &&
            before !== undefined &&
            previous !== undefined &&
            last !== undefined &&
            last - previous < previous - before
          )
            ticks.pop();
        },
        grid: { color: theme.grid },
      },
      y: {
        type: 'linear',
        title: { display: true, text: yTitle, color: theme.muted },
        ticks: { color: theme.foreground, callback: (v) => formatValue(Number(v)), maxTicksLimit: 8 },
        grid: { color: theme.grid },
      },
    },
  };
}
