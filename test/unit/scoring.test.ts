import assert from 'node:assert/strict';
import { defaultSettings } from '../../src/engine/common/config';
import { codeHash } from '../../src/engine/codeHash';
import { classifyChild } from '../../src/engine/classifyChild';
import { parseEngineEvent, StepStatisticsSchema } from '../../src/engine/common/events';
import {
  combinedScore,
  groupAdvantages,
  isValidScore,
  objectiveOfScore,
  resolveRewardShaping,
  rewardOfSample,
  type RewardShaping,
  shapeReward,
  stepStatistics,
} from '../../src/engine/common/scoring';

const close = (a: number, b: number, eps = 1e-12): void => assert.ok(Math.abs(a - b) <= eps, `${a} != ${b}`);

const PARENT = ['# EVOLVE-BLOCK-START', 'x = 1.0', 'y = 2.0', '# EVOLVE-BLOCK-END', ''].join('\n');
const block = (s: string, r: string): string => `<<<<<<< SEARCH\n${s}\n=======\n${r}\n>>>>>>> REPLACE`;

describe('scoring: combined score', () => {
  it('is the objective when maximising and 1/objective when minimising', () => {
    assert.equal(combinedScore(2.5, 'maximize'), 2.5);
    close(combinedScore(1.5, 'minimize'), 1 / 1.5);
    close(objectiveOfScore(combinedScore(1.493, 'minimize'), 'minimize'), 1.493);
    assert.ok(isValidScore(0.5));
    assert.ok(!isValidScore(-0.1));
    assert.ok(!isValidScore(Number.POSITIVE_INFINITY));
  });
});

describe('scoring: early checks', () => {
  const input = { parentCode: PARENT, language: 'py', maxCodeLength: 50_000 };

  it('gives no_diff, no_change, too long as no_solution, duplicate, then evaluate', () => {
    const noDiff = classifyChild({ ...input, answer: 'no blocks here' });
    assert.deepEqual(
      [noDiff.kind, noDiff.kind === 'rejected' && noDiff.outcome, noDiff.kind === 'rejected' && noDiff.score],
      ['rejected', 'no_diff', -0.4],
    );

    const commentOnly = classifyChild({ ...input, answer: block('x = 1.0', 'x = 1.0  # same') });
    assert.equal(commentOnly.kind === 'rejected' && commentOnly.outcome, 'no_change');
    assert.equal(commentOnly.kind === 'rejected' && commentOnly.score, -0.3);

    // The marker as unchanged context is allowed (algorithm.md section 3); a line added before it is outside.
    const outside = classifyChild({ ...input, answer: block('# EVOLVE-BLOCK-START', 'z = 1\n# EVOLVE-BLOCK-START') });
    assert.equal(outside.kind === 'rejected' && outside.outcome, 'no_change');

    const tooLong = classifyChild({ ...input, maxCodeLength: 60, answer: block('x = 1.0', `x = "${'a'.repeat(80)}"`) });
    assert.equal(tooLong.kind === 'rejected' && tooLong.outcome, 'no_solution');
    assert.equal(tooLong.kind === 'rejected' && tooLong.score, -0.2);

    const child = PARENT.replace('x = 1.0', 'x = 1.5');
    const seen = new Set([codeHash(PARENT, 'py'), codeHash(child, 'py')]);
    const duplicate = classifyChild({
      ...input,
      answer: block('x = 1.0', 'x = 1.5  # a comment does not make it new'),
      seen: (h) => seen.has(h),
    });
    assert.equal(duplicate.kind === 'rejected' && duplicate.outcome, 'duplicate');
    assert.equal(duplicate.kind === 'rejected' && duplicate.score, -0.3);

    const fresh = classifyChild({ ...input, answer: block('x = 1.0', 'x = 1.25'), seen: (h) => seen.has(h) });
    assert.equal(fresh.kind, 'evaluate');
    assert.equal(fresh.kind === 'evaluate' && fresh.child, PARENT.replace('x = 1.0', 'x = 1.25'));
    assert.equal(fresh.kind === 'evaluate' && fresh.codeHash, codeHash(PARENT.replace('x = 1.0', 'x = 1.25'), 'py'));

    const lazyOff = classifyChild({ ...input, answer: block('x = 1.0', 'x = 1.5') });
    assert.equal(lazyOff.kind, 'evaluate', 'without seen() the lazy penalty is off');
  });
});

