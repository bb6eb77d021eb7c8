// Dashboard data shaping: objective display for minimise tasks, per-step
// points, bucketing of long runs, heat-map binning, histogram, the model.
import assert from 'node:assert/strict';
import {
  binHeatMap,
  databaseView,
  DashboardModel,
  displayObjective,
  histogram,
  roundBinWidth,
  mergePoints,
  objectiveStats,
  stepObjectiveStats,
  stepPoint,
  StepSeries,
  trainerView,
  trainerViewOfSettings,
  runView,
} from '../../src/dashboard/dashboardModel';
import { DashboardFeed, modelSink } from '../../src/dashboard/dashboardFeed';
import { percentile } from '../../src/engine/common/stats';
import { IN_SANDBOX_TRUST_REASON, OUTCOMES } from '../../src/engine/common/types';
import {
  type DashboardDatabaseInput,
  type DashboardRunInput,
  type DashboardStepInput,
  HEAT_EMPTY,
  HEAT_PENALTY,
  HEAT_SHADES,
  type HostMessage,
  OUTCOME_GROUPS,
  parseHostMessage,
  reduceDashboardState,
  emptyDashboardState,
} from '../../src/protocol/dashboardMessages';
import { dashboardDatabaseInput, dashboardRunInput } from '../support/dashboardInputs';

type Counts = DashboardStepInput['counts'];
/** A live run's card input; tests override what they look at. */
const RUN_INPUT: DashboardRunInput = dashboardRunInput();

const zero = (): Counts => Object.fromEntries(OUTCOMES.map((o) => [o, 0])) as Counts;

/** A step whose valid combined scores are `scores` (plus fixed penalties and failures). */
function stepFrom(step: number, scores: number[], extra: Partial<Counts> = {}): DashboardStepInput {
  const counts = { ...zero(), ...extra, valid: scores.length };
  const samples = Object.values(counts).reduce((a, b) => a + b, 0);
  const some = scores.length > 0;
  return {
    step,
    samples,
    counts,
    best: some ? Math.max(...scores) : null,
    mean: some ? scores.reduce((a, b) => a + b, 0) / scores.length : null,
    p10: some ? percentile(scores, 10) : null,
    p50: some ? percentile(scores, 50) : null,
    p90: some ? percentile(scores, 90) : null,
    tokens: { prompt: 100 * samples, completion: 50 * samples },
    timings: { generationMs: 600, evaluationMs: 300, totalMs: 1000 },
    bestEver: null,
    dbSize: step * 10,
    elapsedMs: step * 1000,
  };
}

