// The statistics of a step whose scores a test does not look at (a committed
// step handed to the trainer bridge): its sample count, nothing measured.
import type { StepStatistics } from '../../src/engine/common/events';
import { emptyOutcomeCounts } from '../../src/engine/common/types';

export function unmeasuredStepStatistics(step: number, samples: number): StepStatistics {
  return {
    step,
    samples,
    counts: emptyOutcomeCounts(),
    best: null,
    mean: null,
    p10: null,
    p50: null,
    p90: null,
    meanAll: null,
    tokens: { prompt: 0, completion: 0 },
    timings: { generationMs: 0, evaluationMs: 0, totalMs: 0 },
    samplesPerSecond: 0,
  };
}
