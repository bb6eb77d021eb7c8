// A chart fed point by point: append / replace the last point, then
// chart.update('none') (no animation, no rebuild). Datasets are specs that
// read one number off a series point.
import type { ChartDataset, ChartOptions } from 'chart.js';
import type { SeriesPoint } from '../../../src/protocol/dashboardMessages';
import type { ThemeColours } from '../theme';
import { frameScheduler } from './frame';
import { baseOptions, Chart, type XY, xy } from './setup';

type Kind = 'line' | 'bar';
type Dataset = ChartDataset<Kind, XY[]>;

export interface DatasetSpec {
  label: string;
  type: Kind;
  /** The value at a point, or null for a gap. */
  value: (point: SeriesPoint) => number | null;
  style: (theme: ThemeColours) => Partial<Dataset>;
}

export class LiveChart {
  private readonly chart: Chart<Kind, XY[]>;
  private xTitle = 'step';
  private readonly redraw = frameScheduler(() => this.chart.update('none'));

  constructor(
    canvas: HTMLCanvasElement,
    private readonly specs: DatasetSpec[],
    private theme: ThemeColours,
    private readonly configure: (options: ChartOptions<Kind>, theme: ThemeColours) => void,
    private yTitle: string,
  ) {
    this.chart = new Chart<Kind, XY[]>(canvas, {
      type: 'line',
      data: { datasets: specs.map((s) => this.dataset(s)) },
      options: this.options(),
    });
  }

  get datasetCount(): number {
    return this.chart.data.datasets.length;
  }

  /** Points per dataset (for tests and the state check). */
  get length(): number {
    return this.chart.data.datasets[0]?.data.length ?? 0;
  }

  reset(points: readonly SeriesPoint[], xTitle: string): void {
    this.specs.forEach((spec, i) => {
      const data = this.chart.data.datasets[i]?.data;
      if (!data) return;
      data.length = 0;
      const value = spec.value;
      for (const p of points) data[data.length] = xy(p.step, value(p));
    });
    this.setXTitle(xTitle);
    this.redraw();
  }

  append(point: SeriesPoint): void {
    this.write(point, false);
  }

  replaceLast(point: SeriesPoint): void {
    this.write(point, true);
  }

  setYTitle(title: string): void {
    this.yTitle = title;
    const y = this.chart.options.scales?.y;
    if (y && 'title' in y && y.title) y.title.text = title;
    this.redraw();
  }

  setDatasetLabel(index: number, label: string): void {
    const ds = this.chart.data.datasets[index];
    if (ds) ds.label = label;
    this.redraw();
  }

  applyTheme(theme: ThemeColours): void {
    this.theme = theme;
    this.chart.options = this.options();
    this.specs.forEach((spec, i) => {
      const ds = this.chart.data.datasets[i];
      if (ds) Object.assign(ds, spec.style(theme));
    });
    this.redraw();
  }

  private write(point: SeriesPoint, replace: boolean): void {
    this.specs.forEach((spec, i) => {
      const data = this.chart.data.datasets[i]?.data;
      if (!data) return;
      const v = xy(point.step, spec.value(point));
      if (replace && data.length > 0) data[data.length - 1] = v;
      // Not push(): chart.js hooks push on its data arrays and re-lays out a bar
      // dataset at once, before its stacked siblings have the point.
      else data[data.length] = v;
    });
    this.redraw();
  }

  private setXTitle(text: string): void {
    this.xTitle = text;
    const x = this.chart.options.scales?.x;
    if (x && 'title' in x && x.title) x.title.text = text;
  }

  private dataset(spec: DatasetSpec): Dataset {
    return { type: spec.type, label: spec.label, data: [], ...spec.style(this.theme) } as Dataset;
  }

  private options(): ChartOptions<Kind> {
    const options = baseOptions(this.theme, this.yTitle);
    const x = options.scales?.x;
    if (x && 'title' in x && x.title) x.title.text = this.xTitle;
    this.configure(options, this.theme);
    return options;
  }
}
