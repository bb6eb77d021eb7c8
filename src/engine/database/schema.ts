// The on-disk format of a run database: tables, the meta rows that identify
// the file, and zod schemas for everything read back from it.
import { z } from 'zod';
import { ThetaEvolveError } from '../common/errors';
import { PROGRAM_ORIGINS } from '../common/steering';
import { MAX_FEATURE_DIMENSIONS } from '../operators/features';

export const MAGIC = 'thetaevolve-program-database';
/**
 * 2: programs gained origin and note, and the steering log (interactive evolution);
 * 3: the lineage table (evicted ancestors). Older files are upgraded on open.
 */
export const SCHEMA_VERSION = 3;
export const SQLITE_HEADER = 'SQLite format 3\u0000';

/** A run database that cannot be used: not SQLite, not ours, damaged or newer. Never overwritten. */
export class DatabaseFileError extends ThetaEvolveError {
  override readonly name = 'DatabaseFileError';
}

/**
 * An evicted program that is still an ancestor of a kept one: its row less
 * what only its own step needs (response, reasoning) and its place in the
 * population, which it left.
 */
const LINEAGE_TABLE_COLUMNS = `seq INTEGER PRIMARY KEY, id TEXT NOT NULL, parent_id TEXT, island INTEGER NOT NULL, step INTEGER NOT NULL,
  score REAL NOT NULL, objective REAL, outcome TEXT NOT NULL, code_length INTEGER NOT NULL, code_hash TEXT NOT NULL, code,
  metrics TEXT NOT NULL, meta_info_id TEXT, generation_ms REAL NOT NULL, evaluation_ms REAL NOT NULL, prompt_tokens INTEGER NOT NULL,
  completion_tokens INTEGER NOT NULL, created_at INTEGER NOT NULL, migrant_of TEXT, origin TEXT NOT NULL, note TEXT`;

/** The columns a lineage row shares with its program's row. */
export const LINEAGE_COLUMNS =
  'seq, id, parent_id, island, step, score, objective, outcome, code_length, code_hash, code, metrics, meta_info_id, ' +
  'generation_ms, evaluation_ms, prompt_tokens, completion_tokens, created_at, migrant_of, origin, note';

/** A lineage row read as PROGRAM_COLUMNS (no response or reasoning; not alive, in no archive or cell). */
export const LINEAGE_AS_PROGRAM_COLUMNS =
  'seq, id, parent_id, island, step, score, objective, outcome, code_length, code_hash, code, metrics, meta_info_id, NULL, NULL, ' +
  'generation_ms, evaluation_ms, prompt_tokens, completion_tokens, created_at, migrant_of, 0, 0, NULL, 0, origin, note';

export const SCHEMA_SQL = `
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE programs (
  seq INTEGER PRIMARY KEY,          -- id = seq in base 36
  id TEXT NOT NULL,
  parent_id TEXT,
  island INTEGER NOT NULL,
  step INTEGER NOT NULL,
  score REAL NOT NULL,
  objective REAL,
  outcome TEXT NOT NULL,
  code_length INTEGER NOT NULL,
  code_hash TEXT NOT NULL,
  code,                             -- TEXT, or BLOB holding zlib-compressed UTF-8
  metrics TEXT NOT NULL,            -- JSON object
  meta_info_id TEXT,
  response,                         -- TEXT, zlib BLOB or NULL
  reasoning,                        -- TEXT, zlib BLOB or NULL
  generation_ms REAL NOT NULL,
  evaluation_ms REAL NOT NULL,
  prompt_tokens INTEGER NOT NULL,
  completion_tokens INTEGER NOT NULL,
  created_at INTEGER NOT NULL,      -- ms since the epoch
  migrant_of TEXT,                  -- the program this is a migration copy of
  alive INTEGER NOT NULL,           -- 1: in the population; 0: evicted, kept as a past best
  in_archive INTEGER NOT NULL,
  elite_cell INTEGER,               -- MAP-Elites cell it holds in its island, if any
  improvement INTEGER NOT NULL,     -- 1: was the new global best when added
  origin TEXT NOT NULL,             -- initial | model | researcher | migration | agent (ProgramOrigin)
  note TEXT                         -- a researcher's note on a program they added
);
CREATE TABLE code_hashes (hash TEXT PRIMARY KEY) WITHOUT ROWID; -- every program ever added
CREATE TABLE steps (step INTEGER PRIMARY KEY, committed_at INTEGER NOT NULL, stats TEXT NOT NULL);
CREATE TABLE steering (seq INTEGER PRIMARY KEY, step INTEGER NOT NULL, entry TEXT NOT NULL, created_at INTEGER NOT NULL); -- SteeringEntry JSON, in order applied
CREATE TABLE lineage (${LINEAGE_TABLE_COLUMNS}); -- evicted ancestors of kept programs (ancestry.ts)
CREATE VIEW population AS
  SELECT id, parent_id, island, step, score, objective, outcome, code_length, in_archive, elite_cell
  FROM programs WHERE alive = 1;
`;

