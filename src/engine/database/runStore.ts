// The SQLite side of a run database: one file per run through sql.js. Opens
// and validates a file (rebuilding the population from its rows), applies a
// step's change set in one transaction, and replaces the file atomically.
//
// sql.js holds the whole database in memory and writes it whole, so a step
// touches only the rows it changes and the file is then replaced at once.
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import type { Database as SqlDatabase, SqlValue, Statement } from 'sql.js';
import { z } from 'zod';
import { firstZodIssue } from '../common/errors';
import { type ProgramOrigin, type SteeringEntry, SteeringEntrySchema } from '../common/steering';
import { OUTCOMES, type Outcome } from '../common/types';
import { removeStaleTempFiles, writeFileAtomic } from './atomicFile';
import { type ChangeSet, initialState, Population, type RowChange } from './population';
import { type DatabaseConfig, type NewProgram, NOT_GENERATED, type ProgramRecord } from './records';
import {
  DatabaseConfigSchema,
  DatabaseFileError,
  DatabaseStateSchema,
  MAGIC,
  MetricsSchema,
  NODE_COLUMNS,
  NodeRowSchema,
  PROGRAM_COLUMNS,
  ProgramRowSchema,
  SCHEMA_SQL,
  SCHEMA_VERSION,
  SQLITE_HEADER,
  UPGRADE_FROM_1_SQL,
  UPGRADE_FROM_2_SQL,
  LINEAGE_AS_PROGRAM_COLUMNS,
  LINEAGE_COLUMNS,
} from './schema';
import { readEmbeddingRows, writeEmbeddingRows } from './embeddingRows';
import { releaseCopy } from './memoryRelease';
import { readIfExists, refuseReadOnly, schemaProblem } from './runFileChecks';
import { loadSqlJs } from './sqlite';
import { OPERATORS_META_KEY } from '../operators/recorded';
import { CROSSOVER_PARENT_METRIC, secondParentOf } from '../operators/crossover';
import { decodeText, encodeText, type StoredText } from './textCodec';

type SqlJs = Awaited<ReturnType<typeof loadSqlJs>>;

/** A run database opened: its file and the population its rows hold. */
export interface OpenedRun {
  store: RunStore;
  population: Population;
}

/** The columns a migration copy takes from its source's row, as stored. */
interface CopiedColumns {
  code: StoredText;
  objective: number | null;
  outcome: Outcome;
  metrics: string;
}

const INSERT_PROGRAM = `INSERT INTO programs (${PROGRAM_COLUMNS}) VALUES (${PROGRAM_COLUMNS.split(',')
  .map(() => '?')
  .join(', ')})`;
/** seq, id, parent_id, island of an evicted row kept (a past best, an ancestor). */
const KEPT_ROW = z.tuple([z.number().int(), z.string(), z.string().nullable(), z.number().int()]);

/** From this file size on, a persist lets go of its copy at once (memoryRelease.ts): below it the copies are small. */
const RELEASE_FROM_BYTES = 16 * 1024 * 1024;

function describe(err: unknown): string {
  return err instanceof Error ? (err.message.split('\n')[0] ?? err.message) : String(err);
}

export class RunStore {
  private readonly statements = new Map<string, Statement>();
  private metaDirty = false;
  private lastFileBytes = 0;
  private closedValue = false;

  private constructor(
    private readonly sqlDb: SqlDatabase,
    readonly file: string,
    readonly readOnly: boolean,
    readonly config: DatabaseConfig,
    private runMeta: Record<string, unknown>,
    private engineStateValue: unknown,
    private stepCountValue: number,
  ) {}

  // ---------------------------------------------------------------- opening

