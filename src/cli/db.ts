// `thetaevolve db <db-file> [--json]`: summarise a run database, read-only.
import { open, realpath } from 'node:fs/promises';
import * as path from 'node:path';
import { writeFileAtomic } from '../engine/database/atomicFile';
import { DatabaseFileError, ProgramDatabase } from '../engine/database/programDatabase';
import { SQLITE_HEADER } from '../engine/database/schema';
import { errorMessage } from '../engine/common/errors';
import { formatScore } from '../engine/common/format';
import { booleanFlag, type ParsedArgs, stringFlag, UsageError } from './args';
import { type CliIO, InputError } from './io';

export async function dbCommand(args: ParsedArgs, io: CliIO): Promise<number> {
  const file = path.resolve(io.cwd, args.positionals[0] as string);
  let db: ProgramDatabase;
  try {
    db = await ProgramDatabase.openReadOnly(file);
  } catch (err) {
    if (err instanceof DatabaseFileError) throw new InputError(err.message, { cause: err });
    throw err;
  }
  try {
    if (booleanFlag(args, 'best')) return await writeBest(db, file, args, io);
    if (stringFlag(args, 'output') !== undefined) throw new UsageError('--output goes with --best');
    const summary = db.summary();
    const snapshot = db.stateSnapshot();
    const report = {
      file,
      ...summary,
      lastStep: db.lastStep,
      populationSize: db.config.populationSize,
      archiveCapacity: db.config.archiveSize,
      archiveScores: snapshot.archive.minScore === null ? null : { min: snapshot.archive.minScore, max: snapshot.archive.maxScore },
      mapElitesOccupancy: snapshot.mapElites.islands.map((island) => island.occupied),
      migrations: snapshot.migrations.count,
      codeHashes: snapshot.hashIndexSize,
      improvements: db.improvements().map((p) => ({ id: p.id, step: p.step, score: p.score })),
      bytes: db.fileBytes,
    };
    if (booleanFlag(args, 'json')) {
      io.stdout(JSON.stringify(report) + '\n');
      return 0;
    }
    const best = summary.best ? `${formatScore(summary.best.score)} (program ${summary.best.id})` : 'none';
    const lines = [
      `Run database ${file} (${(report.bytes / 1e6).toFixed(1)} MB)`,
      `  programs      ${summary.programs} of ${report.populationSize}`,
      `  steps         ${summary.steps} committed (last step ${report.lastStep})`,
      `  best          ${best}`,
      `  islands       ${summary.islands.join(' / ')}`,
      `  archive       ${summary.archive} of ${report.archiveCapacity}` +
        (report.archiveScores
          ? `, scores ${formatScore(report.archiveScores.min)} .. ${formatScore(report.archiveScores.max ?? report.archiveScores.min)}`
          : ''),
      `  MAP-Elites    ${report.mapElitesOccupancy.join(' / ')} cells occupied of ${snapshot.mapElites.bins * snapshot.mapElites.bins} per island`,
      `  migrations    ${report.migrations}`,
      `  code hashes   ${report.codeHashes} (every program ever added)`,
      `  improvements  ${report.improvements.length}` +
        (report.improvements.length > 0 ? ` (latest: step ${report.improvements[report.improvements.length - 1]?.step})` : ''),
    ];
    io.stdout(lines.join('\n') + '\n');
    return 0;
  } finally {
    await db.close();
  }
}

/** `db --best`: the best program's code on stdout, or in --output FILE (with a line on stderr saying what was written). */
async function writeBest(db: ProgramDatabase, file: string, args: ParsedArgs, io: CliIO): Promise<number> {
  const best = db.best();
  if (!best) throw new InputError(`${file} has no valid program yet`);
  const output = stringFlag(args, 'output');
  if (booleanFlag(args, 'json')) {
    if (output !== undefined) await writeProgram(path.resolve(io.cwd, output), best.code, file);
    io.stdout(
      JSON.stringify({
        id: best.id,
        step: best.step,
        score: best.score,
        objective: best.objective,
        output: output === undefined ? null : path.resolve(io.cwd, output),
        code: best.code,
      }) + '\n',
    );
    return 0;
  }
  if (output === undefined) {
    io.stdout(best.code.endsWith('\n') ? best.code : `${best.code}\n`);
    return 0;
  }
  const target = path.resolve(io.cwd, output);
  await writeProgram(target, best.code, file);
  io.stderr(`thetaevolve db: wrote the best program ${best.id} (step ${best.step}, score ${formatScore(best.score)}) to ${target}\n`);
  return 0;
}

/**
 * Write the program atomically (a full disk leaves the old file whole), and
 * never over a database: `--output RUN.sqlite` would replace a run with code.
 */
async function writeProgram(target: string, code: string, dbFile: string): Promise<void> {
  const [targetPath, dbPath] = await Promise.all([realpath(target).catch(() => target), realpath(dbFile).catch(() => dbFile)]);
  if (targetPath === dbPath || (await startsWithSqliteHeader(target))) {
    throw new InputError(
      `refusing to write the program over ${target}: it is a SQLite database${targetPath === dbPath ? ' (the run being read)' : ''}; give --output another file`,
    );
  }
  await writeFileAtomic(target, code).catch((err: unknown) => {
    throw new InputError(`cannot write ${target}: ${errorMessage(err)}`, { cause: err });
  });
}

async function startsWithSqliteHeader(file: string): Promise<boolean> {
  const handle = await open(file, 'r').catch(() => null);
  if (!handle) return false;
  try {
    const header = Buffer.alloc(SQLITE_HEADER.length);
    const { bytesRead } = await handle.read(header, 0, header.length, 0);
    return bytesRead === header.length && header.toString('latin1') === SQLITE_HEADER;
  } finally {
    await handle.close();
  }
}
