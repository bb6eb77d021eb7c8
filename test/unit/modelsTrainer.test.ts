// Several models with RL on (docs/algorithm.md section 12, "Several models
// and cost"): the trainer trains one model (thetaevolve.trainer.model), so
// only the groups of its prompts go to the trainer; the other models'
// children are in the run database only. Real parts: the run factory, the
// OpenAI-compatible test server serving two model names, the slime test
// buffer, the fixture task in the sandbox, the database on disk.
import assert from 'node:assert/strict';
import { join, resolve } from 'node:path';
import { parseSettings } from '../../src/engine/common/config';
import type { EngineEvent, StepCommittedEvent } from '../../src/engine/common/events';
import { trainedModelOnlyText } from '../../src/engine/common/models';
import { ProgramDatabase } from '../../src/engine/database/programDatabase';
import { assembleRun } from '../../src/engine/runFactory';
import { loadTask } from '../../src/engine/task/task';
import { startTestServer, type TestServer } from '../server/openaiTestServer';
import { startSlimeTestServer, type SlimeTestServer } from '../server/slimeTestServer';

import { tempDir } from '../support/tempDirs';

const FIXTURE = resolve(__dirname, '..', 'fixtures', 'tasks', 'quadratic');
const N = 2;

describe('several models with RL on', function () {
  this.timeout(120_000);
  let endpoint: TestServer;
  let buffer: SlimeTestServer;
  before(async () => {
    endpoint = await startTestServer({ models: ['big', 'small'], latencyMs: 1 });
    buffer = await startSlimeTestServer({ groupSize: N });
  });
  after(async () => {
    await endpoint.close();
    await buffer.close();
  });

  it("sends only trainer.model's groups; the other model's children are in the database only", async () => {
    const settings = parseSettings({
      endpoint: endpoint.baseURL,
      sampler: 'llm',
      batchSize: 4,
      samplesPerPrompt: N,
      evaluationConcurrency: 4,
      'database.preset': 'small',
      seed: 5,
      maxRetries: 0,
      models: [
        { name: 'big', weight: 1 },
        { name: 'small', weight: 1 },
      ],
      // Not the first model: the setting decides, not the order.
      'trainer.model': 'small',
      'trainer.enabled': true,
      'trainer.url': buffer.url,
      'trainer.protocol': 'slime',
    });
    const dbFile = join(tempDir('thetaevolve-models-trainer-'), 'run.sqlite');
    const events: EngineEvent[] = [];
    const assembled = await assembleRun({
      runId: 'models-trainer',
      dbFile,
      task: await loadTask(FIXTURE),
      settings,
      apiKey: undefined,
      stepsThisInvocation: 3,
      signal: new AbortController().signal,
      onEvent: (e) => events.push(e),
      onWarning: () => undefined,
    });
    try {
      const result = await assembled.run.run();
      assert.equal(result.reason, 'steps_done');
      assert.equal(await assembled.trainer.flush(new AbortController().signal, 20_000), 0, 'nothing left spooled');
    } finally {
      await assembled.close();
    }
    // Both models answered; the buffer got exactly the samples of small's prompts.
    const asked = (model: string) => endpoint.requests.filter((r) => r.model === model).reduce((sum, r) => sum + r.n, 0);
    assert.ok(asked('big') > 0 && asked('small') > 0, `big ${asked('big')}, small ${asked('small')}`);
    // A look at the buffer takes its items out and writes them back: each sample counted once.
    assert.equal(new Set(buffer.received.map((r) => r.item.uid)).size, asked('small'));
    // Which model wrote each child, as the commit recorded it in the database.
    const db = await ProgramDatabase.openReadOnly(dbFile);
    const childModels: Record<string, string> = {};
    try {
      for (const { stats } of db.steps()) Object.assign(childModels, (stats as { childModels?: Record<string, string> }).childModels ?? {});
    } finally {
      await db.close();
    }
    const committed = events.filter((e): e is StepCommittedEvent => e.type === 'step_committed');
    assert.equal(committed.length, 3);
    const bigChildren = Object.keys(childModels).filter((id) => childModels[id] === 'big');
    assert.ok(bigChildren.length > 0, "big's children are in the database");
    const sent = buffer.received.map((r) => r.item.extra_info.child_id).filter((id): id is string => typeof id === 'string');
    assert.ok(sent.length > 0);
    for (const id of sent) assert.equal(childModels[id], 'small', `rollout of child ${id}`);
    assert.match(
      trainedModelOnlyText('small'),
      /only the rollouts of small go to the trainer; the other models' children stay in the database only/,
    );
  });
});