describe('dashboard data: objective display', () => {
  it('shows a minimise task in its own objective: 1/score for valid scores, nothing for penalties', () => {
    assert.equal(displayObjective(0.5, 'minimize'), 2);
    assert.equal(displayObjective(-0.2, 'minimize'), null);
    assert.equal(displayObjective(-0.2, 'maximize'), -0.2);
    assert.equal(displayObjective(2.6, 'maximize'), 2.6);
    assert.equal(displayObjective(null, 'minimize'), null);
  });

  it('maps score percentiles to objective percentiles exactly (1/x reverses order); the mean becomes harmonic', () => {
    const objectives = [1.5, 1.6, 1.7, 2.0, 3.0];
    const scores = objectives.map((o) => 1 / o);
    const fromScores = stepObjectiveStats(stepFrom(1, scores), 'minimize');
    const exact = objectiveStats(objectives, 'minimize');
    assert.equal(fromScores.best, 1.5);
    assert.equal(exact.best, 1.5);
    assert.ok(Math.abs((fromScores.p50 as number) - (exact.p50 as number)) < 1e-12);
    // p10 of the objective is the low end: the reciprocal of the score's p90.
    assert.ok((fromScores.p10 as number) < (fromScores.p90 as number));
    assert.ok(Math.abs((fromScores.p10 as number) - 1 / percentile(scores, 90)) < 1e-12);
    assert.equal(fromScores.meanExact, false);
    const harmonic = objectives.length / objectives.reduce((a, o) => a + 1 / o, 0);
    assert.ok(Math.abs((fromScores.mean as number) - harmonic) < 1e-12);
    // With the host's objective statistics the mean is the arithmetic one.
    const withObjective = stepObjectiveStats({ ...stepFrom(1, scores), objective: exact }, 'minimize');
    assert.equal(withObjective.meanExact, true);
    assert.ok(Math.abs((withObjective.mean as number) - 1.96) < 1e-12);
  });

  it('best so far runs down for a minimise task and up for a maximise one', () => {
    const min = new StepSeries('minimize');
    const max = new StepSeries('maximize');
    const objectives = [2.0, 1.8, 1.9, 1.7, 2.5];
    objectives.forEach((o, i) => {
      min.add(stepFrom(i + 1, [1 / o]));
      max.add(stepFrom(i + 1, [o]));
    });
    const round = (v: number | null) => (v === null ? null : Number(v.toFixed(9)));
    assert.deepEqual(
      min.view().points.map((p) => round(p.bestSoFar)),
      [2.0, 1.8, 1.8, 1.7, 1.7],
    );
    assert.deepEqual(
      max.view().points.map((p) => p.bestSoFar),
      [2.0, 2.0, 2.0, 2.0, 2.5],
    );
    assert.equal(min.best, 1.7);
  });
});

describe('dashboard data: per-step points', () => {
  it('groups outcomes into the stacked bars and counts evaluations', () => {
    const input = stepFrom(3, [1, 2, 3], {
      no_diff: 1,
      no_change: 2,
      duplicate: 3,
      no_solution: 4,
      timeout: 5,
      invalid_solution: 6,
      request_failed: 7,
      evaluation_failed: 8,
    });
    const point = stepPoint(input, 'maximize', null);
    assert.deepEqual(point.outcomes, [1, 5, 9, 6, 3, 7, 8]);
    assert.equal(point.outcomes.length, OUTCOME_GROUPS.length);
    assert.equal(point.evaluations, 3 + 6 + 4 + 5);
    assert.equal(stepPoint({ ...input, evaluations: 11 }, 'maximize', null).evaluations, 11);
    assert.equal(point.samples, 39);
    assert.equal(point.latencyMsP50, null);
  });

  it('a step without a valid sample has no score statistics but keeps the best so far', () => {
    const point = stepPoint(stepFrom(4, [], { no_diff: 5 }), 'maximize', 2.5);
    assert.equal(point.best, null);
    assert.equal(point.mean, null);
    assert.equal(point.bestSoFar, 2.5);
  });

  it('merging adds counts, tokens and times exactly and weights means by valid counts', () => {
    const a = stepPoint(stepFrom(1, [1, 1, 1]), 'maximize', null);
    const b = stepPoint(stepFrom(2, [3]), 'maximize', a.bestSoFar);
    const m = mergePoints(a, b, 'maximize');
    assert.equal(m.step, 1);
    assert.equal(m.lastStep, 2);
    assert.equal(m.steps, 2);
    assert.equal(m.best, 3);
    assert.equal(m.bestSoFar, 3);
    assert.equal(m.mean, 1.5);
    assert.equal(m.valid, 4);
    assert.equal(m.samples, a.samples + b.samples);
    assert.equal(m.totalMs, 2000);
    assert.equal(m.completionTokens, a.completionTokens + b.completionTokens);
    const minMerged = mergePoints(
      stepPoint(stepFrom(1, [1 / 2]), 'minimize', null),
      stepPoint(stepFrom(2, [1 / 3]), 'minimize', null),
      'minimize',
    );
    assert.equal(minMerged.best, 2, 'the better objective of a minimise task is the lower');
  });
});

