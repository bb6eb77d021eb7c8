// With RL on, the dashboard's progress series marks the steps where the
// policy version changed (docs/architecture.md "Comparing runs"), also once
// a long run's steps are bucketed.
import assert from 'node:assert/strict';
import { StepSeries } from '../../src/dashboard/dashboardModel';
import { emptyOutcomeCounts } from '../../src/engine/common/types';
import type { DashboardStepInput } from '../../src/protocol/dashboardMessages';

function step(n: number, policyVersion: string | null | undefined): DashboardStepInput {
  return {
    step: n,
    samples: 4,
    counts: { ...emptyOutcomeCounts(), valid: 4 },
    best: n,
    mean: n / 2,
    p10: null,
    p50: null,
    p90: null,
    tokens: { prompt: 0, completion: 0 },
    timings: { generationMs: 1, evaluationMs: 1, totalMs: 2 },
    bestEver: n,
    dbSize: n,
    elapsedMs: n * 10,
    ...(policyVersion === undefined ? {} : { sampling: { batchSize: 2, samplesPerPrompt: 2, rl: policyVersion !== null, policyVersion } }),
  };
}

describe('dashboard: policy changes on the progress series', () => {
  it('marks the step where a new version first sampled; steps without RL or with the same version are not marked', () => {
    const series = new StepSeries('maximize');
    const versions = [undefined, null, '0', '0', '1', null, '1', '2'];
    versions.forEach((v, i) => series.add(step(i + 1, v)));
    const marked = series.view().points.flatMap((p) => (p.policyChange !== undefined ? [[p.step, p.policyChange]] : []));
    assert.deepEqual(marked, [
      [3, '0'],
      [5, '1'],
      [8, '2'],
    ]);
  });

  it('a bucket of several steps keeps its latest change', () => {
    const series = new StepSeries('maximize', 4);
    for (let i = 1; i <= 16; i++) series.add(step(i, String(Math.floor(i / 3))));
    const view = series.view();
    assert.ok(view.bucketSteps > 1);
    const marked = view.points.filter((p) => p.policyChange !== undefined).map((p) => p.policyChange);
    // Buckets of 8 steps: 1-7 (changes at 1, 3 and 6), 8-15 (at 9, 12 and 15), 16 (none).
    assert.deepEqual(marked, ['2', '5']);
  });
});
