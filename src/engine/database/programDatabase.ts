// The program database of algorithm.md section 6 (OpenEvolve's design, scaled
// up): islands taking turns, per-island MAP-Elites grids, an elite archive,
// ring migration, capacity eviction, and a code-hash index over every program
// ever added (the lazy penalty). One SQLite file per run through sql.js.
//
// sql.js holds the whole database in memory and writes it whole, so every hot
// operation runs on in-memory structures (arrays in insertion order, heaps,
// maps); a step touches only the rows it changes, in one transaction, and the
// file is then replaced atomically. Everything the structures hold is
// rebuilt from the rows on open, in the same order, so a resumed run makes
// exactly the choices the uninterrupted one would have.
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import type { Database as SqlDatabase, SqlValue, Statement } from 'sql.js';
import { z } from 'zod';
import { DATABASE_PRESETS, type Settings } from '../common/config';
import { Rng, type RngState } from '../common/rng';
import { OUTCOMES, type Outcome } from '../common/types';
import { removeStaleTempFiles, writeFileAtomic } from './atomicFile';
import { MinHeap } from './minHeap';
import {
  DatabaseConfigSchema,
  DatabaseFileError,
  type DatabaseState,
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
} from './schema';
import { loadSqlJs } from './sqlite';
import { decodeText, encodeText, type StoredText } from './textCodec';

export { DatabaseFileError } from './schema';

export interface DatabaseConfig {
  populationSize: number;
  archiveSize: number;
  numIslands: number;
  migrationInterval: number;
  migrationRate: number;
  explorationRatio: number;
  exploitationRatio: number;
  seed: number;
}

export function databaseConfigFromSettings(settings: Settings): DatabaseConfig {
  const preset = DATABASE_PRESETS[settings['database.preset']];
  return {
    populationSize: settings['database.populationSize'] || preset.populationSize,
    archiveSize: settings['database.archiveSize'] || preset.archiveSize,
    numIslands: settings['database.numIslands'] || preset.numIslands,
    migrationInterval: settings['database.migrationInterval'],
    migrationRate: settings['database.migrationRate'],
    explorationRatio: settings['database.explorationRatio'],
    exploitationRatio: settings['database.exploitationRatio'],
    seed: settings.seed,
  };
}

export interface NewProgram {
  parentId: string | null;
  step: number;
  code: string;
  codeHash: string;
  score: number;
  objective: number | null;
  outcome: Outcome;
  metrics: Record<string, number | string | boolean | null>;
  metaInfoId: string | null;
  response: string | null;
  reasoning: string | null;
  generationMs: number;
  evaluationMs: number;
  promptTokens: number;
  completionTokens: number;
}

export interface ProgramRecord extends NewProgram {
  id: string;
  island: number;
  createdAt: number;
  /** Set on the copies migration (and seeding the islands) makes: the id of the program copied. */
  migrantOf?: string | null;
}

export interface CommitResult {
  inserted: ProgramRecord[];
  newBest: ProgramRecord | null;
  /**
   * Where the time went: applyMs, the rules on the in-memory structures;
   * rowsMs, compressing texts and writing the changed rows into SQLite;
   * fileMs, exporting the database and replacing the file durably.
   */
  timings: { applyMs: number; rowsMs: number; fileMs: number };
  /** Size of the file written. */
  fileBytes: number;
}

import type { DatabaseSnapshot } from '../common/snapshot';
export type { DatabaseSnapshot };

/** Outcomes whose programs enter the database (their code is new and was evaluated). */
const STORED_OUTCOMES: ReadonlySet<Outcome> = new Set<Outcome>(['valid', 'invalid_solution', 'no_solution', 'timeout']);

const FEATURE_DIMENSIONS = 2;

/** Bins per feature dimension: max(10, ceil(archive^(1/d))). */
export function featureBins(archiveSize: number, dimensions = FEATURE_DIMENSIONS): number {
  const root = Math.pow(archiveSize, 1 / dimensions);
  const nearest = Math.round(root);
  const ceil = Math.abs(root - nearest) < 1e-9 ? nearest : Math.ceil(root);
  return Math.max(10, ceil);
}

/** A live program as the rules see it; the text fields stay in SQLite. */
interface Node {
  seq: number;
  id: string;
  parentId: string | null;
  island: number;
  step: number;
  score: number;
  codeLength: number;
  codeHash: string;
  migrantOf: string | null;
  alive: boolean;
  inArchive: boolean;
  eliteCell: number | null;
  improvement: boolean;
  /** Added in the step being committed: it has no row yet. */
  isNew: boolean;
}

interface Payload {
  program: NewProgram;
  createdAt: number;
  /** A copy of a stored program carries its code as stored (compressed), not decoded. */
  storedCode?: StoredText;
}

/** The code of a program copied as stored, so migration neither inflates nor deflates it. */
interface StoredCode {
  stored: StoredText;
  length: number;
}

/** Total order for "worst first": lower score, then older. */
function worseFirst(a: Node, b: Node): boolean {
  return a.score < b.score || (a.score === b.score && a.seq < b.seq);
}

function betterFirst(a: Node, b: Node): number {
  return b.score - a.score || a.seq - b.seq;
}

function seqOfId(id: string): number | null {
  if (!/^[0-9a-z]{1,11}$/.test(id)) return null;
  const seq = parseInt(id, 36);
  return Number.isSafeInteger(seq) && seq.toString(36) === id ? seq : null;
}

type Range = { min: number; max: number } | null;

