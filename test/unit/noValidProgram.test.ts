// A run in which nothing is valid has no best (docs/algorithm.md section 8):
// the penalty that ranks its invalid programs is no objective, so the loop's
// end event, the database's summary and snapshot, the CLI's lines and `db`
// say "no valid program", never the penalty (it read "best -0.2 · done").
import { strict as assert } from 'node:assert';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ProgramDatabase } from '../../src/engine/database/programDatabase';
import { runCli } from '../support/cli';
import { tempDir } from '../support/tempDirs';
import { programWith, testConfig } from './fixtures/database/programs';

const FIXTURE = resolve(__dirname, '../fixtures/tasks/quadratic');

describe('a run with no valid program', function () {
  this.timeout(120_000);

  it('the database gives no best, no improvement and no island best until a program is valid, then that one', async () => {
    const db = await ProgramDatabase.open(join(tempDir('thetaevolve-novalid-'), 'run.sqlite'), { config: testConfig({ numIslands: 1 }) });
    try {
      const start = await db.addInitial(programWith(-0.2, 40, null, 0, 'start'));
      assert.equal(db.best(), null, 'a penalised starting program is no best');
      // A smaller penalty heads the ranking now: still no best, and no new best announced.
      const penalised = await db.commitStep({
        step: 1,
        children: [programWith(-0.1, 40, start.id, 1, 'less bad')],
        stats: null,
        engineState: {},
      });
      assert.equal(penalised.newBest, null);
      assert.equal(db.best(), null);
      assert.equal(db.summary().best, null);
      const snapshot = db.stateSnapshot();
      assert.equal(snapshot.best, null);
      assert.deepEqual(
        snapshot.islands.map((i) => i.best),
        [null],
      );
      assert.deepEqual(db.improvements(), []);
      assert.equal(db.improvements(true).length, 2, 'patience still counts the penalised heads');

      const valid = await db.commitStep({ step: 2, children: [programWith(0.5, 40, start.id, 2, 'valid')], stats: null, engineState: {} });
      assert.equal(valid.newBest?.score, 0.5);
      assert.equal(db.best()?.score, 0.5);
      assert.deepEqual(db.summary().best, { score: 0.5, id: valid.newBest?.id });
      assert.equal(db.stateSnapshot().islands[0]?.best?.score, 0.5);
      assert.deepEqual(
        db.improvements().map((p) => p.score),
        [0.5],
      );
    } finally {
      await db.close();
    }
  });

  it('the CLI run and db say "no valid program" where the best goes, never the penalty', async () => {
    const dir = tempDir('thetaevolve-novalid-cli-');
    const taskDir = join(dir, 'task');
    cpSync(FIXTURE, taskDir, { recursive: true });
    // A NameError outside the EVOLVE-BLOCK: no child of the mutate sampler can repair it.
    const initial = join(taskDir, 'initial.py');
    writeFileSync(initial, readFileSync(initial, 'utf8').replace('json.dump({"x": choose()}, f)', 'json.dump({"x": chose()}, f)'));
    const db = join(dir, 'run.sqlite');
    const run = await runCli(['run', taskDir, '--sampler', 'mutate', '--steps', '2', '--batch', '2', '--samples', '2', '--db', db], dir);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stderr, /^step 1: no valid program \|/m, run.stderr);
    assert.match(run.stderr, /thetaevolve run: .*; no valid program; database /, run.stderr);
    assert.doesNotMatch(run.stderr, /best -/, 'no penalty is shown as a best');

    const shown = await runCli(['db', db], dir);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /^ {2}best {10}no valid program$/m, shown.stdout);
    const json = JSON.parse((await runCli(['db', db, '--json'], dir)).stdout) as { best: unknown; improvements: unknown[] };
    assert.equal(json.best, null);
    assert.deepEqual(json.improvements, []);
    const best = await runCli(['db', db, '--best'], dir);
    assert.notEqual(best.code, 0);
    assert.match(best.stderr, /has no valid program yet/);
    const lineage = await runCli(['db', db, '--lineage', 'best'], dir);
    assert.notEqual(lineage.code, 0);
    assert.match(lineage.stderr, /has no valid program yet/);
  });
});
