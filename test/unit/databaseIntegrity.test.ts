// A damaged run database is refused before a resume rewrites it: damage a
// table the open does not read (SQLite's integrity check finds it), and the
// file is left exactly as it was.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseFileError, ProgramDatabase } from '../../src/engine/database/programDatabase';
import { loadSqlJs } from '../../src/engine/database/sqlite';
import { tempDir } from '../support/tempDirs';
import { programWith, testConfig } from './fixtures/database/programs';

describe('run database integrity', () => {
  it('refuses to resume a database whose steps table is damaged, naming the file and what SQLite found, and leaves it untouched', async () => {
    const file = join(tempDir('thetaevolve-integrity-'), 'run.sqlite');
    const db = await ProgramDatabase.open(file, { config: testConfig({ numIslands: 2 }) });
    const root = await db.addInitial(programWith(0.5, 100, null, 0, 'root'));
    for (let step = 1; step <= 4; step++) {
      await db.commitStep({
        step,
        children: [programWith(0.5 + step / 10, 100, root.id, step, `child ${step}`)],
        stats: { step },
        engineState: null,
      });
    }
    await db.close();

    // The steps table's root page: its first cell pointer sent out of the page (bit rot in a b-tree).
    const bytes = readFileSync(file);
    const SQL = await loadSqlJs();
    const probe = new SQL.Database(bytes);
    const rootPage = Number(probe.exec("SELECT rootpage FROM sqlite_master WHERE name = 'steps'")[0]?.values[0]?.[0]);
    probe.close();
    const pageSize = bytes.readUInt16BE(16);
    const pageStart = (rootPage - 1) * pageSize + (rootPage === 1 ? 100 : 0);
    assert.equal(bytes[pageStart], 0x0d, 'the steps root is a table leaf page');
    bytes.writeUInt16BE(0xfff0, pageStart + 8);
    writeFileSync(file, bytes);

    await assert.rejects(
      ProgramDatabase.open(file, { config: testConfig({ numIslands: 2 }) }),
      (err: unknown) =>
        err instanceof DatabaseFileError &&
        err.message.includes(file) &&
        /SQLite's integrity check says it is damaged: .+; it was left untouched/.test(err.message),
    );
    assert.deepEqual(readFileSync(file), bytes, 'a refused database is never rewritten');
  });
});
