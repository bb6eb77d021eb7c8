// `thetaevolve report <db> [<db>...] --output FILE.html [--png FILE.png] [--json]`:
// runs compared in one self-contained HTML file (docs/architecture.md
// "Comparing runs"), a picture of their progress, or the comparison as JSON.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { bestText } from '../engine/common/format';
import { describePythonEnvironment } from '../engine/common/pythonEnvironment';
import { forDisplay, jsonForTerminal } from '../engine/common/displayText';
import { progressLayout, type RunComparison } from '../engine/common/runComparison';
import { writeFileAtomic } from '../engine/database/atomicFile';
import { compareRunFiles } from '../engine/database/runComparison';
import { DatabaseFileError } from '../engine/database/schema';
import { booleanFlag, type ParsedArgs, stringFlag, UsageError } from './args';
import { findChromium, NO_CHROMIUM_MESSAGE, renderPicture } from './chromiumPicture';
import { type CliIO, InputError } from './io';
import { readReportAssets, reportHtml } from './reportHtml';

export async function reportCommand(args: ParsedArgs, io: CliIO): Promise<number> {
  const output = stringFlag(args, 'output');
  const png = stringFlag(args, 'png');
  const json = booleanFlag(args, 'json');
  if (output === undefined && png === undefined && !json)
    throw new UsageError('say what to write: --output FILE.html, --png FILE.png or --json');
  // Before any run is read: a picture needs a Chromium.
  const chromium = png === undefined ? null : findChromium(io.env.PATH);
  if (png !== undefined && chromium === null) throw new InputError(NO_CHROMIUM_MESSAGE);

  const files = args.positionals.map((p) => path.resolve(io.cwd, p));
  let comparison: RunComparison;
  try {
    comparison = await compareRunFiles(files);
  } catch (err) {
    if (err instanceof DatabaseFileError) throw new InputError(err.message, { cause: err });
    throw err;
  }
  const assets = output !== undefined || png !== undefined ? await readReportAssets() : null;
  const html = assets ? reportHtml(comparison, assets) : null;
  const htmlFile = output === undefined ? null : path.resolve(io.cwd, output);
  if (htmlFile && html !== null) await writeFileAtomic(htmlFile, html);
  const pngFile = png === undefined ? null : path.resolve(io.cwd, png);
  if (pngFile && chromium && html !== null) {
    // Without --output the page is drawn from a file of its own, removed afterwards.
    const scratch = htmlFile ? null : await mkdtemp(path.join(tmpdir(), 'thetaevolve-report-'));
    try {
      const source = htmlFile ?? path.join(scratch as string, 'report.html');
      if (scratch) await writeFileAtomic(source, html);
      await renderPicture(chromium, source, pngFile, io.signal);
    } finally {
      if (scratch) await rm(scratch, { recursive: true, force: true });
    }
  }
  if (json) {
    io.stdout(jsonForTerminal(comparison) + '\n');
    return 0;
  }
  // Results depend on the environment: runs whose Python or packages differ are told so first.
  const pythonDiffers = comparison.differing.includes('python');
  // Runs of different tasks or directions share no axis (docs/architecture.md "Comparing runs"): said first, as the page says it.
  const taskNote = progressLayout(comparison.runs).note;
  const lines = [
    ...(taskNote !== null ? [`Note: ${taskNote}`] : []),
    ...(pythonDiffers
      ? ["Note: these runs ran in different Python environments (see each run's Python below); their results may differ for that alone."]
      : []),
    `Compared ${comparison.runs.length} run(s)${comparison.differing.length > 0 ? ` differing in ${comparison.differing.join(', ')}` : ''}:`,
  ];
  for (const run of comparison.runs) {
    const last = run.steps[run.steps.length - 1];
    const best = last?.bestSoFar ?? null;
    const direction = taskNote !== null ? ` (${run.direction === 'minimize' ? 'lower' : 'higher'} is better)` : '';
    const policy = run.policyVersions.length > 0 ? `, ${run.policyVersions.length} policy version(s)` : '';
    lines.push(`  ${forDisplay(run.label)}: ${run.steps.length} steps, ${bestText(best)}${direction}${policy} (${run.file})`);
    if (run.python) lines.push(`    ${forDisplay(describePythonEnvironment(run.python))}`);
  }
  if (htmlFile) lines.push(`Report: ${htmlFile}`);
  if (pngFile) lines.push(`Picture: ${pngFile}`);
  io.stdout(forDisplay(lines.join('\n')) + '\n');
  return 0;
}
