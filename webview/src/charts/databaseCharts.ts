// Database state: island sizes, score histogram (chart.js bars) and the
// MAP-Elites heat maps (plain canvases: one small grid per island).
import type { ChartOptions } from 'chart.js';
import { type DatabaseView, HEAT_EMPTY, HEAT_PENALTY, HEAT_SHADES, type RunView } from '../../../src/protocol/dashboardMessages';
import { formatCount, formatValue } from '../format';
import { shadeColour, type ThemeColours, withAlpha } from '../theme';
import { frameScheduler } from './frame';
import { Chart } from './setup';

function barOptions(theme: ThemeColours, xTitle: string, yTitle: string): ChartOptions<'bar'> {
  return {
    animation: false,
    responsive: true,
    maintainAspectRatio: false,
    plugins: { legend: { display: false } },
    scales: {
      x: {
        type: 'category',
        title: { display: true, text: xTitle, color: theme.muted },
        ticks: { color: theme.foreground, maxRotation: 0, autoSkip: true, maxTicksLimit: 8 },
        grid: { display: false },
      },
      y: {
        type: 'linear',
        beginAtZero: true,
        title: { display: true, text: yTitle, color: theme.muted },
        ticks: { color: theme.foreground, precision: 0, maxTicksLimit: 6 },
        grid: { color: theme.grid },
      },
    },
  };
}

export class BarChart {
  private readonly chart: Chart<'bar', number[], string>;
  private colour: (t: ThemeColours) => string;
  private readonly redraw = frameScheduler(() => this.chart.update('none'));

  constructor(
    canvas: HTMLCanvasElement,
    private theme: ThemeColours,
    private readonly titles: { x: string; y: string },
    colour: (t: ThemeColours) => string,
  ) {
    this.colour = colour;
    this.chart = new Chart<'bar', number[], string>(canvas, {
      type: 'bar',
      data: {
        labels: [],
        datasets: [{ label: titles.y, data: [], backgroundColor: colour(theme), barPercentage: 0.95, categoryPercentage: 1 }],
      },
      options: barOptions(theme, titles.x, titles.y),
    });
  }

  set(labels: string[], values: number[], highlight: number | null = null, xTitle?: string): void {
    this.chart.data.labels = labels;
    const ds = this.chart.data.datasets[0];
    if (ds) {
      ds.data = values;
      const base = this.colour(this.theme);
      ds.backgroundColor = values.map((_, i) => (i === highlight ? this.theme.orange : base));
    }
    if (xTitle !== undefined) {
      const x = this.chart.options.scales?.x;
      if (x?.title) x.title.text = xTitle;
    }
    this.redraw();
  }

  applyTheme(theme: ThemeColours): void {
    this.theme = theme;
    const x = this.chart.options.scales?.x;
    const xTitle = x?.title && typeof x.title.text === 'string' ? x.title.text : this.titles.x;
    this.chart.options = barOptions(theme, xTitle, this.titles.y);
    this.redraw();
  }
}

/** Heat maps, one per island: rows are score bins (best at the top), columns code-length bins. */
export class HeatMaps {
  private view: DatabaseView['heatmaps'] | null = null;
  private currentIsland = -1;
  private readonly canvases = new Map<number, HTMLCanvasElement>();
  private readonly scheduleDraw = frameScheduler(() => this.draw());

  constructor(
    private readonly container: HTMLElement,
    private readonly caption: HTMLElement,
    private readonly legend: HTMLCanvasElement,
    private theme: ThemeColours,
  ) {}