  /**
   * Create the run database at `file`, or resume it when it exists. A resumed
   * run keeps the configuration it was created with (`config` is then only
   * used for new files); `meta` is stored with a new file, and on reopen
   * only adds keys the stored run meta lacks (what the run was created with,
   * such as createdAt and startCode, is never rewritten); `sessionMeta`
   * describes the session that opens it (its sandbox) and is rewritten.
   */
  static async open(
    file: string,
    options: { config: DatabaseConfig; meta?: Record<string, unknown>; sessionMeta?: Record<string, unknown> },
  ): Promise<OpenedRun> {
    const configResult = DatabaseConfigSchema.safeParse(options.config);
    if (!configResult.success) {
      const { path: field, message } = firstZodIssue(configResult.error, 'config');
      throw new Error(`Invalid database configuration: ${field}: ${message}`);
    }
    const config: DatabaseConfig = configResult.data;
    const absolute = path.resolve(file);
    const bytes = await readIfExists(absolute);
    const SQL = await loadSqlJs();
    if (bytes === null) return RunStore.create(SQL, absolute, config, { ...options.meta, ...options.sessionMeta });
    await refuseReadOnly(absolute);
    await removeStaleTempFiles(absolute);
    const opened = RunStore.fromBytes(SQL, absolute, bytes, false);
    if (options.meta) {
      const store = opened.store;
      const added = Object.keys(options.meta).filter((key) => !(key in store.runMeta));
      if (added.length > 0) {
        store.runMeta = { ...options.meta, ...store.runMeta };
        store.metaDirty = true;
      }
    }
    if (options.sessionMeta) {
      const store = opened.store;
      const changed = Object.entries(options.sessionMeta).filter(
        ([key, value]) => JSON.stringify(store.runMeta[key]) !== JSON.stringify(value),
      );
      if (changed.length > 0) {
        store.runMeta = { ...store.runMeta, ...Object.fromEntries(changed) };
        store.metaDirty = true;
      }
    }
    return opened;
  }

  /** Open an existing run database to write it, with the configuration it was created with (steering a stopped run). */
  static async openExisting(file: string): Promise<OpenedRun> {
    const absolute = path.resolve(file);
    const bytes = await readIfExists(absolute);
    if (bytes === null) throw new DatabaseFileError(`${file}: no such run database`);
    await refuseReadOnly(absolute);
    await removeStaleTempFiles(absolute);
    const SQL = await loadSqlJs();
    return RunStore.fromBytes(SQL, absolute, bytes, false);
  }

  /** Open an existing run database for reading only; nothing is ever written. */
  static async openReadOnly(file: string): Promise<OpenedRun> {
    const absolute = path.resolve(file);
    const bytes = await readIfExists(absolute);
    if (bytes === null) throw new DatabaseFileError(`${file}: no such run database`);
    const SQL = await loadSqlJs();
    return RunStore.fromBytes(SQL, absolute, bytes, true);
  }

  private static async create(SQL: SqlJs, file: string, config: DatabaseConfig, runMeta: Record<string, unknown>): Promise<OpenedRun> {
    await fs.mkdir(path.dirname(file), { recursive: true });
    const sqlDb = new SQL.Database();
    const state = initialState(config);
    try {
      sqlDb.run('PRAGMA journal_mode = MEMORY');
      sqlDb.exec(SCHEMA_SQL);
      const setMeta = sqlDb.prepare('INSERT INTO meta (key, value) VALUES (?, ?)');
      for (const [key, value] of [
        ['magic', MAGIC],
        ['schema_version', String(SCHEMA_VERSION)],
        ['config', JSON.stringify(config)],
        ['run_meta', JSON.stringify(runMeta)],
        ['state', JSON.stringify(state)],
        ['engine_state', 'null'],
      ] as const) {
        setMeta.run([key, value]);
      }
      setMeta.free();
    } catch (err) {
      sqlDb.close();
      throw err;
    }
    const store = new RunStore(sqlDb, file, false, config, runMeta, null, 0);
    await store.persist();
    return { store, population: new Population(config, state) };
  }

