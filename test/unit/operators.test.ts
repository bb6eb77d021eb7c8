// The operators beyond the paper (docs/algorithm.md section 12), each with real
// parts: the fixture task in the sandbox, the run database on disk, the offline
// sampler or the OpenAI-compatible test server.
import assert from 'node:assert/strict';
import { join, resolve } from 'node:path';
import type { Settings } from '../../src/engine/common/config';
import type { EngineEvent, StepCommittedEvent } from '../../src/engine/common/events';
import type { ResponseSource } from '../../src/engine/common/types';
import { ProgramDatabase } from '../../src/engine/database/programDatabase';
import { MutateSampler } from '../../src/engine/llm/mutateSampler';
import { EvolutionRun } from '../../src/engine/loop';
import { OPERATORS_META_KEY } from '../../src/engine/operators/recorded';
import { Evaluator, evaluatorOptionsFromSettings } from '../../src/engine/sandbox/evaluator';
import { loadTask, type Task } from '../../src/engine/task/task';
import { settingsBuilder } from '../support/settings';
import { tempDir } from '../support/tempDirs';

const ROOT = resolve(__dirname, '..', '..');
const FIXTURE = join(ROOT, 'test', 'fixtures', 'tasks', 'quadratic');
const settings = settingsBuilder({ batchSize: 2, samplesPerPrompt: 3, evaluationConcurrency: 3, 'database.preset': 'small', seed: 7 });

async function runOnce(task: Task, s: Settings, dbFile: string, steps: number, source: ResponseSource) {
  const events: EngineEvent[] = [];
  const evaluator = new Evaluator(task, evaluatorOptionsFromSettings(s));
  const run = new EvolutionRun({
    runId: 'ops',
    task,
    settings: s,
    dbFile,
    source,
    evaluator,
    stepsThisInvocation: steps,
    onEvent: (e) => events.push(e),
  });
  const result = await run.run();
  await evaluator.close();
  return { result, events, committed: events.filter((e): e is StepCommittedEvent => e.type === 'step_committed') };
}

describe('operators beyond the paper', function () {
  this.timeout(180_000);
  let task: Task;
  let dir: string;
  before(async () => {
    task = await loadTask(FIXTURE);
  });
  beforeEach(() => {
    dir = tempDir('thetaevolve-ops-');
  });

  describe('patience (stopAfterStepsWithoutImprovement)', () => {
    it('ends the run with no_improvement once that many steps brought no new best, and a resume keeps the recorded patience', async () => {
      const s = settings({ stopAfterStepsWithoutImprovement: 3 });
      const file = join(dir, 'patience.sqlite');
      const { result, committed } = await runOnce(task, s, file, 200, new MutateSampler({ seed: 7, language: 'py' }));
      assert.equal(result.reason, 'no_improvement');
      assert.ok(committed.length < 200);
      const db = await ProgramDatabase.openReadOnly(file);
      const lastBestStep = db.improvements().at(-1)?.step ?? 0;
      assert.equal(db.lastStep - lastBestStep, 3);
      assert.deepEqual(db.meta()[OPERATORS_META_KEY], { stopAfterStepsWithoutImprovement: 3 });
      await db.close();
      // Resumed without the setting: the database's recorded patience ends it at once.
      const again = await runOnce(task, settings({}), file, 5, new MutateSampler({ seed: 7, language: 'py' }));
      assert.equal(again.result.reason, 'no_improvement');
      assert.equal(again.committed.length, 0);
    });

    it('is off by default: the run goes on to its step limit and records no operators', async () => {
      const file = join(dir, 'default.sqlite');
      const { result, committed } = await runOnce(task, settings({}), file, 4, new MutateSampler({ seed: 7, language: 'py' }));
      assert.equal(result.reason, 'steps_done');
      assert.equal(committed.length, 4);
      const db = await ProgramDatabase.openReadOnly(file);
      assert.equal(db.meta()[OPERATORS_META_KEY], undefined);
      await db.close();
    });
  });
});
