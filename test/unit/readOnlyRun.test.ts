// A run database marked read-only (no write bit) as a run meets it, as root
// too (issue 43 item 17): a mark set while the run holds the file stops the
// run at its next write, naming the file and its mode, the file as it was; a
// resume of it (CLI) is refused before anything runs. The rules of the file
// itself are database.test.ts's.
import assert from 'node:assert/strict';
import { chmodSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { EngineEvent } from '../../src/engine/common/events';
import { EvolutionRun } from '../../src/engine/loop';
import { MutateSampler } from '../../src/engine/llm/mutateSampler';
import { Evaluator, evaluatorOptionsFromSettings } from '../../src/engine/sandbox/evaluator';
import { loadTask } from '../../src/engine/task/task';
import { runCli } from '../support/cli';
import { settingsBuilder } from '../support/settings';
import { tempDir } from '../support/tempDirs';

const FIXTURE = resolve(__dirname, '..', 'fixtures', 'tasks', 'quadratic');
const settings = settingsBuilder({ batchSize: 1, samplesPerPrompt: 2, evaluationConcurrency: 2, 'database.preset': 'small', seed: 3 });

describe('a run database marked read-only', function () {
  this.timeout(120_000);

  it('stops the run at its next write naming the file and its mode, keeps the file, and a resume is refused before it runs', async () => {
    const dir = tempDir('thetaevolve-readonly-run-');
    const dbFile = join(dir, 'run.sqlite');
    const task = await loadTask(FIXTURE);
    const s = settings();
    const evaluator = new Evaluator(task, evaluatorOptionsFromSettings(s));
    const events: EngineEvent[] = [];
    let kept: Buffer | null = null;
    const run = new EvolutionRun({
      runId: 'readonly',
      task,
      settings: s,
      dbFile,
      source: new MutateSampler({ seed: s.seed, language: 'py' }),
      evaluator,
      stepsThisInvocation: 4,
      onEvent: (e) => void events.push(e),
      // Marked read-only (chmod a-w) once step 1 is on disk, while the run holds the file.
      afterCommit: async (committed) => {
        if (committed.step !== 1) return;
        chmodSync(dbFile, 0o444);
        kept = readFileSync(dbFile);
      },
    });
    const result = await run.run().finally(() => evaluator.close());
    assert.equal(result.reason, 'error');
    assert.equal(result.lastStep, 1, 'step 1 is what the file holds');
    const finished = events.find((e) => e.type === 'run_finished');
    assert.ok(finished?.type === 'run_finished');
    assert.ok(finished.message.includes(dbFile), finished.message);
    assert.match(finished.message, /marked read-only \(mode 0444\)/);
    assert.ok(kept);
    assert.deepEqual(readFileSync(dbFile), kept, 'the file is as it was marked');

    const resumed = await runCli(['run', FIXTURE, '--sampler', 'mutate', '--steps', '1', '--db', dbFile], dir);
    assert.notEqual(resumed.code, 0);
    assert.ok(resumed.stderr.includes(dbFile), resumed.stderr);
    assert.match(resumed.stderr, /marked read-only \(mode 0444\), so no run writes it: make it writable/);
    assert.deepEqual(readFileSync(dbFile), kept);
  });
});
