// A run database is data, not instructions (issue 42 item 4): before any
// query its schema is checked (meta and programs are tables, no view but our
// own, no trigger, no virtual table) and its size capped; kept outputs are
// capped once unpacked (a gzip bomb); and a query the worker never answers
// ends that worker, the next request getting a fresh one.
import { strict as assert } from 'node:assert';
import { mkdirSync, readFileSync, truncateSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { gzipSync } from 'node:zlib';
import { RUN_DATABASE_MAX_BYTES } from '../../src/engine/database/runFileChecks';
import { loadSqlJs } from '../../src/engine/database/sqlite';
import { readStepOutputs } from '../../src/engine/evaluationOutputs';
import { evaluationOutputsDir } from '../../src/engine/runFiles';
import { EngineHost } from '../../src/worker/engineHost';
import { runCli } from '../support/cli';
import { tempDir } from '../support/tempDirs';

const FIXTURE = resolve(__dirname, '../fixtures/tasks/quadratic');
const WORKER = resolve(__dirname, '../../src/worker/engineWorker.ts');
const EXEC_ARGV = ['--require', 'tsx/cjs'];

describe('a run database is data', function () {
  this.timeout(120_000);
  let dir: string;
  let db: string;
  let pristine: Buffer;

  before(async () => {
    dir = tempDir('thetaevolve-dbdata-');
    db = join(dir, 'run.sqlite');
    const made = await runCli(['run', FIXTURE, '--sampler', 'mutate', '--steps', '1', '--batch', '1', '--samples', '1', '--db', db], dir);
    assert.equal(made.code, 0, made.stderr);
    pristine = readFileSync(db);
  });

  /** A copy of the run's database changed by `sql`, written to `name`. */
  async function altered(name: string, sql: string): Promise<string> {
    const SQL = await loadSqlJs();
    const sqlDb = new SQL.Database(new Uint8Array(pristine));
    sqlDb.exec(sql);
    const file = join(dir, name);
    writeFileSync(file, sqlDb.export());
    sqlDb.close();
    return file;
  }

  const refused: Array<[string, string, RegExp]> = [
    ['a trigger', 'CREATE TRIGGER t AFTER INSERT ON steps BEGIN DELETE FROM programs; END;', /it holds a trigger \(t\)/],
    [
      'meta as a view',
      'ALTER TABLE meta RENAME TO meta_rows; CREATE VIEW meta AS SELECT key, value FROM meta_rows;',
      /it holds a view \(meta\)/,
    ],
    [
      'programs as a view over a recursive query',
      'DROP VIEW population; ALTER TABLE programs RENAME TO p; CREATE VIEW programs AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT * FROM p, c;',
      /it holds a view \(programs\)/,
    ],
    ['another view', 'DROP VIEW population; CREATE VIEW population AS SELECT * FROM programs;', /it holds a view \(population\)/],
  ];
  for (const [what, sql, message] of refused)
    it(`refuses a database with ${what} before any query, naming it`, async () => {
      const file = await altered(`${what.replace(/\W+/g, '-')}.sqlite`, sql);
      const before = readFileSync(file);
      const { code, stderr } = await runCli(['db', file], dir);
      assert.equal(code, 1, stderr);
      assert.match(stderr, /is not a usable ThetaEvolve run database/);
      assert.match(stderr, message);
      assert.deepEqual(readFileSync(file), before, 'left untouched');
    });

  it('reads its own database, population view and all', async () => {
    const { code, stderr } = await runCli(['db', db], dir);
    assert.equal(code, 0, stderr);
  });

  it('refuses a database over the size cap without reading it', async () => {
    const file = join(dir, 'huge.sqlite');
    writeFileSync(file, pristine);
    // Sparse: no disk is used, the size is what stat says.
    truncateSync(file, RUN_DATABASE_MAX_BYTES + 1);
    const { code, stderr } = await runCli(['db', file], dir);
    assert.equal(code, 1);
    assert.match(stderr, new RegExp(`over the ${RUN_DATABASE_MAX_BYTES} a run database may hold`));
  });

  it('stops unpacking kept outputs at the cap (a gzip bomb)', async () => {
    const outputs = evaluationOutputsDir(db);
    mkdirSync(outputs, { recursive: true });
    // 4 MiB of zeros packs to a few KiB; the cap here is 1 MiB.
    writeFileSync(join(outputs, 'step-7.jsonl.gz'), gzipSync(Buffer.alloc(4 * 1024 * 1024)));
    await assert.rejects(readStepOutputs(db, 7, 1024 * 1024), /the kept outputs of step 7 unpack to over 1048576 bytes: not read/);
  });

  it('ends a worker that answers nothing past a query’s time; the next query gets a fresh worker', async () => {
    // 1 ms: the worker has not even started by then, so it has sent nothing (what a stuck thread looks like).
    const host = new EngineHost({ workerFile: WORKER, execArgv: EXEC_ARGV, queryTimeoutMs: 1 });
    const exits: number[] = [];
    host.on('exit', (code) => exits.push(code));
    try {
      await assert.rejects(host.query({ kind: 'runInfo', dbFile: db }), /within 1 ms; it was ended and starts afresh/);
      assert.equal(host.workerRestarts, 1);
      assert.deepEqual(exits, [1], 'the ended worker is reported once');
      const info = await host.query({ kind: 'runInfo', dbFile: db }, { timeoutMs: 60_000 });
      assert.equal(info.lastStep, 1, 'a fresh worker answered');
    } finally {
      await host.dispose();
    }
  });
});
