// Novelty rejection's vectors in the run database (docs/algorithm.md section
// 12): int8 bytes by code hash (operators/novelty/vectors.ts) in a table of
// their own, made on first use, so no schema version changes: a file without
// it simply has none. Those of programs that left the population are dropped.
import type { Database as SqlDatabase } from 'sql.js';

// A rowid table: WITHOUT ROWID stores kilobyte rows in its b-tree pages themselves, three times the size on disk.
const TABLE_SQL = 'CREATE TABLE IF NOT EXISTS program_embeddings (code_hash TEXT PRIMARY KEY, vector BLOB NOT NULL)';

/** Inside the caller's transaction: the new vectors in, those of programs no longer live out. */
export function writeEmbeddingRows(sqlDb: SqlDatabase, embeddings: ReadonlyMap<string, Uint8Array>): void {
  sqlDb.run(TABLE_SQL);
  const insert = sqlDb.prepare('INSERT OR REPLACE INTO program_embeddings (code_hash, vector) VALUES (?, ?)');
  try {
    for (const [hash, vector] of embeddings) insert.run([hash, vector]);
  } finally {
    insert.free();
  }
  sqlDb.run('DELETE FROM program_embeddings WHERE code_hash NOT IN (SELECT code_hash FROM programs WHERE alive = 1)');
}

/** The stored vectors by code hash (none in a file that never had novelty rejection on). */
export function readEmbeddingRows(sqlDb: SqlDatabase): Map<string, Uint8Array> {
  const out = new Map<string, Uint8Array>();
  const table = sqlDb.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'program_embeddings'");
  if ((table[0]?.values.length ?? 0) === 0) return out;
  const select = sqlDb.prepare('SELECT code_hash, vector FROM program_embeddings');
  try {
    while (select.step()) {
      const [hash, vector] = select.get();
      if (typeof hash === 'string' && vector instanceof Uint8Array) out.set(hash, vector);
    }
  } finally {
    select.free();
  }
  return out;
}
