// A step's plan and ledger on their own: the jobs planned from a real
// database and generator, then what the ledger records, announces and asks
// for again when responses fail, arrive or never come.
import assert from 'node:assert/strict';
import { join, resolve } from 'node:path';
import { classifyChild } from '../../src/engine/classifyChild';
import { parseSettings, type Settings } from '../../src/engine/common/config';
import { Rng } from '../../src/engine/common/rng';
import type { GenerationJob, SampleResponse } from '../../src/engine/common/types';
import { databaseConfigFromSettings, ProgramDatabase } from '../../src/engine/database/programDatabase';
import { NOT_GENERATED } from '../../src/engine/database/records';
import { MutateSampler } from '../../src/engine/llm/mutateSampler';
import { outputKeptOf, resampleRoundsOf, type SlotOutcome, StepLedger, viewOfSlot } from '../../src/engine/step/ledger';
import { planStep } from '../../src/engine/step/plan';
import { codeHash } from '../../src/engine/codeHash';
import { loadTask, type Task } from '../../src/engine/task/task';
import { tempDir } from '../support/tempDirs';
import { syntheticProgram, testConfig } from './fixtures/database/programs';

const FIXTURE = resolve(__dirname, '..', 'fixtures', 'tasks', 'quadratic');

function settings(overrides: Record<string, unknown> = {}): Settings {
  return parseSettings({ batchSize: 3, samplesPerPrompt: 4, 'database.preset': 'small', seed: 7, ...overrides });
}

/** What the ledger announced, in order. */
type Announced = { jobKey: string; index: number; slot: SlotOutcome }[];