describe('dashboard data: bucketing long runs', () => {
  it('keeps at most maxPoints points, in aligned power-of-two buckets, with exact totals', () => {
    const series = new StepSeries('maximize', 100);
    let samples = 0;
    let best = 0;
    for (let s = 1; s <= 1000; s++) {
      const score = 1 + Math.sin(s / 7) + s / 1000;
      best = Math.max(best, score);
      const input = stepFrom(s, [score, score / 2], { no_diff: s % 3 });
      samples += input.samples;
      series.add(input);
    }
    const view = series.view();
    assert.ok(view.points.length <= 100, `${view.points.length} points`);
    assert.ok(view.points.length > 50);
    assert.equal(view.bucketSteps, 16);
    for (const p of view.points)
      assert.equal(Math.floor(p.step / 16), Math.floor(p.lastStep / 16), 'a bucket never crosses an aligned boundary');
    assert.equal(
      view.points.reduce((a, p) => a + p.samples, 0),
      samples,
    );
    assert.equal(
      view.points.reduce((a, p) => a + p.steps, 0),
      1000,
    );
    assert.equal(view.points[view.points.length - 1]?.bestSoFar, best);
    assert.equal(Math.max(...view.points.map((p) => p.best ?? 0)), best);
  });

  it('says how the page changes: append, replace the last point, or a re-bucketed series', () => {
    const series = new StepSeries('maximize', 4);
    const kinds = [1, 2, 3, 4, 5, 6, 7].map((s) => series.add(stepFrom(s, [s])).kind);
    assert.deepEqual(kinds, ['append', 'append', 'append', 'append', 'rebucketed', 'append', 'replaceLast']);
    assert.throws(() => series.add(stepFrom(7, [1])), /not after step 7/);
  });

  it('1,000 steps and 10,000 scores shape into aligned buckets', () => {
    const model = new DashboardModel();
    model.setRun(dashboardRunInput({ targetValue: 3, source: { kind: 'llm', label: 'x' }, batchSize: 32, samplesPerPrompt: 16 }));
    const scores = Array.from({ length: 10 }, (_, i) => 1 + i / 10);
    for (let s = 1; s <= 1000; s++) {
      model.addStep(stepFrom(s, scores));
    }
    const snap = model.snapshot();
    // Buckets are aligned on multiples of 4: steps 1-3, 4-7, ..., 996-999, 1000.
    assert.equal(snap.series.points.length, 251);
    assert.equal(snap.series.bucketSteps, 4);
    assert.equal(snap.summary.lastStep, 1000);
  });
});

