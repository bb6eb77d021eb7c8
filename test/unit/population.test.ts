// The population rules on their own: no SQLite, no files. Each test feeds
// programs to a Population and checks what it decided (the change set a
// store would write) and the state it ends in.
import * as assert from 'node:assert/strict';
import { Rng } from '../../src/engine/common/rng';
import { type ChangeSet, initialState, Population, type RowChange } from '../../src/engine/database/population';
import type { DatabaseConfig, NewProgram } from '../../src/engine/database/records';
import { programWith, syntheticProgram, testConfig } from './fixtures/database/programs';

const FIXED_CLOCK = () => 1_700_000_000_000;

function population(overrides: Partial<DatabaseConfig> = {}): Population {
  const config = testConfig(overrides);
  return new Population(config, initialState(config), FIXED_CLOCK);
}

/** Decide a step, take its change set and settle, as the database does once its store wrote the change set. */
function step(pop: Population, children: NewProgram[]): ReturnType<Population['addStep']> & { changes: ChangeSet } {
  const result = pop.addStep(pop.state.lastStep + 1, children);
  const changes = pop.changes();
  pop.settle();
  return { ...result, changes };
}

function seed(pop: Population, program: NewProgram): string {
  const record = pop.addInitial(program);
  pop.settle();
  return record.id;
}

function kinds(changes: ChangeSet): string[] {
  return changes.rows.map((row: RowChange) => `${row.kind}:${'node' in row ? row.node.id : row.seq.toString(36)}`);
}

