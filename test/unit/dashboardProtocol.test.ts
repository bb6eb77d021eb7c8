// The dashboard protocol: every message both ways validates, malformed ones
// are refused with the offending path, and the reducer gives the page the
// state the host holds.
import assert from 'node:assert/strict';
import { DashboardModel } from '../../src/dashboard/dashboardModel';
import type { StepCommittedEvent } from '../../src/engine/common/events';
import type { DatabaseSnapshot } from '../../src/engine/database/programDatabase';
import {
  type DashboardDatabaseInput,
  DashboardDatabaseInputSchema,
  type DashboardStepInput,
  DashboardStepInputSchema,
  emptyDashboardState,
  type HostMessage,
  HostMessageSchema,
  OUTCOME_GROUPS,
  parseHostMessage,
  parsePageMessage,
  parseSavedState,
  pointRates,
  reduceDashboardState,
} from '../../src/protocol/dashboardMessages';
import { dashboardRunInput } from '../support/dashboardInputs';
import { OUTCOMES } from '../../src/engine/common/types';

function counts(partial: Partial<Record<(typeof OUTCOMES)[number], number>>): DashboardStepInput['counts'] {
  return { ...(Object.fromEntries(OUTCOMES.map((o) => [o, 0])) as DashboardStepInput['counts']), ...partial };
}

function step(n: number, best: number | null): DashboardStepInput {
  return {
    step: n,
    samples: 10,
    counts: counts({ valid: best === null ? 0 : 6, no_diff: 2, request_failed: best === null ? 8 : 2 }),
    best,
    mean: best === null ? null : best - 0.1,
    p10: best === null ? null : best - 0.2,
    p50: best === null ? null : best - 0.1,
    p90: best === null ? null : best - 0.05,
    tokens: { prompt: 1000, completion: 500 },
    timings: { generationMs: 800, evaluationMs: 400, totalMs: 1000 },
    bestEver: best,
    dbSize: n * 6,
    elapsedMs: n * 1000,
  };
}