describe('scoring: reward shaping', () => {
  const c3: RewardShaping = { enabled: true, lower: 1.4557, upper: 3.2, alpha: 3, k: 3 };
  const c2: RewardShaping = { enabled: true, lower: 0.91, upper: 0.96, alpha: 1, k: 3 };

  it('follows the formula when maximising', () => {
    close(shapeReward(0.935, 'maximize', c2), 3 * ((0.935 - 0.91) / 0.05));
    assert.equal(shapeReward(0.97, 'maximize', c2), 3, 'clipped at 1');
    assert.equal(shapeReward(0.5, 'maximize', c2), 0, 'clipped at 0');
  });

  it('follows the formula when minimising', () => {
    close(shapeReward(1.6, 'minimize', c3), 3 * ((3.2 - 1.6) / (3.2 - 1.4557)) ** 3);
    assert.equal(shapeReward(1.4, 'minimize', c3), 3, 'below L is the best');
    assert.equal(shapeReward(3.5, 'minimize', c3), 0, 'above U is the worst');
  });

  it('passes negative penalties through and does nothing when off', () => {
    for (const p of [-0.4, -0.3, -0.2, -0.1]) assert.equal(shapeReward(p, 'maximize', c2), p);
    assert.equal(shapeReward(2.5, 'maximize', { ...c2, enabled: false }), 2.5);
    assert.throws(() => shapeReward(1, 'maximize', { ...c2, upper: c2.lower }), RangeError);
  });

  it("takes a sample's objective when shaping, its score otherwise", () => {
    close(rewardOfSample({ score: 1 / 1.6, objective: 1.6 }, 'minimize', c3), shapeReward(1.6, 'minimize', c3));
    assert.equal(rewardOfSample({ score: 1 / 1.6, objective: 1.6 }, 'minimize', { ...c3, enabled: false }), 1 / 1.6);
    assert.equal(rewardOfSample({ score: -0.2, objective: null }, 'minimize', c3), -0.2);
  });

  it('resolves the shaping from settings: task, on, off, override', () => {
    const settings = defaultSettings();
    const task: RewardShaping = { enabled: false, lower: 0, upper: 2.635, alpha: 3, k: 5 };
    assert.deepEqual(resolveRewardShaping(settings, task), task);
    assert.deepEqual(resolveRewardShaping({ ...settings, 'rewardShaping.mode': 'on' }, task), { ...task, enabled: true });
    assert.equal(resolveRewardShaping({ ...settings, 'rewardShaping.mode': 'off' }, { ...task, enabled: true }).enabled, false);
    const overridden = resolveRewardShaping(
      {
        ...settings,
        'rewardShaping.override': true,
        'rewardShaping.lower': 1,
        'rewardShaping.upper': 4,
        'rewardShaping.alpha': 2,
        'rewardShaping.scale': 7,
      },
      task,
    );
    assert.deepEqual(overridden, { enabled: false, lower: 1, upper: 4, alpha: 2, k: 7 });
  });

  it('computes GRPO advantages within a group', () => {
    const adv = groupAdvantages([1, 2, 3, 4]);
    const std = Math.sqrt(((1.5 ** 2 + 0.5 ** 2) * 2) / 3);
    close(adv[0] as number, -1.5 / (std + 1e-6));
    close(
      adv.reduce((a, b) => a + b, 0),
      0,
      1e-9,
    );
    const population = groupAdvantages([1, 3], { unbiasedStd: false });
    close(population[1] as number, 1 / (1 + 1e-6));
    assert.deepEqual(groupAdvantages([0.5, 0.5, 0.5]), [0, 0, 0]);
    assert.deepEqual(groupAdvantages([2]), [0]);
    assert.deepEqual(groupAdvantages([]), []);
  });
});

