// `thetaevolve steer` on a stopped run, and what `db` shows of it (origins,
// guidance, lineage, blame): a real run of the circle-packing task with the
// offline sampler, real sandboxed evaluations, the real database file.
import * as assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import { ProgramDatabase } from '../../src/engine/database/programDatabase';
import { programLines } from '../../src/engine/database/lineage';
import { loadSqlJs } from '../../src/engine/database/sqlite';
import { runCli } from '../support/cli';
import { tempDir } from '../support/tempDirs';

const TASK = path.resolve(__dirname, '../../tasks/circle-packing');
const INITIAL = fs.readFileSync(path.join(TASK, 'initial.py'), 'utf8');
/** The researcher's program: one line of the initial program changed, one added. */
const MINE = INITIAL.replace('    centers = [(0.5, 0.5)]', '    centers = [(0.5, 0.5)]  # researcher: hub kept central').replace(
  '    # Keep every centre a little inside the square.',
  '    centers = list(centers)  # researcher',
);

const AddResultSchema = z.object({
  kind: z.literal('add'),
  id: z.string(),
  outcome: z.string(),
  score: z.number(),
  island: z.number(),
  step: z.number(),
});
const LineageSchema = z.object({
  programs: z.array(z.object({ id: z.string(), parentId: z.string().nullable(), step: z.number(), score: z.number(), origin: z.string() })),
  complete: z.boolean(),
});
const BlameSchema = z.object({
  id: z.string(),
  complete: z.boolean(),
  lines: z.array(z.object({ line: z.number(), text: z.string(), id: z.string(), step: z.number(), origin: z.string() })),
});

/** Every row of the programs table, read with plain SQLite. */
async function programRows(file: string): Promise<{ id: string; parentId: string | null; step: number; origin: string }[]> {
  const SQL = await loadSqlJs();
  const raw = new SQL.Database(fs.readFileSync(file));
  try {
    const rows = raw.exec('SELECT id, parent_id, step, origin FROM programs ORDER BY seq')[0]?.values ?? [];
    return rows.map(([id, parentId, step, origin]) => ({
      id: String(id),
      parentId: parentId === null ? null : String(parentId),
      step: Number(step),
      origin: String(origin),
    }));
  } finally {
    raw.close();
  }
}

