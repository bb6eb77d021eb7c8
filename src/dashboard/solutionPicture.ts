// What the dashboard draws of the best program's solution, from its solution
// file's text (untrusted: the candidate wrote it): the circles of a packing
// ({"centers": [[x, y], ...], "radii": [...]}), a step function and its
// autoconvolution ({"heights": [...]}, the autocorrelation tasks), or a +-1
// matrix ({"matrix": [[...], ...]}). Anything else, or anything malformed,
// draws nothing.
import type { SolutionPicture } from '../protocol/dashboardMessages';

/** Points of a step function (and of its autoconvolution) sent to the page at most. */
export const MAX_STEP_POINTS = 2000;
const MAX_CIRCLES = 10_000;
const MAX_MATRIX_SIDE = 256;

const isFiniteNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/** Every `factor` consecutive values averaged (a step function keeps its shape, and its area up to the factor). */
function downsample(values: readonly number[], max: number): number[] {
  if (values.length <= max) return [...values];
  const factor = Math.ceil(values.length / max);
  const out: number[] = [];
  for (let i = 0; i < values.length; i += factor) {
    const chunk = values.slice(i, i + factor);
    out.push(chunk.reduce((a, b) => a + b, 0) / chunk.length);
  }
  return out;
}

/** (f * f)[k] = sum_i f[i] f[k - i], with f the non-negative part (as the evaluators score it), scaled by the step width 1/n. */
export function autoconvolution(heights: readonly number[]): number[] {
  const f = heights.map((h) => Math.max(h, 0));
  const n = f.length;
  const out = new Array<number>(Math.max(0, 2 * n - 1)).fill(0);
  for (let i = 0; i < n; i++) {
    const fi = f[i] as number;
    if (fi === 0) continue;
    for (let j = 0; j < n; j++) out[i + j] = (out[i + j] as number) + fi * (f[j] as number);
  }
  return out.map((v) => v / n);
}

export function solutionPicture(solutionText: string): SolutionPicture | undefined {
  let data: unknown;
  try {
    data = JSON.parse(solutionText);
  } catch {
    return undefined;
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return undefined;
  const d = data as Record<string, unknown>;
  if (Array.isArray(d.centers) && Array.isArray(d.radii) && d.centers.length === d.radii.length && d.centers.length <= MAX_CIRCLES) {
    const circles: { x: number; y: number; r: number }[] = [];
    for (const [i, c] of d.centers.entries()) {
      const r = d.radii[i];
      if (!Array.isArray(c) || c.length !== 2 || !isFiniteNumber(c[0]) || !isFiniteNumber(c[1]) || !isFiniteNumber(r)) return undefined;
      circles.push({ x: c[0], y: c[1], r });
    }
    return { kind: 'circles', circles };
  }
  if (Array.isArray(d.heights) && d.heights.length > 0 && d.heights.every(isFiniteNumber)) {
    // The autoconvolution of a downsampled function is close to the downsampled autoconvolution, at a fraction of the cost.
    const heights = downsample(d.heights, MAX_STEP_POINTS / 2);
    return { kind: 'steps', heights, autoconvolution: downsample(autoconvolution(heights), MAX_STEP_POINTS) };
  }
  if (Array.isArray(d.matrix) && d.matrix.length > 0 && d.matrix.length <= MAX_MATRIX_SIDE) {
    const rows: number[][] = [];
    for (const row of d.matrix) {
      if (!Array.isArray(row) || row.length > MAX_MATRIX_SIDE || !row.every(isFiniteNumber)) return undefined;
      rows.push(row);
    }
    return { kind: 'matrix', rows };
  }
  return undefined;
}