describe('step plan and ledger', function () {
  this.timeout(60_000);
  let dir = '';
  let task: Task;
  let db: ProgramDatabase;

  before(async () => {
    task = await loadTask(FIXTURE);
  });
  // A database holding the fixture task's starting program.
  beforeEach(async () => {
    dir = tempDir('thetaevolve-step-ledger-');
    db = await ProgramDatabase.open(join(dir, 'run.sqlite'), { config: databaseConfigFromSettings(settings()) });
    const code = task.initialProgram;
    await db.addInitial({
      parentId: null,
      step: 0,
      code,
      codeHash: codeHash(code, task.language),
      score: 6,
      objective: 6,
      outcome: 'valid',
      metrics: {},
      ...NOT_GENERATED,
    });
  });
  afterEach(async () => {
    await db.close();
  });

  /** The plan of step 1 from the generator seeded with 42. */
  function plan(s = settings()) {
    return planStep({ step: 1, db, task, settings: s, rng: Rng.fromSeed(42), previousDraw: null });
  }

  /** A real response to a planned job: the offline sampler's answer. */
  function response(job: GenerationJob, index: number): SampleResponse {
    const content = new MutateSampler({ seed: 3, language: task.language }).propose(job, index);
    return {
      ok: true,
      jobKey: job.key,
      index,
      latencyMs: 5,
      retries: 0,
      content,
      reasoning: null,
      finishReason: 'stop',
      truncated: false,
      promptTokens: 11,
      completionTokens: 22,
      tokens: null,
      policyVersion: null,
    };
  }

  function ledgerFor(jobs: GenerationJob[], resampling: boolean): { ledger: StepLedger; announced: Announced } {
    const announced: Announced = [];
    const ledger = new StepLedger(jobs, { resampling, announce: (jobKey, index, slot) => announced.push({ jobKey, index, slot }) });
    return { ledger, announced };
  }

  it('plans one job of n responses per sampled parent, the same jobs from the same generator state', () => {
    const first = plan();
    assert.equal(first.jobs.length, 3);
    assert.deepEqual(
      first.jobs.map((j) => j.key),
      ['s1-p0', 's1-p1', 's1-p2'],
    );
    for (const [i, job] of first.jobs.entries()) {
      assert.equal(job.n, 4);
      assert.equal(job.parentId, first.parents[i]?.id);
      assert.ok(first.metaInfoIds.has(job.key));
    }
    const again = planStep({ step: 1, db, task, settings: settings(), rng: Rng.fromSeed(42), previousDraw: null });
    assert.deepEqual(
      again.jobs.map((j) => j.seed),
      first.jobs.map((j) => j.seed),
    );
    assert.deepEqual(
      again.jobs.map((j) => j.messages),
      first.jobs.map((j) => j.messages),
    );
  });

  it('names each outcome kind: what the events and the trainer see of it, and whether its output was kept', () => {
    const job = plan().jobs[0] as GenerationJob;
    const sample = response(job, 0);
    const classified = classifyChild({
      parentCode: job.parentCode,
      answer: 'no diff here',
      language: task.language,
      maxCodeLength: task.maxCodeLength,
    });
    assert.equal(classified.kind, 'rejected');
    if (classified.kind !== 'rejected') return;
    const rejected: SlotOutcome = {
      kind: 'rejected_early',
      outcome: classified.outcome,
      score: classified.score,
      reason: classified.reason,
      response: sample,
    };
    assert.deepEqual(viewOfSlot(rejected), {
      outcome: 'no_diff',
      score: -0.4,
      objective: null,
      reason: classified.reason,
      response: sample,
      error: null,
      durationMs: 0,
    });
    assert.equal(outputKeptOf(rejected), false);

    const failed: SlotOutcome = { kind: 'request_failed', error: 'HTTP 500' };
    assert.deepEqual(viewOfSlot(failed), {
      outcome: 'request_failed',
      score: null,
      objective: null,
      reason: 'HTTP 500',
      response: null,
      error: 'HTTP 500',
      durationMs: 0,
    });

    const lost: SlotOutcome = { kind: 'evaluation_failed', reason: 'job lost', response: sample, durationMs: 40, outputKept: true };
    assert.deepEqual(viewOfSlot(lost), {
      outcome: 'evaluation_failed',
      score: null,
      objective: null,
      reason: 'job lost',
      response: sample,
      error: 'job lost',
      durationMs: 40,
    });
    assert.equal(outputKeptOf(lost), true);

    const code = task.initialProgram;
    const child = {
      parentId: job.parentId,
      step: 1,
      code,
      codeHash: codeHash(code, task.language),
      score: -0.1,
      objective: 3,
      outcome: 'invalid_solution' as const,
      metrics: {},
      metaInfoId: null,
      response: sample.content,
      reasoning: null,
      generationMs: 5,
      evaluationMs: 30,
      promptTokens: 11,
      completionTokens: 22,
    };
    const scored: SlotOutcome = {
      kind: 'scored',
      child,
      reason: 'not valid',
      response: sample,
      durationMs: 30,
      outputKept: true,
      solution: null,
    };
    assert.deepEqual(viewOfSlot(scored), {
      outcome: 'invalid_solution',
      score: -0.1,
      objective: 3,
      reason: 'not valid',
      response: sample,
      error: null,
      durationMs: 30,
    });
    assert.equal(outputKeptOf(scored), true);
  });

  it('with steps overlapping, turns a scored child equal to one a later-committed step brought in into the duplicate it would have been', () => {
    const { jobs } = plan();
    const { ledger, announced } = ledgerFor(jobs, false);
    const [a, b] = jobs as [GenerationJob, GenerationJob];
    const scored = (job: GenerationJob, index: number, code: string): SlotOutcome => ({
      kind: 'scored',
      child: {
        parentId: job.parentId,
        step: 1,
        code,
        codeHash: codeHash(code, task.language),
        score: 7,
        objective: 7,
        outcome: 'valid',
        metrics: {},
        ...NOT_GENERATED,
        evaluationMs: 3,
      },
      reason: '',
      response: response(job, index),
      durationMs: 3,
      outputKept: false,
      solution: null,
    });
    const late = scored(a, 0, 'x = 4\n');
    const fresh = scored(b, 1, 'x = 5\n');
    ledger.settle(a.key, 0, late as Exclude<SlotOutcome, { kind: 'request_failed' }>);
    ledger.settle(b.key, 1, fresh as Exclude<SlotOutcome, { kind: 'request_failed' }>);
    assert.equal(ledger.penaliseLateDuplicates(new Set()), 0, 'nothing committed since the plan');
    assert.equal(ledger.penaliseLateDuplicates(new Set([codeHash('x = 4\n', task.language)])), 1);
    const [first] = ledger.filledSlots(a.key);
    assert.equal(first?.kind, 'rejected_early');
    assert.deepEqual(viewOfSlot(first as SlotOutcome).outcome, 'duplicate');
    assert.equal(viewOfSlot(first as SlotOutcome).score, -0.3);
    assert.equal(
      viewOfSlot(first as SlotOutcome).response,
      late.kind === 'scored' ? late.response : null,
      'the response stays for the trainer',
    );
    assert.equal(ledger.filledSlots(b.key)[1], fresh);
    assert.equal(announced.length, 2, 'announced once each, as they settled');
  });

  it('asks again only with the RL trainer on', () => {
    assert.equal(resampleRoundsOf(settings()), 0);
    assert.equal(resampleRoundsOf(settings({ 'trainer.enabled': true, 'trainer.resampleRounds': 3 })), 3);
    assert.equal(resampleRoundsOf(settings({ 'trainer.enabled': true, 'trainer.resampleRounds': 0 })), 0);
  });

  it('without re-sampling, announces a failed request at once and counts an undelivered response as failed, unannounced', () => {
    const { jobs } = plan();
    const { ledger, announced } = ledgerFor(jobs, false);
    const [a, b] = jobs as [GenerationJob, GenerationJob];
    ledger.requestFailed(a.key, 2, 'HTTP 503');
    ledger.settle(b.key, 0, { kind: 'rejected_early', outcome: 'no_diff', score: -0.4, reason: 'no diff', response: response(b, 0) });
    assert.deepEqual(
      announced.map((x) => [x.jobKey, x.index, x.slot.kind]),
      [
        [a.key, 2, 'request_failed'],
        [b.key, 0, 'rejected_early'],
      ],
    );
    ledger.announceUnrecovered();
    assert.equal(announced.length, 2, 'already announced');

    const slots = ledger.allSlots();
    assert.equal(slots.length, 12);
    assert.deepEqual(viewOfSlot(slots[2] as SlotOutcome).error, 'HTTP 503');
    assert.deepEqual(viewOfSlot(slots[4] as SlotOutcome).outcome, 'no_diff');
    const undelivered = slots.filter((s) => s.kind === 'request_failed' && s.error === 'no response delivered');
    assert.equal(undelivered.length, 10);
    assert.equal(announced.length, 2);
  });

  it('with re-sampling, asks again for the failed indices of each group with fresh seeds, and announces only the ones that stay failed', () => {
    const { jobs } = plan();
    const { ledger, announced } = ledgerFor(jobs, true);
    const [a, b, c] = jobs as [GenerationJob, GenerationJob, GenerationJob];
    ledger.requestFailed(b.key, 3, 'timeout');
    ledger.requestFailed(b.key, 1, 'timeout');
    ledger.requestFailed(a.key, 0, 'HTTP 500');
    for (const i of [1, 2, 3])
      ledger.settle(a.key, i, { kind: 'rejected_early', outcome: 'no_diff', score: -0.4, reason: 'no diff', response: response(a, i) });
    assert.deepEqual(
      announced.map((x) => x.slot.kind),
      ['rejected_early', 'rejected_early', 'rejected_early'],
      'failures wait',
    );

    const round1 = ledger.resampleJobs(1);
    // In the plan's job order, indices ascending; seeds job.seed + n x round.
    assert.deepEqual(
      round1.map((r) => [r.job.key, r.groupKey, r.indices, r.job.n, r.job.seed]),
      [
        [`${a.key}#resample1`, a.key, [0], 1, (a.seed + 4) >>> 0],
        [`${b.key}#resample1`, b.key, [1, 3], 2, (b.seed + 4) >>> 0],
      ],
    );
    assert.deepEqual(round1[1]?.job.messages, b.messages);
    assert.equal(round1[1]?.job.parentCode, b.parentCode);

    // Round 1: b's index 3 arrives; a's index 0 fails again.
    ledger.responseArrived(b.key, 3);
    ledger.settle(b.key, 3, { kind: 'rejected_early', outcome: 'no_change', score: -0.3, reason: 'same', response: response(b, 3) });
    ledger.requestFailed(a.key, 0, 'HTTP 502');
    const round2 = ledger.resampleJobs(2);
    assert.deepEqual(
      round2.map((r) => [r.job.key, r.indices, r.job.seed]),
      [
        [`${a.key}#resample2`, [0], (a.seed + 8) >>> 0],
        [`${b.key}#resample2`, [1], (b.seed + 8) >>> 0],
      ],
    );
    assert.equal(
      round2.some((r) => r.groupKey === c.key),
      false,
    );

    announced.length = 0;
    ledger.announceUnrecovered();
    // In the order the groups first failed, each failure's last error.
    assert.deepEqual(
      announced.map((x) => [x.jobKey, x.index, viewOfSlot(x.slot).error]),
      [
        [b.key, 1, 'timeout'],
        [a.key, 0, 'HTTP 502'],
      ],
    );
  });

  it('keeps the seed of a re-sampled job an unsigned 32-bit integer', () => {
    const job: GenerationJob = { ...(plan().jobs[0] as GenerationJob), seed: 0xfffffffe };
    const { ledger } = ledgerFor([job], true);
    ledger.requestFailed(job.key, 0, 'HTTP 500');
    assert.equal(ledger.resampleJobs(1)[0]?.job.seed, 2);
  });
});

