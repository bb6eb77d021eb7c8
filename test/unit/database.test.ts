import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as zlib from 'node:zlib';
import { defaultSettings, parseSettings } from '../../src/engine/common/config';
import {
  type DatabaseConfig,
  databaseConfigFromSettings,
  DatabaseFileError,
  featureBins,
  type NewProgram,
  ProgramDatabase,
} from '../../src/engine/database/programDatabase';
import { blameOf, lineageOf } from '../../src/engine/database/lineage';
import { readRunForComparison } from '../../src/engine/database/runComparison';
import type { ProgramRecord } from '../../src/engine/database/records';
import { loadSqlJs } from '../../src/engine/database/sqlite';
import { Rng } from '../../src/engine/common/rng';
import { tempDir } from '../support/tempDirs';
import { programWith, REALISTIC_SHAPE, syntheticProgram, testConfig } from './fixtures/database/programs';

let dir: string;
const open: ProgramDatabase[] = [];

async function fresh(config: DatabaseConfig, name = 'run.sqlite'): Promise<ProgramDatabase> {
  const db = await ProgramDatabase.open(path.join(dir, name), { config });
  open.push(db);
  return db;
}

async function reopen(file: string, config: DatabaseConfig): Promise<ProgramDatabase> {
  const db = await ProgramDatabase.open(file, { config });
  open.push(db);
  return db;
}

function commit(db: ProgramDatabase, children: NewProgram[], stats: unknown = null) {
  return db.commitStep({ step: db.lastStep + 1, children, stats, engineState: { after: db.lastStep + 1 } });
}

/** Run `steps` steps of B parents x n children drawn from `rng`. */
async function evolve(db: ProgramDatabase, steps: number, rng: Rng, parents = 4, perParent = 4): Promise<void> {
  for (let i = 0; i < steps; i++) {
    const step = db.lastStep + 1;
    const children = db.sampleParents(parents).flatMap((p) => Array.from({ length: perParent }, () => syntheticProgram(rng, step, p.id)));
    await db.commitStep({ step, children, stats: { step }, engineState: { step } });
  }
}