  private static fromBytes(SQL: SqlJs, file: string, bytes: Uint8Array, readOnly: boolean): OpenedRun {
    const refuse = (why: string): DatabaseFileError =>
      new DatabaseFileError(`${file} is not a usable ThetaEvolve run database (${why}); it was left untouched`);
    const header = Buffer.from(bytes.subarray(0, SQLITE_HEADER.length)).toString('latin1');
    if (header !== SQLITE_HEADER) throw refuse(bytes.length === 0 ? 'the file is empty' : 'not an SQLite file');
    let sqlDb: SqlDatabase;
    try {
      sqlDb = new SQL.Database(bytes);
    } catch (err) {
      throw refuse(describe(err));
    }
    try {
      // A run database is data: before any query touches it, its schema must be ours in kind (docs/guide.md "What the editor trusts").
      const shapeProblem = schemaProblem(sqlDb);
      if (shapeProblem) throw refuse(shapeProblem);
      const metaRows = new Map<string, string>();
      let metaResult: ReturnType<SqlDatabase['exec']>;
      try {
        metaResult = sqlDb.exec('SELECT key, value FROM meta');
      } catch (err) {
        throw refuse(/no such table/.test(describe(err)) ? 'an SQLite file without a ThetaEvolve meta table' : describe(err));
      }
      for (const [key, value] of metaResult[0]?.values ?? []) {
        if (typeof key === 'string' && typeof value === 'string') metaRows.set(key, value);
      }
      if (metaRows.get('magic') !== MAGIC) throw refuse('an SQLite file of another program: no ThetaEvolve magic row');
      const version = Number(metaRows.get('schema_version'));
      if (!Number.isInteger(version)) throw refuse('missing schema version');
      // A run database all the same, of a later version: said as such, before anything this version cannot judge.
      if (version > SCHEMA_VERSION)
        throw new DatabaseFileError(
          `${file} was written by a newer version of ThetaEvolve (database schema version ${version}; this version reads up to ${SCHEMA_VERSION}): ` +
            'open it with that version or a later one; it was left untouched',
        );
      // A run about to be resumed is rewritten: a damaged file must be refused now, not carried into the new one.
      if (!readOnly) {
        const check = String(sqlDb.exec('PRAGMA quick_check')[0]?.values[0]?.[0] ?? 'no answer');
        const finding = check.split('\n').find((line) => line !== '' && !line.startsWith('***')) ?? check;
        if (check !== 'ok') throw refuse(`SQLite's integrity check says it is damaged: ${finding}`);
      }
      if (version < 1) throw refuse(`schema version ${version} is older than 1`);
      // In memory: a resumed run writes the upgraded file with its next step, a read-only open never does.
      if (version === 1) sqlDb.exec(UPGRADE_FROM_1_SQL);
      if (version <= 2) sqlDb.exec(UPGRADE_FROM_2_SQL);
      const parseJson = <T>(key: string, schema: z.ZodType<T>): T => {
        const raw = metaRows.get(key);
        if (raw === undefined) throw refuse(`meta row '${key}' is missing`);
        let value: unknown;
        try {
          value = JSON.parse(raw);
        } catch {
          throw refuse(`meta row '${key}' is not JSON`);
        }
        const result = schema.safeParse(value);
        if (!result.success) throw refuse(`meta row '${key}' is malformed: ${firstZodIssue(result.error, '').message}`);
        return result.data;
      };
      const config: DatabaseConfig = parseJson('config', DatabaseConfigSchema);
      const runMeta = parseJson('run_meta', z.record(z.string(), z.unknown()));
      const state = parseJson('state', DatabaseStateSchema);
      const engineState = parseJson('engine_state', z.unknown());
      if (state.islandGenerations.length !== config.numIslands) throw refuse('island state does not match the configuration');
      const stepCount = Number(sqlDb.exec('SELECT count(*) FROM steps')[0]?.values[0]?.[0] ?? 0);
      // Rows change in memory only; a rollback journal in memory is all a failed transaction needs.
      sqlDb.run('PRAGMA journal_mode = MEMORY');
      const store = new RunStore(sqlDb, file, readOnly, config, runMeta, engineState ?? null, stepCount);
      const population = new Population(config, state);
      store.restore(population, refuse);
      store.restoreSteering(population, refuse);
      store.lastFileBytes = bytes.length;
      return { store, population };
    } catch (err) {
      sqlDb.close();
      if (err instanceof DatabaseFileError) throw err;
      throw refuse(describe(err));
    }
  }