describe('dashboard data: heat maps and histogram', () => {
  it('merges a fine grid keeping the best score per merged cell, shading valid cells and marking penalties', () => {
    const cells = [
      { scoreBin: 0, lengthBin: 0, score: -0.1 },
      { scoreBin: 63, lengthBin: 63, score: 2 },
      { scoreBin: 62, lengthBin: 62, score: 1 },
      { scoreBin: 10, lengthBin: 40, score: 1.5 },
    ];
    const { bins, grid } = binHeatMap(cells, 64, 32, { min: 1, max: 2 });
    assert.equal(bins, 32);
    assert.equal(grid.length, 32 * 32);
    assert.equal(grid[0], HEAT_PENALTY);
    assert.equal(grid[31 * 32 + 31], HEAT_SHADES, 'the two top cells merged into one holding the best score');
    assert.equal(grid[5 * 32 + 20], HEAT_SHADES / 2);
    assert.equal(grid.filter((v) => v !== HEAT_EMPTY).length, 3);
    const small = binHeatMap([{ scoreBin: 2, lengthBin: 3, score: 5 }], 10, 32, null);
    assert.equal(small.bins, 10);
    assert.equal(small.grid[23], HEAT_SHADES);
  });

  it('histogram counts every finite value in bins of a round width whose edges are its multiples', () => {
    const h = histogram([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, Number.NaN], 5);
    assert.deepEqual(h, { min: 0, max: 12, counts: [2, 2, 2, 2, 2, 1] });
    assert.equal(histogram([]), null);
    assert.deepEqual(histogram([4, 4], 3), { min: 4, max: 4, counts: [2] });
    // The run the issue saw: objectives 0.33 .. 1.08888 in 30 bins of width 0.05 (not 0.0253, with ticks like 0.433).
    const values = [0.33, 0.41, 0.5, 0.77, 1.0, 1.08888];
    const round = histogram(values, 30);
    assert.ok(round);
    assert.deepEqual([round.min, round.max, round.counts.length], [0.3, 1.1, 16]);
    assert.equal(
      round.counts.reduce((a, b) => a + b, 0),
      values.length,
    );
    const width = (round.max - round.min) / round.counts.length;
    assert.ok(Math.abs(width - 0.05) < 1e-12, String(width));
    assert.deepEqual(roundBinWidth(0.0253), 0.05);
    assert.deepEqual(roundBinWidth(0.021), 0.025);
    assert.deepEqual(roundBinWidth(3), 5);
    assert.deepEqual(roundBinWidth(100), 100);
  });

  it('database view: objective ranges for a minimise task, compact for 10 islands x 32 x 32 cells', () => {
    const cells: DashboardDatabaseInput['mapElites']['islands'][number]['cells'] = [];
    for (let i = 0; i < 32 * 32; i++)
      cells.push({ cell: i, scoreBin: Math.floor(i / 32), lengthBin: i % 32, id: `c${i}`, score: 0.5 + (i % 97) / 200 });
    const input: DashboardDatabaseInput = {
      lastStep: 9,
      programs: 10000,
      populationSize: 10000,
      hashIndexSize: 12000,
      currentIsland: 3,
      best: { id: 'b', score: 0.98 },
      islands: Array.from({ length: 10 }, (_, island) => ({ island, size: 1000, generation: 9, best: { id: `b${island}`, score: 0.5 } })),
      mapElites: {
        features: ['score', 'codeLength'],
        bins: 32,
        ranges: { score: { min: 0.5, max: 0.98 }, codeLength: { min: 100, max: 900 } },
        islands: Array.from({ length: 10 }, (_, island) => ({ island, occupied: cells.length, cells })),
      },
      archive: { size: 1000, capacity: 1000, minScore: 0.5, maxScore: 0.98 },
      migrations: { count: 2, lastStep: 8, interval: 50, rate: 0.1 },
    };
    const view = databaseView(input, 'minimize', { label: 'x', values: [2, 1.5, 1.1] });
    assert.equal(view.islands[0]?.best, 2);
    assert.equal(view.archive.worst, 2);
    assert.ok(Math.abs((view.archive.best as number) - 1 / 0.98) < 1e-12);
    assert.equal(
      view.histogram?.counts.reduce((a, b) => a + b, 0),
      3,
    );
    // The heat maps' objective range spans valid programs only: a penalty score (<= 0) is no objective.
    const withPenalty = databaseView(
      {
        ...input,
        mapElites: {
          ...input.mapElites,
          ranges: { ...input.mapElites.ranges, score: { min: -0.2, max: 0.98 } },
          islands: [{ island: 0, occupied: 2, cells: [cells[0]!, { ...cells[1]!, scoreBin: 0, score: -0.2 }] }],
        },
      },
      'maximize',
      null,
    );
    assert.deepEqual(withPenalty.heatmaps.scoreRange, { min: 0.5, max: 0.5 });
    const minimised = databaseView(input, 'minimize', null).heatmaps.scoreRange;
    assert.ok(minimised && minimised.min < minimised.max && Math.abs(minimised.min - 1 / 0.98) < 0.02, JSON.stringify(minimised));
    const bytes = JSON.stringify({ type: 'database', database: view }).length;
    assert.ok(bytes < 40_000, `${bytes} bytes per database message`);
    assert.equal(parseHostMessage(JSON.parse(JSON.stringify({ type: 'database', database: view }))).type, 'database');
  });
});

