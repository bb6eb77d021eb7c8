// The per-island MAP-Elites grids of docs/algorithm.md section 6: which cell a
// program falls in (score and code length, or a task's behaviour dimensions,
// binned over the ranges seen so far), and who holds each cell.
import type { DatabaseState } from './schema';
import type { PopulationNode } from './populationNode';
import type { DatabaseConfig } from './records';
import { cellOfBins, featureValuesOf } from '../operators/features';

const FEATURE_DIMENSIONS = 2;

type Range = { min: number; max: number } | null;

/** Bins per feature dimension: max(10, ceil(archive^(1/d))). */
export function featureBins(archiveSize: number, dimensions = FEATURE_DIMENSIONS): number {
  const root = Math.pow(archiveSize, 1 / dimensions);
  const nearest = Math.round(root);
  const ceil = Math.abs(root - nearest) < 1e-9 ? nearest : Math.ceil(root);
  return Math.max(10, ceil);
}

function widen(range: Range, value: number): Range {
  if (range === null) return { min: value, max: value };
  if (value >= range.min && value <= range.max) return range;
  return { min: Math.min(range.min, value), max: Math.max(range.max, value) };
}

function binOf(range: Range, value: number, bins: number): number {
  if (range === null || !(range.max > range.min)) return 0;
  const scaled = (value - range.min) / (range.max - range.min);
  return Math.min(bins - 1, Math.max(0, Math.floor(scaled * bins)));
}

export class EliteGrids {
  readonly bins: number;
  private readonly maps: Map<number, PopulationNode>[];

  constructor(private readonly config: DatabaseConfig) {
    this.bins = featureBins(config.archiveSize);
    this.maps = Array.from({ length: config.numIslands }, () => new Map<number, PopulationNode>());
  }

  get grids(): readonly ReadonlyMap<number, Readonly<PopulationNode>>[] {
    return this.maps;
  }

  /** A live program read back on open that holds a cell. */
  restore(node: PopulationNode): void {
    if (node.eliteCell !== null) (this.maps[node.island] as Map<number, PopulationNode>).set(node.eliteCell, node);
  }

  /**
   * MAP-Elites: take an empty cell, or replace the occupant only with a
   * higher score. Widens `ranges` (the run's state) by the node's values.
   * Returns the occupant it displaced, or null.
   */
  place(node: PopulationNode, ranges: DatabaseState['ranges']): PopulationNode | null {
    let cell: number;
    const dimensions = this.config.features;
    if (dimensions) {
      // A task's behaviour dimensions (docs/algorithm.md section 12).
      const values = node.features ?? featureValuesOf({}, dimensions, node);
      const featureRanges = (ranges.features ??= dimensions.map(() => null));
      const bins = dimensions.map((dimension, i) => {
        featureRanges[i] = widen(featureRanges[i] ?? null, values[i] as number);
        return binOf(featureRanges[i] ?? null, values[i] as number, dimension.bins);
      });
      cell = cellOfBins(bins, dimensions);
    } else {
      ranges.score = widen(ranges.score, node.score);
      ranges.codeLength = widen(ranges.codeLength, node.codeLength);
      cell = binOf(ranges.score, node.score, this.bins) * this.bins + binOf(ranges.codeLength, node.codeLength, this.bins);
    }
    const grid = this.maps[node.island] as Map<number, PopulationNode>;
    const occupant = grid.get(cell);
    if (occupant && !(node.score > occupant.score)) return null;
    if (occupant) occupant.eliteCell = null;
    grid.set(cell, node);
    node.eliteCell = cell;
    return occupant ?? null;
  }

  /** An evicted program gives its cell up. */
  remove(node: PopulationNode): void {
    if (node.eliteCell === null) return;
    const grid = this.maps[node.island] as Map<number, PopulationNode>;
    if (grid.get(node.eliteCell) === node) grid.delete(node.eliteCell);
    node.eliteCell = null;
  }
}
