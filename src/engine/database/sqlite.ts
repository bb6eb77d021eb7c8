// One initialised sql.js module per process. The wasm sits next to the
// running bundle in dist/ (the build copies it there); from sources and tests
// it comes from node_modules.
import * as fs from 'node:fs';
import * as path from 'node:path';
import initSqlJs, { type SqlJsStatic } from 'sql.js';
import { errorMessage } from '../common/errors';

const WASM_FILE = 'sql-wasm.wasm';

/** Where sql-wasm.wasm is: beside the bundle first, else the sql.js package. */
export function locateSqlWasm(): string {
  const besideBundle = path.join(__dirname, WASM_FILE);
  if (fs.existsSync(besideBundle)) return besideBundle;
  return require.resolve('sql.js/dist/sql-wasm.wasm');
}

let shared: Promise<SqlJsStatic> | null = null;

export function loadSqlJs(): Promise<SqlJsStatic> {
  if (!shared) {
    const wasmPath = locateSqlWasm();
    shared = initSqlJs({ locateFile: () => wasmPath }).catch((err: unknown) => {
      shared = null;
      throw new Error(`Could not load SQLite (sql.js) from ${wasmPath}: ${errorMessage(err)}`);
    });
  }
  return shared;
}