describe('dashboard data: the model', () => {
  it('labels the source, the direction and the run facts', () => {
    const model = new DashboardModel();
    const m = model.setRun({
      runId: 'r',
      taskName: 'ac',
      taskTitle: 'Autocorrelation',
      direction: 'minimize',
      targetValue: 1.5029,
      source: { kind: 'mutate', label: 'offline mutate sampler (no model)' },
      batchSize: 8,
      samplesPerPrompt: 4,
      resumedFromStep: 40,
      python: {
        executable: '/home/r/venv/bin/python',
        source: 'python extension',
        version: '3.11.2',
        prefixes: ['/home/r/venv', '/usr'],
        packages: { scipy: '1.10.1', numpy: '1.24.2' },
      },
    });
    assert.equal(m.type, 'snapshot');
    const run = model.snapshot().run;
    assert.equal(run?.source.label, 'offline mutate sampler (no model)');
    assert.equal(run?.directionLabel, 'minimise (lower is better)');
    // The header says which interpreter, its version and the packages results depend on.
    assert.deepEqual(run?.details, [
      'B 8 x n 4 = 32 samples per step',
      'resumed after step 40',
      'Python 3.11.2 (/home/r/venv/bin/python; numpy 1.24.2, scipy 1.10.1)',
    ]);
  });

  it('summary and best card in the objective; the histogram counts evaluated valid programs unless the database gives scores', () => {
    const model = new DashboardModel();
    model.setRun(
      dashboardRunInput({ direction: 'minimize', source: { kind: 'llm', label: 'x' }, batchSize: null, samplesPerPrompt: null }),
    );
    const msg = model.addStep({ ...stepFrom(1, [0.5, 0.25]), bestEver: 0.5 }) as Extract<HostMessage, { type: 'step' }>;
    assert.equal(msg.summary.bestEver, 2);
    assert.equal(msg.summary.meanExact, false);
    assert.equal(msg.point.best, 2);
    const db = dashboardDatabaseInput({
      best: { id: 'a', score: 0.5 },
      islands: [{ island: 0, size: 2, generation: 1, best: { id: 'a', score: 0.5 } }],
      mapElites: {
        features: ['score', 'codeLength'],
        bins: 10,
        ranges: { score: null, codeLength: null },
        islands: [{ island: 0, occupied: 0, cells: [] }],
      },
    });
    const inDb = model.setDatabase(db, [0.5, 0.25, -0.1]) as Extract<HostMessage, { type: 'database' }>;
    assert.match(inDb.database.histogram?.label ?? '', /valid programs in the database \(2\)/);
    assert.deepEqual([inDb.database.histogram?.min, inDb.database.histogram?.max], [2, 4.1], 'round edges around the objectives 2 and 4');
    const best = model.setBest({ id: 'a', step: 1, score: 0.5, objective: null, lineageDepth: 3, parentId: null }) as Extract<
      HostMessage,
      { type: 'best' }
    >;
    assert.equal(best.best?.objective, 2);
    // A new run clears the old one's data but keeps the trainer state.
    model.setTrainer({
      enabled: true,
      state: 'ready',
      protocol: 'atropos',
      url: 'u',
      lastAckPolicyVersion: '3',
      groupsSent: 1,
      message: '',
    });
    model.setRun(dashboardRunInput({ runId: 'r2', source: { kind: 'llm', label: 'x' }, batchSize: null, samplesPerPrompt: null }));
    const snap = model.snapshot();
    assert.equal(snap.series.points.length, 0);
    assert.equal(snap.database, null);
    assert.equal(snap.best, null);
    assert.equal(snap.trainer.lastAckPolicyVersion, '3');
  });
});