describe('population rules (no SQLite)', () => {
  it("seeds every island with a copy of the initial program, each its island's first archive member", () => {
    const pop = population({ numIslands: 3 });
    const record = pop.addInitial(programWith(0.1, 100, null, 0, 'initial'));
    const changes = pop.changes();
    assert.equal(record.id, '0');
    assert.equal(record.createdAt, FIXED_CLOCK());
    assert.deepEqual(kinds(changes), ['insert:0', 'insert:1', 'insert:2']);
    assert.deepEqual(
      changes.rows.map((row) => row.kind === 'insert' && [row.node.island, row.node.migrantOf, row.node.inArchive]),
      [
        [0, null, true],
        [1, '0', true],
        [2, '0', true],
      ],
    );
    assert.deepEqual(changes.newHashes.length, 1, "the copies share the initial program's code");
    assert.equal(changes.state.lastStep, 0);
    pop.settle();
    assert.deepEqual(pop.islandSizes, [1, 1, 1]);
    assert.equal(pop.best?.id, '0');
    assert.throws(() => pop.checkInitial(programWith(0.1, 100, null, 0, 'again')), /already holds step 0/);
  });

  it('evicts the lowest scores, never the global best nor the newest; a child evicted in its own step never gets a row', () => {
    const pop = population({ numIslands: 1, populationSize: 3, archiveSize: 100 });
    const root = seed(pop, programWith(0.5, 100, null, 0, 'root'));
    step(pop, [programWith(0.4, 100, root, 1, 'a'), programWith(0.3, 100, root, 1, 'b')]);
    assert.equal(pop.size, 3);
    // Full: 0.9 (best) evicts the 0.3; 0.1 is the newest when it comes in and evicts the 0.4, then 0.2 evicts the 0.1.
    const { inserted, changes, newBest } = step(pop, [
      programWith(0.9, 100, root, 2, 'best'),
      programWith(0.1, 100, root, 2, 'low'),
      programWith(0.2, 100, root, 2, 'lowish'),
    ]);
    assert.deepEqual(
      inserted.map((r) => r.id),
      ['3', '4', '5'],
    );
    assert.equal(newBest?.id, '3');
    assert.deepEqual(kinds(changes), ['delete:1', 'delete:2', 'insert:3', 'insert:5']);
    assert.equal(pop.size, 3);
    assert.deepEqual(
      pop.ranked().map((n) => n.score),
      [0.9, 0.5, 0.2],
    );
  });

  it("keeps an evicted past best's row and places its children on its island", () => {
    const pop = population({ numIslands: 2, populationSize: 3, archiveSize: 100, migrationInterval: 1000 });
    const root = seed(pop, programWith(0.1, 100, null, 0, 'root'));
    // The seed copy on island 1 is the parent: the child is a best on island 1.
    const {
      inserted: [best],
    } = step(pop, [programWith(0.2, 100, '1', 1, 'first-best')]);
    assert.equal(best?.island, 1);
    const { changes } = step(pop, [
      programWith(0.5, 100, root, 2, 'x'),
      programWith(0.6, 100, root, 2, 'y'),
      programWith(0.7, 100, root, 2, 'z'),
    ]);
    // The two 0.1 programs go first, then the former best '2' (0.2): it keeps its row, marked dead.
    const former = changes.rows.find((row) => 'node' in row && row.node.id === '2');
    assert.ok(former && former.kind === 'update' && !former.node.alive && former.node.improvement);
    const {
      inserted: [child],
    } = step(pop, [programWith(0.05, 100, '2', 3, 'child-of-former-best')]);
    assert.equal(child?.island, 1, "a child of an evicted past best joins that best's island");
    const sizes = [...pop.islandSizes];
    const {
      inserted: [orphan],
    } = step(pop, [programWith(0.05, 100, 'zzz', 4, 'unknown-parent')]);
    assert.equal(orphan?.island, sizes.indexOf(Math.min(...sizes)), 'an unknown parent: the smallest island');
  });

  it('MAP-Elites: takes an empty cell, and replaces the occupant only with a higher score', () => {
    // archive 25 -> 10 bins per feature; ranges after the first two programs: score [0, 1], length [100, 1000].
    const pop = population({ numIslands: 1, archiveSize: 25 });
    const root = seed(pop, programWith(0, 100, null, 0, 'low'));
    step(pop, [programWith(1, 1000, root, 1, 'high')]);
    const cellOf = (id: string): number | undefined => [...(pop.grids[0]?.entries() ?? [])].find(([, n]) => n.id === id)?.[0];
    const {
      inserted: [mid],
    } = step(pop, [programWith(0.5, 550, root, 2, 'mid')]);
    assert.equal(cellOf(mid!.id), 5 * 10 + 5);
    const {
      inserted: [higher],
      changes,
    } = step(pop, [programWith(0.51, 560, root, 3, 'higher')]);
    assert.equal(cellOf(higher!.id), 55);
    assert.equal(cellOf(mid!.id), undefined);
    const displaced = changes.rows.find((row) => row.kind === 'update' && row.node.id === mid!.id);
    assert.ok(displaced && displaced.kind === 'update' && displaced.node.eliteCell === null, "the displaced occupant's row loses its cell");
    const {
      inserted: [lower],
    } = step(pop, [programWith(0.505, 555, root, 4, 'lower')]);
    assert.equal(cellOf(lower!.id), undefined, 'a lower score does not replace the occupant');
    assert.equal(cellOf(higher!.id), 55);
    const {
      inserted: [elsewhere],
    } = step(pop, [programWith(0.05, 950, root, 5, 'empty-cell')]);
    assert.equal(cellOf(elsewhere!.id), 0 * 10 + 9, 'a low score still takes an empty cell');
  });

  it('archive: fills up, then a better program replaces the worst member and a worse one stays out', () => {
    const pop = population({ numIslands: 1, archiveSize: 3, populationSize: 100 });
    const root = seed(pop, programWith(0.1, 100, null, 0, 'a'));
    step(pop, [programWith(0.3, 100, root, 1, 'b'), programWith(0.2, 100, root, 1, 'c')]);
    assert.equal(pop.archiveCount, 3);
    const { changes: worse } = step(pop, [programWith(0.05, 100, root, 2, 'd')]);
    assert.deepEqual(
      worse.rows.map((row) => 'node' in row && row.node.inArchive),
      [false],
    );
    const { changes: better } = step(pop, [programWith(0.25, 100, root, 3, 'e')]);
    assert.deepEqual(kinds(better), ['update:0', 'insert:4']);
    assert.deepEqual(
      better.rows.map((row) => 'node' in row && row.node.inArchive),
      [false, true],
    );
    assert.deepEqual(pop.archive.map((n) => n.score).sort(), [0.2, 0.25, 0.3]);
  });

  it("migration: copies each island's best to both ring neighbours, as stored rows from earlier steps and as programs from this one", () => {
    const pop = population({
      numIslands: 3,
      migrationInterval: 2,
      migrationRate: 0.5,
      populationSize: 1000,
      explorationRatio: 1,
      exploitationRatio: 0,
    });
    seed(pop, programWith(0.1, 100, null, 0, 'initial'));
    const first = pop.sampleParents(3);
    step(
      pop,
      first.map((p, i) => programWith(1 + i, 3000, p.id, 1, `island-${p.island}`)),
    );
    assert.equal(pop.state.migrations, 0);
    const second = pop.sampleParents(3);
    const { changes } = step(
      pop,
      second.map((p, i) => programWith(5 + i, 100, p.id, 2, `step2-${p.island}`)),
    );
    assert.equal(pop.state.migrations, 1);
    assert.equal(pop.state.lastMigrationStep, 2);
    const copies = changes.rows.filter((row) => row.kind === 'insert' && row.node.migrantOf !== null);
    assert.equal(copies.length, 6, "each island's top 1 (of 3) to both neighbours");
    for (const copy of copies) {
      assert.ok(copy.kind === 'insert');
      // This step's children are the islands' bests: their copies carry the program itself.
      assert.equal(copy.content.kind, 'program');
      assert.equal(copy.node.parentId, copy.node.migrantOf);
      assert.ok(copy.content.kind === 'program' && copy.content.program.completionTokens === 0);
      assert.notEqual(copy.node.inArchive, true, 'copies never join the archive');
    }
    assert.deepEqual(pop.islandSizes, [5, 5, 5]);
    // Next migration: the islands' bests are from step 2 now, stored: copies refer to their rows (unless the neighbour holds the code).
    const third = pop.sampleParents(3);
    step(
      pop,
      third.map((p, i) => programWith(0.01 + i / 100, 100, p.id, 3, `filler-${i}`)),
    );
    const { changes: again, inserted } = step(
      pop,
      pop.sampleParents(3).map((p, i) => programWith(0.02 + i / 100, 100, p.id, 4, `filler2-${i}`)),
    );
    assert.equal(pop.state.migrations, 2);
    const thisStep = new Set(inserted.map((r) => r.id));
    const fromRows = again.rows.filter((row) => row.kind === 'insert' && row.node.migrantOf !== null && !thisStep.has(row.node.migrantOf));
    assert.ok(fromRows.length > 0);
    for (const copy of fromRows)
      assert.ok(
        copy.kind === 'insert' && copy.content.kind === 'storedCopy' && copy.content.sourceSeq.toString(36) === copy.node.migrantOf,
      );
    for (const island of [0, 1, 2]) {
      const hashes = pop.islands[island]!.map((n) => n.codeHash);
      assert.equal(new Set(hashes).size, hashes.length, 'a neighbour that already holds the code gets no copy');
    }
  });

  it('samples parents deterministically by seed, the same again before the next step, and continues where the last step stopped', () => {
    const grow = (seedValue: number): Population => {
      const pop = population({ seed: seedValue });
      const rng = Rng.fromSeed(1);
      const root = seed(pop, syntheticProgram(rng, 0, null));
      for (let s = 1; s <= 5; s++) {
        const parents = s === 1 ? [{ id: root }] : pop.sampleParents(4);
        step(
          pop,
          parents.flatMap((p) => [syntheticProgram(rng, s, p.id), syntheticProgram(rng, s, p.id)]),
        );
      }
      return pop;
    };
    const a = grow(7);
    const b = grow(7);
    const ids = (pop: Population): string[] => pop.sampleParents(12).map((n) => n.id);
    assert.deepEqual(ids(a), ids(b));
    assert.deepEqual(ids(a), ids(a), 'no step in between: the same parents');
    assert.deepEqual(a.state.rng, b.state.rng);
    assert.notDeepEqual(ids(grow(8)), ids(a), 'another seed, other parents');
    const turnBefore = a.state.turn;
    a.sampleParents(3);
    step(a, []);
    assert.equal(a.state.turn, (turnBefore + 3) % a.config.numIslands, 'the step adopts where the draw left the turn');
  });

  it('rebuilds from restored rows the same decisions as the population that wrote them', () => {
    const config = testConfig({ populationSize: 12, archiveSize: 5, numIslands: 2, migrationInterval: 2, migrationRate: 0.5 });
    const live = new Population(config, initialState(config), FIXED_CLOCK);
    const rng = Rng.fromSeed(3);
    seed(live, syntheticProgram(rng, 0, null));
    for (let s = 1; s <= 6; s++)
      step(
        live,
        live.sampleParents(3).flatMap((p) => [syntheticProgram(rng, s, p.id), syntheticProgram(rng, s, p.id)]),
      );
    // What a store would hold: the live nodes in sequence order and the state (as JSON).
    const restored = new Population(config, JSON.parse(JSON.stringify(live.state)), FIXED_CLOCK);
    const liveNodes = live.islands.flat().sort((x, y) => x.seq - y.seq);
    for (const node of liveNodes) restored.restoreNode(node);
    assert.equal(restored.finishRestore(), null);
    assert.equal(restored.best?.id, live.best?.id);
    assert.deepEqual(restored.islandSizes, live.islandSizes);
    assert.deepEqual(
      restored.sampleParents(8).map((n) => n.id),
      live.sampleParents(8).map((n) => n.id),
    );
    const broken = new Population(config, { ...initialState(config), bestId: 'zz' }, FIXED_CLOCK);
    assert.equal(broken.finishRestore(), 'the best program zz is missing');
  });

  it('refuses what never enters before anything changes', () => {
    const pop = population();
    assert.throws(() => pop.checkStep(1, []), /add the initial program first/);
    seed(pop, programWith(0.1, 100, null, 0, 'root'));
    assert.throws(() => pop.checkStep(2, []), /expected step 1 after step 0, got 2/);
    assert.throws(() => pop.checkStep(1, [{ ...programWith(0.1, 100, '0', 1, 'x'), outcome: 'duplicate' }]), /never enters/);
    assert.throws(() => pop.checkStep(1, [programWith(Number.NaN, 100, '0', 1, 'nan')]), /not finite/);
    assert.equal(pop.state.lastStep, 0);
    assert.equal(pop.size, 1 + 4);
  });
});
