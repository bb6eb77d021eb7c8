// `thetaevolve db <db-file> [--json]`: summarise a run database, read-only;
// or write its best program (--best), a program's lineage (--lineage) or
// the blame of its lines (--blame).
import { operatorReport, operatorReportLines } from '../engine/operators/report';
import { open, realpath } from 'node:fs/promises';
import * as path from 'node:path';
import { writeFileAtomic } from '../engine/database/atomicFile';
import { DatabaseFileError, ProgramDatabase } from '../engine/database/programDatabase';
import { SQLITE_HEADER } from '../engine/database/schema';
import { errorMessage } from '../engine/common/errors';
import { formatScore, NO_VALID_PROGRAM } from '../engine/common/format';
import { formatUsd, modelTableLines } from '../engine/common/models';
import { forDisplay, jsonForTerminal } from '../engine/common/displayText';
import { blameOf, lineageOf, resolveProgram } from '../engine/database/lineage';
import { steerAuthorOf } from '../engine/common/steering';
import { pythonOfRunMeta } from '../engine/common/runMeta';
import { describePythonEnvironment } from '../engine/common/pythonEnvironment';
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
    if (stringFlag(args, 'output') !== undefined && !booleanFlag(args, 'best')) throw new UsageError('--output goes with --best');
    const lineage = stringFlag(args, 'lineage');
    const blame = stringFlag(args, 'blame');
    if ([booleanFlag(args, 'best'), lineage !== undefined, blame !== undefined].filter(Boolean).length > 1)
      throw new UsageError('--best, --lineage and --blame go one at a time');
    if (lineage !== undefined) return writeLineage(db, file, lineage, args, io);
    if (blame !== undefined) return writeBlame(db, file, blame, args, io);
    if (booleanFlag(args, 'best')) return await writeBest(db, file, args, io);
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
      origins: db.origins(),
      guidance: db.guidanceHistory(),
      // Every steering entry in the order applied, with who asked (`by`: researcher or agent; the model for the meta-recommendations it wrote).
      steering: db
        .steeringLog()
        .map((entry) => ({ ...entry, by: entry.kind === 'recommendations' ? (entry.editedBy ?? 'model') : steerAuthorOf(entry) })),
      banned: db.bannedIds(),
      pins: db.pins(),
      bytes: db.fileBytes,
      // What results depend on: the interpreter and package versions the run's Python had (null: not recorded).
      python: pythonOfRunMeta(db.meta()),
      ...operatorReport(db),
      // Several models and cost (docs/algorithm.md section 12): the run's spend and one row per model.
      ...db.modelUsage(),
    };
    if (booleanFlag(args, 'json')) {
      io.stdout(jsonForTerminal(report) + '\n');
      return 0;
    }
    const best = summary.best ? `${formatScore(summary.best.score)} (program ${summary.best.id})` : NO_VALID_PROGRAM;
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
      `  MAP-Elites    ${report.mapElitesOccupancy.join(' / ')} cells occupied of ${snapshot.mapElites.axes ? snapshot.mapElites.axes.reduce((cells, axis) => cells * axis.bins, 1) : snapshot.mapElites.bins * snapshot.mapElites.bins} per island${snapshot.mapElites.axes ? ` (axes ${snapshot.mapElites.axes.map((axis) => `${axis.metric}: ${axis.bins} bins`).join(', ')})` : ''}`,
      `  migrations    ${report.migrations}`,
      `  code hashes   ${report.codeHashes} (every program ever added)`,
      `  improvements  ${report.improvements.length}` +
        (report.improvements.length > 0 ? ` (latest: step ${report.improvements[report.improvements.length - 1]?.step})` : ''),
      `  origins       ${Object.entries(report.origins)
        .map(([origin, n]) => `${n} ${origin}`)
        .join(', ')}`,
    ];
    const guidance = report.guidance[report.guidance.length - 1];
    if (guidance)
      lines.push(
        `  guidance      ${guidance.text === null ? `cleared at step ${guidance.step}` : `from step ${guidance.step}: ${forDisplay(guidance.text).split('\n')[0]}`}${guidance.by === 'agent' ? ' (by the agent)' : ''}`,
      );
    if (report.python) lines.push(`  python        ${describePythonEnvironment(report.python)}`);
    lines.push(...operatorReportLines(report));
    if (report.costUsd !== null) lines.push(`  spent         ${formatUsd(report.costUsd)}`);
    lines.push(...modelTableLines(report.models).map((line) => `  ${line}`));
    if (report.banned.length > 0) lines.push(`  banned        ${report.banned.join(', ')}`);
    for (const pin of report.pins)
      lines.push(`  pinned        ${pin.id}: ${pin.share} of the prompts, steps ${pin.fromStep}..${pin.toStep}`);
    io.stdout(forDisplay(lines.join('\n')) + '\n');
    return 0;
  } finally {
    await db.close();
  }
}

function programOf(db: ProgramDatabase, file: string, id: string) {
  const program = resolveProgram(db, id);
  if (!program) throw new InputError(id === 'best' ? `${file} has no valid program yet` : `no program ${id} in ${file}`);
  return program;
}

/** `db --lineage ID|best`: the program, then each parent back to the starting program. */
function writeLineage(db: ProgramDatabase, file: string, id: string, args: ParsedArgs, io: CliIO): number {
  const lineage = lineageOf(db, programOf(db, file, id));
  if (booleanFlag(args, 'json')) {
    io.stdout(jsonForTerminal(lineage) + '\n');
    return 0;
  }
  const lines = lineage.programs.map(
    (p) =>
      `${p.id.padEnd(8)} step ${String(p.step).padEnd(6)} ${formatScore(p.score).padEnd(14)} ${p.origin}${p.secondParentId ? ` (crossover with ${p.secondParentId})` : ''}`,
  );
  if (!lineage.complete) lines.push('(older ancestors were evicted before this database kept lineage rows: their rows are gone)');
  io.stdout(forDisplay(lines.join('\n')) + '\n');
  return 0;
}

/** `db --blame ID|best`: each line of the program with the program of its lineage that brought it. */
function writeBlame(db: ProgramDatabase, file: string, id: string, args: ParsedArgs, io: CliIO): number {
  const blame = blameOf(db, programOf(db, file, id));
  if (booleanFlag(args, 'json')) {
    io.stdout(jsonForTerminal(blame) + '\n');
    return 0;
  }
  const width = Math.max(...blame.lines.map((l) => l.id.length), 2);
  const lines = blame.lines.map((l) => `${l.id.padEnd(width)} ${`s${l.step}`.padEnd(6)} ${l.origin.padEnd(10)} ${forDisplay(l.text)}`);
  io.stdout(forDisplay(lines.join('\n')) + '\n');
  return 0;
}

/** `db --best`: the best program's code on stdout, or in --output FILE (with a line on stderr saying what was written). */
async function writeBest(db: ProgramDatabase, file: string, args: ParsedArgs, io: CliIO): Promise<number> {
  const best = db.best();
  if (!best) throw new InputError(`${file} has no valid program yet`);
  const output = stringFlag(args, 'output');
  if (booleanFlag(args, 'json')) {
    if (output !== undefined) await writeProgram(path.resolve(io.cwd, output), best.code, file);
    io.stdout(
      jsonForTerminal({
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
