import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import { parseArgs } from '../../src/cli/args';
import { DB_SPEC } from '../../src/cli/commands';
import { dbCommand } from '../../src/cli/db';
import { type CliIO, InputError } from '../../src/cli/io';
import { ProgramDatabase } from '../../src/engine/database/programDatabase';
import { tempDir } from '../support/tempDirs';
import { programWith, testConfig } from './fixtures/database/programs';

function captureIO(cwd: string): { io: CliIO; out: () => string } {
  let stdout = '';
  const io: CliIO = {
    stdout: (text) => void (stdout += text),
    stderr: () => undefined,
    stderrIsTTY: false,
    signal: new AbortController().signal,
    cwd,
    env: {},
  };
  return { io, out: () => stdout };
}

const SummarySchema = z.object({
  programs: z.number(),
  steps: z.number(),
  best: z.object({ score: z.number(), id: z.string() }).nullable(),
  islands: z.array(z.number()),
  archive: z.number(),
});

describe('thetaevolve db', () => {
  let dir: string;
  beforeEach(async () => {
    dir = tempDir('thetaevolve-dbcli-');
    const db = await ProgramDatabase.open(path.join(dir, 'run.sqlite'), { config: testConfig({ numIslands: 2 }) });
    const root = await db.addInitial(programWith(0.5, 100, null, 0, 'root'));
    await db.commitStep({
      step: 1,
      children: [programWith(0.75, 120, root.id, 1, 'better'), programWith(-0.2, 90, root.id, 1, 'crashed')],
      stats: {},
      engineState: null,
    });
    await db.close();
  });

  it('prints programs, steps, best, islands and archive as JSON', async () => {
    const { io, out } = captureIO(dir);
    const code = await dbCommand(parseArgs(DB_SPEC, ['run.sqlite', '--json']), io);
    assert.equal(code, 0);
    const summary = SummarySchema.parse(JSON.parse(out()));
    assert.deepEqual(summary, { programs: 4, steps: 1, best: { score: 0.75, id: '2' }, islands: [3, 1], archive: 4 }); // the archive: root, its seed copy on island 1 (its island's first member), both children
  });

  it('prints a human-readable summary without --json', async () => {
    const { io, out } = captureIO(dir);
    assert.equal(await dbCommand(parseArgs(DB_SPEC, ['run.sqlite']), io), 0);
    assert.match(out(), /programs\s+4 of 70/);
    assert.match(out(), /best\s+0\.75 \(program 2\)/);
    assert.match(out(), /islands\s+3 \/ 1/);
  });

  it('reports a missing or foreign file as bad input, leaving it untouched', async () => {
    const { io } = captureIO(dir);
    await assert.rejects(
      dbCommand(parseArgs(DB_SPEC, ['missing.sqlite']), io),
      (err: unknown) => err instanceof InputError && /no such run database/.test(err.message),
    );
    fs.writeFileSync(path.join(dir, 'notes.sqlite'), 'not a database');
    await assert.rejects(
      dbCommand(parseArgs(DB_SPEC, ['notes.sqlite']), io),
      (err: unknown) => err instanceof InputError && /not an SQLite file/.test(err.message) && !err.message.includes('\n'),
    );
    assert.equal(fs.readFileSync(path.join(dir, 'notes.sqlite'), 'utf8'), 'not a database');
  });
});
