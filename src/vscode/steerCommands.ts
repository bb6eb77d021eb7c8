// Interactive evolution in the editor (docs/algorithm.md section 11;
// docs/architecture.md "Steering a run"): Add This File to the Run, and the
// Runs view's Ban, Unban, Pin as Parent and Show Lineage on a program, and Edit
// Guidance (src/vscode/guidanceDocuments.ts). Every request
// goes to the engine worker (the `steer` query): the run this window runs
// takes it at its next step and says what became of it with a `steered`
// event; a stopped run gets it applied at once.
import * as vscode from 'vscode';
import { confirmTaskFolder, workspaceRoots } from './runTrust';
import { askText, flashStatus, pickOne, showInfo, showWarning } from './notify';
import { forDisplay } from '../engine/common/displayText';
import { formatScore, programLabel, programName, programNameDetail } from '../engine/common/format';
import { type SteerRequest, type SteerResult, steerResultText } from '../engine/common/steering';
import type { QueryResult } from '../protocol/workerMessages';
import { fileName, registerCommand } from './commandRegistry';
import { COMMAND_IDS } from './commandIds';
import { showProgramDiff } from './diffViews';
import { guidanceUri, recommendationsUri, registerGuidanceDocuments } from './guidanceDocuments';
import { guardWorkspaceTrust, listRunFiles, type RunController } from './runController';
import { isProgramNode, isRunNode, type ProgramNode, type RunsTreeProvider } from './runsTree';
import { readSettingsOrShowError } from './settings';

/** A steer request answered: by the worker (a stopped run: applied; the run of this window: queued), or by the run's next step. */
export interface SteerAnswer {
  dbFile: string;
  kind: string;
  ok: boolean;
  /** What it did, or why it was refused. */
  message: string;
  /** The program added, banned, unbanned or pinned, once known. */
  id: string | null;
  queued: boolean;
}

const answers = new vscode.EventEmitter<SteerAnswer>();
/** Every steer request's answer (the in-host tests watch it). */
export const onDidAnswerSteer = answers.event;

/** An added program is evaluated before the reply on a stopped run (the task's own timeout bounds that). */
const STEER_REPLY_TIMEOUT_MS = 15 * 60_000;
const DEFAULT_PIN_SHARE = 0.25;
const DEFAULT_PIN_STEPS = 5;

interface RunTarget {
  runId: string;
  dbFile: string;
}

