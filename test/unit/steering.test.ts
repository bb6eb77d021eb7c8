// Interactive evolution in the engine (docs/algorithm.md section 11): the
// steering log replayed on open, bans and pins in parent sampling, guidance
// in the prompt, origins in an upgraded version 1 database, the line diff of
// blame. Real sql.js files; no sandbox.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { keptLines } from '../../src/engine/common/lineDiff';
import { Rng } from '../../src/engine/common/rng';
import { databaseView } from '../../src/dashboard/dashboardModel';
import { ProgramDatabase } from '../../src/engine/database/programDatabase';
import { loadSqlJs } from '../../src/engine/database/sqlite';
import { SteerInputError } from '../../src/engine/steering/applySteer';
import { steerRun } from '../../src/engine/steering/steerRun';
import { buildPrompt } from '../../src/engine/prompt';
import { tempDir } from '../support/tempDirs';
import { programWith, syntheticProgram, testConfig } from './fixtures/database/programs';

async function evolve(db: ProgramDatabase, steps: number, rng: Rng): Promise<void> {
  for (let i = 0; i < steps; i++) {
    const step = db.lastStep + 1;
    const children = db.sampleParents(4).flatMap((p) => Array.from({ length: 3 }, () => syntheticProgram(rng, step, p.id)));
    await db.commitStep({ step, children, stats: { step }, engineState: { step } });
  }
}

