// The paper's loop stays the default (docs/algorithm.md section 12): with every
// operator off, a seeded run sends the same prompts and keeps the same programs
// as before the operators existed (runtimes, which vary, are left out). The hash below was taken from the code
// before any operator was added; a change to it means the default run moved.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { join, resolve } from 'node:path';
import { readFileSync } from 'node:fs';
import { loadSqlJs } from '../../src/engine/database/sqlite';
import { EndpointClient, endpointOptionsFromSettings } from '../../src/engine/llm/endpointClient';
import { EvolutionRun } from '../../src/engine/loop';
import { Evaluator, evaluatorOptionsFromSettings } from '../../src/engine/sandbox/evaluator';
import { loadTask } from '../../src/engine/task/task';
import { startTestServer } from '../server/openaiTestServer';
import { settingsBuilder } from '../support/settings';
import { tempDir } from '../support/tempDirs';

const ROOT = resolve(__dirname, '..', '..');
const FIXTURE = join(ROOT, 'test', 'fixtures', 'tasks', 'quadratic');
const GOLDEN = process.env.THETAEVOLVE_PRINT_GOLDEN ? '' : 'a7d6a520dca7c77c98b0b30b51fdd46ad110d596f8929c8a5e6d489856c4b6d0';

describe('operators off: the default run is unchanged', function () {
  this.timeout(120_000);
  it('a seeded run sends the same prompts and keeps the same programs as before the operators', async () => {
    const server = await startTestServer({ latencyMs: 1 });
    const dir = tempDir('thetaevolve-golden-');
    const dbFile = join(dir, 'run.sqlite');
    try {
      const task = await loadTask(FIXTURE);
      const s = settingsBuilder({ batchSize: 3, samplesPerPrompt: 3, evaluationConcurrency: 3, 'database.preset': 'small', seed: 11 })({
        endpoint: server.baseURL,
        sampler: 'llm',
      });
      const client = new EndpointClient(endpointOptionsFromSettings(s, undefined));
      const evaluator = new Evaluator(task, evaluatorOptionsFromSettings(s));
      const run = new EvolutionRun({
        runId: 'golden',
        task,
        settings: s,
        dbFile,
        source: client,
        evaluator,
        stepsThisInvocation: 4,
        onEvent: () => {},
      });
      const result = await run.run();
      await evaluator.close();
      assert.equal(result.reason, 'steps_done');
      // Requests arrive in any order: each is named by its seed, which the plan draws.
      const prompts = server.requests
        .map((r) => `${r.seed} ${r.n} ${r.userText.replace(/runtime_seconds = [^,\n]*/g, 'runtime_seconds')}`)
        .sort();
      const SQL = await loadSqlJs();
      const file = new SQL.Database(readFileSync(dbFile));
      const programs = JSON.stringify(
        file.exec(
          'SELECT id, parent_id, island, step, score, objective, outcome, code_hash, meta_info_id, alive, in_archive, elite_cell, improvement, migrant_of FROM programs ORDER BY seq',
        ),
      );
      const engine = JSON.stringify(file.exec("SELECT value FROM meta WHERE key = 'engine_state'"));
      file.close();
      const hash = createHash('sha256').update(JSON.stringify({ prompts, programs, engine })).digest('hex');
      if (!GOLDEN) console.log(`golden ${hash}`);
      else assert.equal(hash, GOLDEN);
    } finally {
      await server.close();
    }
  });
});