function sha(file: string): string {
  return createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

describe('thetaevolve steer (stopped run) and db lineage/blame', function () {
  this.timeout(120_000);
  let dir: string;
  let db: string;

  const run = async (steps: number): Promise<void> => {
    const result = await runCli(
      ['run', TASK, '--sampler', 'mutate', '--steps', String(steps), '--batch', '4', '--samples', '2', '--db', db, '--json'],
      dir,
    );
    assert.equal(result.code, 0, result.stderr);
  };
  const steer = async (...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> => runCli(['steer', db, ...args], dir);
  const withDb = async <T>(read: (file: ProgramDatabase) => T): Promise<T> => {
    const file = await ProgramDatabase.openReadOnly(db);
    try {
      return read(file);
    } finally {
      await file.close();
    }
  };

  beforeEach(async () => {
    dir = tempDir('thetaevolve-steer-');
    db = path.join(dir, 'run.sqlite');
    fs.writeFileSync(path.join(dir, 'mine.py'), MINE);
    await run(2);
  });

  it("adds a researcher's program now: evaluated, placed, recorded as theirs, and db counts it", async () => {
    const added = await steer('--add', 'mine.py', '--island', '1', '--note', 'hub kept central', '--json');
    assert.equal(added.code, 0, added.stderr);
    const result = AddResultSchema.parse(JSON.parse(added.stdout));
    assert.equal(result.outcome, 'valid');
    assert.ok(result.score > 0);
    assert.equal(result.island, 1);
    assert.equal(result.step, 3); // the step it enters: the next one
    const record = await withDb((file) => file.get(result.id));
    assert.ok(record);
    assert.equal(record.origin, 'researcher');
    assert.equal(record.note, 'hub kept central');
    assert.equal(record.code, MINE);
    assert.equal(record.island, 1);
    const summary = z
      .object({ programs: z.number(), origins: z.record(z.string(), z.number()) })
      .parse(JSON.parse((await runCli(['db', db, '--json'], dir)).stdout));
    assert.equal(summary.origins.researcher, 1);
    assert.equal(summary.origins.initial, 1);
    assert.ok((summary.origins.model ?? 0) > 0);
    assert.equal(
      Object.values(summary.origins).reduce((a, b) => a + b, 0),
      summary.programs,
    );
    const lineage = z
      .object({ programs: z.array(z.object({ id: z.string(), origin: z.string(), note: z.string().nullable() })) })
      .parse(JSON.parse((await runCli(['db', db, '--lineage', result.id, '--json'], dir)).stdout));
    assert.deepEqual(lineage.programs, [{ id: result.id, origin: 'researcher', note: 'hub kept central' }]);
    // It may be a parent like any other: the run goes on with it.
    await run(1);
    assert.equal((await withDb((file) => file.get(result.id)))?.origin, 'researcher');
  });

  it('records guidance versions with their steps, and prompts carry it from that step on', async () => {
    fs.writeFileSync(path.join(dir, 'guidance.txt'), 'Try a hexagonal layout.\n');
    assert.equal((await steer('--guidance', 'guidance.txt')).code, 0);
    await run(1);
    assert.equal((await steer('--clear-guidance', '--json')).code, 0);
    const summary = z
      .object({ guidance: z.array(z.object({ step: z.number(), text: z.string().nullable() })) })
      .parse(JSON.parse((await runCli(['db', db, '--json'], dir)).stdout));
    assert.deepEqual(summary.guidance, [
      { step: 3, text: 'Try a hexagonal layout.' },
      { step: 4, text: null },
    ]);
    await withDb((file) => {
      assert.equal(file.guidanceAt(2), null);
      assert.equal(file.guidanceAt(3), 'Try a hexagonal layout.');
      assert.equal(file.guidanceAt(4), null);
    });
  });

  it('a banned program (with its descendants) is never a parent nor an inspiration again; unban lifts it', async () => {
    const bestId = await withDb((file) => file.best()?.id as string);
    const banned = await steer('--ban', bestId, '--descendants', '--json');
    assert.equal(banned.code, 0, banned.stderr);
    const ids = z.object({ ids: z.array(z.string()), step: z.number() }).parse(JSON.parse(banned.stdout));
    assert.ok(ids.ids.includes(bestId));
    await withDb((file) => {
      for (const id of ids.ids) assert.ok(file.isBanned(id), id);
      const parents = file.sampleParents(200).map((p) => p.id);
      assert.ok(!parents.some((id) => ids.ids.includes(id)), `banned drawn as a parent: ${parents.join(',')}`);
      assert.ok(!file.topPrograms(50).some((p) => ids.ids.includes(p.id)));
    });
    await run(2);
    const children = (await programRows(db)).filter((p) => p.step >= ids.step && p.origin === 'model').map((p) => p.parentId);
    assert.ok(children.length > 0);
    for (const parent of children) assert.ok(!ids.ids.includes(parent as string), `a child of banned ${parent}`);
    const unbanned = await steer('--unban', bestId, '--json');
    assert.equal(unbanned.code, 0, unbanned.stderr);
    await withDb((file) => assert.equal(file.isBanned(bestId), false));
  });

  it('a pin makes the program the parent of its share of the next steps, then lapses', async () => {
    const pinned = await steer('--pin', '0', '--share', '1', '--steps', '1', '--json');
    assert.equal(pinned.code, 0, pinned.stderr);
    await withDb((file) => assert.deepEqual(new Set(file.sampleParents(4).map((p) => p.id)), new Set(['0'])));
    await run(1);
    const step3 = (await programRows(db)).filter((p) => p.step === 3 && p.origin === 'model');
    assert.ok(step3.length > 0);
    for (const child of step3) assert.equal(child.parentId, '0');
    await withDb((file) => assert.deepEqual(file.pins(), []));
    const half = await steer('--pin', '0', '--share', '0.5', '--steps', '3', '--json');
    assert.equal(half.code, 0);
    await withDb((file) => assert.equal(file.sampleParents(4).filter((p) => p.id === '0').length >= 2, true));
  });

  it('lineage and blame follow the programs table back to the starting program', async () => {
    await run(3);
    const bestId = await withDb((file) => file.best()?.id as string);
    const lineage = LineageSchema.parse(JSON.parse((await runCli(['db', db, '--lineage', 'best', '--json'], dir)).stdout));
    assert.equal(lineage.programs[0]?.id, bestId);
    assert.equal(lineage.complete, true);
    await withDb((file) => {
      for (const [i, entry] of lineage.programs.entries()) {
        const record = file.get(entry.id);
        assert.ok(record);
        assert.equal(record.step, entry.step);
        assert.equal(record.score, entry.score);
        assert.equal(record.origin, entry.origin);
        assert.equal(record.parentId, lineage.programs[i + 1]?.id ?? null);
      }
    });
    assert.equal(lineage.programs[lineage.programs.length - 1]?.origin, 'initial');

    // A researcher's child of the best: its changed lines are blamed on it, the rest on their lineage.
    const bestCode = await withDb((file) => file.best()?.code as string);
    const mine = bestCode.replace('    # Keep every centre a little inside the square.', '    centers = list(centers)  # researcher');
    assert.notEqual(mine, bestCode);
    fs.writeFileSync(path.join(dir, 'child.py'), mine);
    const added = AddResultSchema.parse(JSON.parse((await steer('--add', 'child.py', '--parent', bestId, '--json')).stdout));
    const blame = BlameSchema.parse(JSON.parse((await runCli(['db', db, '--blame', added.id, '--json'], dir)).stdout));
    assert.deepEqual(
      blame.lines.map((l) => l.text),
      programLines(mine),
    );
    const changed = blame.lines.filter((l) => l.id === added.id);
    assert.deepEqual(
      changed.map((l) => l.text),
      ['    centers = list(centers)  # researcher'],
    );
    assert.equal(changed[0]?.origin, 'researcher');
    // Every other line comes from a program of the lineage that has that line.
    const chain = LineageSchema.parse(JSON.parse((await runCli(['db', db, '--lineage', added.id, '--json'], dir)).stdout));
    assert.equal(chain.programs[1]?.id, bestId);
    await withDb((file) => {
      for (const line of blame.lines) {
        assert.ok(chain.programs.some((p) => p.id === line.id));
        assert.ok(programLines(file.get(line.id)?.code ?? '').includes(line.text));
      }
    });
    // Human-readable output: one line per program line.
    const text = await runCli(['db', db, '--blame', added.id], dir);
    assert.equal(text.stdout.trimEnd().split('\n').length, blame.lines.length);
  });

  it('lineage and blame reach the starting program through ancestors the population evicted', async () => {
    const small = path.join(dir, 'small.sqlite');
    const ran = await runCli(
      ['run', TASK, '--sampler', 'mutate', '--steps', '12', '--batch', '4', '--samples', '2', '--db', small, '--seed', '3'].concat([
        '--set',
        'database.populationSize=3',
        '--set',
        'database.numIslands=1',
        '--set',
        'database.archiveSize=2',
      ]),
      dir,
    );
    assert.equal(ran.code, 0, ran.stderr);
    const rows = await programRows(small);
    const stored = new Set(rows.map((row) => row.id));
    const live = await (async () => {
      const file = await ProgramDatabase.openReadOnly(small);
      try {
        return rows.filter((row) => file.isLive(row.id)).map((row) => row.id);
      } finally {
        await file.close();
      }
    })();
    let throughEvicted = 0;
    for (const id of live) {
      const lineage = LineageSchema.parse(JSON.parse((await runCli(['db', small, '--lineage', id, '--json'], dir)).stdout));
      assert.equal(lineage.complete, true, `lineage of ${id}`);
      assert.equal(lineage.programs[lineage.programs.length - 1]?.origin, 'initial');
      for (const [i, entry] of lineage.programs.entries()) assert.equal(entry.parentId, lineage.programs[i + 1]?.id ?? null);
      if (lineage.programs.some((entry) => !stored.has(entry.id))) throughEvicted++;
      const blame = BlameSchema.parse(JSON.parse((await runCli(['db', small, '--blame', id, '--json'], dir)).stdout));
      assert.equal(blame.complete, true);
    }
    assert.ok(throughEvicted > 0, 'some live program descends from an evicted ancestor');
    const text = await runCli(['db', small, '--lineage', 'best'], dir);
    assert.doesNotMatch(text.stdout, /evicted/);
  });

  it('refuses bad input with one line, exit 1, and the database unchanged', async () => {
    fs.writeFileSync(path.join(dir, 'plain.py'), 'print(1)\n');
    fs.writeFileSync(path.join(dir, 'empty.txt'), '  \n');
    fs.writeFileSync(path.join(dir, 'initial.py'), INITIAL);
    const before = sha(db);
    const cases: [string[], RegExp][] = [
      [['--add', 'plain.py'], /EVOLVE-BLOCK/],
      [['--add', 'missing.py'], /cannot read --add/],
      [['--add', 'initial.py'], /already has this program/],
      [['--add', 'mine.py', '--parent', 'zz'], /no program zz/],
      [['--add', 'mine.py', '--island', '99'], /island 99/],
      [['--ban', 'zz'], /no program zz/],
      [['--unban', '0'], /not banned/],
      [['--pin', 'zz'], /no program zz/],
      [['--guidance', 'empty.txt'], /is empty/],
    ];
    for (const [args, message] of cases) {
      const result = await steer(...args);
      assert.equal(result.code, 1, `${args.join(' ')}: ${result.stderr}`);
      assert.match(result.stderr, message);
      assert.equal(result.stderr.trimEnd().split('\n').length, 1, result.stderr);
    }
    const usage: [string[], RegExp][] = [
      [[], /needs one of --add/],
      [['--ban', '0', '--unban', '0'], /one action at a time/],
      [['--guidance', 'empty.txt', '--descendants'], /--descendants goes with --ban/],
      [['--pin', '0', '--share', '1.5'], /--share needs a number in \(0, 1\]/],
    ];
    for (const [args, message] of usage) {
      const result = await steer(...args);
      assert.equal(result.code, 2, `${args.join(' ')}: ${result.stderr}`);
      assert.match(result.stderr, message);
    }
    const lineageOfUnknown = await runCli(['db', db, '--lineage', 'zz'], dir);
    assert.equal(lineageOfUnknown.code, 1);
    assert.match(lineageOfUnknown.stderr, /no program zz/);
    assert.equal((await runCli(['db', db, '--lineage', 'best', '--blame', 'best'], dir)).code, 2);
    assert.equal(sha(db), before);
    assert.equal(fs.existsSync(`${db}.lock`), false);
    const missing = await runCli(['steer', path.join(dir, 'nothing.sqlite'), '--clear-guidance'], dir);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /no such run database/);
    assert.equal(fs.existsSync(path.join(dir, 'nothing.sqlite')), false);
  });
});