describe('steering in the engine', () => {
  let dir: string;
  const opened: ProgramDatabase[] = [];
  beforeEach(() => {
    dir = tempDir('thetaevolve-steering-');
  });
  afterEach(async () => {
    for (const db of opened.splice(0)) await db.close();
  });
  const open = async (name = 'run.sqlite'): Promise<ProgramDatabase> => {
    const db = await ProgramDatabase.open(path.join(dir, name), { config: testConfig({ numIslands: 2 }) });
    opened.push(db);
    return db;
  };

  it('replays guidance, bans and pins on reopen, so the reopened run draws the same parents', async () => {
    const db = await open();
    await db.addInitial(programWith(0.5, 100, null, 0, 'root'));
    await evolve(db, 3, Rng.fromSeed(1));
    const best = db.best()?.id as string;
    const other = db.topPrograms(5).find((p) => p.id !== best)?.id as string;
    await db.recordSteering({ kind: 'guidance', step: 4, text: 'use symmetry' });
    await db.recordSteering({ kind: 'ban', step: 4, id: best, descendants: false, ids: [best] });
    await db.recordSteering({ kind: 'pin', step: 4, id: other, share: 0.5, steps: 2 });
    const drawn = db.sampleParents(8).map((p) => p.id);
    assert.deepEqual(drawn.slice(0, 4), [other, other, other, other]);
    assert.ok(!drawn.includes(best));

    const again = await ProgramDatabase.openReadOnly(db.file);
    opened.push(again);
    assert.deepEqual(
      again.sampleParents(8).map((p) => p.id),
      drawn,
    );
    assert.deepEqual(again.guidanceHistory(), [{ step: 4, text: 'use symmetry', by: 'researcher' }]);
    assert.deepEqual(again.bannedIds(), [best]);
    assert.deepEqual(
      again.pins().map((p) => [p.id, p.fromStep, p.toStep]),
      [[other, 4, 5]],
    );
    assert.ok(!again.topPrograms(50).some((p) => p.id === best));
    // The pin lapses after its steps.
    await evolve(db, 2, Rng.fromSeed(2));
    assert.deepEqual(db.pins(), []);
  });

  it('the database state names the guidance in force and since which step, as the dashboard shows it', async () => {
    const db = await open();
    await db.addInitial(programWith(0.5, 100, null, 0, 'root'));
    assert.equal(db.stateSnapshot().guidance, null);
    await evolve(db, 2, Rng.fromSeed(3));
    await db.recordSteering({ kind: 'guidance', step: 3, text: 'try a <b>lattice</b>' });
    const again = await ProgramDatabase.openReadOnly(db.file);
    opened.push(again);
    assert.deepEqual(again.stateSnapshot().guidance, { text: 'try a <b>lattice</b>', step: 3 });
    assert.deepEqual(databaseView(again.stateSnapshot(), 'maximize', null).guidance, { text: 'try a <b>lattice</b>', step: 3 });
    await db.recordSteering({ kind: 'guidance', step: 3, text: null });
    assert.equal(db.stateSnapshot().guidance, null);
  });

  it("adds a researcher's program at the next step, on the island asked for or the smallest", async () => {
    const db = await open();
    await db.addInitial(programWith(0.5, 100, null, 0, 'root'));
    await evolve(db, 1, Rng.fromSeed(3));
    const sizes = db.summary().islands;
    const smallest = sizes.indexOf(Math.min(...sizes));
    const added = await db.addResearcher(programWith(0.7, 120, null, 2, 'mine'), { note: 'by hand' });
    assert.equal(added.island, smallest);
    assert.equal(added.origin, 'researcher');
    assert.equal(db.get(added.id)?.note, 'by hand');
    assert.equal(db.lastStep, 1);
    assert.deepEqual(db.steeringLog(), [{ kind: 'add', step: 2, id: added.id }]);
    const onIsland = await db.addResearcher(programWith(0.6, 130, null, 2, 'mine too'), { island: 1, note: null });
    assert.equal(onIsland.island, 1);
    assert.equal(db.origins().researcher, 2);
    // The next step commits as usual after it.
    await evolve(db, 1, Rng.fromSeed(4));
    assert.equal(db.lastStep, 2);
  });

  it('opens a version 1 database, giving each program the origin it implied, and upgrades it with the next write', async () => {
    const db = await open();
    await db.addInitial(programWith(0.5, 100, null, 0, 'root'));
    await evolve(db, 2, Rng.fromSeed(5));
    const origins = db.origins();
    await db.close();
    opened.splice(0);
    // Make it as version 1 wrote it: no origin or note columns, no steering log.
    const SQL = await loadSqlJs();
    const raw = new SQL.Database(fs.readFileSync(path.join(dir, 'run.sqlite')));
    raw.exec(
      "ALTER TABLE programs DROP COLUMN origin; ALTER TABLE programs DROP COLUMN note; DROP TABLE steering; DROP TABLE lineage; UPDATE meta SET value = '1' WHERE key = 'schema_version';",
    );
    fs.writeFileSync(path.join(dir, 'run.sqlite'), raw.export());
    raw.close();

    const readOnly = await ProgramDatabase.openReadOnly(path.join(dir, 'run.sqlite'));
    assert.deepEqual(readOnly.origins(), origins);
    assert.equal(readOnly.get('0')?.origin, 'initial');
    await readOnly.close();
    const resumed = await open();
    await evolve(resumed, 1, Rng.fromSeed(6));
    await resumed.close();
    opened.splice(0);
    const back = new SQL.Database(fs.readFileSync(path.join(dir, 'run.sqlite')));
    assert.equal(back.exec("SELECT value FROM meta WHERE key = 'schema_version'")[0]?.values[0]?.[0], '3');
    assert.equal(back.exec("SELECT origin FROM programs WHERE id = '0'")[0]?.values[0]?.[0], 'initial');
    back.close();
  });

  it('refuses at once, saying why, to pin a program that left the population or to ban one the run no longer has (issue 43 item 2)', async () => {
    const meta = {
      runId: 'r',
      task: 't',
      taskDir: dir,
      direction: 'maximize',
      language: 'py',
      programPath: 'p.py',
      startCode: '',
      source: 's',
      createdAt: 0,
    };
    const db = await ProgramDatabase.open(path.join(dir, 'small.sqlite'), {
      config: testConfig({ populationSize: 8, archiveSize: 4, numIslands: 1 }),
      meta,
    });
    opened.push(db);
    await db.addInitial(programWith(0.01, 100, null, 0, 'root'));
    const added: string[] = [];
    for (let step = 1; step <= 6; step++) {
      const parent = db.sampleParents(1)[0]?.id as string;
      // Each step's first child is a new best, the rest beat the earlier bests: those are evicted, kept as past bests.
      const children = Array.from({ length: 6 }, (_, i) =>
        programWith(i === 0 ? step * 10 : step * 10 - 1 + i * 0.01, 100, parent, step, `s${step}c${i}`),
      );
      const commit = await db.commitStep({ step, children, stats: { step }, engineState: { step } });
      added.push(...commit.inserted.map((p) => p.id));
    }
    const pastBest = db.improvements().find((p) => !db.isLive(p.id));
    assert.ok(pastBest, 'a past best left the population');
    const gone = added.find((id) => db.get(id) === null);
    assert.ok(gone, 'a program left the run altogether');
    await assert.rejects(steerRun(db.file, { kind: 'pin', id: pastBest.id, share: 0.5, steps: 2 }), (err: Error) => {
      assert.ok(err instanceof SteerInputError);
      assert.match(
        err.message,
        new RegExp(`program ${pastBest.id} is no longer in the population \\(only a live program can be a parent\\)`),
      );
      return true;
    });
    await assert.rejects(steerRun(db.file, { kind: 'ban', id: gone, descendants: false }), new RegExp(`no program ${gone} in `));
    await assert.rejects(steerRun(db.file, { kind: 'pin', id: gone, share: 0.5, steps: 2 }), new RegExp(`no program ${gone} in `));
    // Nothing was queued or written by the refusals: a live program is pinned, applied to the next step.
    const live = db.topPrograms(1)[0]?.id as string;
    assert.deepEqual(await steerRun(db.file, { kind: 'pin', id: live, share: 0.5, steps: 2 }), { kind: 'pin', step: 7 });
  });

  it('puts guidance in its own section of the prompt, only when there is some', () => {
    const task = { language: 'py', metaInformation: [{ id: 'm', weight: 1, text: 'Task text.' }], variables: {} };
    const parent = { code: '# EVOLVE-BLOCK-START\nx = 1\n# EVOLVE-BLOCK-END\n', score: 1, objective: 1, metrics: {} };
    const withGuidance = buildPrompt({ task, parent, rng: Rng.fromSeed(1), guidance: 'Try a hexagonal layout.' });
    const text = withGuidance.messages[1]?.content ?? '';
    assert.match(text, /# Guidance from the researcher\nTry a hexagonal layout\./);
    assert.ok(text.indexOf('Task text.') < text.indexOf('# Guidance') && text.indexOf('# Guidance') < text.indexOf('# Current program'));
    const without = buildPrompt({ task, parent, rng: Rng.fromSeed(1), guidance: null });
    assert.doesNotMatch(without.messages[1]?.content ?? '', /Guidance/);
  });

  it('keeps the lines a text shares with the one it came from', () => {
    assert.deepEqual(keptLines(['a', 'b', 'c'], ['a', 'b', 'c']), [0, 1, 2]);
    assert.deepEqual(keptLines(['a', 'b', 'c'], ['a', 'x', 'c']), [0, -1, 2]);
    assert.deepEqual(keptLines(['a', 'b', 'c', 'd'], ['a', 'c', 'new', 'b', 'd']), [0, 2, -1, -1, 3]); // a, c, d kept: one longest common subsequence
    assert.deepEqual(keptLines([], ['a']), [-1]);
    assert.deepEqual(keptLines(['a', 'b'], []), []);
  });
});
