// What a file must be before a run database's query touches it (docs/architecture.md "Run files"):
// within the size cap, its schema plain tables with no view, trigger or virtual table of its own,
// and not marked read-only when a run would write it.
import * as fs from 'node:fs/promises';
import type { Database as SqlDatabase } from 'sql.js';
import { readOnlyMark } from './atomicFile';
import { DatabaseFileError, SCHEMA_SQL } from './schema';

function describe(err: unknown): string {
  return err instanceof Error ? (err.message.split('\n')[0] ?? err.message) : String(err);
}

const normalSql = (sql: string): string => sql.replace(/\s+/g, ' ').replace(/;\s*$/, '').trim();
/** The one view a run database has (`population`, for people reading it with sqlite3), exactly as our schema writes it. */
const OWN_VIEW_SQL = normalSql(/CREATE VIEW population AS[^;]*;/.exec(SCHEMA_SQL)?.[0] ?? '');

/**
 * Why the database's schema is not one a query may touch, or null: `meta` and `programs` must be plain tables, and
 * no view, trigger or virtual table may be there (a view other than our own runs its own query, a trigger runs on
 * our writes, a virtual table calls a module). Read from sqlite_master alone, which runs nothing of the file's.
 */
export function schemaProblem(sqlDb: SqlDatabase): string | null {
  const rows = sqlDb.exec('SELECT type, name, sql FROM sqlite_master')[0]?.values ?? [];
  const objects = rows.map(([type, name, sql]) => ({ type: String(type), name: String(name), sql: typeof sql === 'string' ? sql : '' }));
  const foreign = objects.find((o) => o.type === 'trigger' || (o.type === 'view' && normalSql(o.sql) !== OWN_VIEW_SQL));
  if (foreign) return `it holds a ${foreign.type} (${foreign.name}), which no run database has`;
  const virtual = objects.find((o) => o.type === 'table' && /^\s*CREATE\s+VIRTUAL\s+TABLE/i.test(o.sql));
  if (virtual) return `it holds a virtual table (${virtual.name}), which no run database has`;
  for (const table of ['meta', 'programs']) {
    const found = objects.find((o) => o.name.toLowerCase() === table);
    if (found && found.type !== 'table') return `its ${table} is a ${found.type}, not a table`;
  }
  return null;
}

/** Far above any run's database (its population and one row per step), far below what sql.js can hold in memory. */
export const RUN_DATABASE_MAX_BYTES = 1024 * 1024 * 1024;

/** A run database marked read-only is not written, as root too: said before anything runs (see atomicFile.ts). */
export async function refuseReadOnly(file: string): Promise<void> {
  const mark = readOnlyMark((await fs.stat(file)).mode);
  if (mark) {
    throw new DatabaseFileError(
      `${file} is ${mark}, so no run writes it: make it writable (chmod u+w) to resume or steer it; Open Dashboard and \`thetaevolve db\` still read it`,
    );
  }
}

export async function readIfExists(file: string): Promise<Uint8Array | null> {
  try {
    const stats = await fs.stat(file);
    if (stats.isFile() && stats.size > RUN_DATABASE_MAX_BYTES)
      throw new DatabaseFileError(
        `${file} is not a usable ThetaEvolve run database (it is ${stats.size} bytes, over the ${RUN_DATABASE_MAX_BYTES} a run database may hold); it was left untouched`,
      );
    const data = await fs.readFile(file);
    return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    if (err instanceof DatabaseFileError) throw err;
    throw new DatabaseFileError(`${file}: cannot read (${describe(err)})`);
  }
}
