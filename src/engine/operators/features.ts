// Behaviour dimensions (docs/algorithm.md section 12; OpenEvolve's
// database.feature_dimensions): a task names evaluator metrics as the axes of
// each island's MAP-Elites grid, each with its own bins, instead of the
// paper's score and code length. Values are min-max scaled over the values
// seen, as the paper's features are.

/** One axis: a metric of the evaluator and its number of bins. */
export interface FeatureDimension {
  metric: string;
  bins: number;
}

/** The most axes a task may name (the grid has the product of their bins as cells). */
export const MAX_FEATURE_DIMENSIONS = 3;

/** A program's value on each axis: a number metric as it is, true/false as 1/0, anything else (absent, text) 0. */
export function featureValuesOf(metrics: Readonly<Record<string, unknown>>, dimensions: readonly FeatureDimension[]): number[] {
  return dimensions.map(({ metric }) => {
    const value = metrics[metric];
    if (typeof value === 'boolean') return value ? 1 : 0;
    return typeof value === 'number' && Number.isFinite(value) ? value : 0;
  });
}

/** The cell of bins `binsOf` (one per axis, first axis most significant). */
export function cellOfBins(bins: readonly number[], dimensions: readonly FeatureDimension[]): number {
  let cell = 0;
  dimensions.forEach((dimension, i) => {
    cell = cell * dimension.bins + (bins[i] ?? 0);
  });
  return cell;
}

/** The bin of each axis of a cell (cellOfBins reversed). */
export function binsOfCell(cell: number, dimensions: readonly FeatureDimension[]): number[] {
  const bins = new Array<number>(dimensions.length).fill(0);
  let rest = cell;
  for (let i = dimensions.length - 1; i >= 0; i--) {
    const size = (dimensions[i] as FeatureDimension).bins;
    bins[i] = rest % size;
    rest = Math.floor(rest / size);
  }
  return bins;
}