describe('program database', () => {
  beforeEach(() => {
    dir = tempDir('thetaevolve-db-');
  });
  afterEach(async () => {
    for (const db of open.splice(0)) await db.close();
  });

  describe('configuration', () => {
    it('takes the preset sizes (large by default) and lets non-zero settings override them', () => {
      assert.deepEqual(databaseConfigFromSettings(defaultSettings()), {
        populationSize: 10000,
        archiveSize: 1000,
        numIslands: 10,
        migrationInterval: 50,
        migrationRate: 0.1,
        explorationRatio: 0.2,
        exploitationRatio: 0.6,
        seed: 0,
      });
      const small = databaseConfigFromSettings(parseSettings({ 'database.preset': 'small', 'database.archiveSize': 7, seed: 3 }));
      assert.equal(small.populationSize, 70);
      assert.equal(small.archiveSize, 7);
      assert.equal(small.numIslands, 5);
      assert.equal(small.seed, 3);
      const medium = databaseConfigFromSettings(parseSettings({ 'database.preset': 'medium' }));
      assert.deepEqual([medium.populationSize, medium.archiveSize, medium.numIslands], [1000, 100, 10]);
    });

    it('bins each feature max(10, ceil(archive^(1/2)))', () => {
      assert.equal(featureBins(25), 10);
      assert.equal(featureBins(100), 10);
      assert.equal(featureBins(1000), 32);
      assert.equal(featureBins(10000), 100);
      assert.equal(featureBins(1000000, 3), 100);
    });

    it('rejects a configuration whose ratios add up past 1', async () => {
      await assert.rejects(fresh(testConfig({ explorationRatio: 0.6, exploitationRatio: 0.6 })), /at most 1/);
    });
  });

  describe('islands', () => {
    it("seeds every island with the initial program and puts each child on its parent's island", async () => {
      const db = await fresh(testConfig({ numIslands: 3, explorationRatio: 1, exploitationRatio: 0 }));
      const initial = await db.addInitial(programWith(0.1, 100, null, 0, 'initial'));
      assert.equal(initial.island, 0);
      assert.equal(db.lastStep, 0);
      assert.deepEqual(db.summary().islands, [1, 1, 1]);
      // Exploration only: the parents are the islands' own programs, in turn.
      const parents = db.sampleParents(3);
      assert.deepEqual(
        parents.map((p) => p.island),
        [0, 1, 2],
      );
      assert.equal(parents[1]?.migrantOf, initial.id);
      const children = parents.flatMap((p, i) => [
        programWith(0.2 + i / 10, 120, p.id, 1, `child-${i}-a`),
        programWith(0.05, 130, p.id, 1, `child-${i}-b`),
      ]);
      const { inserted } = await commit(db, children);
      for (const child of inserted) {
        const parent = parents.find((p) => p.id === child.parentId);
        assert.ok(parent);
        assert.equal(child.island, parent.island, `child ${child.id} of ${parent.id}`);
      }
      assert.deepEqual(db.summary().islands, [3, 3, 3]);
    });

    it('takes turns across islands, continuing where the last step stopped', async () => {
      const db = await fresh(testConfig({ numIslands: 4, explorationRatio: 1, exploitationRatio: 0 }));
      await db.addInitial(programWith(0.1, 100, null, 0, 'initial'));
      assert.deepEqual(
        db.sampleParents(6).map((p) => p.island),
        [0, 1, 2, 3, 0, 1],
      );
      await commit(db, []);
      assert.deepEqual(
        db.sampleParents(3).map((p) => p.island),
        [2, 3, 0],
      );
    });
  });

  describe('MAP-Elites', () => {
    it('takes an empty cell, and replaces the occupant only with a higher score', async () => {
      // archive 25 -> 10 bins per feature; ranges after the first two programs: score [0, 1], length [100, 1000].
      const db = await fresh(testConfig({ numIslands: 1, archiveSize: 25 }));
      const initial = await db.addInitial(programWith(0, 100, null, 0, 'low'));
      await commit(db, [programWith(1, 1000, initial.id, 1, 'high')]);
      const cellOf = (id: string) => db.stateSnapshot().mapElites.islands[0]?.cells.find((c) => c.id === id);
      const {
        inserted: [first],
      } = await commit(db, [programWith(0.5, 550, initial.id, 2, 'mid')]);
      assert.ok(first);
      const cell = cellOf(first.id);
      assert.deepEqual(cell && [cell.scoreBin, cell.lengthBin], [5, 5]);
      const {
        inserted: [worse],
      } = await commit(db, [programWith(0.51, 560, initial.id, 3, 'mid-worse-than-nothing')]);
      assert.ok(worse);
      // 0.51 > 0.5: same cell (5, 5), higher score: it takes the cell.
      assert.equal(cellOf(worse.id)?.cell, cell?.cell);
      assert.equal(cellOf(first.id), undefined);
      const {
        inserted: [lower],
      } = await commit(db, [programWith(0.505, 555, initial.id, 4, 'mid-lower')]);
      assert.ok(lower);
      assert.equal(cellOf(lower.id), undefined, 'a lower score does not replace the occupant');
      assert.equal(cellOf(worse.id)?.cell, cell?.cell);
      const {
        inserted: [elsewhere],
      } = await commit(db, [programWith(0.05, 950, initial.id, 5, 'empty-cell')]);
      assert.ok(elsewhere);
      const other = cellOf(elsewhere.id);
      assert.deepEqual(other && [other.scoreBin, other.lengthBin], [0, 9], 'a low score still takes an empty cell');
      assert.equal(db.stateSnapshot().mapElites.bins, 10);
    });
  });

  describe('archive', () => {
    it('fills up, then a better program replaces the worst member and a worse one stays out', async () => {
      const db = await fresh(testConfig({ numIslands: 1, archiveSize: 3, populationSize: 100, explorationRatio: 0, exploitationRatio: 1 }));
      const initial = await db.addInitial(programWith(0.1, 100, null, 0, 'a'));
      await commit(db, [programWith(0.3, 100, initial.id, 1, 'b'), programWith(0.2, 100, initial.id, 1, 'c')]);
      assert.deepEqual(db.stateSnapshot().archive, { size: 3, capacity: 3, minScore: 0.1, maxScore: 0.3 });
      await commit(db, [programWith(0.05, 100, initial.id, 2, 'd')]);
      assert.deepEqual(db.stateSnapshot().archive, { size: 3, capacity: 3, minScore: 0.1, maxScore: 0.3 });
      const { inserted } = await commit(db, [programWith(0.25, 100, initial.id, 3, 'e')]);
      assert.deepEqual(db.stateSnapshot().archive, { size: 3, capacity: 3, minScore: 0.2, maxScore: 0.3 });
      // Exploitation only: every parent is an archive member.
      const sampled = new Set(db.sampleParents(200).map((p) => p.score));
      assert.deepEqual([...sampled].sort(), [0.2, 0.25, 0.3]);
      assert.equal(inserted[0]?.score, 0.25);
    });
  });

  describe('capacity', () => {
    it('evicts the lowest scores but never the global best nor the newest program', async () => {
      const db = await fresh(testConfig({ numIslands: 1, populationSize: 3, archiveSize: 3 }));
      const initial = await db.addInitial(programWith(5, 100, null, 0, 'best'));
      const { inserted } = await commit(db, [
        programWith(1, 100, initial.id, 1, 'one'),
        programWith(2, 100, initial.id, 1, 'two'),
        programWith(0.5, 100, initial.id, 1, 'newest-and-lowest'),
      ]);
      const [one, two, newest] = inserted;
      assert.ok(one && two && newest);
      assert.equal(db.size, 3);
      // The newest is the lowest, yet it stays; the next lowest (1) goes.
      assert.equal(db.get(one.id), null);
      assert.ok(db.get(newest.id));
      assert.ok(db.get(two.id));
      assert.ok(db.get(initial.id));
      // Everything scores below the best: the best (the oldest) survives a flood.
      const flood = Array.from({ length: 10 }, (_, i) => programWith(3 + i / 100, 100, initial.id, 2, `flood-${i}`));
      await commit(db, flood);
      assert.equal(db.size, 3);
      assert.equal(db.best()?.id, initial.id);
      assert.deepEqual(
        db.topPrograms(3).map((p) => p.score),
        [5, 3.09, 3.08],
      );
      // The hash index still knows every program ever added.
      for (const p of [one, two, newest]) assert.ok(db.hasCodeHash(p.codeHash));
      for (const p of flood) assert.ok(db.hasCodeHash(p.codeHash));
      assert.equal(db.hasCodeHash('never-added'), false);
    });

    it('keeps a former best after eviction for the improvement history', async () => {
      const db = await fresh(testConfig({ numIslands: 1, populationSize: 2, archiveSize: 2 }));
      const initial = await db.addInitial(programWith(1, 100, null, 0, 'first-best'));
      const { newBest } = await commit(db, [programWith(2, 100, initial.id, 1, 'second-best')]);
      assert.equal(newBest?.score, 2);
      await commit(db, [programWith(1.5, 100, initial.id, 2, 'x'), programWith(1.6, 100, initial.id, 2, 'y')]);
      assert.equal(db.size, 2);
      assert.deepEqual(
        db.improvements().map((p) => p.score),
        [1, 2],
      );
      assert.equal(db.get(initial.id)?.code.startsWith('# first-best'), true);
      const noChange = await commit(db, [programWith(0.1, 100, initial.id, 3, 'z')]);
      assert.equal(noChange.newBest, null);
    });
  });

  describe('migration', () => {
    it("copies each island's top fraction to its ring neighbours every interval", async () => {
      const db = await fresh(
        testConfig({
          numIslands: 3,
          migrationInterval: 2,
          migrationRate: 0.5,
          populationSize: 1000,
          explorationRatio: 1,
          exploitationRatio: 0,
        }),
      );
      const initial = await db.addInitial(programWith(0.1, 100, null, 0, 'initial'));
      const parents = db.sampleParents(3);
      // Long code: the copies of these carry it compressed, as stored.
      await commit(
        db,
        parents.map((p, i) => programWith(1 + i, 3000, p.id, 1, `island-${p.island}`)),
      );
      assert.equal(db.stateSnapshot().migrations.count, 0);
      assert.deepEqual(db.summary().islands, [2, 2, 2]);
      const parents2 = db.sampleParents(3);
      const step2 = await commit(
        db,
        parents2.map((p, i) => programWith(0.01 + i / 1000, 100, p.id, 2, `filler-${i}`)),
      );
      assert.equal(step2.inserted.length, 3);
      const snapshot = db.stateSnapshot();
      assert.equal(snapshot.migrations.count, 1);
      assert.equal(snapshot.migrations.lastStep, 2);
      // Each island had 3 programs, rate 0.5 -> its top 1 (own, not a copy) goes to both neighbours.
      assert.deepEqual(db.summary().islands, [5, 5, 5]);
      const copies = Array.from({ length: 40 }, (_, i) => db.get(i.toString(36))).filter((p) => p?.migrantOf && p.step === 2);
      assert.equal(copies.length, 6);
      for (const copy of copies) {
        assert.ok(copy);
        const source = db.get(copy.migrantOf as string);
        assert.ok(source);
        assert.equal(copy.code, source.code);
        assert.equal(copy.score, source.score);
        assert.notEqual(copy.island, source.island);
        assert.equal(copy.parentId, source.id);
        assert.equal(copy.completionTokens, 0);
      }
      assert.equal(initial.migrantOf, null);
      // Migration copies never join the archive nor become the best (seed copies join it: see addInitial).
      assert.equal(db.best()?.migrantOf, null);
    });

    it("reports island sizes (the dashboard's island view) equal to the live programs of each island in the file, across migrations", async () => {
      const config = testConfig({ populationSize: 120, archiveSize: 20, numIslands: 4, migrationInterval: 3, migrationRate: 0.2 });
      const db = await fresh(config);
      await db.addInitial(programWith(0.1, 100, null, 0, 'initial'));
      await evolve(db, 14, Rng.fromSeed(31), 8, 3);
      const snapshot = db.stateSnapshot();
      assert.ok(snapshot.migrations.count >= 2, `${snapshot.migrations.count} migrations`);
      assert.equal(snapshot.programs, config.populationSize, 'full: evictions happened too');
      const SQL = await loadSqlJs();
      const file = new SQL.Database(fs.readFileSync(db.file));
      try {
        const rows = file.exec('SELECT island, count(*) FROM programs WHERE alive = 1 GROUP BY island ORDER BY island')[0]?.values ?? [];
        const inFile = Array.from({ length: config.numIslands }, (_, island) => Number(rows.find((r) => r[0] === island)?.[1] ?? 0));
        assert.deepEqual(
          snapshot.islands.map((i) => i.size),
          inFile,
        );
        assert.deepEqual(db.summary().islands, inFile);
        assert.equal(
          inFile.reduce((a, b) => a + b, 0),
          snapshot.programs,
        );
        // Every migration copy sits on a ring neighbour of its source's island.
        const copies =
          file.exec('SELECT c.island, s.island FROM programs c JOIN programs s ON c.migrant_of = s.id WHERE c.step > 0')[0]?.values ?? [];
        assert.ok(copies.length > 0, 'some copies of this run are still alive');
        for (const [copyIsland, sourceIsland] of copies) {
          const distance = Math.abs(Number(copyIsland) - Number(sourceIsland));
          assert.ok(
            distance === 1 || distance === config.numIslands - 1,
            `copy on island ${copyIsland} of a program on island ${sourceIsland}`,
          );
        }
        // The per-island best the view shows is the best live program of that island.
        for (const island of snapshot.islands) {
          const best = file.exec(`SELECT max(score) FROM programs WHERE alive = 1 AND island = ${island.island}`)[0]?.values[0]?.[0];
          assert.equal(island.best?.score ?? null, best ?? null);
        }
      } finally {
        file.close();
      }
    });

    it('does not copy a program to an island that already holds its code', async () => {
      const db = await fresh(testConfig({ numIslands: 2, migrationInterval: 1, migrationRate: 1, populationSize: 1000 }));
      await db.addInitial(programWith(0.1, 100, null, 0, 'initial'));
      // Both islands hold the initial code: a migration of it is skipped on both sides.
      await commit(db, []);
      assert.deepEqual(db.summary().islands, [1, 1]);
    });
  });

  describe('parent sampling', () => {
    it('draws island / archive / whole database with probabilities 0.2 / 0.6 / 0.2', async () => {
      // Island 0 holds 20 programs, none in the archive; island 1 holds the 4 archive members and 16 others.
      const db = await fresh(testConfig({ numIslands: 2, archiveSize: 4, populationSize: 1000 }));
      const initial = await db.addInitial(programWith(0.001, 100, null, 0, 'initial'));
      const copyOnIsland1 = db.get('1');
      assert.equal(copyOnIsland1?.island, 1);
      assert.ok(copyOnIsland1);
      // Archive: the 4 best, all on island 1 (the initial program was in it, then pushed out).
      const children = [
        ...Array.from({ length: 4 }, (_, i) => programWith(10 + i, 100, copyOnIsland1.id, 1, `elite-${i}`)),
        ...Array.from({ length: 19 }, (_, i) => programWith(0.01 + i / 100, 100, initial.id, 1, `island0-${i}`)),
        ...Array.from({ length: 15 }, (_, i) => programWith(0.01 + i / 100, 100, copyOnIsland1.id, 1, `island1-${i}`)),
      ];
      await commit(db, children);
      assert.deepEqual(db.summary().islands, [20, 20]);
      const island0 = new Set<string>();
      const archive = new Set<string>();
      for (const p of db.topPrograms(4)) archive.add(p.id);
      const draws = 20000;
      // Islands take turns: the even draws are island 0's.
      const parents = db.sampleParents(draws);
      for (const p of parents) if (p.island === 0) island0.add(p.id);
      let fromIsland0 = 0;
      let fromArchive = 0;
      let island0Turns = 0;
      parents.forEach((p, i) => {
        if (i % 2 !== 0) return;
        island0Turns++;
        if (p.island === 0) fromIsland0++;
        if (archive.has(p.id)) fromArchive++;
      });
      // Expected on island 0's turns: island 0 = 0.2 + 0.2 * 20/40; archive = 0.6 + 0.2 * 4/40.
      const check = (observed: number, p: number, label: string) => {
        const expected = p * island0Turns;
        const sigma = Math.sqrt(island0Turns * p * (1 - p));
        assert.ok(
          Math.abs(observed - expected) < 4 * sigma,
          `${label}: ${observed} draws, expected ${expected.toFixed(0)} +- ${(4 * sigma).toFixed(0)}`,
        );
      };
      check(fromIsland0, 0.2 + 0.2 * 0.5, 'island 0');
      check(fromArchive, 0.6 + 0.2 * 0.1, 'archive');
      assert.ok(island0.size > 15, 'exploration draws uniformly over the island');
    });

    it('draws exploitation parents from the archive members of the island whose turn it is', async () => {
      // Two islands, each with two archive members (the elites) and 18 others; the archive holds exactly the 4 elites.
      const db = await fresh(testConfig({ numIslands: 2, archiveSize: 4, populationSize: 1000 }));
      const initial = await db.addInitial(programWith(0.001, 100, null, 0, 'initial'));
      const copyOnIsland1 = db.get('1');
      assert.ok(copyOnIsland1);
      await commit(db, [
        ...[0, 1].map((i) => programWith(10 + i, 100, initial.id, 1, `elite0-${i}`)),
        ...[0, 1].map((i) => programWith(20 + i, 100, copyOnIsland1.id, 1, `elite1-${i}`)),
        ...Array.from({ length: 17 }, (_, i) => programWith(0.01 + i / 100, 100, initial.id, 1, `island0-${i}`)),
        ...Array.from({ length: 17 }, (_, i) => programWith(0.01 + i / 100, 100, copyOnIsland1.id, 1, `island1-${i}`)),
      ]);
      assert.deepEqual(db.summary().islands, [20, 20]);
      const elitesOf = new Map<string, number>(db.topPrograms(4).map((p) => [p.id, p.island]));
      assert.deepEqual([...elitesOf.values()].sort(), [0, 0, 1, 1]);
      const parents = db.sampleParents(20000);
      // On island t's turn an elite of the other island comes only from the whole-database draw: 0.2 * 2/40.
      // Drawing exploitation parents from the whole archive would make it 0.6 * 2/4 + 0.01 = 0.31.
      const turns = [0, 0];
      const ownElite = [0, 0];
      const otherElite = [0, 0];
      parents.forEach((p, i) => {
        const turn = i % 2;
        const count = (tally: number[]): void => {
          tally[turn] = (tally[turn] as number) + 1;
        };
        count(turns);
        const eliteIsland = elitesOf.get(p.id);
        if (eliteIsland === turn) count(ownElite);
        else if (eliteIsland !== undefined) count(otherElite);
      });
      for (const turn of [0, 1]) {
        const n = turns[turn] as number;
        const within4Sigma = (observed: number, p: number): boolean => Math.abs(observed - p * n) < 4 * Math.sqrt(n * p * (1 - p));
        assert.ok(
          within4Sigma(otherElite[turn] as number, (0.2 * 2) / 40),
          `island ${turn}: ${otherElite[turn]} of ${n} parents were the other island's elites`,
        );
        assert.ok(
          within4Sigma(ownElite[turn] as number, 0.6 + (0.2 * 2) / 40 + (0.2 * 2) / 20),
          `island ${turn}: ${ownElite[turn]} of ${n} parents were its own elites`,
        );
      }
    });

    it('keeps islands apart: no island swallows a run of B=10 x n=2 on 10 islands (the measured failure: 46% on one, 1% on another)', async () => {
      const db = await fresh(testConfig({ populationSize: 1000, archiveSize: 100, numIslands: 10 }));
      await db.addInitial(programWith(0.1, 100, null, 0, 'initial'));
      await evolve(db, 15, Rng.fromSeed(2025), 10, 2);
      const sizes = db.summary().islands;
      const total = sizes.reduce((a, b) => a + b, 0);
      // Islands take turns, so each island gets one parent per step and 2 children: 31 programs each (its seed copy
      // included) when parents stay on their island. Exploitation draws from the whole archive put them all on island 0.
      const shares = sizes.map((size) => size / total);
      assert.ok(
        Math.max(...shares) < 0.2,
        `island sizes ${JSON.stringify(sizes)}: one island holds ${(100 * Math.max(...shares)).toFixed(0)}%`,
      );
      assert.ok(
        Math.min(...shares) > 0.04,
        `island sizes ${JSON.stringify(sizes)}: one island holds ${(100 * Math.min(...shares)).toFixed(0)}%`,
      );
    });

    it('gives the same parents when called again before the next commit', async () => {
      const db = await fresh(testConfig());
      await db.addInitial(programWith(0.1, 100, null, 0, 'initial'));
      await evolve(db, 3, Rng.fromSeed(1));
      const first = db.sampleParents(16).map((p) => p.id);
      assert.deepEqual(
        db.sampleParents(16).map((p) => p.id),
        first,
      );
    });
  });

  describe('durability and resume', () => {
    it('resumes exactly: a run split by a reopen makes the same choices as an uninterrupted one', async () => {
      const config = testConfig({ populationSize: 60, archiveSize: 10, numIslands: 3, migrationInterval: 2 });
      const straight = await fresh(config, 'straight.sqlite');
      await straight.addInitial(programWith(0.1, 100, null, 0, 'initial'));
      await evolve(straight, 12, Rng.fromSeed(99));

      const splitFile = path.join(dir, 'split.sqlite');
      const rng = Rng.fromSeed(99);
      const first = await reopen(splitFile, config);
      await first.addInitial(programWith(0.1, 100, null, 0, 'initial'));
      await evolve(first, 5, rng);
      const sampledBeforeCrash = first.sampleParents(4).map((p) => p.id); // sampled, then the process "crashed" before committing
      await first.close();
      const resumed = await reopen(splitFile, { ...config, seed: 12345 });
      assert.deepEqual(resumed.config, config, 'the stored configuration wins');
      assert.equal(resumed.lastStep, 5);
      assert.deepEqual(resumed.engineState(), { step: 5 });
      assert.deepEqual(
        resumed.sampleParents(4).map((p) => p.id),
        sampledBeforeCrash,
        'the same parents for the same step after a resume',
      );
      await evolve(resumed, 7, rng);

      assert.deepEqual(resumed.stateSnapshot(), straight.stateSnapshot());
      assert.deepEqual(resumed.summary(), straight.summary());
      assert.deepEqual(
        resumed.sampleParents(10).map((p) => p.id),
        straight.sampleParents(10).map((p) => p.id),
      );
      assert.deepEqual(
        resumed.steps().map((s) => s.stats),
        straight.steps().map((s) => s.stats),
      );
      assert.ok(resumed.stateSnapshot().migrations.count > 0);
    });

    it('keeps every field of a program, compressing long text, and the file reads with plain SQLite', async () => {
      const file = path.join(dir, 'fields.sqlite');
      const db = await reopen(file, testConfig());
      const program = {
        ...syntheticProgram(Rng.fromSeed(5), 0, null, { codeChars: 3000, responseChars: 2000, reasoningChars: 1000 }),
        metrics: { a: 1, b: 'x', c: true, d: null },
      };
      const initial = await db.addInitial(program);
      const back = db.get(initial.id);
      assert.ok(back);
      const { createdAt, ...rest } = back;
      assert.ok(createdAt > 0);
      assert.deepEqual(rest, { ...program, id: '0', island: 0, migrantOf: null, origin: 'initial', note: null });
      await db.close();

      const SQL = await loadSqlJs();
      const raw = new SQL.Database(fs.readFileSync(file));
      const [row] = raw.exec("SELECT code, response, typeof(code), metrics FROM programs WHERE id = '0'")[0]?.values ?? [];
      assert.ok(row);
      assert.equal(row[2], 'blob');
      assert.equal(zlib.inflateSync(row[0] as Uint8Array).toString(), program.code);
      assert.equal(zlib.inflateSync(row[1] as Uint8Array).toString(), program.response);
      assert.deepEqual(JSON.parse(row[3] as string), program.metrics);
      assert.deepEqual(raw.exec("SELECT value FROM meta WHERE key = 'magic'")[0]?.values, [['thetaevolve-program-database']]);
      raw.close();
    });

    it('prunes evicted programs but keeps their code hashes across a reopen', async () => {
      const file = path.join(dir, 'prune.sqlite');
      const config = testConfig({ populationSize: 20, archiveSize: 5, numIslands: 2 });
      const db = await reopen(file, config);
      await db.addInitial(syntheticProgram(Rng.fromSeed(1), 0, null, REALISTIC_SHAPE));
      const rng = Rng.fromSeed(2);
      const added: NewProgram[] = [];
      for (let step = 1; step <= 6; step++) {
        const children = db
          .sampleParents(4)
          .flatMap((p) => Array.from({ length: 5 }, () => syntheticProgram(rng, step, p.id, REALISTIC_SHAPE)));
        added.push(...children);
        await commit(db, children);
      }
      assert.equal(db.size, 20);
      await db.close();
      const SQL = await loadSqlJs();
      const raw = new SQL.Database(fs.readFileSync(file));
      const rows = Number(raw.exec('SELECT count(*) FROM programs')[0]?.values[0]?.[0]);
      const hashes = Number(raw.exec('SELECT count(*) FROM code_hashes')[0]?.values[0]?.[0]);
      raw.close();
      assert.ok(rows <= 20 + 10, `${rows} rows kept for 20 live programs (plus former bests)`);
      assert.equal(hashes, new Set([...added.map((p) => p.codeHash)]).size + 1);
      const again = await reopen(file, config);
      for (const p of added) assert.ok(again.hasCodeHash(p.codeHash));
      // Read-only, the hashes stay in the file (nothing is added to such a database): the same answers, asked there.
      const reader = await ProgramDatabase.openReadOnly(file);
      open.push(reader);
      for (const p of added) assert.ok(reader.hasCodeHash(p.codeHash));
      assert.equal(reader.hasCodeHash('0'.repeat(64)), false);
      assert.equal(reader.stateSnapshot().hashIndexSize, hashes);
      assert.equal(reader.stateSnapshot().hashIndexSize, again.stateSnapshot().hashIndexSize);
    });

    it('lists ancestors and improvements for the tree view', async () => {
      const db = await fresh(testConfig({ numIslands: 1 }));
      const root = await db.addInitial(programWith(0.1, 100, null, 0, 'root'));
      const {
        inserted: [a],
      } = await commit(db, [programWith(0.2, 100, root.id, 1, 'a')]);
      assert.ok(a);
      const {
        inserted: [b],
      } = await commit(db, [programWith(0.15, 100, a.id, 2, 'b')]);
      assert.ok(b);
      const {
        inserted: [c],
      } = await commit(db, [programWith(0.3, 100, b.id, 3, 'c')]);
      assert.ok(c);
      assert.deepEqual(
        db.ancestors(c.id).map((p) => p.id),
        [b.id, a.id, root.id],
      );
      assert.deepEqual(
        db.improvements().map((p) => p.id),
        [root.id, a.id, c.id],
      );
      assert.deepEqual(
        db.steps().map((s) => s.step),
        [1, 2, 3],
      );
      assert.equal(db.summary().steps, 3);
    });

    it('refuses out-of-order steps, writes to a read-only handle, and outcomes that never enter', async () => {
      const file = path.join(dir, 'rules.sqlite');
      const db = await reopen(file, testConfig());
      await assert.rejects(db.commitStep({ step: 1, children: [], stats: null, engineState: null }), /initial program first/);
      const root = await db.addInitial(programWith(0.1, 100, null, 0, 'root'));
      await assert.rejects(db.commitStep({ step: 2, children: [], stats: null, engineState: null }), /expected step 1/);
      await assert.rejects(commit(db, [{ ...programWith(0.1, 100, root.id, 1, 'x'), outcome: 'duplicate' }]), /never enters/);
      const reader = await ProgramDatabase.openReadOnly(file);
      open.push(reader);
      await assert.rejects(reader.commitStep({ step: 1, children: [], stats: null, engineState: null }), /read-only/);
      assert.equal(reader.summary().programs, 5);
    });
  });

  describe('foreign and corrupt files', () => {
    const expectRefused = async (file: string, pattern: RegExp) => {
      const before = fs.readFileSync(file);
      await assert.rejects(
        ProgramDatabase.open(file, { config: testConfig() }),
        (err: unknown) => err instanceof DatabaseFileError && pattern.test(err.message),
      );
      await assert.rejects(ProgramDatabase.openReadOnly(file), DatabaseFileError);
      assert.deepEqual(fs.readFileSync(file), before, 'the file is left untouched');
    };

    it('refuses a file that is not SQLite, or empty', async () => {
      const file = path.join(dir, 'text.sqlite');
      fs.writeFileSync(file, 'hello, not a database\n'.repeat(100));
      await expectRefused(file, /not an SQLite file/);
      const empty = path.join(dir, 'empty.sqlite');
      fs.writeFileSync(empty, '');
      await expectRefused(empty, /empty/);
    });

    it('refuses an SQLite file of another program', async () => {
      const SQL = await loadSqlJs();
      const other = new SQL.Database();
      other.run("CREATE TABLE meta (key TEXT, value TEXT); INSERT INTO meta VALUES ('magic', 'someone-else')");
      const file = path.join(dir, 'other.sqlite');
      fs.writeFileSync(file, other.export());
      other.close();
      await expectRefused(file, /another program/);
      const noMeta = new SQL.Database();
      noMeta.run('CREATE TABLE t (x)');
      const file2 = path.join(dir, 'nometa.sqlite');
      fs.writeFileSync(file2, noMeta.export());
      noMeta.close();
      await expectRefused(file2, /without a ThetaEvolve meta table/);
    });

    it("writes no run into a file marked read-only, as root too, naming it; root replacing another user's file leaves it theirs", async () => {
      const file = path.join(dir, 'readonly.sqlite');
      const db = await reopen(file, testConfig());
      await db.addInitial(syntheticProgram(Rng.fromSeed(1), 0, null, REALISTIC_SHAPE));
      await evolve(db, 2, Rng.fromSeed(2));
      // Marked read-only while the run holds it: the next step's write is refused, the file kept as it was.
      fs.chmodSync(file, 0o444);
      const kept = fs.readFileSync(file);
      await assert.rejects(evolve(db, 1, Rng.fromSeed(3)), (err: unknown) => {
        assert.match(String(err), /readonly\.sqlite is marked read-only \(mode 0444\): not written; make it writable \(chmod u\+w\)/);
        return true;
      });
      await db.close();
      assert.deepEqual(fs.readFileSync(file), kept);
      // Resuming it, or steering it stopped, is refused before anything runs.
      await assert.rejects(
        ProgramDatabase.open(file, { config: testConfig() }),
        (err: unknown) =>
          err instanceof DatabaseFileError &&
          /readonly\.sqlite is marked read-only \(mode 0444\), so no run writes it: make it writable/.test(err.message),
      );
      await assert.rejects(ProgramDatabase.openExisting(file), /marked read-only \(mode 0444\)/);
      assert.equal(fs.statSync(file).mode & 0o7777, 0o444);
      assert.deepEqual(fs.readFileSync(file), kept);
      // Reading it still works.
      const reader = await ProgramDatabase.openReadOnly(file);
      open.push(reader);
      assert.equal(reader.lastStep, 2);
      if (process.getuid?.() === 0) {
        // As root, a writable database of another user stays that user's after a step replaces it.
        fs.chmodSync(file, 0o640);
        fs.chownSync(file, 65534, 65534);
        const resumed = await reopen(file, testConfig());
        await evolve(resumed, 1, Rng.fromSeed(4));
        const after = fs.statSync(file);
        assert.deepEqual([after.uid, after.gid, after.mode & 0o7777], [65534, 65534, 0o640]);
        assert.notDeepEqual(fs.readFileSync(file), kept);
      }
    });

    it('refuses a newer schema version and a damaged file', async () => {
      const file = path.join(dir, 'newer.sqlite');
      const db = await reopen(file, testConfig());
      await db.addInitial(syntheticProgram(Rng.fromSeed(1), 0, null, REALISTIC_SHAPE));
      await evolve(db, 3, Rng.fromSeed(3));
      await db.close();
      const SQL = await loadSqlJs();
      const raw = new SQL.Database(fs.readFileSync(file));
      raw.run("UPDATE meta SET value = '99' WHERE key = 'schema_version'");
      const newer = path.join(dir, 'newer2.sqlite');
      fs.writeFileSync(newer, raw.export());
      raw.close();
      await expectRefused(
        newer,
        /^.*newer2\.sqlite was written by a newer version of ThetaEvolve \(database schema version 99; this version reads up to \d+\): open it with that version/,
      );
      // The comparison (Compare Runs, report) says the same, not "not a usable database".
      await assert.rejects(readRunForComparison(newer), (err: unknown) => {
        assert.match(String(err), /was written by a newer version of ThetaEvolve \(database schema version 99;/);
        assert.doesNotMatch(String(err), /not a usable/);
        return true;
      });

      const damaged = path.join(dir, 'damaged.sqlite');
      const bytes = fs.readFileSync(file);
      const garbage = Buffer.from(bytes);
      for (let i = 100; i < garbage.length; i += 7) garbage[i] = (garbage[i] as number) ^ 0x5a;
      fs.writeFileSync(damaged, garbage);
      await expectRefused(damaged, /./);
      const truncated = path.join(dir, 'truncated.sqlite');
      fs.writeFileSync(truncated, bytes.subarray(0, Math.floor(bytes.length / 3)));
      await expectRefused(truncated, /./);
    });
  });
});

describe('program database: run meta of the session', () => {
  it('keeps what the run was created with and rewrites what describes the session (its sandbox) on each open', async () => {
    const config = testConfig();
    const file = path.join(tempDir('thetaevolve-session-meta-'), 'run.sqlite');
    let db = await ProgramDatabase.open(file, { config, meta: { runId: 'r', createdAt: 1 }, sessionMeta: { isolation: 'bwrap' } });
    await db.addInitial(programWith(0.5, 100, null, 0, 'root'));
    await db.close();
    db = await ProgramDatabase.open(file, { config, meta: { runId: 'r', createdAt: 2 }, sessionMeta: { isolation: 'weak' } });
    assert.deepEqual(db.meta(), { runId: 'r', createdAt: 1, isolation: 'weak' });
    await commit(db, [programWith(0.3, 100, null, 1, 'x')]);
    await db.close();
    // Written with the session's first commit: a reader sees it.
    const read = await ProgramDatabase.openReadOnly(file);
    assert.deepEqual(read.meta(), { runId: 'r', createdAt: 1, isolation: 'weak' });
    await read.close();
  });
});

describe('program database: lineage depth of a best', () => {
  after(async () => {
    for (const db of open.splice(0)) await db.close().catch(() => undefined);
  });

  it('is what the best had when it was added, also after its ancestors were evicted and after a reopen', async () => {
    const config = testConfig({ populationSize: 4, archiveSize: 1, numIslands: 1 });
    const own = tempDir('thetaevolve-lineage-');
    const file = path.join(own, 'lineage.sqlite');
    const db = await ProgramDatabase.open(file, { config });
    open.push(db);
    const root = await db.addInitial(programWith(0.5, 100, null, 0, 'root'));
    const a = (await commit(db, [programWith(0.2, 100, root.id, 1, 'a')])).inserted[0];
    assert.ok(a);
    const b = (await commit(db, [programWith(0.3, 100, a.id, 2, 'b')])).inserted[0];
    assert.ok(b);
    const best = (await commit(db, [programWith(0.9, 100, b.id, 3, 'best')])).inserted[0];
    assert.ok(best);
    assert.equal(db.lineageDepth(best.id), 3, 'b, a, root');
    assert.equal(db.ancestors(best.id).length, 3);
    // Better programs than a and b push them out of the population; as ancestors of the best, they keep a lineage row.
    await commit(
      db,
      [0.6, 0.61, 0.62, 0.63].map((score, i) => programWith(score, 100, root.id, 4, `later${i}`)),
    );
    assert.ok(!db.isLive(a.id) && !db.isLive(b.id));
    assert.deepEqual(
      db.ancestors(best.id).map((p) => p.id),
      [b.id, a.id, root.id],
      'the evicted ancestors are still walked',
    );
    assert.equal(db.get(a.id)?.code, a.code);
    assert.equal(db.get(a.id)?.response, null, 'a lineage row keeps no response');
    assert.equal(db.lineageDepth(best.id), 3, 'the depth it had stays');
    const readOnly = await ProgramDatabase.openReadOnly(file);
    open.push(readOnly);
    assert.equal(readOnly.lineageDepth(best.id), 3, 'read back from the file');
  });
});

describe('program database: evicted ancestors (lineage rows)', () => {
  after(async () => {
    for (const db of open.splice(0)) await db.close().catch(() => undefined);
  });

  async function lineageRowIds(file: string): Promise<string[]> {
    const SQL = await loadSqlJs();
    const raw = new SQL.Database(fs.readFileSync(file));
    try {
      return (raw.exec('SELECT id FROM lineage ORDER BY seq')[0]?.values ?? []).map(([id]) => String(id));
    } finally {
      raw.close();
    }
  }

  it('keeps an evicted program while a kept program descends from it, from the first write of a version 2 file on', async () => {
    const config = testConfig({ populationSize: 3, archiveSize: 1, numIslands: 1 });
    const own = tempDir('thetaevolve-ancestors-');
    const file = path.join(own, 'run.sqlite');
    let db = await ProgramDatabase.open(file, { config });
    open.push(db);
    const root = await db.addInitial(programWith(0.5, 100, null, 0, 'root'));
    const x = (await commit(db, [programWith(0.2, 100, root.id, 1, 'x')])).inserted[0];
    assert.ok(x);
    await db.close();
    // Make it a version 2 file (no lineage table): it opens, and keeps ancestors from then on.
    const SQL = await loadSqlJs();
    const raw = new SQL.Database(fs.readFileSync(file));
    raw.exec("DROP TABLE lineage; UPDATE meta SET value = '2' WHERE key = 'schema_version';");
    fs.writeFileSync(file, raw.export());
    raw.close();

    db = await ProgramDatabase.open(file, { config });
    open.push(db);
    const y = (await commit(db, [programWith(0.3, 100, x.id, 2, 'y')])).inserted[0];
    assert.ok(y);
    // A fourth program evicts x, the lowest; y descends from it, so its row moves to the lineage table.
    await commit(db, [programWith(0.4, 100, root.id, 3, 'z')]);
    assert.equal(db.isLive(x.id), false);
    assert.deepEqual(await lineageRowIds(file), [x.id]);
    const lineage = lineageOf(db, db.get(y.id) as ProgramRecord);
    assert.deepEqual(
      lineage.programs.map((p) => [p.id, p.step, p.origin]),
      [
        [y.id, 2, 'model'],
        [x.id, 1, 'model'],
        [root.id, 0, 'initial'],
      ],
    );
    assert.equal(lineage.complete, true);
    assert.equal(blameOf(db, db.get(y.id) as ProgramRecord).complete, true);
    await db.close();

    // Read back: the same lineage; then evicting y, x's last descendant, lets x's row go too.
    db = await ProgramDatabase.open(file, { config });
    open.push(db);
    assert.equal(lineageOf(db, db.get(y.id) as ProgramRecord).complete, true);
    await commit(db, [programWith(0.45, 100, root.id, 4, 'w')]);
    assert.equal(db.isLive(y.id), false);
    assert.deepEqual(await lineageRowIds(file), [], 'no kept program descends from x or y');
    assert.equal(db.get(x.id), null);
    const back = new SQL.Database(fs.readFileSync(file));
    assert.equal(back.exec("SELECT value FROM meta WHERE key = 'schema_version'")[0]?.values[0]?.[0], '3');
    back.close();
  });

  it('gives every live program of a long run with a tiny population its whole lineage, with a bounded lineage table', async () => {
    const config = testConfig({ populationSize: 6, archiveSize: 2, numIslands: 2 });
    const own = tempDir('thetaevolve-ancestors-');
    const file = path.join(own, 'run.sqlite');
    const db = await ProgramDatabase.open(file, { config });
    open.push(db);
    await db.addInitial(programWith(0.01, 100, null, 0, 'root'));
    await evolve(db, 40, Rng.fromSeed(11), 2, 3);
    const live = db.topPrograms(1000);
    assert.ok(live.length > 0);
    for (const program of live) assert.equal(lineageOf(db, program).complete, true, `lineage of ${program.id}`);
    // Only ancestors stay: fewer lineage rows than programs ever evicted (40 steps x 6 children into 6 places).
    const rows = await lineageRowIds(file);
    assert.ok(rows.length > 0 && rows.length < 40 * 6 - 6, `${rows.length} lineage rows`);
  });
});
