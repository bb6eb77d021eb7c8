// `thetaevolve db <db-file> [--json]`: summarise a run database, read-only.
import { booleanFlag, type ParsedArgs } from './args';
import { type CliIO, InputError } from './io';
import * as path from 'node:path';
import { DatabaseFileError, ProgramDatabase } from '../engine/database/programDatabase';

export async function dbCommand(args: ParsedArgs, io: CliIO): Promise<number> {
  const file = path.resolve(io.cwd, args.positionals[0] as string);
  let db: ProgramDatabase;
  try {
    db = await ProgramDatabase.openReadOnly(file);
  } catch (err) {
    if (err instanceof DatabaseFileError) throw new InputError(err.message);
    throw err;
  }
  try {
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
        (report.archiveScores ? `, scores ${formatScore(report.archiveScores.min)} .. ${formatScore(report.archiveScores.max ?? report.archiveScores.min)}` : ''),
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

function formatScore(score: number): string {
  return String(Number(score.toPrecision(6)));
}