describe('parent draws of overlapping steps', function () {
  this.timeout(60_000);

  /** A database of a few committed steps of synthetic programs. */
  async function filled(file: string): Promise<ProgramDatabase> {
    const db = await ProgramDatabase.open(file, {
      config: testConfig({ populationSize: 60, archiveSize: 10, numIslands: 3, migrationInterval: 50 }),
    });
    const rng = Rng.fromSeed(5);
    await db.addInitial(syntheticProgram(rng, 0, null));
    for (let step = 1; step <= 3; step++) {
      const children = db.sampleParents(4).flatMap((p) => [syntheticProgram(rng, step, p.id), syntheticProgram(rng, step, p.id)]);
      await db.commitStep({ step, children, stats: {}, engineState: null });
    }
    return db;
  }

  it('draws the step after an uncommitted one where its draw left off; its commit adopts its own draw whatever was drawn since', async () => {
    const dir = tempDir('thetaevolve-draws-');
    const pipelined = await filled(join(dir, 'pipelined.sqlite'));
    const synchronous = await filled(join(dir, 'synchronous.sqlite'));
    try {
      const ids = (records: { id: string }[]) => records.map((r) => r.id);
      // Step 4 planned; step 5 planned before step 4 commits.
      const step4 = pipelined.sampleParentsFor(6, null, 4);
      const step5 = pipelined.sampleParentsFor(6, step4.draw, 5);
      assert.notDeepEqual(step5.draw, step4.draw, 'the draws go on, not over');
      // The synchronous loop: step 4 drawn and committed (nothing added), then step 5 drawn after it.
      const sync4 = synchronous.sampleParentsFor(6, null, 4);
      assert.deepEqual(ids(sync4.parents), ids(step4.parents));
      await synchronous.commitStep({ step: 4, children: [], stats: {}, engineState: null });
      assert.deepEqual(ids(synchronous.sampleParentsFor(6, null, 5).parents), ids(step5.parents));
      // Step 4 commits with its own draw though step 5 was drawn since; the draw after it is step 5's again.
      await pipelined.commitStep({ step: 4, children: [], stats: {}, engineState: null, parentDraw: step4.draw });
      assert.deepEqual(ids(pipelined.sampleParentsFor(6, null, 5).parents), ids(step5.parents));
      assert.throws(() => pipelined.sampleParentsFor(6, null, 7), /step 7 is not the one after the last commit \(4\)/);
    } finally {
      await pipelined.close();
      await synchronous.close();
    }
  });
});