describe('dashboard protocol', () => {
  it('accepts every page message and refuses malformed ones with the path', () => {
    for (const ok of [
      { type: 'ready', stateVersion: 1 },
      { type: 'ready', stateVersion: null },
      { type: 'action', action: 'start' },
      { type: 'action', action: 'stop' },
      { type: 'action', action: 'pause' },
      { type: 'action', action: 'resume' },
      { type: 'setRl', enabled: true },
      { type: 'showDiff', programId: 'abc' },
      { type: 'applyToFile', programId: 'abc' },
      { type: 'showLineage', programId: 'abc' },
    ]) {
      assert.deepEqual(parsePageMessage(ok), ok);
    }
    assert.throws(() => parsePageMessage({ type: 'action', action: 'format-disk' }), /malformed dashboard message at action/);
    assert.throws(() => parsePageMessage({ type: 'setRl', enabled: 'yes' }), /at enabled/);
    assert.throws(() => parsePageMessage({ type: 'showDiff', programId: '' }), /at programId/);
    assert.throws(() => parsePageMessage({ type: 'eval', code: 'x' }), /malformed/);
    assert.throws(() => parsePageMessage(null), /malformed/);
    assert.throws(() => parsePageMessage('ready'), /malformed/);
  });

  it('validates host messages: NaN, wrong outcome-bar length and unknown types are refused', () => {
    const model = new DashboardModel();
    const point = (model.addStep(step(1, 2)) as Extract<HostMessage, { type: 'step' }>).point;
    const stepMessage = { type: 'step', bucketSteps: 1, point, replaceLast: false, summary: emptyDashboardState().summary };
    assert.equal(parseHostMessage(stepMessage).type, 'step');
    assert.throws(() => parseHostMessage({ ...stepMessage, point: { ...point, best: Number.NaN } }), /at point\.best/);
    assert.throws(() => parseHostMessage({ ...stepMessage, point: { ...point, outcomes: [1, 2] } }), /at point\.outcomes/);
    assert.throws(() => parseHostMessage({ type: 'reload' }), /malformed host message/);
    assert.equal(parseHostMessage({ type: 'notice', level: 'warning', text: 'x' }).type, 'notice');
  });

  it('every message the model produces validates and survives JSON', () => {
    const model = new DashboardModel();
    const messages: HostMessage[] = [
      model.setRun(
        dashboardRunInput({
          runId: 'r1',
          direction: 'minimize',
          targetValue: 1.5,
          source: { kind: 'mutate', label: 'offline mutate sampler (no model)' },
          samplesPerPrompt: 5,
        }),
      ),
      model.addStep(step(1, 0.5)),
      model.addStep(step(2, null)),
      model.setBest({ id: 'p', step: 1, score: 0.5, objective: 2, lineageDepth: 1, parentId: 'q' }),
      model.setRunState({ state: 'paused', message: 'paused after step 2' }),
      model.setTrainer({
        enabled: true,
        state: 'ready',
        protocol: 'slime',
        url: 'http://t',
        lastAckPolicyVersion: '7',
        groupsSent: 4,
        message: '',
      }),
      model.snapshotMessage(),
    ];
    for (const m of messages) {
      const roundTrip: unknown = JSON.parse(JSON.stringify(m));
      assert.deepEqual(parseHostMessage(roundTrip), m, `message ${m.type}`);
      assert.ok(HostMessageSchema.safeParse(roundTrip).success);
    }
  });

  it('the reducer applied to the incremental messages gives the host snapshot', () => {
    const model = new DashboardModel(8);
    let page = emptyDashboardState();
    const apply = (m: HostMessage) => {
      page = reduceDashboardState(page, parseHostMessage(JSON.parse(JSON.stringify(m))));
    };
    apply(model.setRun(dashboardRunInput({ source: { kind: 'llm', label: 'm at http://x/v1' }, batchSize: null, samplesPerPrompt: null })));
    const kinds = new Set<string>();
    for (let n = 1; n <= 50; n++) {
      const m = model.addStep(step(n, n % 7 === 0 ? null : 1 + Math.sin(n)));
      kinds.add(m.type === 'step' ? (m.replaceLast ? 'replace' : 'append') : m.type);
      apply(m);
    }
    assert.deepEqual([...kinds].sort(), ['append', 'replace', 'series'], 'the stream exercises append, replace-last and re-bucketing');
    assert.deepEqual(page, model.snapshot());
  });

  it('saved state: a valid one is taken back, anything else is dropped', () => {
    const state = emptyDashboardState();
    assert.deepEqual(parseSavedState(JSON.parse(JSON.stringify(state))), state);
    assert.equal(parseSavedState(undefined), null);
    assert.equal(parseSavedState({ ...state, version: 0 }), null);
    assert.equal(parseSavedState({ ...state, series: { bucketSteps: 0, points: [] } }), null);
  });

  it('step input is what a step_committed event carries; database input what stateSnapshot() gives', () => {
    // Compile-time: the engine's event and snapshot are assignable to the inputs as they are.
    const fromEvent = (e: StepCommittedEvent): DashboardStepInput => e;
    const fromSnapshot = (s: DatabaseSnapshot): DashboardDatabaseInput => s;
    assert.equal(typeof fromEvent, 'function');
    assert.equal(typeof fromSnapshot, 'function');
    const event: StepCommittedEvent = {
      ...step(3, 2),
      type: 'step_committed',
      time: 1,
      meanAll: 0.5,
      samplesPerSecond: 10,
      newBest: true,
    };
    // Runtime: the schema strips the event's extra fields and keeps the rest.
    const parsed = DashboardStepInputSchema.parse(event);
    assert.equal(parsed.step, 3);
    assert.equal((parsed as Record<string, unknown>).type, undefined);
    const snapshot: DatabaseSnapshot = {
      lastStep: 3,
      programs: 4,
      populationSize: 70,
      hashIndexSize: 5,
      currentIsland: 1,
      best: { id: 'a', score: 2 },
      islands: [{ island: 0, size: 4, generation: 3, best: { id: 'a', score: 2 } }],
      mapElites: {
        features: ['score', 'codeLength'],
        bins: 10,
        ranges: { score: { min: -0.1, max: 2 }, codeLength: { min: 100, max: 200 } },
        islands: [{ island: 0, occupied: 1, cells: [{ cell: 95, scoreBin: 9, lengthBin: 5, id: 'a', score: 2 }] }],
      },
      archive: { size: 1, capacity: 25, minScore: 2, maxScore: 2 },
      migrations: { count: 0, lastStep: null, interval: 50, rate: 0.1 },
    };
    assert.equal(DashboardDatabaseInputSchema.parse(snapshot).mapElites.islands[0]?.cells.length, 1);
  });

  it('outcome groups cover every outcome exactly once, in penalty order', () => {
    const covered = OUTCOME_GROUPS.flatMap((g) => [...g.outcomes]);
    assert.deepEqual([...covered].sort(), [...OUTCOMES].sort());
    assert.deepEqual(
      OUTCOME_GROUPS.map((g) => g.label),
      [
        'no diff (-0.4)',
        'no change / lazy / not novel (-0.3)',
        'no solution (-0.2)',
        'invalid (-0.1)',
        'valid',
        'request failed',
        'evaluation failed',
      ],
    );
  });

  it('rates are per second of step wall time, null for a zero-length step', () => {
    const model = new DashboardModel();
    const point = (model.addStep(step(1, 1)) as Extract<HostMessage, { type: 'step' }>).point;
    assert.deepEqual(pointRates(point), { samplesPerSecond: 10, evaluationsPerSecond: 6, tokensPerSecond: 500 });
    assert.deepEqual(pointRates({ ...point, totalMs: 0 }), { samplesPerSecond: null, evaluationsPerSecond: null, tokensPerSecond: null });
  });
});