function widen(range: Range, value: number): Range {
  if (range === null) return { min: value, max: value };
  if (value >= range.min && value <= range.max) return range;
  return { min: Math.min(range.min, value), max: Math.max(range.max, value) };
}

function binOf(range: Range, value: number, bins: number): number {
  if (range === null || !(range.max > range.min)) return 0;
  const scaled = (value - range.min) / (range.max - range.min);
  return Math.min(bins - 1, Math.max(0, Math.floor(scaled * bins)));
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message.split('\n')[0] ?? err.message : String(err);
}

export class ProgramDatabase {
  private readonly bins: number;
  private readonly nodes = new Map<string, Node>();
  private all: Node[] = [];
  private islands: Node[][];
  private archiveList: Node[] = [];
  /** archiveList split by island, in the same order: exploitation draws from the turn's island. */
  private islandArchives: Node[][];
  private archiveCount = 0;
  private readonly archiveHeap = new MinHeap<Node>(worseFirst);
  private readonly evictionHeap = new MinHeap<Node>(worseFirst);
  private readonly grids: Map<number, Node>[];
  private readonly islandSizes: number[];
  private readonly islandHashes: Map<string, number>[];
  private readonly hashes = new Set<string>();
  private aliveCount = 0;
  private bestNode: Node | null = null;
  private stepCount: number;
  private pendingSample: { rng: RngState; turn: number } | null = null;
  private readonly touched = new Set<Node>();
  private readonly payloads = new Map<number, Payload>();
  private newHashes: string[] = [];
  private metaDirty = false;
  private broken: string | null = null;
  private busy = false;
  private closed = false;
  private statements = new Map<string, Statement>();
  private lastFileBytes = 0;

  private constructor(
    private readonly sqlDb: SqlDatabase,
    readonly file: string,
    readonly readOnly: boolean,
    readonly config: DatabaseConfig,
    private runMeta: Record<string, unknown>,
    private state: DatabaseState,
    private engineStateValue: unknown,
    stepCount: number,
  ) {
    this.bins = featureBins(config.archiveSize);
    const n = config.numIslands;
    this.islands = Array.from({ length: n }, () => []);
    this.islandArchives = Array.from({ length: n }, () => []);
    this.grids = Array.from({ length: n }, () => new Map<number, Node>());
    this.islandSizes = new Array<number>(n).fill(0);
    this.islandHashes = Array.from({ length: n }, () => new Map<string, number>());
    this.stepCount = stepCount;
  }

  // ---------------------------------------------------------------- opening

  /**
   * Create the run database at `file`, or resume it when it exists. A resumed
   * run keeps the configuration it was created with (`config` is then only
   * used for new files); `meta` is stored with a new file, and on reopen
   * only adds keys the stored run meta lacks (what the run was created with,
   * such as createdAt and startCode, is never rewritten).
   */
  static async open(file: string, options: { config: DatabaseConfig; meta?: Record<string, unknown> }): Promise<ProgramDatabase> {
    const configResult = DatabaseConfigSchema.safeParse(options.config);
    if (!configResult.success) {
      const issue = configResult.error.issues[0];
      throw new Error(`Invalid database configuration: ${issue?.path.join('.') || 'config'}: ${issue?.message ?? 'bad value'}`);
    }
    const config: DatabaseConfig = configResult.data;
    const absolute = path.resolve(file);
    const bytes = await readIfExists(absolute);
    const SQL = await loadSqlJs();
    if (bytes === null) {
      await fs.mkdir(path.dirname(absolute), { recursive: true });
      const sqlDb = new SQL.Database();
      const state = ProgramDatabase.initialState(config);
      const runMeta = options.meta ?? {};
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
      const created = new ProgramDatabase(sqlDb, absolute, false, config, runMeta, state, null, 0);
      await created.persist();
      return created;
    }
    await removeStaleTempFiles(absolute);
    const opened = ProgramDatabase.fromBytes(SQL, absolute, bytes, false);
    if (options.meta) {
      const added = Object.keys(options.meta).filter((key) => !(key in opened.runMeta));
      if (added.length > 0) {
        opened.runMeta = { ...options.meta, ...opened.runMeta };
        opened.metaDirty = true;
      }
    }
    return opened;
  }

  /** Open an existing run database for reading only; nothing is ever written. */
  static async openReadOnly(file: string): Promise<ProgramDatabase> {
    const absolute = path.resolve(file);
    const bytes = await readIfExists(absolute);
    if (bytes === null) throw new DatabaseFileError(`${file}: no such run database`);
    const SQL = await loadSqlJs();
    return ProgramDatabase.fromBytes(SQL, absolute, bytes, true);
  }

  private static initialState(config: DatabaseConfig): DatabaseState {
    return {
      lastStep: -1,
      nextSeq: 0,
      rng: Rng.fromSeed(config.seed).state(),
      turn: 0,
      bestId: null,
      ranges: { score: null, codeLength: null },
      islandGenerations: new Array<number>(config.numIslands).fill(0),
      lastMigrationGeneration: 0,
      migrations: 0,
      lastMigrationStep: null,
    };
  }