export function registerSteerCommands(context: vscode.ExtensionContext, controller: RunController, tree: RunsTreeProvider): void {
  /** Send one request; the answer is shown and fired. Returns what the worker replied (undefined: refused, and said so). */
  const steer = async (run: RunTarget, request: SteerRequest, scope: vscode.Uri | undefined): Promise<SteerResult | undefined> => {
    const settings = readSettingsOrShowError(scope);
    if (!settings) return undefined;
    let result: SteerResult;
    try {
      result = await controller.query(
        { kind: 'steer', dbFile: run.dbFile, request, settings, workspaceFolders: workspaceRoots() },
        { timeoutMs: STEER_REPLY_TIMEOUT_MS },
      );
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      answers.fire({ dbFile: run.dbFile, kind: request.kind, ok: false, message, id: null, queued: false });
      void showWarning(`ThetaEvolve: ${request.kind} refused: ${forDisplay(message)} (run ${run.runId})`);
      return undefined;
    }
    if ('queued' in result) {
      answers.fire({ dbFile: run.dbFile, kind: result.kind, ok: true, message: 'queued', id: null, queued: true });
      flashStatus(`ThetaEvolve: ${result.kind} queued for the next step of run ${run.runId}`, 5000);
    } else {
      const message = steerResultText(result);
      const id = result.kind === 'add' ? result.id : (result.ids?.[0] ?? null);
      answers.fire({ dbFile: run.dbFile, kind: result.kind, ok: true, message, id, queued: false });
      void showInfo(`ThetaEvolve: ${forDisplay(message)} (run ${run.runId})`);
      tree.scheduleRefresh(0);
    }
    return result;
  };

  // What the live run did with a queued request: said like its children are.
  context.subscriptions.push(
    answers,
    registerGuidanceDocuments(controller, (run, request) => steer(run, request, undefined)),
    controller.onDidEngineEvent(({ runId, event }) => {
      if (event.type !== 'steered') return;
      const dbFile = controller.dbFileOf(runId) ?? '';
      answers.fire({ dbFile, kind: event.kind, ok: event.ok, message: event.message, id: event.id, queued: false });
      // What it did first: a toast shows its start.
      const text = `ThetaEvolve: step ${event.step}: ${forDisplay(event.message)} (run ${runId})`;
      void (event.ok ? showInfo(text) : showWarning(text));
    }),
  );

  /** The run a command is about: the Runs view's row, else the run of this window, else one picked. */
  const runOf = async (arg: unknown): Promise<RunTarget | undefined> => {
    if (isRunNode(arg)) return { runId: arg.runId, dbFile: arg.dbFile };
    const latest = controller.latest;
    if (latest) return { runId: latest.runId, dbFile: latest.dbFile };
    const files = await listRunFiles();
    if (files.length === 0) {
      void showInfo('ThetaEvolve: no run yet: start one with "ThetaEvolve: Start Run".');
      return undefined;
    }
    const picked = await pickOne(
      files.map((file) => ({ label: file.runId, description: file.dbFile, file })),
      { title: 'ThetaEvolve: which run?' },
    );
    return picked ? { runId: picked.file.runId, dbFile: picked.file.dbFile } : undefined;
  };

  registerCommand(context, COMMAND_IDS.addFileToRun, async (arg?: unknown) => {
    // The program is evaluated: never in an untrusted workspace.
    if (!guardWorkspaceTrust()) return undefined;
    const uri = arg instanceof vscode.Uri ? arg : undefined;
    const document = uri
      ? (vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString()) ?? (await vscode.workspace.openTextDocument(uri)))
      : vscode.window.activeTextEditor?.document;
    if (!document) return void showInfo('ThetaEvolve: open the program to add to the run first.');
    const run = await runOf(uri ? undefined : arg);
    if (!run) return undefined;
    controller.registerRun(run.runId, run.dbFile);
    // A run not running here is evaluated with the task folder its database names.
    if (controller.active?.dbFile !== run.dbFile) {
      const { meta } = await controller.query({ kind: 'runInfo', dbFile: run.dbFile });
      if (!(await confirmTaskFolder(context.extensionPath, meta.taskDir, `Add This File to run ${run.runId}`))) return undefined;
    }
    // The file as edited, unsaved changes included.
    return steer(run, { kind: 'add', code: document.getText(), note: `added from ${fileName(document.uri)}` }, document.uri);
  });

  registerCommand(context, COMMAND_IDS.editGuidance, async (arg?: unknown) => {
    const run = await runOf(arg);
    if (!run) return undefined;
    controller.registerRun(run.runId, run.dbFile);
    const editor = await vscode.window.showTextDocument(guidanceUri(run), { preview: false });
    return editor.document.uri;
  });

  // The model's meta-recommendations (docs/algorithm.md section 12), as a document beside the guidance.
  registerCommand(context, COMMAND_IDS.editRecommendations, async (arg?: unknown) => {
    const run = await runOf(arg);
    if (!run) return undefined;
    controller.registerRun(run.runId, run.dbFile);
    const editor = await vscode.window.showTextDocument(recommendationsUri(run), { preview: false });
    return editor.document.uri;
  });

  const programArg = (arg: unknown): ProgramNode => {
    if (!isProgramNode(arg)) throw new Error('pick a program in the Runs view');
    controller.registerRun(arg.runId, arg.dbFile);
    return arg;
  };

  registerCommand(context, COMMAND_IDS.banProgram, async (arg?: unknown) => {
    const node = programArg(arg);
    const alone = { label: 'This program', descendants: false };
    const withDescendants = { label: 'This program and its live descendants', descendants: true };
    const choice = await pickOne([alone, withDescendants], {
      title: `Ban program ${node.programId} from being a parent`,
    });
    if (!choice) return undefined;
    return steer(node, { kind: 'ban', id: node.programId, descendants: choice.descendants }, undefined);
  });

  // A banned program's row in the Runs view, or from the palette: one of the run's banned programs, picked.
  registerCommand(context, COMMAND_IDS.unbanProgram, async (arg?: unknown) => {
    if (isProgramNode(arg)) return steer(programArg(arg), { kind: 'unban', id: arg.programId }, undefined);
    const run = await runOf(arg);
    if (!run) return undefined;
    controller.registerRun(run.runId, run.dbFile);
    const { banned } = await controller.query({ kind: 'runInfo', dbFile: run.dbFile });
    if (banned.length === 0) return void showInfo(`ThetaEvolve: no program of run ${run.runId} is banned.`);
    const picked = await pickOne(
      banned.map((id) => ({ label: `program ${forDisplay(id)}`, id })),
      { title: `Unban a program of run ${run.runId}: it can be a parent and an inspiration again` },
    );
    return picked ? steer(run, { kind: 'unban', id: picked.id }, undefined) : undefined;
  });

  registerCommand(context, COMMAND_IDS.pinProgram, async (arg?: unknown) => {
    const node = programArg(arg);
    const share = await askNumber(
      `Pin program ${node.programId}: the share of each step's prompts that get it as parent`,
      DEFAULT_PIN_SHARE,
      (v) => (v > 0 && v <= 1 ? undefined : 'a number in (0, 1]'),
    );
    if (share === undefined) return undefined;
    const steps = await askNumber(`Pin program ${node.programId}: for how many steps`, DEFAULT_PIN_STEPS, (v) =>
      Number.isInteger(v) && v >= 1 ? undefined : 'a whole number of steps, at least 1',
    );
    if (steps === undefined) return undefined;
    return steer(node, { kind: 'pin', id: node.programId, share, steps }, undefined);
  });

  registerCommand(context, COMMAND_IDS.showLineage, async (arg?: unknown) => showLineage(controller, programArg(arg)));
}