  set(database: DatabaseView, run: RunView | null): void {
    this.view = database.heatmaps;
    this.currentIsland = database.currentIsland;
    const direction = run?.direction ?? 'maximize';
    const r = database.heatmaps.scoreRange;
    const cl = database.heatmaps.codeLengthRange;
    const axes = database.heatmaps.axes;
    const span = (range: { min: number; max: number } | null): string =>
      range ? ` ${formatValue(range.min)} … ${formatValue(range.max)}` : '';
    if (axes) {
      // A task's behaviour dimensions (docs/algorithm.md section 12).
      this.caption.textContent =
        `Rows: ${axes.rows.metric}${span(axes.rows.range)}, low at the bottom; ` +
        `columns: ${axes.columns ? `${axes.columns.metric}${span(axes.columns.range)}` : 'one'}. ` +
        `Colour: best ${direction === 'minimize' ? '(lowest) objective' : 'objective'} in the cell; grey: only invalid programs.`;
      this.scheduleDraw();
      return;
    }
    this.caption.textContent =
      `Rows: score bins, better at the top; ` +
      `columns: code length${cl ? ` ${formatCount(Math.round(cl.min))} … ${formatCount(Math.round(cl.max))} chars` : ''}. ` +
      `Colour: best ${direction === 'minimize' ? '(lowest) objective' : 'objective'} in the cell` +
      // The shades span valid programs' objectives only: penalty scores are no objective.
      `${r ? `, valid objectives ${formatValue(r.min)} … ${formatValue(r.max)}` : ''}; grey: only invalid programs.`;
    this.scheduleDraw();
  }

  applyTheme(theme: ThemeColours): void {
    this.theme = theme;
    this.scheduleDraw();
  }

  private draw(): void {
    this.drawLegend();
    const view = this.view;
    if (!view) return;
    const seen = new Set<number>();
    for (const island of view.islands) {
      seen.add(island.island);
      let canvas = this.canvases.get(island.island);
      if (!canvas) {
        const figure = document.createElement('figure');
        figure.className = 'heatmap';
        canvas = document.createElement('canvas');
        canvas.setAttribute('role', 'img');
        const label = document.createElement('figcaption');
        figure.append(canvas, label);
        this.container.append(figure);
        this.canvases.set(island.island, canvas);
      }
      const figure = canvas.parentElement;
      const label = figure?.querySelector('figcaption');
      if (label) label.textContent = `island ${island.island} · ${formatCount(island.occupied)} cells`;
      figure?.classList.toggle('current', island.island === this.currentIsland);
      canvas.setAttribute('aria-label', `island ${island.island}: ${island.occupied} occupied MAP-Elites cells`);
      this.drawIsland(canvas, view.bins, island.grid);
    }
    for (const [id, canvas] of this.canvases) {
      if (seen.has(id)) continue;
      canvas.parentElement?.remove();
      this.canvases.delete(id);
    }
  }

  private drawIsland(canvas: HTMLCanvasElement, bins: number, grid: readonly number[]): void {
    const cssSize = 132;
    const ratio = window.devicePixelRatio || 1;
    canvas.style.width = `${cssSize}px`;
    canvas.style.height = `${cssSize}px`;
    canvas.width = Math.round(cssSize * ratio);
    canvas.height = Math.round(cssSize * ratio);
    const ctx = canvas.getContext('2d');
    if (!ctx) return;
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, cssSize, cssSize);
    const cell = cssSize / bins;
    ctx.fillStyle = withAlpha(this.theme.foreground, 0.06);
    ctx.fillRect(0, 0, cssSize, cssSize);
    const penalty = withAlpha(this.theme.muted, 0.45);
    for (let i = 0; i < grid.length && i < bins * bins; i++) {
      const value = grid[i] as number;
      if (value === HEAT_EMPTY) continue;
      const row = Math.floor(i / bins);
      const col = i % bins;
      ctx.fillStyle = value === HEAT_PENALTY ? penalty : shadeColour(value / HEAT_SHADES);
      // Row 0 is the lowest score: draw it at the bottom.
      ctx.fillRect(col * cell, (bins - 1 - row) * cell, Math.ceil(cell), Math.ceil(cell));
    }
    ctx.strokeStyle = this.theme.highContrast ? this.theme.foreground : withAlpha(this.theme.foreground, 0.3);
    ctx.lineWidth = 1;
    ctx.strokeRect(0.5, 0.5, cssSize - 1, cssSize - 1);
  }

  private drawLegend(): void {
    const canvas = this.legend;
    const w = 160;
    const h = 10;
    const ratio = window.devicePixelRatio || 1;
    canvas.style.width = `${w}px`;
    canvas.style.height = `${h}px`;
    canvas.width = w * ratio;
    canvas.height = h * ratio;
    const ctx = canvas.getContext('2d');
    if (!ctx) return;
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    for (let x = 0; x < w; x++) {
      ctx.fillStyle = shadeColour(x / (w - 1));
      ctx.fillRect(x, 0, 1, h);
    }
  }
}
