// Behaviour dimensions (docs/algorithm.md section 12; OpenEvolve's
// database.feature_dimensions): a task names evaluator metrics as the axes of
// each island's MAP-Elites grid, each with its own bins, instead of the
// paper's score and code length. Values are min-max scaled over the values
// seen, as the paper's features are. As in OpenEvolve, an axis named `score`
// or `complexity` that the evaluator does not report is the program's score or
// code length.

/** One axis: a metric of the evaluator and its number of bins. */
export interface FeatureDimension {
  metric: string;
  bins: number;
}

/** The most axes a task may name (the grid has the product of their bins as cells). */
export const MAX_FEATURE_DIMENSIONS = 3;

/** The axes that fall back to the program itself when the evaluator reports no metric of that name (OpenEvolve's built-ins). */
export const BUILT_IN_FEATURES = { score: 'score', complexity: 'complexity' } as const;

/**
 * A program's value on each axis: a number metric as it is, true/false as
 * 1/0; absent, `score` and `complexity` are the program's score and code
 * length; anything else (absent, text) 0.
 */
export function featureValuesOf(
  metrics: Readonly<Record<string, unknown>>,
  dimensions: readonly FeatureDimension[],
  program: { readonly score: number; readonly codeLength: number },
): number[] {
  return dimensions.map(({ metric }) => {
    const value = metrics[metric];
    if (typeof value === 'boolean') return value ? 1 : 0;
    if (typeof value === 'number' && Number.isFinite(value)) return value;
    if (value === undefined && metric === BUILT_IN_FEATURES.score) return Number.isFinite(program.score) ? program.score : 0;
    if (value === undefined && metric === BUILT_IN_FEATURES.complexity) return program.codeLength;
    return 0;
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