async function askNumber(prompt: string, initial: number, problem: (value: number) => string | undefined): Promise<number | undefined> {
  const text = await askText({
    prompt,
    value: String(initial),
    validateInput: (value) => {
      const n = Number(value);
      return value.trim() === '' || !Number.isFinite(n) ? 'a number' : problem(n);
    },
  });
  return text === undefined ? undefined : Number(text);
}

/** A program's lineage as a quick pick (the program first); the one picked opens the diff to its parent. */
export async function showLineage(
  controller: RunController,
  program: { runId: string; dbFile: string; programId: string; extension: string },
): Promise<QueryResult<'lineage'>['programs'][number] | undefined> {
  const lineage = await controller.query({ kind: 'lineage', dbFile: program.dbFile, programId: program.programId });
  const items = lineage.programs.map((entry) => ({
    label: `${programLabel(entry)} · ${formatScore(entry.objective, 6)}`,
    description: forDisplay(programNameDetail(entry)),
    detail: entry.note !== null ? forDisplay(entry.note) : entry.parentId === null ? 'the starting program' : undefined,
    entry,
  }));
  const picked = await pickOne(items, {
    title: `Lineage of ${lineage.programs[0] ? programName(lineage.programs[0]) : `program ${forDisplay(program.programId)}`}${lineage.complete ? '' : ' (older ancestors were evicted)'}: each opens the diff to its parent`,
  });
  if (!picked || picked.entry.parentId === null) return picked?.entry;
  await showProgramDiff(program.runId, picked.entry.parentId, picked.entry.id, program.extension);
  return picked.entry;
}
