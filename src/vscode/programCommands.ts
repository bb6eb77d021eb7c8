// Commands on a run's programs: Show Best Diff and Apply Best (palette,
// CodeLens), and the Runs view's items (diff with the parent, compare with
// the file, apply, open).
import * as vscode from 'vscode';
import { pickOne, showError, showInfo } from './notify';
import { formatScore, programName } from '../engine/common/format';
import { applyProgramToFile } from './applyProgram';
import { fileName, registerCommand } from './commandRegistry';
import { COMMAND_IDS } from './commandIds';
import { compareProgramWithFile, showProgramDiff } from './diffViews';
import { programUri } from './programDocuments';
import { listRunFiles, type RunController, runOrigin } from './runController';
import { isProgramNode, type ProgramNode, type RunsTreeProvider } from './runsTree';

/** A run known by its database: what the commands need of it. */
interface RunRef {
  runId: string;
  dbFile: string;
  fileUri: vscode.Uri | undefined;
  extension: string;
  textAtRunStart: string | undefined;
}

/** One run's best program, as the palette's Apply lists it. */
interface BestItem extends vscode.QuickPickItem {
  ref: RunRef;
  best: { id: string; score: number };
  direction: 'maximize' | 'minimize';
}

export function registerProgramCommands(context: vscode.ExtensionContext, controller: RunController, tree: RunsTreeProvider): void {
  /** The run the palette's Show Best Diff / Apply talk about: the active (or last) one, else the newest for the file. */
  const runFor = async (fileUri: vscode.Uri | undefined): Promise<RunRef | undefined> => {
    const latest = controller.latest;
    if (latest && (!fileUri || latest.fileUri?.toString() === fileUri.toString())) {
      return {
        runId: latest.runId,
        dbFile: latest.dbFile,
        fileUri: latest.fileUri,
        extension: latest.extension,
        textAtRunStart: latest.textAtRunStart,
      };
    }
    let newest: { ref: RunRef; createdAt: number } | undefined;
    for (const file of await listRunFiles()) {
      const info = await controller.query({ kind: 'runInfo', dbFile: file.dbFile }).catch(() => null);
      if (!info) continue;
      const origin = runOrigin(info.meta);
      if (fileUri && origin.fileUri.fsPath !== fileUri.fsPath) continue;
      if (!newest || info.meta.createdAt > newest.createdAt) {
        newest = {
          ref: {
            runId: file.runId,
            dbFile: file.dbFile,
            fileUri: origin.fileUri,
            extension: origin.extension,
            textAtRunStart: origin.startCode,
          },
          createdAt: info.meta.createdAt,
        };
      }
    }
    if (newest) controller.registerRun(newest.ref.runId, newest.ref.dbFile);
    return newest?.ref;
  };

  const bestOf = async (ref: RunRef): Promise<{ id: string; score: number } | null> =>
    (await controller.query({ kind: 'summary', dbFile: ref.dbFile })).best;

  registerCommand(context, COMMAND_IDS.showBestDiff, async (arg?: unknown) => {
    const fileUri = arg instanceof vscode.Uri ? arg : undefined;
    const ref = await runFor(fileUri ?? vscode.window.activeTextEditor?.document.uri);
    const fallback = ref ?? (fileUri ? undefined : await runFor(undefined));
    if (!fallback) return void showInfo('ThetaEvolve: no run yet for this file: start one with "ThetaEvolve: Start Run".');
    const best = await bestOf(fallback);
    if (!best) return void showInfo(`ThetaEvolve: run ${fallback.runId} has no valid program yet.`);
    const target = fileUri ?? fallback.fileUri;
    if (!target) return void showError(`ThetaEvolve: run ${fallback.runId} does not record the file it evolves.`);
    await compareProgramWithFile(fallback.runId, best.id, target, fallback.extension);
  });

  const nodeArg = (arg: unknown): ProgramNode => {
    if (!isProgramNode(arg)) throw new Error('pick a program in the Runs view');
    controller.registerRun(arg.runId, arg.dbFile);
    return arg;
  };

  const applyNode = async (node: ProgramNode): Promise<void> => {
    if (!node.fileUri) return void showError(`ThetaEvolve: run ${node.runId} does not record the file it evolves.`);
    const program = await controller.query({ kind: 'program', dbFile: node.dbFile, programId: node.programId });
    if (!program) return void showError(`ThetaEvolve: program ${node.programId} is no longer in ${node.runId}.`);
    const textAtRunStart = controller.latest?.runId === node.runId ? controller.latest.textAtRunStart : node.startCode;
    const outcome = await applyProgramToFile(node.fileUri, program.code, {
      textAtRunStart,
      interactive: true,
      program: { runId: node.runId, dbFile: node.dbFile, programId: node.programId },
    });
    if (outcome === 'applied') {
      void showInfo(
        `ThetaEvolve: applied ${programName(node)} (program ${node.programId}, objective ${formatScore(node.objective)}) to ${fileName(node.fileUri)}. Undo restores the file.`,
      );
    }
  };

  /** Each run's best for the file (every run's when none is given), best score first: what the palette's Apply offers. */
  const bestsFor = async (fileUri: vscode.Uri | undefined): Promise<BestItem[]> => {
    const items: BestItem[] = [];
    for (const file of await listRunFiles()) {
      const info = await controller.query({ kind: 'runInfo', dbFile: file.dbFile }).catch(() => null);
      const best = info?.summary.best;
      if (!info || !best) continue;
      const origin = runOrigin(info.meta);
      if (fileUri && origin.fileUri.fsPath !== fileUri.fsPath) continue;
      const live = controller.latest?.runId === file.runId ? controller.latest : undefined;
      items.push({
        label: '',
        ref: {
          runId: file.runId,
          dbFile: file.dbFile,
          fileUri: origin.fileUri,
          extension: origin.extension,
          textAtRunStart: live ? live.textAtRunStart : origin.startCode,
        },
        best,
        direction: info.meta.direction,
      });
    }
    items.sort((a, b) => b.best.score - a.best.score);
    return items;
  };

  registerCommand(context, COMMAND_IDS.applyProgram, async (arg?: unknown) => {
    if (isProgramNode(arg)) return applyNode(arg);
    const fileUri = arg instanceof vscode.Uri ? arg : vscode.window.activeTextEditor?.document.uri;
    // The file's runs (or, for a file no run evolves, every run), best first: never a silent choice.
    let bests = await bestsFor(fileUri);
    if (bests.length === 0 && !(arg instanceof vscode.Uri)) bests = await bestsFor(undefined);
    if (bests.length === 0)
      return void showInfo('ThetaEvolve: no run has a program to apply yet: start one with "ThetaEvolve: Start Run".');
    const programs = await Promise.all(bests.map((b) => controller.query({ kind: 'program', dbFile: b.ref.dbFile, programId: b.best.id })));
    const items = bests.map((b, i) => {
      const objective = programs[i]?.objective;
      return {
        ...b,
        label: `${i === 0 ? '$(star-full) ' : ''}${objective !== null && objective !== undefined ? `objective ${formatScore(objective)}` : `score ${formatScore(b.best.score)}`} · program ${b.best.id}`,
        description: `${b.direction} · run ${b.ref.runId}${i === 0 ? ' · best overall' : ''}`,
        detail: b.ref.fileUri ? vscode.workspace.asRelativePath(b.ref.fileUri) : undefined,
      };
    });
    const picked = await pickOne(items, {
      title: 'ThetaEvolve: Apply Program to File',
      placeHolder: "Which run's best program goes into its file? (best overall first)",
      matchOnDescription: true,
    });
    if (!picked) return;
    const { ref, best } = picked;
    const target = arg instanceof vscode.Uri ? arg : ref.fileUri;
    if (!target) return void showError(`ThetaEvolve: run ${ref.runId} does not record the file it evolves.`);
    controller.registerRun(ref.runId, ref.dbFile);
    const program = await controller.query({ kind: 'program', dbFile: ref.dbFile, programId: best.id });
    if (!program) return void showError(`ThetaEvolve: program ${best.id} is no longer in ${ref.runId}.`);
    const outcome = await applyProgramToFile(target, program.code, {
      textAtRunStart: ref.textAtRunStart,
      interactive: true,
      program: { runId: ref.runId, dbFile: ref.dbFile, programId: best.id },
    });
    if (outcome === 'applied') {
      void showInfo(
        `ThetaEvolve: applied ${programName(program)} (program ${best.id}, objective ${formatScore(program.objective)}) to ${fileName(target)}. Undo restores the file.`,
      );
    }
  });

  registerCommand(context, COMMAND_IDS.showProgramDiff, async (arg?: unknown) => {
    const node = nodeArg(arg);
    if (!node.parentId) {
      void showInfo('ThetaEvolve: this is the starting program; it has no parent to compare with.');
      return;
    }
    await showProgramDiff(node.runId, node.parentId, node.programId, node.extension);
  });

  registerCommand(context, COMMAND_IDS.compareProgramWithFile, async (arg?: unknown) => {
    const node = nodeArg(arg);
    if (!node.fileUri) return void showError(`ThetaEvolve: run ${node.runId} does not record the file it evolves.`);
    await compareProgramWithFile(node.runId, node.programId, node.fileUri, node.extension);
  });

  registerCommand(context, COMMAND_IDS.applyProgramToFile, async (arg?: unknown) => applyNode(nodeArg(arg)));

  registerCommand(context, COMMAND_IDS.openProgram, async (arg?: unknown) => {
    const node = nodeArg(arg);
    const uri = programUri(node.runId, node.programId, programName(node), node.extension);
    await vscode.window.showTextDocument(uri, { preview: true });
  });

  registerCommand(context, COMMAND_IDS.refreshRuns, () => tree.refresh());
}
