// The whole output of a failed evaluation, opened as a read-only document
// (thetaevolve-output:/<run>/<step>/<evaluation>.log?<database>), the way
// programs are (programDocuments.ts). The evaluations terminal shows a
// failure's last lines and names "ThetaEvolve: Open Evaluation Output" and
// the evaluation (`s3-p1#2`), which is also a link there. The document is read
// from the files beside the run's database and served as a read-only file
// system (readOnlyDocuments.ts), so its tab comes back after a reload.
import { reasonAboveOutput, reasonOneLine } from '../engine/common/evaluationReason';
import * as vscode from 'vscode';
import { pickOne, showInfo } from './notify';
import { forDisplay } from '../engine/common/displayText';
import { errorMessage } from '../engine/common/errors';
import { evaluationKey } from '../engine/evaluationOutputs';
import type { QueryResult } from '../protocol/workerMessages';
import { registerCommand } from './commandRegistry';
import { COMMAND_IDS } from './commandIds';
import { listRunFiles, type RunController } from './runController';
import { isRunNode } from './runsTree';
import { registerReadOnlyDocuments } from './readOnlyDocuments';

export const OUTPUT_SCHEME = 'thetaevolve-output';
export const OPEN_OUTPUT_TITLE = 'ThetaEvolve: Open Evaluation Output';

/** One evaluation of one run: what the command and the document need. */
export interface EvaluationOutputRef {
  runId: string;
  dbFile: string;
  step: number;
  jobKey: string;
  sampleIndex: number;
}

function isOutputRef(value: unknown): value is EvaluationOutputRef {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return (
    typeof v.runId === 'string' &&
    typeof v.dbFile === 'string' &&
    typeof v.jobKey === 'string' &&
    Number.isInteger(v.step) &&
    Number.isInteger(v.sampleIndex)
  );
}

/** The step an evaluation key (`s3-p1#2`, `initial#0`) belongs to, with its parts; undefined when it is not one. */
export function parseEvaluationKey(key: string): { step: number; jobKey: string; sampleIndex: number } | undefined {
  const m = /^(initial|s(\d+)-p\d+)#(\d+)$/.exec(key.trim());
  if (!m) return undefined;
  return { step: m[2] === undefined ? 0 : Number(m[2]), jobKey: m[1] as string, sampleIndex: Number(m[3]) };
}