  /** Rebuild the population from the rows, in insertion order. */
  private restore(population: Population, refuse: (why: string) => DatabaseFileError): void {
    const numIslands = this.config.numIslands;
    // One pass over the table: its rows are long (code, response), so each scan costs.
    this.eachRow(`SELECT ${NODE_COLUMNS}, alive FROM programs ORDER BY seq`, [], (row) => {
      const alive = row[row.length - 1];
      if (alive === 0) {
        // An evicted row is a past best: children of its own join its island, and lineages run through it.
        // A malformed one is skipped, not refused: opening never checked past bests' rows.
        const parsed = KEPT_ROW.safeParse(row.slice(0, 4));
        if (parsed.success) population.restoreKept(...parsed.data, true);
        return;
      }
      if (alive !== 1) return;
      const parsed = NodeRowSchema.safeParse(row.slice(0, -1));
      if (!parsed.success) throw refuse('a program row is malformed');
      const [seq, id, parentId, island, step, score, codeLength, codeHash, migrantOf, inArchive, eliteCell, improvement] = parsed.data;
      if (island < 0 || island >= numIslands) throw refuse(`program ${id} is on island ${island}, outside 0..${numIslands - 1}`);
      population.restoreNode({
        seq,
        id,
        parentId,
        island,
        step,
        score,
        codeLength,
        codeHash,
        migrantOf,
        inArchive: inArchive === 1,
        eliteCell,
        improvement: improvement === 1,
      });
    });
    this.eachRow('SELECT seq, id, parent_id, island FROM lineage', [], (row) => {
      const parsed = KEPT_ROW.safeParse(row);
      if (!parsed.success) throw refuse('a lineage row is malformed');
      population.restoreKept(...parsed.data, false);
    });
    if (this.readOnly) {
      // Nothing is ever added to a read-only database: its hashes (300,000 at paper scale, a third of the time to open
      // it) stay in the file, asked there.
      const count = Number(this.sqlDb.exec('SELECT count(*) FROM code_hashes')[0]?.values[0]?.[0] ?? 0);
      population.restoreStoredHashes({ count, has: (hash) => this.hasStoredHash(hash) });
    } else {
      this.eachRow('SELECT hash FROM code_hashes', [], (row) => {
        const hash = row[0];
        if (typeof hash !== 'string') throw refuse('a code hash row is malformed');
        population.restoreHash(hash);
      });
    }
    // Crossover children keep their second parents as ancestors (operators/crossover.ts): read only for a run that recorded crossover.
    const operators = this.runMeta[OPERATORS_META_KEY];
    if (operators !== null && typeof operators === 'object' && 'crossover.share' in operators)
      for (const table of ['programs', 'lineage'])
        this.eachRow(`SELECT id, metrics FROM ${table} WHERE metrics LIKE ?`, [`%"${CROSSOVER_PARENT_METRIC}"%`], ([id, metrics]) => {
          const parsed = MetricsSchema.safeParse(parseJsonOrNull(String(metrics)));
          const second = parsed.success ? secondParentOf(parsed.data) : null;
          if (typeof id === 'string' && second !== null) population.restoreSecondParent(id, second);
        });
    // A task's behaviour dimensions are metrics: read only when configured (operators/features.ts).
    if (this.config.features)
      this.eachRow('SELECT id, metrics FROM programs WHERE alive = 1', [], ([id, metrics]) => {
        const parsed = MetricsSchema.safeParse(parseJsonOrNull(String(metrics)));
        if (typeof id === 'string') population.restoreFeatures(id, parsed.success ? parsed.data : {});
      });
    const problem = population.finishRestore();
    if (problem !== null) throw refuse(problem);
  }