describe('dashboard data: the RL card', () => {
  const base = {
    enabled: true,
    protocol: 'slime' as const,
    url: 'http://127.0.0.1:9000',
    mode: 'sync' as const,
    connected: true,
    trainerStep: 3,
    lastAckedPolicyVersion: '3',
    pendingGroups: 2,
    sentGroups: 40,
    rejectedGroups: 0,
    waiting: false,
    lastError: null,
  };

  it('maps the bridge state to the card: off, not configured, ready, waiting, failing, connecting', () => {
    assert.equal(trainerView({ ...base, enabled: false }).state, 'off');
    assert.equal(trainerView({ ...base, url: '' }).state, 'not_configured');
    const ready = trainerView(base);
    assert.equal(ready.state, 'ready');
    assert.equal(ready.groupsSent, 40);
    assert.equal(ready.lastAckPolicyVersion, '3');
    assert.match(ready.message, /trainer step 3; 2 pending/);
    assert.match(
      trainerView({ ...base, queuedGroups: 4, droppedGroups: 1 }).message,
      /2 pending, 4 queued for the trainer, 1 short group\(s\) dropped/,
    );
    assert.match(
      trainerView({ ...base, releasedGroups: 30, queuedGroups: 4, resentGroups: 2, lostGroups: 2 }).message,
      /2 pending, 30 released to the trainer, 4 queued for the trainer, 2 sent again after a trainer restart, 2 lost in a trainer restart/,
    );
    assert.equal(trainerView({ ...base, waiting: true }).state, 'waiting');
    const failing = trainerView({ ...base, connected: false, lastError: 'HTTP 503' });
    assert.equal(failing.state, 'error');
    assert.match(failing.message, /HTTP 503; retrying/);
    assert.equal(trainerView({ ...base, connected: false }).state, 'connecting');
    // A refused toggle (no token ids) stays off and says why; the pill and the text agree (off, not error).
    const refused = trainerView({ ...base, enabled: false, connected: false, lastError: 'needs token ids' });
    assert.equal(refused.state, 'off');
    assert.equal(refused.enabled, false);
    assert.match(refused.message, /^Off: .*needs token ids/);
    // Unticked after a trainer that never answered: off, not error.
    assert.equal(trainerView({ ...base, enabled: false, connected: false, lastError: 'timed out' }).state, 'off');
    // A run without a URL, RL off: the text does not say it is on.
    const noUrl = trainerView({ ...base, url: '', enabled: false, lastError: 'the RL trainer is on but thetaevolve.trainer.url is empty' });
    assert.equal(noUrl.state, 'off');
    assert.doesNotMatch(noUrl.message, /is on/);
  });

  it('without a run, shows what the settings do to the next one', () => {
    const settings = { enabled: true, protocol: 'atropos' as const, url: 'http://127.0.0.1:8000', mode: 'async' as const };
    assert.equal(trainerViewOfSettings(settings).state, 'next_run');
    assert.match(trainerViewOfSettings(settings).message, /next run .*async/);
    assert.equal(trainerViewOfSettings({ ...settings, enabled: false }).state, 'off');
    assert.equal(trainerViewOfSettings({ ...settings, url: ' ' }).state, 'not_configured');
  });
});

describe('dashboard data: the run card says what the score and the sandbox can be trusted for', () => {
  const base = RUN_INPUT;

  it("a score from another system's folder is marked not protected; a weak sandbox is a warning", () => {
    assert.equal(runView(base).scoreWarning, undefined);
    assert.equal(runView(base).isolation, undefined);
    assert.equal(runView({ ...base, scoreUnprotected: IN_SANDBOX_TRUST_REASON }).scoreWarning, IN_SANDBOX_TRUST_REASON);
    const full = runView({
      ...base,
      isolation: { kind: 'bwrap', summary: 'bwrap + seccomp + cgroup', missing: [], weak: false, warning: null },
    });
    assert.deepEqual(full.isolation, { text: 'sandbox: bwrap + seccomp + cgroup', weak: false });
    const weak = runView({
      ...base,
      isolation: { kind: 'fallback', summary: 'fallback', missing: ['bwrap was not found'], weak: true, warning: 'w' },
    });
    assert.equal(weak.isolation?.weak, true);
    assert.match(weak.isolation?.text ?? '', /weaker than the full sandbox: bwrap was not found/);
  });
});