export function outputUri(ref: EvaluationOutputRef): vscode.Uri {
  const name = `${ref.jobKey}-${ref.sampleIndex} output.log`.replace(/[/\\:*?"<>|#%]+/g, '-');
  return vscode.Uri.from({
    scheme: OUTPUT_SCHEME,
    path: `/${ref.runId.replace(/[/\\#?%]+/g, '-')}/step-${ref.step}/${name}`,
    query: JSON.stringify({ dbFile: ref.dbFile, step: ref.step, jobKey: ref.jobKey, sampleIndex: ref.sampleIndex }),
  });
}

function parseOutputUri(uri: vscode.Uri): EvaluationOutputRef | undefined {
  if (uri.scheme !== OUTPUT_SCHEME) return undefined;
  try {
    const parsed: unknown = JSON.parse(uri.query);
    const runId = uri.path.split('/').filter((p) => p !== '')[0] ?? '';
    const ref = { runId, ...(typeof parsed === 'object' && parsed !== null ? parsed : {}) };
    // Only a run database's outputs are read.
    return isOutputRef(ref) && ref.dbFile.endsWith('.sqlite') ? ref : undefined;
  } catch {
    return undefined;
  }
}

/** The document's text: what failed and why, then the candidate's streams (control characters removed: never shown raw). */
export function outputDocumentText(ref: EvaluationOutputRef, output: QueryResult<'evaluationOutput'>): string {
  const key = evaluationKey(ref.jobKey, ref.sampleIndex);
  if (!output) {
    return `ThetaEvolve: no output is kept for evaluation ${key} of step ${ref.step} of run ${ref.runId} (only failed evaluations are kept, and the oldest steps are dropped past 256 MiB).\n`;
  }
  const stream = (text: string): string => forDisplay(text).replace(/\s+$/, '') || '(empty)';
  return [
    `Evaluation ${key}, step ${ref.step} of run ${ref.runId}: ${output.outcome}`,
    '',
    'reason:',
    // Its quoted end of stderr is in the stream below: the traceback is printed once.
    stream(reasonAboveOutput(output.reason, output.stderr)),
    '',
    '--- candidate stdout ---',
    stream(output.stdout),
    '',
    '--- candidate stderr ---',
    stream(output.stderr),
    '',
    '(the candidate\u2019s output as the sandbox kept it: each stream cut at thetaevolve.sandbox.outputLimitKb,',
    'control characters removed)',
    '',
  ].join('\n');
}

/** An output document's text (read from the files beside the run's database). */
async function outputText(controller: RunController, uri: vscode.Uri): Promise<string> {
  const ref = parseOutputUri(uri);
  if (!ref) return `ThetaEvolve: ${uri.toString()} does not name an evaluation's output.\n`;
  try {
    const output = await controller.query({
      kind: 'evaluationOutput',
      dbFile: ref.dbFile,
      step: ref.step,
      jobKey: ref.jobKey,
      sampleIndex: ref.sampleIndex,
    });
    return outputDocumentText(ref, output);
  } catch (err) {
    return `ThetaEvolve: cannot read the output of ${evaluationKey(ref.jobKey, ref.sampleIndex)} of run ${ref.runId}: ${errorMessage(err)}\n`;
  }
}

/**
 * What the evaluations terminal hears of its links. VS Code asks for a
 * line's links as the pointer reaches that line, so a link asked for is
 * one the pointer rests on: the terminal holds its lines still until it is
 * clicked or left (no extension API tells where the pointer is otherwise).
 */
export interface TerminalLinkListener {
  /** An output link was found under the pointer. */
  pointedAt(): void;
  /** An output link was opened (Ctrl+click). */
  opened(): void;
}

/** The run whose evaluations the terminal shows (its links open that run's outputs), and the terminal to tell. */
let terminalRun: { runId: string; dbFile: string; listener: TerminalLinkListener | undefined } | undefined;

export function setTerminalRun(run: { runId: string; dbFile: string }, listener?: TerminalLinkListener): void {
  terminalRun = { runId: run.runId, dbFile: run.dbFile, listener };
}

interface OutputLink extends vscode.TerminalLink {
  ref: EvaluationOutputRef;
}

/** Names of the evaluations terminal: the task's name, possibly prefixed by VS Code ("Task - ..."). */
function isEvaluationsTerminal(terminal: vscode.Terminal, terminalName: string): boolean {
  return terminal.name.includes(terminalName);
}

export function registerEvaluationOutputs(context: vscode.ExtensionContext, controller: RunController, terminalName: string): void {
  context.subscriptions.push(
    registerReadOnlyDocuments(OUTPUT_SCHEME, (uri) => outputText(controller, uri)),
    vscode.window.registerTerminalLinkProvider({
      provideTerminalLinks: (link): OutputLink[] => {
        const run = terminalRun;
        if (!run || !isEvaluationsTerminal(link.terminal, terminalName)) return [];
        const m = /full output: .*? (initial#\d+|s\d+-p\d+#\d+)/.exec(link.line);
        const key = m?.[1];
        const parsed = key ? parseEvaluationKey(key) : undefined;
        if (!m || !key || !parsed) return [];
        run.listener?.pointedAt();
        return [
          {
            startIndex: m.index + m[0].length - key.length,
            length: key.length,
            tooltip: 'Open the whole output',
            ref: { runId: run.runId, dbFile: run.dbFile, ...parsed },
          },
        ];
      },
      // Only links this provider made come back here.
      handleTerminalLink: (link: vscode.TerminalLink) => {
        terminalRun?.listener?.opened();
        void vscode.commands.executeCommand(COMMAND_IDS.openEvaluationOutput, (link as OutputLink).ref);
      },
    }),
  );

  registerCommand(context, COMMAND_IDS.openEvaluationOutput, async (arg?: unknown) => {
    // From the palette (the window's run), or a run of the Runs view (its context menu).
    const ref = isOutputRef(arg) ? arg : await pickOutput(controller, isRunNode(arg) ? arg : undefined);
    if (!ref) return;
    await vscode.window.showTextDocument(outputUri(ref), { preview: true });
  });
}

/** The run (the window's active or last one, else a pick of the runs on disk), then one of its kept outputs. */
async function pickOutput(
  controller: RunController,
  of: { runId: string; dbFile: string } | undefined,
): Promise<EvaluationOutputRef | undefined> {
  let run: { runId: string; dbFile: string } | undefined = of ?? controller.latest;
  if (!run) {
    const files = await listRunFiles();
    if (files.length === 0) return void showInfo('ThetaEvolve: no run yet: start one with "ThetaEvolve: Start Run".');
    const picked = await pickOne(
      files.map((f) => ({ label: f.runId, file: f })),
      { title: 'Which run?', placeHolder: 'the run whose failed evaluations to list' },
    );
    if (!picked) return undefined;
    run = picked.file;
  }
  const outputs = await controller.query({ kind: 'evaluationOutputs', dbFile: run.dbFile });
  if (outputs.length === 0) return void showInfo(`ThetaEvolve: run ${run.runId} has no failed evaluation with a kept output.`);
  const { runId, dbFile } = run;
  const picked = await pickOne(
    outputs.map((o) => ({
      label: evaluationKey(o.jobKey, o.sampleIndex),
      description: `step ${o.step} · ${o.outcome} · ${o.bytes.toLocaleString('en-US')} bytes`,
      detail: forDisplay(reasonOneLine(o.reason)).slice(0, 200),
      ref: { runId, dbFile, step: o.step, jobKey: o.jobKey, sampleIndex: o.sampleIndex },
    })),
    {
      title: `Failed evaluations of ${runId}`,
      placeHolder: 'type the evaluation the terminal names, e.g. s3-p1#2',
      matchOnDescription: true,
    },
  );
  return picked?.ref;
}