  /** Replay the steering log (guidance, bans, pins) in the order it was written. */
  private restoreSteering(population: Population, refuse: (why: string) => DatabaseFileError): void {
    this.eachRow('SELECT entry FROM steering ORDER BY seq', [], ([entry]) => {
      let parsed: ReturnType<typeof SteeringEntrySchema.safeParse>;
      try {
        parsed = SteeringEntrySchema.safeParse(JSON.parse(String(entry)));
      } catch {
        throw refuse('a steering row is not JSON');
      }
      if (!parsed.success) throw refuse(`a steering row is malformed: ${firstZodIssue(parsed.error, '').message}`);
      population.steering.apply(parsed.data);
    });
  }

  // ---------------------------------------------------------------- state

  get closed(): boolean {
    return this.closedValue;
  }

  get stepCount(): number {
    return this.stepCountValue;
  }

  /** Size in bytes of the file as last read or written. */
  get fileBytes(): number {
    return this.lastFileBytes;
  }

  meta(): Record<string, unknown> {
    return { ...this.runMeta };
  }

  engineState(): unknown | null {
    return this.engineStateValue ?? null;
  }

  // ---------------------------------------------------------------- writing

  /**
   * Write a change set (and the step's row, unless it is the initial program)
   * and any steering entries, in one transaction.
   */
  apply(
    changes: ChangeSet,
    step: { step: number; stats: unknown; engineState: unknown } | null,
    steering: readonly SteeringEntry[] = [],
    embeddings: ReadonlyMap<string, Uint8Array> | null = null,
  ): void {
    if (step) this.engineStateValue = step.engineState ?? null;
    // Before any row changes: a copied program may be evicted in the same step.
    const copied = this.readCopiedColumns(changes.rows);
    const db = this.sqlDb;
    db.run('BEGIN');
    try {
      const insertRow = this.statement(INSERT_PROGRAM);
      const deleteRow = this.statement('DELETE FROM programs WHERE seq = ?');
      const keepRow = this.statement(`INSERT INTO lineage (${LINEAGE_COLUMNS}) SELECT ${LINEAGE_COLUMNS} FROM programs WHERE seq = ?`);
      const pruneRow = this.statement('DELETE FROM lineage WHERE seq = ?');
      const updateRow = this.statement('UPDATE programs SET alive = ?, in_archive = ?, elite_cell = ? WHERE seq = ?');
      for (const change of changes.rows) {
        if (change.kind === 'delete') {
          runStatement(deleteRow, [change.seq]);
          continue;
        }
        if (change.kind === 'keep') {
          runStatement(keepRow, [change.seq]);
          runStatement(deleteRow, [change.seq]);
          continue;
        }
        if (change.kind === 'prune') {
          runStatement(pruneRow, [change.seq]);
          continue;
        }
        const node = change.node;
        if (change.kind === 'update') {
          runStatement(updateRow, [node.alive ? 1 : 0, node.inArchive ? 1 : 0, node.eliteCell, node.seq]);
          continue;
        }
        const content = change.content;
        let code: StoredText | null;
        let objective: number | null;
        let outcome: Outcome;
        let metrics: string;
        let generated: Pick<NewProgram, keyof typeof NOT_GENERATED>;
        let origin: ProgramOrigin = 'migration';
        let note: string | null = null;
        if (content.kind === 'program') {
          const program = content.program;
          ({ objective, outcome } = program);
          ({ origin, note } = content);
          code = encodeText(program.code);
          metrics = JSON.stringify(program.metrics);
          generated = program;
        } else {
          ({ code, objective, outcome, metrics } = copied.get(content.sourceSeq) as CopiedColumns);
          generated = NOT_GENERATED;
        }
        runStatement(insertRow, [
          node.seq,
          node.id,
          node.parentId,
          node.island,
          node.step,
          node.score,
          objective,
          outcome,
          node.codeLength,
          node.codeHash,
          code,
          metrics,
          generated.metaInfoId,
          encodeText(generated.response),
          encodeText(generated.reasoning),
          generated.generationMs,
          generated.evaluationMs,
          generated.promptTokens,
          generated.completionTokens,
          content.createdAt,
          node.migrantOf,
          node.alive ? 1 : 0,
          node.inArchive ? 1 : 0,
          node.eliteCell,
          node.improvement ? 1 : 0,
          origin,
          note,
        ]);
      }
      const insertSteering = this.statement('INSERT INTO steering (step, entry, created_at) VALUES (?, ?, ?)');
      for (const entry of steering) runStatement(insertSteering, [entry.step, JSON.stringify(entry), Date.now()]);
      const insertHash = this.statement('INSERT OR IGNORE INTO code_hashes (hash) VALUES (?)');
      for (const hash of changes.newHashes) runStatement(insertHash, [hash]);
      const setMeta = this.statement('INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)');
      runStatement(setMeta, ['state', JSON.stringify(changes.state)]);
      if (step) {
        runStatement(setMeta, ['engine_state', JSON.stringify(step.engineState ?? null)]);
        runStatement(this.statement('INSERT INTO steps (step, committed_at, stats) VALUES (?, ?, ?)'), [
          step.step,
          Date.now(),
          JSON.stringify(step.stats ?? null),
        ]);
      }
      if (this.metaDirty) runStatement(setMeta, ['run_meta', JSON.stringify(this.runMeta)]);
      if (embeddings) writeEmbeddingRows(this.sqlDb, embeddings);
      db.run('COMMIT');
    } catch (err) {
      try {
        db.run('ROLLBACK');
      } catch {
        // No transaction left to roll back.
      }
      throw err;
    }
    if (step) this.stepCountValue++;
    this.metaDirty = false;
  }

