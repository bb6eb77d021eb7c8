// The bundled evaluators cannot be gamed by scale or tolerance: a solution
// scaled down until the absolute tolerances matter, or one that leans on a
// tolerance, never scores better than the honest solution it came from.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { scoreSolutionFile } from '../../src/engine/sandbox/trustedEvaluator';
import { loadTask } from '../../src/engine/task/task';
import type { EvaluationResult } from '../../src/engine/common/types';
import { tempDir } from '../support/tempDirs';

const TASKS = join(__dirname, '../../tasks');

/** C1 of raw heights, as the old evaluator computed it: 2 n max(h * h) / (sum h)^2. */
function rawC1(h: readonly number[]): number {
  const n = h.length;
  let peak = -Infinity;
  for (let k = 0; k < 2 * n - 1; k++) {
    let sum = 0;
    for (let i = Math.max(0, k - n + 1); i <= Math.min(k, n - 1); i++) sum += (h[i] as number) * (h[k - i] as number);
    peak = Math.max(peak, sum);
  }
  const total = h.reduce((a, b) => a + b, 0);
  return (2 * n * peak) / (total * total);
}

describe('bundled evaluators: no scale or tolerance gaming', function () {
  this.timeout(60_000);
  let dir: string;
  before(() => {
    dir = tempDir('te-gaming-');
  });

  async function score(task: string, solution: unknown): Promise<EvaluationResult> {
    const file = join(dir, `${task}-${Math.random().toString(36).slice(2)}.json`);
    await writeFile(file, JSON.stringify(solution));
    return scoreSolutionFile(await loadTask(join(TASKS, task)), file);
  }

  // Twenty equal heights scaled to 1e-9, with -1e-10 (inside the tolerance) where it lowers the raw peak most.
  const scaled = Array.from({ length: 20 }, () => 1e-9);
  const gamed = scaled.map((h, i) => ([2, 4, 6, 8].includes(i) ? -1e-10 : h));
  const clamped = gamed.map((h) => Math.max(h, 0));

  it('first-autocorrelation: C1 is computed on max(h, 0), so tiny negative heights on a scaled-down solution fake nothing', async () => {
    const raw = rawC1(gamed);
    assert.ok(raw < rawC1(clamped) - 0.03, `the corpus no longer games the raw formula (${raw})`);
    const result = await score('first-autocorrelation', { heights: gamed });
    assert.equal(result.status, 'ok', result.reason);
    const honest = await score('first-autocorrelation', { heights: clamped });
    assert.equal(result.objective, honest.objective);
    assert.ok(Math.abs((result.objective as number) - 1.875) < 1e-12, `C1 ${result.objective}`);
    // Scale alone changes nothing: the same shape at height 1.
    const unscaled = await score('first-autocorrelation', { heights: clamped.map((h) => h * 1e9) });
    assert.ok(Math.abs((unscaled.objective as number) - (result.objective as number)) < 1e-12);
    // Below the tolerance it is invalid, and a sum of only negatives is no solution.
    assert.equal((await score('first-autocorrelation', { heights: [1, -2e-10, 1] })).status, 'invalid_solution');
    assert.equal((await score('first-autocorrelation', { heights: [-1e-10, -1e-10] })).status, 'invalid_solution');
  });

  it('second-autocorrelation: C2 is computed on max(h, 0) and is the same at any scale', async () => {
    const result = await score('second-autocorrelation', { heights: gamed });
    assert.equal(result.status, 'ok', result.reason);
    const honest = await score('second-autocorrelation', { heights: clamped });
    assert.equal(result.objective, honest.objective);
    const unscaled = await score('second-autocorrelation', { heights: clamped.map((h) => h * 1e9) });
    assert.ok(Math.abs((unscaled.objective as number) - (result.objective as number)) < 1e-12);
    assert.equal((await score('second-autocorrelation', { heights: [-1e-10, 0, -1e-10] })).status, 'invalid_solution');
  });

  it('third-autocorrelation: C3 is the same at any scale, and a vanishing sum is invalid, not a record', async () => {
    const shape = [1, 0.5, -0.25, 0.75, 1];
    const big = await score('third-autocorrelation', { heights: shape });
    const tiny = await score('third-autocorrelation', { heights: shape.map((h) => h * 1e-9) });
    assert.equal(big.status, 'ok', big.reason);
    assert.ok(Math.abs((tiny.objective as number) - (big.objective as number)) < 1e-9 * (big.objective as number));
    assert.equal((await score('third-autocorrelation', { heights: [1e-11, -1e-11, 1e-11] })).status, 'invalid_solution');
  });

  it('circle-packing: the 1e-6 tolerance is absolute in a fixed square; radii grown past it are invalid', async () => {
    // 26 circles of radius 0.08 on a grid of 5 columns (spacing 0.16): touching, inside.
    const centers = Array.from({ length: 26 }, (_, i) => [0.1 + 0.16 * (i % 5), 0.1 + 0.16 * Math.floor(i / 5)]);
    const radii = Array.from({ length: 26 }, () => 0.08);
    const honest = await score('circle-packing', { centers, radii });
    assert.equal(honest.status, 'ok', honest.reason);
    const inflated = await score('circle-packing', { centers, radii: radii.map((r) => r + 2e-6) });
    assert.equal(inflated.status, 'invalid_solution');
    const strict = await score('circle-packing-strict', { centers, radii: radii.map((r) => r + 1e-12) });
    assert.equal(strict.status, 'invalid_solution');
    // Scaling the whole packing up leaves the square.
    const scaledUp = await score('circle-packing', {
      centers: centers.map(([x, y]) => [(x as number) * 1.3, (y as number) * 1.3]),
      radii: radii.map((r) => r * 1.3),
    });
    assert.equal(scaledUp.status, 'invalid_solution');
  });

  it('hadamard-29: only exact +1/-1 entries; a scaled matrix is invalid', async () => {
    const sylvesterLike = Array.from({ length: 29 }, (_, i) => Array.from({ length: 29 }, (_, j) => (i === j ? -1 : 1)));
    const honest = await score('hadamard-29', { matrix: sylvesterLike });
    assert.equal(honest.status, 'ok', honest.reason);
    assert.equal((await score('hadamard-29', { matrix: sylvesterLike.map((row) => row.map((x) => 2 * x)) })).status, 'invalid_solution');
    assert.equal(
      (await score('hadamard-29', { matrix: sylvesterLike.map((row) => row.map((x) => x * 1.0000001)) })).status,
      'invalid_solution',
    );
  });
});