describe('dashboard data: the SLURM queue and the inference servers', () => {
  it('the feed turns evaluation_queue and endpoint_servers events into the backend view, each keeping the other', () => {
    const model = new DashboardModel();
    const feed = new DashboardFeed(modelSink(model), () => Promise.reject(new Error('no queries in this test')));
    feed.handle(
      {
        type: 'evaluation_queue',
        time: 1,
        backend: 'slurm',
        pending: 12,
        running: 16,
        done: 480,
        lost: 1,
        failed: 0,
        queueWaitMsP50: 3200,
        schedulerCalls: 40,
      },
      undefined,
    );
    assert.equal(model.snapshot().backend?.queue, 'SLURM: 12 pending, 16 running, 480 done, 1 lost; queue wait 3.2 s');
    feed.handle(
      {
        type: 'endpoint_servers',
        time: 2,
        servers: [
          {
            baseURL: 'http://gpu1:8000/v1',
            healthy: true,
            outstanding: 3,
            requests: 100,
            failures: 0,
            samples: 100,
            completionTokens: 5000,
            tokensPerSecond: 250,
            latencyMsP50: 900,
            lastError: null,
          },
          {
            baseURL: 'http://gpu2:8000/v1',
            healthy: false,
            outstanding: 0,
            requests: 7,
            failures: 7,
            samples: 0,
            completionTokens: 0,
            tokensPerSecond: 0,
            latencyMsP50: null,
            lastError: 'connect ECONNREFUSED\u001b[31m',
          },
        ],
      },
      undefined,
    );
    const backend = model.snapshot().backend;
    assert.equal(backend?.queue, 'SLURM: 12 pending, 16 running, 480 done, 1 lost; queue wait 3.2 s', 'the queue is kept');
    assert.deepEqual(
      backend?.servers.map((s) => [s.url, s.healthy, s.tokensPerSecond]),
      [
        ['http://gpu1:8000/v1', true, 250],
        ['http://gpu2:8000/v1', false, 0],
      ],
    );
    assert.equal(backend?.servers[1]?.lastError, 'connect ECONNREFUSED[31m', 'server errors are shown without control characters');
    // The page's reducer keeps what the messages say.
    const page = reduceDashboardState(emptyDashboardState(), model.setBackend({ queue: null }));
    assert.equal(page.backend?.queue, null);
    assert.equal(page.backend?.servers.length, 2);
  });

  it("keeps the header's source up to date as the pool's servers change (a resubmitted job's server has a new address)", () => {
    const model = new DashboardModel();
    const feed = new DashboardFeed(modelSink(model), () => Promise.reject(new Error('no queries in this test')));
    model.setRun({ ...RUN_INPUT, source: { kind: 'llm', label: 'm at 2 servers (http://gpu-07:41234/v1, http://gpu-08:41000/v1)' } });
    const label = 'm at 2 servers (http://gpu-07:41234/v1, http://gpu-11:40007/v1)\u001b[31m';
    feed.handle({ type: 'endpoint_servers', time: 4, servers: [], label }, undefined);
    assert.equal(model.snapshot().run?.source.label, 'm at 2 servers (http://gpu-07:41234/v1, http://gpu-11:40007/v1)[31m');
    assert.equal(model.snapshot().run?.source.kind, 'llm');
    // The page is sent a snapshot only when the label changed.
    assert.equal(model.setSourceLabel('m at 2 servers (http://gpu-07:41234/v1, http://gpu-11:40007/v1)[31m'), null);
    const page = reduceDashboardState(
      emptyDashboardState(),
      model.setSourceLabel('m at 1 server (http://gpu-07:41234/v1)') ?? assert.fail(),
    );
    assert.equal(page.run?.source.label, 'm at 1 server (http://gpu-07:41234/v1)');
  });

  it('shows inference servers run as SLURM jobs: job id, state, node and throughput of each', () => {
    const model = new DashboardModel();
    const feed = new DashboardFeed(modelSink(model), () => Promise.reject(new Error('no queries in this test')));
    const server = {
      baseURL: 'http://gpu-07:41234/v1',
      healthy: true,
      outstanding: 1,
      requests: 48,
      failures: 0,
      samples: 48,
      completionTokens: 9000,
      tokensPerSecond: 910.4,
      latencyMsP50: 800,
      lastError: null,
    };
    feed.handle(
      {
        type: 'endpoint_servers',
        time: 3,
        servers: [server],
        jobs: [
          { index: 0, jobId: '12', state: 'RUNNING', reason: null, host: 'gpu-07', baseURL: server.baseURL, resubmits: 1 },
          { index: 1, jobId: '13', state: 'PENDING', reason: 'Resources', host: null, baseURL: null, resubmits: 0 },
        ],
      },
      undefined,
    );
    assert.deepEqual(model.snapshot().backend?.jobs, [
      { text: 'server 0 job 12 RUNNING on gpu-07, 48 requests, 910 tok/s, resubmitted 1x', up: true },
      { text: 'server 1 job 13 PENDING (Resources)', up: false },
    ]);
  });
});