  /** Novelty rejection's stored vectors by code hash (embeddingRows.ts). */
  embeddings(): Map<string, Uint8Array> {
    return readEmbeddingRows(this.sqlDb);
  }

  /** The stored columns of every program a migration copies from an earlier step, read once each. */
  private readCopiedColumns(rows: readonly RowChange[]): Map<number, CopiedColumns> {
    const copied = new Map<number, CopiedColumns>();
    for (const change of rows) {
      if (change.kind !== 'insert' || change.content.kind !== 'storedCopy' || copied.has(change.content.sourceSeq)) continue;
      const sourceSeq = change.content.sourceSeq;
      const malformed = (): DatabaseFileError => new DatabaseFileError(`${this.file}: program row ${sourceSeq.toString(36)} is malformed`);
      const select = this.statement('SELECT code, objective, outcome, metrics FROM programs WHERE seq = ?');
      try {
        select.bind([sourceSeq]);
        if (!select.step()) throw new DatabaseFileError(`${this.file}: program row ${sourceSeq.toString(36)} is missing`);
        const [code, objective, outcome, metrics] = select.get();
        if (!(typeof code === 'string' || code instanceof Uint8Array) || typeof outcome !== 'string' || typeof metrics !== 'string')
          throw malformed();
        const parsedMetrics = MetricsSchema.safeParse(JSON.parse(metrics));
        if (!parsedMetrics.success || !(OUTCOMES as readonly string[]).includes(outcome)) throw malformed();
        copied.set(sourceSeq, {
          code,
          objective: typeof objective === 'number' ? objective : null,
          outcome: outcome as Outcome,
          metrics: JSON.stringify(parsedMetrics.data),
        });
      } finally {
        select.reset();
      }
    }
    return copied;
  }