export const PROGRAM_COLUMNS =
  'seq, id, parent_id, island, step, score, objective, outcome, code_length, code_hash, code, metrics, meta_info_id, response, reasoning, ' +
  'generation_ms, evaluation_ms, prompt_tokens, completion_tokens, created_at, migrant_of, alive, in_archive, elite_cell, improvement, origin, note';

/**
 * Upgrades a version 1 database to this version, in memory (a read-only open
 * never writes it back): the origin of each program as version 1 implied it
 * (a copy names its source; the initial program has no parent), no notes, an
 * empty steering log.
 */
export const UPGRADE_FROM_1_SQL = `
ALTER TABLE programs ADD COLUMN origin TEXT NOT NULL DEFAULT 'model';
ALTER TABLE programs ADD COLUMN note TEXT;
UPDATE programs SET origin = 'migration' WHERE migrant_of IS NOT NULL;
UPDATE programs SET origin = 'initial' WHERE migrant_of IS NULL AND parent_id IS NULL;
CREATE TABLE steering (seq INTEGER PRIMARY KEY, step INTEGER NOT NULL, entry TEXT NOT NULL, created_at INTEGER NOT NULL);
UPDATE meta SET value = '2' WHERE key = 'schema_version';
`;

/** Upgrades a version 2 database (in memory, as UPGRADE_FROM_1_SQL): an empty lineage table; evictions are kept from then on. */
export const UPGRADE_FROM_2_SQL = `
CREATE TABLE lineage (${LINEAGE_TABLE_COLUMNS});
UPDATE meta SET value = '3' WHERE key = 'schema_version';
`;

export const DatabaseConfigSchema = z
  .object({
    populationSize: z.number().int().min(1),
    archiveSize: z.number().int().min(1),
    numIslands: z.number().int().min(1),
    migrationInterval: z.number().int().min(1),
    migrationRate: z.number().min(0).max(1),
    explorationRatio: z.number().min(0).max(1),
    exploitationRatio: z.number().min(0).max(1),
    seed: z.number().int().min(0).max(4294967295),
    /** A task's behaviour dimensions (operators/features.ts); absent: score and code length, as the paper. */
    features: z
      .array(z.object({ metric: z.string().min(1), bins: z.number().int().min(1).max(1000) }))
      .min(1)
      .max(MAX_FEATURE_DIMENSIONS)
      .optional(),
  })
  .refine((c) => c.explorationRatio + c.exploitationRatio <= 1 + 1e-9, {
    message: 'explorationRatio + exploitationRatio must be at most 1',
  });

const RangeSchema = z.object({ min: z.number(), max: z.number() }).nullable();

/** Everything besides the rows that a resumed run needs to continue exactly. */
export const DatabaseStateSchema = z.object({
  lastStep: z.number().int().min(-1),
  nextSeq: z.number().int().min(0),
  rng: z.tuple([z.number().int(), z.number().int(), z.number().int(), z.number().int()]),
  turn: z.number().int().min(0),
  bestId: z.string().nullable(),
  ranges: z.object({ score: RangeSchema, codeLength: RangeSchema, features: z.array(RangeSchema).optional() }),
  islandGenerations: z.array(z.number().int().min(0)),
  lastMigrationGeneration: z.number().int().min(0),
  migrations: z.number().int().min(0),
  lastMigrationStep: z.number().int().nullable(),
  /** Ancestors each past best had when it was added (evicted ancestors lose their rows, so they cannot be counted later). */
  lineageDepths: z.record(z.string(), z.number().int().min(0)).optional(),
});
export type DatabaseState = z.infer<typeof DatabaseStateSchema>;

export const MetricsSchema = z.record(z.string(), z.union([z.number(), z.string(), z.boolean(), z.null()]));

const storedText = z.union([z.string(), z.instanceof(Uint8Array)]);
const int = z.number().int();

/** One full row of `programs` in PROGRAM_COLUMNS order. */
export const ProgramRowSchema = z.tuple([
  int, // seq
  z.string(), // id
  z.string().nullable(), // parent_id
  int, // island
  int, // step
  z.number(), // score
  z.number().nullable(), // objective
  z.string(), // outcome
  int, // code_length
  z.string(), // code_hash
  storedText, // code
  z.string(), // metrics
  z.string().nullable(), // meta_info_id
  storedText.nullable(), // response
  storedText.nullable(), // reasoning
  z.number(), // generation_ms
  z.number(), // evaluation_ms
  int, // prompt_tokens
  int, // completion_tokens
  int, // created_at
  z.string().nullable(), // migrant_of
  int, // alive
  int, // in_archive
  int.nullable(), // elite_cell
  int, // improvement
  z.enum(PROGRAM_ORIGINS), // origin
  z.string().nullable(), // note
]);

/** The light columns loaded for every live program on open. */
export const NODE_COLUMNS =
  'seq, id, parent_id, island, step, score, code_length, code_hash, migrant_of, in_archive, elite_cell, improvement';
export const NodeRowSchema = z.tuple([
  int,
  z.string(),
  z.string().nullable(),
  int,
  int,
  z.number(),
  int,
  z.string(),
  z.string().nullable(),
  int,
  int.nullable(),
  int,
]);
