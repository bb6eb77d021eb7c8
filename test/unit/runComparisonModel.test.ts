// The pure rules of a run comparison (src/engine/common/runComparison.ts):
// labels by what differs, settings that change within a run, policy version
// rows and changes, databases written before steps recorded how they were
// sampled; and the report's embedding of the data (src/cli/reportHtml.ts).
import assert from 'node:assert/strict';
import { DATABASE_PRESETS } from '../../src/engine/common/config';
import type { StepStatistics } from '../../src/engine/common/events';
import {
  compareRuns,
  policyVersionRows,
  progressLayout,
  RunComparisonSchema,
  type RunRecordForComparison,
} from '../../src/engine/common/runComparison';
import { emptyOutcomeCounts } from '../../src/engine/common/types';
import { type PythonEnvironment, pythonEnvironmentDifferences } from '../../src/engine/common/pythonEnvironment';
import { escapeHtml, jsonForScript, reportHtml } from '../../src/cli/reportHtml';

function stats(
  step: number,
  values: { best: number | null; valid: number; invalid: number; sampling?: StepStatistics['sampling'] },
): StepStatistics {
  const counts = emptyOutcomeCounts();
  counts.valid = values.valid;
  counts.invalid_solution = values.invalid;
  const scored = values.valid + values.invalid;
  return {
    step,
    samples: scored + 1,
    counts: { ...counts, request_failed: 1 },
    best: values.best,
    mean: values.best,
    p10: null,
    p50: null,
    p90: null,
    meanAll: scored > 0 ? (values.valid * (values.best ?? 0) - 0.1 * values.invalid) / scored : null,
    tokens: { prompt: 0, completion: 0 },
    timings: { generationMs: 10, evaluationMs: 10, totalMs: 20 },
    samplesPerSecond: 1,
    elapsedMs: step * 1000,
    sessionStartedAt: 1,
    ...(values.sampling ? { sampling: values.sampling } : {}),
  };
}

function run(runId: string, overrides: Partial<RunRecordForComparison> = {}): RunRecordForComparison {
  return {
    runId,
    file: `/runs/${runId}.sqlite`,
    task: 'circle-packing',
    direction: 'maximize',
    source: 'Qwen3-8B at http://127.0.0.1:8000/v1',
    database: { ...DATABASE_PRESETS.small, seed: 0 },
    steps: [],
    best: null,
    lineage: { programs: [], complete: true },
    python: null,
    ...overrides,
  };
}

const sampled = (rl: boolean, policyVersion: string | null, batchSize = 4): StepStatistics['sampling'] => ({
  batchSize,
  samplesPerPrompt: 8,
  rl,
  policyVersion,
});