  async persist(): Promise<void> {
    const data = this.sqlDb.export();
    try {
      await writeFileAtomic(this.file, data);
      this.lastFileBytes = data.length;
    } finally {
      if (data.length >= RELEASE_FROM_BYTES) releaseCopy(data);
    }
  }

  close(): void {
    if (this.closedValue) return;
    this.closedValue = true;
    for (const statement of this.statements.values()) statement.free();
    this.statements.clear();
    this.sqlDb.close();
  }

  // ---------------------------------------------------------------- reading

  /** A program's row: live, evicted and kept as a past best, or kept as an ancestor (without response and reasoning). */
  readProgram(seq: number): ProgramRecord | null {
    return (
      this.readOne(`SELECT ${PROGRAM_COLUMNS} FROM programs WHERE seq = ?`, seq) ??
      this.readOne(`SELECT ${LINEAGE_AS_PROGRAM_COLUMNS} FROM lineage WHERE seq = ?`, seq)
    );
  }

  private readOne(sql: string, seq: number): ProgramRecord | null {
    const select = this.statement(sql);
    try {
      select.bind([seq]);
      return select.step() ? this.decodeRow(select.get()) : null;
    } finally {
      select.reset();
    }
  }

  /** Every program a query selecting PROGRAM_COLUMNS returns. */
  readPrograms(sql: string): ProgramRecord[] {
    const out: ProgramRecord[] = [];
    this.eachRow(sql, [], (row) => void out.push(this.decodeRow(row)));
    return out;
  }

  /** Run a one-off query and hand each row to `visit`. */
  eachRow(sql: string, params: SqlValue[], visit: (row: SqlValue[]) => void): void {
    const select = this.sqlDb.prepare(sql);
    try {
      if (params.length > 0) select.bind(params);
      while (select.step()) visit(select.get());
    } finally {
      select.free();
    }
  }

  private decodeRow(row: SqlValue[]): ProgramRecord {
    const parsed = ProgramRowSchema.safeParse(row);
    const bad = (why: string): DatabaseFileError =>
      new DatabaseFileError(`${this.file}: program row ${String(row[1])} is malformed (${why})`);
    if (!parsed.success) throw bad(firstZodIssue(parsed.error, '').message);
    const [
      ,
      id,
      parentId,
      island,
      step,
      score,
      objective,
      outcome,
      ,
      codeHash,
      code,
      metrics,
      metaInfoId,
      response,
      reasoning,
      generationMs,
      evaluationMs,
      promptTokens,
      completionTokens,
      createdAt,
      migrantOf,
      ,
      ,
      ,
      ,
      origin,
      note,
    ] = parsed.data;
    if (!(OUTCOMES as readonly string[]).includes(outcome)) throw bad(`unknown outcome '${outcome}'`);
    let metricsValue: unknown;
    try {
      metricsValue = JSON.parse(metrics);
    } catch {
      throw bad('metrics are not JSON');
    }
    const metricsParsed = MetricsSchema.safeParse(metricsValue);
    if (!metricsParsed.success) throw bad('metrics are not a flat object');
    return {
      id,
      parentId,
      island,
      step,
      code: decodeText(code) ?? '',
      codeHash,
      score,
      objective,
      outcome: outcome as Outcome,
      metrics: metricsParsed.data,
      metaInfoId,
      response: decodeText(response),
      reasoning: decodeText(reasoning),
      generationMs,
      evaluationMs,
      promptTokens,
      completionTokens,
      createdAt,
      migrantOf,
      origin,
      note,
    };
  }

  private hasStoredHash(hash: string): boolean {
    const select = this.statement('SELECT 1 FROM code_hashes WHERE hash = ?');
    try {
      select.bind([hash]);
      return select.step();
    } finally {
      select.reset();
    }
  }

  private statement(sql: string): Statement {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.sqlDb.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }
}

function runStatement(statement: Statement, params: SqlValue[]): void {
  statement.bind(params);
  try {
    statement.step();
  } finally {
    statement.reset();
  }
}

function parseJsonOrNull(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
