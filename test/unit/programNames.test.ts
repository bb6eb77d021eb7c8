// How programs are named to people: the step that made them and their rank
// there by score (ProgramDatabase.stepRank on a real database file, read
// back after reopening and after evictions), and the dashboard's best card.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { bestView } from '../../src/dashboard/dashboardModel';
import { ProgramDatabase } from '../../src/engine/database/programDatabase';
import { programLabel, programName, programNameDetail } from '../../src/engine/common/format';
import { tempDir } from '../support/tempDirs';
import { programWith, testConfig } from './fixtures/database/programs';

describe('program names (step and rank)', () => {
  let dir: string;
  beforeEach(() => {
    dir = tempDir('thetaevolve-names-');
  });

  it("ranks each child by score among its step's children, ties by order, and keeps the rank after a reopen and after evictions", async () => {
    const file = join(dir, 'run.sqlite');
    const config = testConfig({ populationSize: 6, numIslands: 1, archiveSize: 2 });
    const db = await ProgramDatabase.open(file, { config });
    const initial = await db.addInitial(programWith(1, 40, null, 0, 'initial'));
    const step1 = await db.commitStep({
      step: 1,
      children: [
        programWith(2, 40, initial.id, 1, 'a'),
        programWith(5, 40, initial.id, 1, 'b'),
        programWith(-0.2, 40, initial.id, 1, 'c'),
        programWith(5, 40, initial.id, 1, 'd'),
      ],
      stats: null,
      engineState: null,
    });
    const [a, b, c, d] = step1.inserted.map((p) => p.id);
    assert.deepEqual(
      [a, b, c, d].map((id) => db.stepRank(id as string)?.rank),
      [3, 1, 4, 2],
      'by score, the earlier of equal scores first',
    );
    assert.deepEqual(db.stepRank(b as string), { rank: 1, of: 4 });
    assert.deepEqual(db.stepRank(initial.id), { rank: 1, of: 1 });
    assert.equal(db.stepRank('zzzz'), null);
    // Step 2 fills the population past its size: the worst (step 1's c, then a) go.
    await db.commitStep({
      step: 2,
      children: [programWith(6, 40, b as string, 2, 'e'), programWith(7, 40, b as string, 2, 'f')],
      stats: null,
      engineState: null,
    });
    assert.equal(db.get(c as string)?.score, undefined, 'the worst of step 1 was evicted');
    await db.close();
    const reopened = await ProgramDatabase.openReadOnly(file);
    try {
      assert.deepEqual(reopened.stepRank(b as string)?.rank, 1, 'the ranks above the evicted stay');
      assert.deepEqual(reopened.stepRank(d as string)?.rank, 2);
      const best = reopened.best();
      assert.ok(best);
      assert.deepEqual(reopened.stepRank(best.id), { rank: 1, of: 2 });
    } finally {
      await reopened.close();
    }
  });

  it('names a program "step 12 #1" ("initial" for the starting one) and keeps its id for the tooltip', () => {
    assert.equal(programName({ step: 12, stepRank: { rank: 1, of: 8 } }), 'step 12 #1');
    assert.equal(programName({ step: 12, stepRank: null }), 'step 12');
    assert.equal(programName({ step: 0, stepRank: { rank: 1, of: 1 } }), 'initial');
    assert.equal(
      programNameDetail({ id: '3k', step: 12, stepRank: { rank: 2, of: 8 } }),
      'rank 2 by score of the 8 children of step 12 in the database; program 3k',
    );
    assert.equal(programNameDetail({ id: '0', step: 0, stepRank: { rank: 1, of: 1 } }), 'program 0');
    const view = bestView(
      { id: '3k', step: 12, score: 2.5, objective: 2.5, lineageDepth: 4, parentId: '1v', stepRank: { rank: 1, of: 8 } },
      'maximize',
    );
    assert.equal(view.name, 'step 12 #1');
    assert.match(view.nameDetail ?? '', /program 3k$/);
  });

  it('labels a lineage or blame entry by the same name with who wrote it: the initial program\'s island copies are "initial", not "step 0 · migration"', () => {
    assert.equal(programLabel({ step: 11, origin: 'model', stepRank: { rank: 1, of: 8 } }), 'step 11 #1 · model');
    assert.equal(programLabel({ step: 0, origin: 'initial', stepRank: { rank: 1, of: 1 } }), 'initial');
    assert.equal(programLabel({ step: 0, origin: 'migration', stepRank: null }), 'initial');
    assert.equal(programLabel({ step: 7, origin: 'migration', stepRank: null }), 'step 7 · island copy');
    assert.equal(programLabel({ step: 4, origin: 'researcher', stepRank: { rank: 3, of: 9 } }), 'step 4 #3 · researcher');
  });
});