describe('run comparison model', () => {
  it('labels each run by the settings that differ; runs told apart by nothing carry their ids', () => {
    const a = run('a', { steps: [{ step: 1, stats: stats(1, { best: 1, valid: 1, invalid: 0, sampling: sampled(true, '3') }) }] });
    const b = run('b', {
      source: 'Qwen3-32B at http://gpu:8000/v1',
      steps: [{ step: 1, stats: stats(1, { best: 1, valid: 1, invalid: 0, sampling: sampled(false, null) }) }],
    });
    const comparison = compareRuns([a, b], DATABASE_PRESETS, 0);
    assert.deepEqual(comparison.differing, ['model', 'rl']);
    assert.deepEqual(
      comparison.runs.map((r) => r.label),
      ['model Qwen3-8B · RL on', 'model Qwen3-32B · RL off'],
    );
    assert.equal(comparison.runs[0]?.settings.database, 'small');
    const same = compareRuns([run('x'), run('y')], DATABASE_PRESETS, 0);
    assert.deepEqual(same.differing, []);
    assert.deepEqual(
      same.runs.map((r) => r.label),
      ['x', 'y'],
    );
    RunComparisonSchema.parse(comparison);
  });

  it('runs whose Python environments differ are marked by it (version and packages, not where the interpreter lives)', () => {
    const env = (executable: string, scipy: string): PythonEnvironment => ({
      executable,
      source: '--python',
      version: '3.11.2',
      prefixes: ['/usr'],
      packages: { numpy: '1.24.2', scipy },
    });
    const debian = run('debian', { python: env('/usr/bin/python3', '1.10.1') });
    const venv = run('venv', { python: env('/home/r/venv/bin/python', '1.10.1') });
    const pyenv = run('pyenv', { python: env('/root/.pyenv/versions/3.11.7/bin/python3', '1.17.1') });
    assert.deepEqual(compareRuns([debian, venv], DATABASE_PRESETS, 0).differing, [], 'the same versions in another place');
    const comparison = RunComparisonSchema.parse(compareRuns([debian, pyenv, run('old')], DATABASE_PRESETS, 0));
    assert.deepEqual(comparison.differing, ['python']);
    assert.deepEqual(
      comparison.runs.map((r) => r.settings.python),
      ['3.11.2 (numpy 1.24.2, scipy 1.10.1)', '3.11.2 (numpy 1.24.2, scipy 1.17.1)', 'not recorded'],
    );
    assert.equal(comparison.runs[1]?.python?.executable, '/root/.pyenv/versions/3.11.7/bin/python3');
    assert.deepEqual(pythonEnvironmentDifferences(debian.python, pyenv.python), ['scipy 1.10.1 vs 1.17.1']);
  });

  it('a setting changed within a run reads in order; steps written before it was recorded read "not recorded"', () => {
    const changed = run('c', {
      database: { populationSize: 50, archiveSize: 10, numIslands: 2, seed: 3 },
      steps: [
        { step: 1, stats: stats(1, { best: 1, valid: 1, invalid: 0, sampling: sampled(false, null, 4) }) },
        { step: 2, stats: stats(2, { best: 1, valid: 1, invalid: 0, sampling: sampled(true, '0', 8) }) },
      ],
    });
    const legacy = run('d', { steps: [{ step: 1, stats: stats(1, { best: 1, valid: 1, invalid: 0 }) }] });
    const [c, d] = compareRuns([changed, legacy], DATABASE_PRESETS, 0).runs;
    assert.equal(c?.settings.rl, 'off then on');
    assert.equal(c?.settings.batch, '4 x 8 then 8 x 8');
    assert.equal(c?.settings.database, '50 programs, 2 islands, archive 10');
    assert.equal(d?.settings.rl, 'not recorded');
    assert.equal(d?.steps[0]?.policyVersion, null);
  });

  it('per policy version: steps, mean reward over its scored samples, share of valid children; changes where the version moves', () => {
    const steps = [
      { step: 1, stats: stats(1, { best: 2, valid: 1, invalid: 1, sampling: sampled(true, '7') }) },
      { step: 2, stats: stats(2, { best: 4, valid: 3, invalid: 0, sampling: sampled(true, '7') }) },
      { step: 3, stats: stats(3, { best: null, valid: 0, invalid: 2, sampling: sampled(true, '8') }) },
      { step: 4, stats: stats(4, { best: 5, valid: 1, invalid: 0, sampling: sampled(false, null) }) },
    ];
    const rows = policyVersionRows(steps);
    assert.equal(rows.length, 2);
    const [seven, eight] = rows;
    assert.equal(seven?.firstStep, 1);
    assert.equal(seven?.steps, 2);
    // Step 1: rewards 2 and -0.1; step 2: 4, 4, 4 (request failures are not scored).
    assert.ok(Math.abs((seven?.meanReward ?? 0) - (2 - 0.1 + 12) / 5) < 1e-9);
    assert.equal(seven?.validShare, 4 / 5);
    assert.equal(eight?.validShare, 0);
    const [compared] = compareRuns([run('p', { steps })], DATABASE_PRESETS, 0).runs;
    assert.deepEqual(compared?.policyChanges, [
      { step: 1, version: '7' },
      { step: 3, version: '8' },
    ]);
    // Best so far never drops below an earlier step's best.
    assert.deepEqual(
      compared?.steps.map((s) => s.bestSoFar),
      [2, 4, 4, 5],
    );
  });

  it("a minimising task's values are its objective; the report embeds run text as data only", () => {
    const minimise = run('m<script>', {
      direction: 'minimize',
      steps: [{ step: 1, stats: stats(1, { best: 0.5, valid: 1, invalid: 0 }) }],
      best: { id: '1', step: 1, score: 0.5, origin: 'model', code: 'x = "</script><script>alert(1)</script>"\u2028' },
    });
    const comparison = compareRuns([minimise], DATABASE_PRESETS, 0);
    assert.equal(comparison.runs[0]?.steps[0]?.bestSoFar, 2);
    assert.equal(comparison.runs[0]?.best?.objective, 2);
    const embedded = jsonForScript(comparison);
    assert.ok(!/[<>\u2028]/.test(embedded), embedded);
    assert.deepEqual(JSON.parse(embedded), comparison);
    const html = reportHtml(comparison, { script: 'var a = "</script>";', style: 'p{}' });
    assert.equal(html.match(/<\/script>/g)?.length, 2, 'only the two script elements end');
    assert.ok(html.includes(`<title>ThetaEvolve report: ${escapeHtml('m<script>')}</title>`));
  });
  it('runs of different tasks or directions get a progress chart each, with a note and each axis in its direction', () => {
    const oneTask = progressLayout(
      compareRuns([run('a'), run('b', { database: { ...DATABASE_PRESETS.small, seed: 5 } })], DATABASE_PRESETS, 0).runs,
    );
    assert.deepEqual(oneTask, {
      panels: [
        { task: 'circle-packing', direction: 'maximize', runIndexes: [0, 1], axisTitle: 'objective (higher is better)', heading: null },
      ],
      note: null,
    });
    const minimising = progressLayout(
      compareRuns([run('m', { task: 'first-autocorrelation', direction: 'minimize' })], DATABASE_PRESETS, 0).runs,
    );
    assert.equal(minimising.panels[0]?.axisTitle, 'objective (lower is better)');
    assert.equal(minimising.note, null);
    // Three runs, two tasks: the runs of one task share its chart, in the order they come; each panel names its task and direction.
    const mixed = progressLayout(
      compareRuns(
        [
          run('a'),
          run('m', { task: 'first-autocorrelation', direction: 'minimize' }),
          run('b', { database: { ...DATABASE_PRESETS.small, seed: 5 } }),
        ],
        DATABASE_PRESETS,
        0,
      ).runs,
    );
    assert.deepEqual(
      mixed.panels.map((p) => [p.task, p.direction, p.runIndexes, p.axisTitle, p.heading]),
      [
        ['circle-packing', 'maximize', [0, 2], 'objective (higher is better)', 'circle-packing: maximise (higher is better)'],
        ['first-autocorrelation', 'minimize', [1], 'objective (lower is better)', 'first-autocorrelation: minimise (lower is better)'],
      ],
    );
    assert.match(
      mixed.note ?? '',
      /different tasks and directions: their objectives are not on one scale, so each task has its own progress chart \(2\)/,
    );
    // One task name, minimised in one run and maximised in another (its task.json changed): still not one axis.
    const flipped = progressLayout(compareRuns([run('a'), run('b', { direction: 'minimize' })], DATABASE_PRESETS, 0).runs);
    assert.deepEqual(
      flipped.panels.map((p) => p.axisTitle),
      ['objective (higher is better)', 'objective (lower is better)'],
    );
    assert.match(flipped.note ?? '', /different directions/);
  });
  it("a run's best so far counts its starting program (a minimised run whose children are all worse stays at its value)", () => {
    const minimised = run('m', {
      task: 'first-autocorrelation',
      direction: 'minimize',
      // Combined scores: 1 / objective. The starting program (objective 6) is better than every child (objective 9).
      improvements: [{ step: 0, score: 1 / 6 }],
      steps: [1, 2].map((step) => ({ step, stats: stats(step, { best: 1 / 9, valid: 1, invalid: 0 }) })),
    });
    const [compared] = compareRuns([minimised], DATABASE_PRESETS, 0).runs;
    assert.deepEqual(
      compared?.steps.map((s) => [s.stepBest, s.bestSoFar].map((v) => (v === null ? null : Math.round(v * 1e9) / 1e9))),
      [
        [9, 6],
        [9, 6],
      ],
    );
  });
});