  private static fromBytes(SQL: Awaited<ReturnType<typeof loadSqlJs>>, file: string, bytes: Uint8Array, readOnly: boolean): ProgramDatabase {
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
      if (version > SCHEMA_VERSION) throw refuse(`written by a newer ThetaEvolve: schema version ${version}, this one reads ${SCHEMA_VERSION}`);
      if (version < SCHEMA_VERSION) throw refuse(`schema version ${version} is older than ${SCHEMA_VERSION}`);
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
        if (!result.success) throw refuse(`meta row '${key}' is malformed: ${result.error.issues[0]?.message ?? ''}`);
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
      const opened = new ProgramDatabase(sqlDb, file, readOnly, config, runMeta, state, engineState ?? null, stepCount);
      opened.loadNodes(refuse);
      opened.lastFileBytes = bytes.length;
      return opened;
    } catch (err) {
      sqlDb.close();
      if (err instanceof DatabaseFileError) throw err;
      throw refuse(describe(err));
    }
  }

  /** Rebuild the in-memory structures from the rows, in insertion order. */
  private loadNodes(refuse: (why: string) => DatabaseFileError): void {
    const select = this.sqlDb.prepare(`SELECT ${NODE_COLUMNS} FROM programs WHERE alive = 1 ORDER BY seq`);
    try {
      while (select.step()) {
        const parsed = NodeRowSchema.safeParse(select.get());
        if (!parsed.success) throw refuse('a program row is malformed');
        const [seq, id, parentId, island, step, score, codeLength, codeHash, migrantOf, inArchive, eliteCell, improvement] = parsed.data;
        if (island < 0 || island >= this.config.numIslands) throw refuse(`program ${id} is on island ${island}, outside 0..${this.config.numIslands - 1}`);
        const node: Node = {
          seq,
          id,
          parentId,
          island,
          step,
          score,
          codeLength,
          codeHash,
          migrantOf,
          alive: true,
          inArchive: inArchive === 1,
          eliteCell,
          improvement: improvement === 1,
          isNew: false,
        };
        this.nodes.set(id, node);
        this.all.push(node);
        (this.islands[island] as Node[]).push(node);
        this.islandSizes[island] = (this.islandSizes[island] as number) + 1;
        this.countHash(island, codeHash, 1);
        this.evictionHeap.push(node);
        this.aliveCount++;
        if (node.inArchive) {
          this.archiveList.push(node);
          (this.islandArchives[island] as Node[]).push(node);
          this.archiveHeap.push(node);
          this.archiveCount++;
        }
        if (eliteCell !== null) (this.grids[island] as Map<number, Node>).set(eliteCell, node);
      }
    } finally {
      select.free();
    }
    const hashes = this.sqlDb.prepare('SELECT hash FROM code_hashes');
    try {
      while (hashes.step()) {
        const hash = hashes.get()[0];
        if (typeof hash !== 'string') throw refuse('a code hash row is malformed');
        this.hashes.add(hash);
      }
    } finally {
      hashes.free();
    }
    if (this.state.bestId !== null) {
      this.bestNode = this.nodes.get(this.state.bestId) ?? null;
      if (!this.bestNode) throw refuse(`the best program ${this.state.bestId} is missing`);
    } else if (this.aliveCount > 0) {
      throw refuse('programs without a best program');
    }
  }

  // ---------------------------------------------------------------- reading

  get lastStep(): number {
    return this.state.lastStep;
  }

  get size(): number {
    return this.aliveCount;
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

  hasCodeHash(hash: string): boolean {
    return this.hashes.has(hash);
  }

  best(): ProgramRecord | null {
    return this.bestNode ? this.get(this.bestNode.id) : null;
  }

  /** A live program, or an evicted one kept because it once was the best. */
  get(id: string): ProgramRecord | null {
    this.assertOpen();
    const seq = seqOfId(id);
    return seq === null ? null : this.readProgram(seq);
  }

  /** The k best live programs, distinct by code (migration copies left out). */
  topPrograms(k: number): ProgramRecord[] {
    this.assertOpen();
    if (k <= 0) return [];
    const seen = new Set<string>();
    const out: ProgramRecord[] = [];
    for (const node of this.all.filter((n) => n.alive && n.migrantOf === null).sort(betterFirst)) {
      if (seen.has(node.codeHash)) continue;
      seen.add(node.codeHash);
      const record = this.readProgram(node.seq);
      if (record) out.push(record);
      if (out.length >= k) break;
    }
    return out;
  }

  /** Parent, grandparent, ... up to the root, as far as the programs are still stored. */
  ancestors(id: string): ProgramRecord[] {
    this.assertOpen();
    const out: ProgramRecord[] = [];
    const seen = new Set<string>([id]);
    let parentId = this.get(id)?.parentId ?? null;
    while (parentId !== null && !seen.has(parentId)) {
      seen.add(parentId);
      const parent = this.get(parentId);
      if (!parent) break;
      out.push(parent);
      parentId = parent.parentId;
    }
    return out;
  }

  /** How many ancestors a program has: as recorded when it became a best (stable), else those whose rows are still here. */
  lineageDepth(id: string): number {
    this.assertOpen();
    return this.state.lineageDepths?.[id] ?? this.ancestors(id).length;
  }

  /**
   * Programs' places among their steps' children by score (1: the step's
   * best; ties: the earlier first), among those the database holds; unknown
   * ids and migration copies are left out. Eviction takes the worst first, so
   * a rank stays what it was when its step committed (`of` shrinks). One
   * pass over the steps asked about, however many ids (the Runs view asks
   * for every improvement at once).
   */
  stepRanks(ids: readonly string[]): Map<string, { rank: number; of: number }> {
    this.assertOpen();
    const wanted = new Map<number, string>();
    const steps = new Set<number>();
    for (const id of ids) {
      const program = this.get(id);
      const seq = seqOfId(id);
      if (!program || seq === null || program.migrantOf) continue;
      wanted.set(seq, id);
      steps.add(program.step);
    }
    const ranks = new Map<string, { rank: number; of: number }>();
    if (steps.size === 0) return ranks;
    const select = this.sqlDb.prepare(`SELECT seq, step FROM programs WHERE migrant_of IS NULL AND step IN (${[...steps].map(() => '?').join(', ')}) ORDER BY step, score DESC, seq`);
    const placed: { id: string; step: number; rank: number }[] = [];
    const children = new Map<number, number>();
    try {
      select.bind([...steps]);
      while (select.step()) {
        const [seq, step] = select.get() as [number, number];
        const rank = (children.get(step) ?? 0) + 1;
        children.set(step, rank);
        const id = wanted.get(seq);
        if (id !== undefined) placed.push({ id, step, rank });
      }
    } finally {
      select.free();
    }
    for (const { id, step, rank } of placed) ranks.set(id, { rank, of: children.get(step) ?? rank });
    return ranks;
  }

  /** One program's place among its step's children (stepRanks), or null for an unknown id or a migration copy. */
  stepRank(id: string): { rank: number; of: number } | null {
    return this.stepRanks([id]).get(id) ?? null;
  }

  /** Every program that was the new global best when it was added, oldest first (kept even when evicted). */
  improvements(): ProgramRecord[] {
    this.assertOpen();
    return this.readPrograms(`SELECT ${PROGRAM_COLUMNS} FROM programs WHERE improvement = 1 ORDER BY seq`);
  }

  /** Combined scores of the valid programs alive in the database (the dashboard's histogram). */
  validScores(): number[] {
    this.assertOpen();
    const out: number[] = [];
    const select = this.sqlDb.prepare("SELECT score FROM programs WHERE alive = 1 AND outcome = 'valid'");
    try {
      while (select.step()) {
        const [score] = select.get();
        if (typeof score === 'number') out.push(score);
      }
    } finally {
      select.free();
    }
    return out;
  }

  steps(): { step: number; stats: unknown }[] {
    this.assertOpen();
    const out: { step: number; stats: unknown }[] = [];
    const select = this.sqlDb.prepare('SELECT step, stats FROM steps ORDER BY step');
    try {
      while (select.step()) {
        const [step, stats] = select.get();
        if (typeof step !== 'number' || typeof stats !== 'string') throw new DatabaseFileError(`${this.file}: a steps row is malformed`);
        out.push({ step, stats: JSON.parse(stats) as unknown });
      }
    } finally {
      select.free();
    }
    return out;
  }

  summary(): { programs: number; steps: number; best: { score: number; id: string } | null; islands: number[]; archive: number } {
    return {
      programs: this.aliveCount,
      steps: this.stepCount,
      best: this.bestNode ? { score: this.bestNode.score, id: this.bestNode.id } : null,
      islands: [...this.islandSizes],
      archive: this.archiveCount,
    };
  }

  stateSnapshot(): DatabaseSnapshot {
    const bestOf = (nodes: readonly Node[]): { id: string; score: number } | null => {
      let best: Node | null = null;
      for (const n of nodes) if (n.alive && (best === null || betterFirst(n, best) < 0)) best = n;
      return best ? { id: best.id, score: best.score } : null;
    };
    let minScore: number | null = null;
    let maxScore: number | null = null;
    for (const n of this.archiveList) {
      if (!n.inArchive) continue;
      minScore = minScore === null ? n.score : Math.min(minScore, n.score);
      maxScore = maxScore === null ? n.score : Math.max(maxScore, n.score);
    }
    return {
      lastStep: this.state.lastStep,
      programs: this.aliveCount,
      populationSize: this.config.populationSize,
      hashIndexSize: this.hashes.size,
      currentIsland: this.state.turn,
      best: this.bestNode ? { id: this.bestNode.id, score: this.bestNode.score } : null,
      islands: this.islands.map((nodes, island) => ({
        island,
        size: this.islandSizes[island] as number,
        generation: this.state.islandGenerations[island] as number,
        best: bestOf(nodes),
      })),
      mapElites: {
        features: ['score', 'codeLength'],
        bins: this.bins,
        ranges: { score: this.state.ranges.score, codeLength: this.state.ranges.codeLength },
        islands: this.grids.map((grid, island) => ({
          island,
          occupied: grid.size,
          cells: [...grid.entries()]
            .sort((a, b) => a[0] - b[0])
            .map(([cell, n]) => ({ cell, scoreBin: Math.floor(cell / this.bins), lengthBin: cell % this.bins, id: n.id, score: n.score })),
        })),
      },
      archive: { size: this.archiveCount, capacity: this.config.archiveSize, minScore, maxScore },
      migrations: {
        count: this.state.migrations,
        lastStep: this.state.lastMigrationStep,
        interval: this.config.migrationInterval,
        rate: this.config.migrationRate,
      },
    };
  }

  // ---------------------------------------------------------------- sampling

  /**
   * `count` parents, islands taking turns: with probability explorationRatio
   * a uniform program of the island, exploitationRatio a uniform archive
   * member of the island (of the whole archive only when the island has
   * none: OpenEvolve's `_sample_exploitation_parent`; drawing from the whole
   * archive lets the first island swallow the run), else a uniform program
   * of the whole database. Drawn from the
   * state of the last commit, so calling it again before the next commit (or
   * after a resume) gives the same parents.
   */
  sampleParents(count: number): ProgramRecord[] {
    this.assertOpen();
    if (this.aliveCount === 0) throw new Error('sampleParents: the database is empty (add the initial program first)');
    const rng = Rng.fromState(this.state.rng);
    let turn = this.state.turn;
    const { explorationRatio, exploitationRatio, numIslands } = this.config;
    const chosen: Node[] = [];
    for (let i = 0; i < count; i++) {
      const island = this.islands[turn] as Node[];
      const islandArchive = this.islandArchives[turn] as Node[];
      turn = (turn + 1) % numIslands;
      const r = rng.next();
      let pool: Node[];
      if (r < explorationRatio && island.length > 0) pool = island;
      else if (r < explorationRatio + exploitationRatio && this.archiveList.length > 0) pool = islandArchive.length > 0 ? islandArchive : this.archiveList;
      else pool = this.all;
      chosen.push(rng.pick(pool));
    }
    this.pendingSample = { rng: rng.state(), turn };
    const cache = new Map<number, ProgramRecord>();
    return chosen.map((node) => {
      let record: ProgramRecord | null | undefined = cache.get(node.seq);
      if (!record) {
        record = this.readProgram(node.seq);
        if (!record) throw new Error(`sampleParents: program ${node.id} has no row`);
        cache.set(node.seq, record);
      }
      return record;
    });
  }

  // ---------------------------------------------------------------- writing

  /** Add the initial program (step 0) to island 0, seed a copy (an archive member) on every other island, persist. */
  async addInitial(program: NewProgram): Promise<ProgramRecord> {
    this.assertWritable();
    if (this.state.lastStep !== -1) throw new Error(`addInitial: the database already holds step ${this.state.lastStep}`);
    validateProgram(program, 0);
    this.busy = true;
    try {
      const node = this.insert(program, 0, null);
      for (let island = 1; island < this.config.numIslands; island++) {
        // Each seed copy is its island's first archive member, so exploitation on that island's turn draws it
        // rather than falling back to island 0's members (which would make island 0 swallow the first steps).
        const seed = this.insert(copyOf(program, node.id, 0), island, node.id);
        if (seed.alive) this.offerToArchive(seed);
      }
      this.state.lastStep = 0;
      this.writeStep(null);
      await this.persist();
      return this.recordOf(node, program);
    } catch (err) {
      this.broken = describe(err);
      throw err;
    } finally {
      this.busy = false;
    }
  }

  /**
   * Insert a step's children one by one (each joins its parent's island;
   * MAP-Elites, archive and capacity rules per insert), migrate when due,
   * write the changed rows in one transaction and replace the file atomically.
   */
  async commitStep(input: { step: number; children: NewProgram[]; stats: unknown; engineState: unknown }): Promise<CommitResult> {
    this.assertWritable();
    if (this.state.lastStep < 0) throw new Error('commitStep: add the initial program first');
    if (input.step !== this.state.lastStep + 1) {
      throw new Error(`commitStep: expected step ${this.state.lastStep + 1} after step ${this.state.lastStep}, got ${input.step}`);
    }
    for (const child of input.children) validateProgram(child, input.step);
    this.busy = true;
    try {
      const started = performance.now();
      if (this.pendingSample) {
        this.state.rng = this.pendingSample.rng;
        this.state.turn = this.pendingSample.turn;
        this.pendingSample = null;
      }
      const bestBefore = this.bestNode;
      // Parents can be evicted by their siblings during the step: place every child first.
      const targetIslands = input.children.map((child) => this.islandOfParent(child.parentId));
      const inserted: ProgramRecord[] = [];
      const grown = new Set<number>();
      for (let i = 0; i < input.children.length; i++) {
        const child = input.children[i] as NewProgram;
        const island = targetIslands[i] as number;
        inserted.push(this.recordOf(this.insert(child, island, null), child));
        grown.add(island);
      }
      for (const island of grown) this.state.islandGenerations[island] = (this.state.islandGenerations[island] as number) + 1;
      if (this.migrationDue()) this.migrate(input.step);
      this.state.lastStep = input.step;
      this.engineStateValue = input.engineState ?? null;
      const applied = performance.now();
      this.writeStep({ step: input.step, stats: input.stats, engineState: input.engineState });
      const written = performance.now();
      await this.persist();
      const persisted = performance.now();
      const newBestNode = this.bestNode !== bestBefore ? this.bestNode : null;
      const newBest = newBestNode ? (inserted.find((r) => r.id === newBestNode.id) ?? this.get(newBestNode.id)) : null;
      return {
        inserted,
        newBest,
        timings: { applyMs: applied - started, rowsMs: written - applied, fileMs: persisted - written },
        fileBytes: this.lastFileBytes,
      };
    } catch (err) {
      this.broken = describe(err);
      throw err;
    } finally {
      this.busy = false;
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const statement of this.statements.values()) statement.free();
    this.statements.clear();
    this.sqlDb.close();
  }

  // ---------------------------------------------------------------- rules

  private insert(program: NewProgram, island: number, migrantOf: string | null, storedCode?: StoredCode): Node {
    const seq = this.state.nextSeq++;
    const node: Node = {
      seq,
      id: seq.toString(36),
      parentId: program.parentId,
      island,
      step: program.step,
      score: program.score,
      codeLength: storedCode ? storedCode.length : program.code.length,
      codeHash: program.codeHash,
      migrantOf,
      alive: true,
      inArchive: false,
      eliteCell: null,
      improvement: false,
      isNew: true,
    };
    this.nodes.set(node.id, node);
    this.payloads.set(seq, storedCode ? { program, createdAt: Date.now(), storedCode: storedCode.stored } : { program, createdAt: Date.now() });
    this.touched.add(node);
    this.all.push(node);
    (this.islands[island] as Node[]).push(node);
    this.islandSizes[island] = (this.islandSizes[island] as number) + 1;
    this.countHash(island, node.codeHash, 1);
    this.aliveCount++;
    this.evictionHeap.push(node);
    if (!this.hashes.has(node.codeHash)) {
      this.hashes.add(node.codeHash);
      this.newHashes.push(node.codeHash);
    }
    if (migrantOf === null && (this.bestNode === null || node.score > this.bestNode.score)) {
      this.bestNode = node;
      node.improvement = true;
      this.state.bestId = node.id;
      // Its lineage now, before later evictions delete ancestors' rows (parents are from earlier steps: they have rows).
      const parent = node.parentId === null ? null : this.get(node.parentId);
      (this.state.lineageDepths ??= {})[node.id] = parent ? 1 + this.ancestors(parent.id).length : 0;
    }
    this.placeInGrid(node);
    if (migrantOf === null) this.offerToArchive(node);
    this.enforceCapacity(node);
    return node;
  }

  /** MAP-Elites: take an empty cell, or replace the occupant only with a higher score. */
  private placeInGrid(node: Node): void {
    const ranges = this.state.ranges;
    ranges.score = widen(ranges.score, node.score);
    ranges.codeLength = widen(ranges.codeLength, node.codeLength);
    const cell = binOf(ranges.score, node.score, this.bins) * this.bins + binOf(ranges.codeLength, node.codeLength, this.bins);
    const grid = this.grids[node.island] as Map<number, Node>;
    const occupant = grid.get(cell);
    if (occupant && !(node.score > occupant.score)) return;
    if (occupant) {
      occupant.eliteCell = null;
      this.touched.add(occupant);
    }
    grid.set(cell, node);
    node.eliteCell = cell;
  }

  /** Archive: join while there is room, else replace the worst member when better. */
  private offerToArchive(node: Node): void {
    if (this.archiveCount >= this.config.archiveSize) {
      let worst = this.archiveHeap.peek();
      while (worst && !worst.inArchive) {
        this.archiveHeap.pop();
        worst = this.archiveHeap.peek();
      }
      if (!worst || !(node.score > worst.score)) return;
      this.archiveHeap.pop();
      worst.inArchive = false;
      this.archiveCount--;
      this.touched.add(worst);
    }
    node.inArchive = true;
    this.archiveCount++;
    this.archiveHeap.push(node);
    this.archiveList.push(node);
    (this.islandArchives[node.island] as Node[]).push(node);
  }

  /** Over capacity: evict the lowest scores, never the global best nor the newest program. */
  private enforceCapacity(newest: Node): void {
    const spared: Node[] = [];
    while (this.aliveCount > this.config.populationSize) {
      const victim = this.evictionHeap.pop();
      if (!victim) break;
      if (victim === this.bestNode || victim === newest) {
        spared.push(victim);
        continue;
      }
      this.evict(victim);
    }
    for (const node of spared) this.evictionHeap.push(node);
  }

  private evict(node: Node): void {
    node.alive = false;
    this.aliveCount--;
    this.islandSizes[node.island] = (this.islandSizes[node.island] as number) - 1;
    this.countHash(node.island, node.codeHash, -1);
    if (node.inArchive) {
      node.inArchive = false;
      this.archiveCount--;
    }
    if (node.eliteCell !== null) {
      const grid = this.grids[node.island] as Map<number, Node>;
      if (grid.get(node.eliteCell) === node) grid.delete(node.eliteCell);
      node.eliteCell = null;
    }
    this.touched.add(node);
  }

  private migrationDue(): boolean {
    const { numIslands, migrationRate, migrationInterval } = this.config;
    if (numIslands < 2 || migrationRate <= 0) return false;
    return Math.max(...this.state.islandGenerations) - this.state.lastMigrationGeneration >= migrationInterval;
  }

  /**
   * Ring migration: each island's top migrationRate (at least one) of its own
   * programs is copied to both neighbours, unless the neighbour already holds
   * that code. Copies are not migrated again.
   */
  private migrate(step: number): void {
    const n = this.config.numIslands;
    const moves: { source: Node; target: number }[] = [];
    for (let island = 0; island < n; island++) {
      const own = (this.islands[island] as Node[]).filter((node) => node.alive && node.migrantOf === null).sort(betterFirst);
      if (own.length === 0) continue;
      const k = Math.max(1, Math.floor((this.islandSizes[island] as number) * this.config.migrationRate));
      const targets = [...new Set([(island + 1) % n, (island - 1 + n) % n])].filter((t) => t !== island);
      for (const source of own.slice(0, k)) for (const target of targets) moves.push({ source, target });
    }
    const copies = new Map<number, { program: NewProgram; storedCode?: StoredCode } | null>();
    for (const { source, target } of moves) {
      if ((this.islandHashes[target] as Map<string, number>).has(source.codeHash)) continue;
      let copy = copies.get(source.seq);
      if (copy === undefined) {
        copy = this.copySource(source, step);
        copies.set(source.seq, copy);
      }
      if (copy) this.insert(copy.program, target, source.id, copy.storedCode);
    }
    this.state.lastMigrationGeneration = Math.max(...this.state.islandGenerations);
    this.state.migrations++;
    this.state.lastMigrationStep = step;
  }

  /** What a migration copy of `source` holds: from this step's payload, or its row's stored columns. */
  private copySource(source: Node, step: number): { program: NewProgram; storedCode?: StoredCode } | null {
    const payload = this.payloads.get(source.seq);
    if (payload && payload.storedCode === undefined) return { program: copyOf(payload.program, source.id, step) };
    if (payload && payload.storedCode !== undefined) {
      return { program: copyOf(payload.program, source.id, step), storedCode: { stored: payload.storedCode, length: source.codeLength } };
    }
    const select = this.statement('SELECT code, objective, outcome, metrics FROM programs WHERE seq = ?');
    try {
      select.bind([source.seq]);
      if (!select.step()) return null;
      const [code, objective, outcome, metrics] = select.get();
      if (!(typeof code === 'string' || code instanceof Uint8Array) || typeof outcome !== 'string' || typeof metrics !== 'string') {
        throw new DatabaseFileError(`${this.file}: program row ${source.id} is malformed`);
      }
      const parsedMetrics = MetricsSchema.safeParse(JSON.parse(metrics));
      if (!parsedMetrics.success || !(OUTCOMES as readonly string[]).includes(outcome)) throw new DatabaseFileError(`${this.file}: program row ${source.id} is malformed`);
      const program: NewProgram = {
        parentId: source.id,
        step,
        code: '', // carried as stored in storedCode
        codeHash: source.codeHash,
        score: source.score,
        objective: typeof objective === 'number' ? objective : null,
        outcome: outcome as Outcome,
        metrics: parsedMetrics.data,
        ...NOT_GENERATED,
      };
      return { program, storedCode: { stored: code, length: source.codeLength } };
    } finally {
      select.reset();
    }
  }

  private islandOfParent(parentId: string | null): number {
    if (parentId !== null) {
      const parent = this.nodes.get(parentId);
      if (parent) return parent.island;
      const seq = seqOfId(parentId);
      const row = seq === null ? undefined : this.queryOne('SELECT island FROM programs WHERE seq = ?', [seq]);
      if (typeof row === 'number' && row >= 0 && row < this.config.numIslands) return row;
    }
    // Unknown parent: the smallest island, so islands stay balanced.
    let smallest = 0;
    for (let i = 1; i < this.islandSizes.length; i++) if ((this.islandSizes[i] as number) < (this.islandSizes[smallest] as number)) smallest = i;
    return smallest;
  }

  private countHash(island: number, hash: string, delta: 1 | -1): void {
    const counts = this.islandHashes[island] as Map<string, number>;
    const next = (counts.get(hash) ?? 0) + delta;
    if (next > 0) counts.set(hash, next);
    else counts.delete(hash);
  }

  // ---------------------------------------------------------------- storage

  /** Write what the step changed in one transaction, then drop the dead from memory. */
  private writeStep(step: { step: number; stats: unknown; engineState: unknown } | null): void {
    const touched = [...this.touched].sort((a, b) => a.seq - b.seq);
    // A program evicted in the step that added it never gets a row (unless it was a best).
    const db = this.sqlDb;
    db.run('BEGIN');
    try {
      const insertRow = this.statement(`INSERT INTO programs (${PROGRAM_COLUMNS}) VALUES (${PROGRAM_COLUMNS.split(',').map(() => '?').join(', ')})`);
      const deleteRow = this.statement('DELETE FROM programs WHERE seq = ?');
      const updateRow = this.statement('UPDATE programs SET alive = ?, in_archive = ?, elite_cell = ? WHERE seq = ?');
      for (const node of touched) {
        if (node.isNew) {
          if (!node.alive && !node.improvement) continue;
          const { program, createdAt, storedCode } = this.payloads.get(node.seq) as Payload;
          runStatement(insertRow, [
            node.seq,
            node.id,
            node.parentId,
            node.island,
            node.step,
            node.score,
            program.objective,
            program.outcome,
            node.codeLength,
            node.codeHash,
            storedCode ?? encodeText(program.code),
            JSON.stringify(program.metrics),
            program.metaInfoId,
            encodeText(program.response),
            encodeText(program.reasoning),
            program.generationMs,
            program.evaluationMs,
            program.promptTokens,
            program.completionTokens,
            createdAt,
            node.migrantOf,
            node.alive ? 1 : 0,
            node.inArchive ? 1 : 0,
            node.eliteCell,
            node.improvement ? 1 : 0,
          ]);
        } else if (!node.alive && !node.improvement) {
          runStatement(deleteRow, [node.seq]);
        } else {
          runStatement(updateRow, [node.alive ? 1 : 0, node.inArchive ? 1 : 0, node.eliteCell, node.seq]);
        }
      }
      const insertHash = this.statement('INSERT OR IGNORE INTO code_hashes (hash) VALUES (?)');
      for (const hash of this.newHashes) runStatement(insertHash, [hash]);
      const setMeta = this.statement('INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)');
      runStatement(setMeta, ['state', JSON.stringify(this.state)]);
      if (step) {
        runStatement(setMeta, ['engine_state', JSON.stringify(step.engineState ?? null)]);
        runStatement(this.statement('INSERT INTO steps (step, committed_at, stats) VALUES (?, ?, ?)'), [
          step.step,
          Date.now(),
          JSON.stringify(step.stats ?? null),
        ]);
      }
      if (this.metaDirty) runStatement(setMeta, ['run_meta', JSON.stringify(this.runMeta)]);
      db.run('COMMIT');
    } catch (err) {
      try {
        db.run('ROLLBACK');
      } catch {
        // No transaction left to roll back.
      }
      throw err;
    }
    if (step) this.stepCount++;
    this.metaDirty = false;
    this.settleStep();
  }

  /** Forget the dead and the step's payloads; keep every list in insertion order. */
  private settleStep(): void {
    for (const node of this.touched) {
      node.isNew = false;
      if (!node.alive) this.nodes.delete(node.id);
    }
    this.touched.clear();
    this.payloads.clear();
    this.newHashes = [];
    this.all = this.all.filter((n) => n.alive);
    this.islands = this.islands.map((nodes) => nodes.filter((n) => n.alive));
    this.archiveList = this.archiveList.filter((n) => n.inArchive);
    this.islandArchives = this.islandArchives.map((nodes) => nodes.filter((n) => n.inArchive));
    if (this.archiveHeap.length > 2 * this.config.archiveSize + 64) this.archiveHeap.retain((n) => n.inArchive);
  }

  private async persist(): Promise<void> {
    const data = this.sqlDb.export();
    await writeFileAtomic(this.file, data);
    this.lastFileBytes = data.length;
  }

  private statement(sql: string): Statement {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.sqlDb.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  private queryOne(sql: string, params: SqlValue[]): SqlValue | undefined {
    const select = this.statement(sql);
    try {
      select.bind(params);
      return select.step() ? select.get()[0] : undefined;
    } finally {
      select.reset();
    }
  }

  private readProgram(seq: number): ProgramRecord | null {
    const select = this.statement(`SELECT ${PROGRAM_COLUMNS} FROM programs WHERE seq = ?`);
    try {
      select.bind([seq]);
      return select.step() ? this.decodeRow(select.get()) : null;
    } finally {
      select.reset();
    }
  }

  private readPrograms(sql: string): ProgramRecord[] {
    const select = this.sqlDb.prepare(sql);
    const out: ProgramRecord[] = [];
    try {
      while (select.step()) out.push(this.decodeRow(select.get()));
    } finally {
      select.free();
    }
    return out;
  }

  private decodeRow(row: SqlValue[]): ProgramRecord {
    const parsed = ProgramRowSchema.safeParse(row);
    const bad = (why: string): DatabaseFileError => new DatabaseFileError(`${this.file}: program row ${String(row[1])} is malformed (${why})`);
    if (!parsed.success) throw bad(parsed.error.issues[0]?.message ?? 'bad columns');
    const [, id, parentId, island, step, score, objective, outcome, , codeHash, code, metrics, metaInfoId, response, reasoning,
      generationMs, evaluationMs, promptTokens, completionTokens, createdAt, migrantOf] = parsed.data;
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
    };
  }

  private recordOf(node: Node, program: NewProgram): ProgramRecord {
    const createdAt = this.payloads.get(node.seq)?.createdAt ?? Date.now();
    // Field by field: an object spread is several times slower on this hot path.
    return {
      id: node.id,
      parentId: program.parentId,
      island: node.island,
      step: program.step,
      code: program.code,
      codeHash: program.codeHash,
      score: program.score,
      objective: program.objective,
      outcome: program.outcome,
      metrics: program.metrics,
      metaInfoId: program.metaInfoId,
      response: program.response,
      reasoning: program.reasoning,
      generationMs: program.generationMs,
      evaluationMs: program.evaluationMs,
      promptTokens: program.promptTokens,
      completionTokens: program.completionTokens,
      createdAt,
      migrantOf: node.migrantOf,
    };
  }

  private assertOpen(): void {
    if (this.closed) throw new Error(`${this.file}: the database is closed`);
  }

  private assertWritable(): void {
    this.assertOpen();
    if (this.readOnly) throw new Error(`${this.file} was opened read-only`);
    if (this.busy) throw new Error(`${this.file}: another write is in progress (await each commit)`);
    if (this.broken !== null) throw new Error(`${this.file}: a write failed (${this.broken}); reopen the database to resume from the last committed step`);
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

/** A copy (migration, island seeding) was not generated: no prompt, response or cost of its own. */
const NOT_GENERATED = {
  metaInfoId: null,
  response: null,
  reasoning: null,
  generationMs: 0,
  evaluationMs: 0,
  promptTokens: 0,
  completionTokens: 0,
} as const;

/** The copy migration (or island seeding) makes: same code and score, no generation cost. */
function copyOf(program: NewProgram, sourceId: string, step: number): NewProgram {
  return {
    parentId: sourceId,
    step,
    code: program.code,
    codeHash: program.codeHash,
    score: program.score,
    objective: program.objective,
    outcome: program.outcome,
    metrics: program.metrics,
    ...NOT_GENERATED,
  };
}

function validateProgram(program: NewProgram, step: number): void {
  const fail = (why: string): never => {
    throw new Error(`Program for step ${step} cannot enter the database: ${why}`);
  };
  if (program.step !== step) fail(`its step is ${program.step}`);
  if (!STORED_OUTCOMES.has(program.outcome)) fail(`outcome '${program.outcome}' never enters the database (only evaluated new code does)`);
  if (!Number.isFinite(program.score)) fail(`score ${program.score} is not finite`);
  if (typeof program.codeHash !== 'string' || program.codeHash === '') fail('codeHash is empty');
  if (typeof program.code !== 'string') fail('code is not text');
  if (program.objective !== null && !Number.isFinite(program.objective)) fail('objective is not finite');
}

async function readIfExists(file: string): Promise<Uint8Array | null> {
  try {
    const data = await fs.readFile(file);
    return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new DatabaseFileError(`${file}: cannot read (${describe(err)})`);
  }
}