describe('scoring: per-step statistics', () => {
  it('counts outcomes, summarises valid scores and validates against the event schema', () => {
    const samples = [
      ...[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((s) => ({
        outcome: 'valid' as const,
        score: s,
        promptTokens: 100,
        completionTokens: 50,
        latencyMs: 100 * s,
      })),
      { outcome: 'no_diff' as const, score: -0.4, promptTokens: 100, completionTokens: 10, latencyMs: 1100 },
      { outcome: 'duplicate' as const, score: -0.3, promptTokens: 100, completionTokens: 10, latencyMs: 1200 },
      { outcome: 'request_failed' as const, score: null, promptTokens: 0, completionTokens: 0, latencyMs: null },
    ];
    const stats = stepStatistics({ step: 3, samples, generationMs: 800, evaluationMs: 1200, totalMs: 1300 });
    assert.equal(stats.samples, 13);
    assert.equal(stats.counts.valid, 10);
    assert.equal(stats.counts.no_diff, 1);
    assert.equal(stats.counts.duplicate, 1);
    assert.equal(stats.counts.request_failed, 1);
    assert.equal(stats.counts.timeout, 0);
    assert.equal(stats.best, 10);
    assert.equal(stats.mean, 5.5);
    close(stats.p10 as number, 1.9);
    close(stats.p50 as number, 5.5);
    close(stats.p90 as number, 9.1);
    close(stats.meanAll as number, (55 - 0.7) / 12);
    assert.deepEqual(stats.tokens, { prompt: 1200, completion: 520 });
    close(stats.samplesPerSecond, 10);
    // Request latency of the 12 answered requests (100 ... 1200 ms); the failed one has none.
    close(stats.latencyMsP50 as number, 650);
    close(stats.latencyMsP95 as number, 1145);
    StepStatisticsSchema.parse(stats);
    const event = parseEngineEvent(
      JSON.parse(JSON.stringify({ ...stats, type: 'step_committed', time: 1, dbSize: 40, bestEver: 10, newBest: true, elapsedMs: 5000 })),
    );
    assert.equal(event.type, 'step_committed');
  });

  it('gives nulls, not NaN, when nothing was valid', () => {
    const stats = stepStatistics({
      step: 1,
      samples: [{ outcome: 'no_change', score: -0.3, promptTokens: 1, completionTokens: 1, latencyMs: null }],
      generationMs: 0,
      evaluationMs: 0,
      totalMs: 0,
    });
    assert.equal(stats.best, null);
    assert.equal(stats.mean, null);
    assert.equal(stats.p50, null);
    assert.equal(stats.samplesPerSecond, 0);
    assert.equal(stats.latencyMsP50, null);
    StepStatisticsSchema.parse(stats);
  });
});

describe('events', () => {
  it('accepts well-formed events and rejects malformed ones with the path', () => {
    const finished = parseEngineEvent({
      type: 'evaluation_finished',
      time: 1,
      step: 2,
      jobKey: 's2-p0',
      sampleIndex: 3,
      childId: null,
      outcome: 'timeout',
      score: -0.2,
      objective: null,
      durationMs: 70_000,
      reason: 'ran past 60 s',
    });
    assert.equal(finished.type, 'evaluation_finished');
    parseEngineEvent({
      type: 'run_finished',
      time: 1,
      reason: 'target_reached',
      lastStep: 12,
      best: { id: 'p1', score: 2.63 },
      message: '',
    });
    parseEngineEvent({ type: 'error', time: 1, message: 'endpoint down', fatal: true });
    assert.throws(
      () =>
        parseEngineEvent({
          type: 'evaluation_finished',
          time: 1,
          step: 2,
          jobKey: 'k',
          sampleIndex: 0,
          childId: null,
          outcome: 'great',
          score: 1,
          objective: 1,
          durationMs: 1,
          reason: '',
        }),
      /outcome/,
    );
    assert.throws(
      () => parseEngineEvent({ type: 'run_finished', time: 1, reason: 'bored', lastStep: 1, best: null, message: '' }),
      /reason/,
    );
    assert.throws(() => parseEngineEvent({ type: 'nope', time: 1 }));
  });
});