describe('dashboard data: operators beyond the paper', () => {
  it('sums the cascade stage counts over the steps: per stage, the children that reached it and that ended there, and a new run clears them', () => {
    const model = new DashboardModel();
    model.setRun(RUN_INPUT);
    const first = model.addStep(stepFrom(1, [1])) as Extract<HostMessage, { type: 'step' }>;
    assert.equal(first.summary.cascade, undefined, 'no cascade: nothing shown');
    model.addStep({ ...stepFrom(2, [1, 2]), cascade: { '1': 3, '2': 1 } });
    const msg = model.addStep({ ...stepFrom(3, [1, 2]), cascade: { '2': 2, '3': 4, '1': 1 } });
    // Through the typed protocol, as the page receives it.
    const parsed = parseHostMessage(JSON.parse(JSON.stringify(msg)));
    assert.ok(parsed.type === 'step');
    assert.deepEqual(parsed.summary.cascade, [
      { stage: 1, reached: 11, stopped: 4 },
      { stage: 2, reached: 7, stopped: 3 },
      { stage: 3, reached: 4, stopped: 4 },
    ]);
    model.setRun(RUN_INPUT);
    const again = model.addStep(stepFrom(1, [1])) as Extract<HostMessage, { type: 'step' }>;
    assert.equal(again.summary.cascade, undefined);
  });

  it("shows the model's recommendations in force beside the researcher's guidance, with who wrote and edited them", () => {
    const model = new DashboardModel();
    model.setRun(RUN_INPUT);
    const db = dashboardDatabaseInput({
      lastStep: 4,
      guidance: { text: 'try numpy', step: 2 },
      recommendations: { text: '- Keep x', step: 3, afterStep: 2, editedBy: 'researcher' },
    });
    const view = model.setDatabase(db, []) as Extract<HostMessage, { type: 'database' }>;
    const parsed = parseHostMessage(JSON.parse(JSON.stringify(view)));
    assert.ok(parsed.type === 'database');
    assert.deepEqual(parsed.database?.guidance, { text: 'try numpy', step: 2 });
    assert.deepEqual(parsed.database?.recommendations, { text: '- Keep x', step: 3, afterStep: 2, editedBy: 'researcher' });
    const none = model.setDatabase({ ...db, recommendations: null }, []) as Extract<HostMessage, { type: 'database' }>;
    assert.equal(none.database.recommendations, null);
  });
});
