// Start / Stop / Pause / Resume Run, Select Task and Set API Key. Starting a
// run asks the task and the API key here; everything else (the endpoint
// check, the trainer, the sandbox) happens in the engine worker, which says
// why a run could not start and which setting to change.
import { mkdir } from 'node:fs/promises';
import * as vscode from 'vscode';
import type { Settings } from '../engine/common/config';
import { locateEvolveBlocks } from '../engine/common/diff';
import { errorMessage } from '../engine/common/errors';
import { formatScore } from '../engine/common/format';
import { displayObjective } from '../engine/common/scoring';
import { MUTATE_SAMPLER_LABEL } from '../engine/llm/mutateSampler';
import { newRunId, runDatabaseFile } from '../engine/runFiles';
import type { RunInfo } from '../protocol/workerMessages';
import { promptAndStoreApiKey, readApiKey, readModelApiKeys } from './apiKey';
import { fileName, registerCommand } from './commandRegistry';
import { COMMAND_IDS } from './commandIds';
import { startLiveEvaluationTerminal } from './evaluationTask';
import { log } from './log';
import {
  guardWorkspaceTrust,
  listRunFiles,
  type RunController,
  RunStartError,
  runOrigin,
  runsDirectoryOfFolder,
  type StartSpec,
} from './runController';
import { showStartProgress } from './runProgress';
import { isRunNode, type RunsTreeProvider } from './runsTree';
import { readSettingsOrShowError } from './settings';
import { openTaskProgram } from './openTaskProgram';
import { pickTask } from './taskPicker';
import { withTrainerChoice } from './trainerChoice';
import { settingsWithAllowedUrls } from './urlConsent';

/** The EVOLVE-BLOCK problem of a text, as one sentence, or undefined when its regions are usable. */
export function evolveBlockProblem(text: string, name: string): string | undefined {
  const first = locateEvolveBlocks(text).problems[0];
  return first ? `${name}: ${first.message}` : undefined;
}

const WEAK_ISOLATION_CONSENT = 'thetaevolve.allowWeakIsolation';

/** The run's settings with the user's per-workspace consent to weaker isolation applied (the setting itself is machine-wide). */
function withIsolationConsent(settings: Settings, state: vscode.Memento): Settings {
  return state.get<boolean>(WEAK_ISOLATION_CONSENT) === true ? { ...settings, 'sandbox.allowWeakIsolation': true } : settings;
}

/**
 * No sandbox here: say why and how to get one (modal: model-written code is
 * about to run), and offer to allow weaker isolation for this workspace.
 */
async function askIsolationConsent(err: unknown, state: vscode.Memento): Promise<boolean> {
  const allow = 'Allow Weaker Isolation in This Workspace';
  const choice = await vscode.window.showWarningMessage(
    'ThetaEvolve: no full sandbox for candidate programs here.',
    {
      modal: true,
      detail: `${errorMessage(err)}\n\nWith weaker isolation, model-written programs run with limits and a private folder but can read your files.`,
    },
    allow,
  );
  if (choice !== allow) return false;
  await state.update(WEAK_ISOLATION_CONSENT, true);
  return true;
}

/**
 * Why a run could not start, with a button to the setting to change; when
 * the endpoint is the cause, also Retry (a server started since, a typo
 * fixed) and one that starts this run again with the offline sampler (the
 * settings stay as they are).
 */
function showStartFailure(err: unknown, again: { retry: () => Promise<void>; offline: () => Promise<void> }): void {
  const setting = err instanceof RunStartError ? err.setting : null;
  const open = 'Open Settings';
  const retry = 'Retry';
  const offline = 'Run with the Offline Sampler';
  const buttons = setting ? (setting === 'thetaevolve.endpoint' ? [open, retry, offline] : [open]) : [];
  const message = `ThetaEvolve: the run could not start: ${errorMessage(err)}`;
  offerStartButtons(message, buttons, (choice) => {
    if (choice === open && setting) void vscode.commands.executeCommand('workbench.action.openSettings', setting);
    if (choice === retry) void again.retry();
    if (choice === offline) void again.offline();
  });
}

/**
 * A program Start Run cannot evolve. With no region at all, the next steps
 * are offered: evolve the whole program, as OpenEvolve and ShinkaEvolve do
 * with a program without markers (its lines are marked as one EVOLVE-BLOCK,
 * an edit of the file that Undo takes back, and the run starts), mark the
 * selected lines, or scaffold a task for the file (all act on the file,
 * opened first). Broken markers are the user's to fix.
 */
function showNoEvolveBlock(fileUri: vscode.Uri, message: string, noRegion: boolean): void {
  const whole = 'Evolve Whole Program';
  const mark = 'Mark Selection as EVOLVE-BLOCK';
  const newTask = 'New Task for This File';
  const buttons = noRegion ? [whole, mark, newTask] : [];
  const offer = noRegion
    ? `${message} Evolve Whole Program marks all its lines as the EVOLVE-BLOCK (as OpenEvolve evolves a program without markers) and starts the run.`
    : message;
  offerStartButtons(offer, buttons, async (choice) => {
    if (choice !== whole && choice !== mark && choice !== newTask) return;
    const editor = await vscode.window.showTextDocument(fileUri, { preserveFocus: false });
    if (choice === whole) {
      const lines = editor.document.getText().split(/\r?\n/);
      // A first `#!` line stays above the block, as it must stay first.
      const first = lines[0]?.startsWith('#!') ? 1 : 0;
      let last = lines.length - 1;
      while (last > first && (lines[last] ?? '').trim() === '') last--;
      editor.selection = new vscode.Selection(first, 0, last, (lines[last] ?? '').length);
      await vscode.commands.executeCommand(COMMAND_IDS.markEvolveBlock);
      if (locateEvolveBlocks(editor.document.getText()).regions.length === 0) return;
      await vscode.commands.executeCommand(COMMAND_IDS.startRun, fileUri);
      return;
    }
    await vscode.commands.executeCommand(choice === mark ? COMMAND_IDS.markEvolveBlock : COMMAND_IDS.newTaskForFile);
  });
}

/** An error notification with buttons, also fired to onDidOfferStartFailure (whose `choose` clicks one). */
function offerStartButtons(message: string, buttons: readonly string[], act: (choice: string | undefined) => Promise<void> | void): void {
  let choose: (button: string) => void = () => undefined;
  const chosen = new Promise<string>((resolve) => (choose = resolve));
  void Promise.race([vscode.window.showErrorMessage(message, ...buttons), chosen]).then(act);
  startFailureOffers.fire({ message, buttons, choose });
}

/** A start failure's notification: its text, its buttons, and `choose`, which answers it as a click on that button would. */
export interface StartFailureOffer {
  message: string;
  buttons: readonly string[];
  choose: (button: string) => void;
}

const startFailureOffers = new vscode.EventEmitter<StartFailureOffer>();
/** Every start failure shown (the in-host tests answer its buttons here: a notification's buttons cannot be clicked from a test). */
export const onDidOfferStartFailure = startFailureOffers.event;

export function registerRunCommands(context: vscode.ExtensionContext, controller: RunController, tree: RunsTreeProvider): void {
  /** The settings a run of `fileUri` gets: read, a workspace's URLs only with consent, weaker isolation only if allowed; undefined when refused (said). */
  const runSettings = async (fileUri: vscode.Uri | undefined): Promise<Settings | undefined> => {
    const read = readSettingsOrShowError(fileUri);
    if (!read) return undefined;
    const allowed = await settingsWithAllowedUrls(read, fileUri, context.workspaceState);
    return allowed ? withTrainerChoice(withIsolationConsent(allowed, context.workspaceState), context.workspaceState) : undefined;
  };
  const startAndFollow = async (spec: StartSpec): Promise<void> => {
    const started = controller.start(spec);
    const run = controller.active;
    if (!run) return;
    void startLiveEvaluationTerminal(controller, run).catch((err: unknown) => log().warn(`evaluations terminal: ${errorMessage(err)}`));
    showStartProgress(controller, run);
    try {
      await started;
    } catch (err) {
      // Cancelled from its progress notification: what the person asked for, not an error.
      if (err instanceof RunStartError && err.cancelled) return;
      if (
        err instanceof RunStartError &&
        err.setting === 'thetaevolve.sandbox.allowWeakIsolation' &&
        !spec.settings['sandbox.allowWeakIsolation']
      ) {
        if (await askIsolationConsent(err, context.workspaceState))
          await startAndFollow({ ...spec, settings: { ...spec.settings, 'sandbox.allowWeakIsolation': true } });
        return;
      }
      showStartFailure(err, {
        // The settings as they are now: Open Settings may have fixed them.
        retry: async () => {
          const settings = await runSettings(spec.fileUri);
          if (settings) await startAndFollow({ ...spec, settings });
        },
        offline: () => startAndFollow({ ...spec, settings: { ...spec.settings, sampler: 'mutate' } }),
      });
      return;
    }
    const source = run.sourceLabel ?? spec.settings.sampler;
    void vscode.window.showInformationMessage(
      source === MUTATE_SAMPLER_LABEL
        ? `ThetaEvolve: using the ${MUTATE_SAMPLER_LABEL}: no model is asked; numeric literals inside the EVOLVE-BLOCK are perturbed.`
        : `ThetaEvolve: evolving with ${source}.`,
    );
    tree.scheduleRefresh(0);
  };

  registerCommand(context, COMMAND_IDS.startRun, async (arg?: unknown) => {
    if (!guardWorkspaceTrust()) return;
    if (controller.active) {
      const stop = 'Stop Run';
      const choice = await vscode.window.showWarningMessage(
        `ThetaEvolve: run ${controller.active.runId} is still active; stop it first.`,
        stop,
      );
      if (choice === stop) controller.stop();
      return;
    }
    const fileUri = arg instanceof vscode.Uri ? arg : vscode.window.activeTextEditor?.document.uri;
    if (!fileUri) {
      void vscode.window.showErrorMessage('ThetaEvolve: open a program with an EVOLVE-BLOCK-START / EVOLVE-BLOCK-END region first.');
      return;
    }
    const document = await vscode.workspace.openTextDocument(fileUri);
    const text = document.getText();
    const problem = evolveBlockProblem(text, fileName(fileUri));
    if (problem) {
      showNoEvolveBlock(fileUri, `ThetaEvolve: cannot evolve ${problem}.`, locateEvolveBlocks(text).problems[0]?.kind === 'no_region');
      return;
    }
    const settings = await runSettings(fileUri);
    if (!settings) return;
    const folder = vscode.workspace.getWorkspaceFolder(fileUri) ?? vscode.workspace.workspaceFolders?.[0];
    if (!folder) {
      void vscode.window.showErrorMessage('ThetaEvolve: open a folder first: run databases are kept in it (thetaevolve.runsDirectory).');
      return;
    }
    const task = await pickTask(context, fileUri);
    if (!task) return;
    const apiKey = await readApiKey(context.secrets);
    const runsDir = runsDirectoryOfFolder(folder, settings);
    await mkdir(runsDir, { recursive: true });
    const runId = newRunId(task.name, runsDir);
    const extension = fileUri.path.includes('.') ? (fileUri.path.split('.').pop() ?? task.language) : task.language;
    await startAndFollow({
      runId,
      dbFile: runDatabaseFile(runsDir, runId),
      taskDir: task.source,
      taskName: task.name,
      taskTitle: task.title,
      direction: task.direction,
      fileUri,
      extension,
      startCode: text,
      textAtRunStart: text,
      settings,
      apiKey,
      modelApiKeys: await readModelApiKeys(context.secrets, settings),
      resume: false,
    });
  });

  registerCommand(context, COMMAND_IDS.stopRun, () => {
    if (!controller.stop()) void vscode.window.showInformationMessage('ThetaEvolve: no run is active.');
  });

  registerCommand(context, COMMAND_IDS.pauseRun, () => {
    const run = controller.active;
    if (!run) return void vscode.window.showInformationMessage('ThetaEvolve: no run is active.');
    if (!controller.pause()) return void vscode.window.showInformationMessage(`ThetaEvolve: run ${run.runId} is ${run.state}.`);
    void vscode.window.showInformationMessage(`ThetaEvolve: run ${run.runId} pauses after the step in flight commits.`);
  });

  /**
   * Resume Run: the active run if it is paused; else a run database (given:
   * its file by the dashboard, its row by the Runs view; or picked) from its
   * last committed step.
   */
  registerCommand(context, COMMAND_IDS.resumeRun, async (arg?: unknown) => {
    const given = typeof arg === 'string' ? arg : isRunNode(arg) ? arg.dbFile : undefined;
    const run = controller.active;
    if (run) {
      if (given !== undefined && given !== run.dbFile)
        void vscode.window.showInformationMessage(`ThetaEvolve: run ${run.runId} is active; stop it before resuming another.`);
      else if (!controller.resume())
        void vscode.window.showInformationMessage(`ThetaEvolve: run ${run.runId} is ${run.state}, not paused.`);
      return;
    }
    if (!guardWorkspaceTrust()) return;
    const picked = given !== undefined ? await givenRun(given) : await pickRunToResume();
    if (!picked) return;
    const origin = runOrigin(picked.info.meta);
    const settings = await runSettings(origin.fileUri);
    if (!settings) return;
    const apiKey = await readApiKey(context.secrets);
    await startAndFollow({
      runId: picked.runId,
      dbFile: picked.info.dbFile,
      taskDir: origin.taskDir,
      taskName: origin.taskName,
      taskTitle: origin.taskName,
      direction: picked.info.meta.direction,
      fileUri: origin.fileUri,
      extension: origin.extension,
      startCode: null,
      textAtRunStart: origin.startCode,
      settings,
      apiKey,
      modelApiKeys: await readModelApiKeys(context.secrets, settings),
      resume: true,
    });
  });

  const givenRun = async (dbFile: string): Promise<{ runId: string; info: RunInfo } | undefined> => {
    const info = await controller.query({ kind: 'runInfo', dbFile });
    return { runId: info.meta.runId, info };
  };

  const pickRunToResume = async (): Promise<{ runId: string; info: RunInfo } | undefined> => {
    const files = await vscode.window.withProgress({ location: vscode.ProgressLocation.Window, title: 'ThetaEvolve: reading runs' }, () =>
      listRunFiles(),
    );
    if (files.length === 0) {
      void vscode.window.showInformationMessage('ThetaEvolve: no run database found under the runs directory (thetaevolve.runsDirectory).');
      return;
    }
    const infos = await Promise.all(
      files.map(async (file) => {
        try {
          return { file, info: await controller.query({ kind: 'runInfo', dbFile: file.dbFile }), error: null };
        } catch (err) {
          return { file, info: null, error: errorMessage(err) };
        }
      }),
    );
    type Item = vscode.QuickPickItem & { info?: RunInfo; runId?: string };
    const items: Item[] = infos
      .sort((a, b) => (b.info?.meta.createdAt ?? 0) - (a.info?.meta.createdAt ?? 0))
      .map(({ file, info, error }): Item =>
        info
          ? {
              label: file.runId,
              description: `${info.meta.task} · step ${Math.max(info.lastStep, 0)} · best ${formatScore(displayObjective(info.summary.best?.score ?? null, info.meta.direction))}`,
              detail: info.meta.programPath,
              info,
              runId: file.runId,
            }
          : { label: `$(warning) ${file.runId}`, description: 'cannot be read', detail: error ?? undefined },
      );
    const picked = await vscode.window.showQuickPick(items, {
      title: 'ThetaEvolve: Resume Run',
      placeHolder: 'Continue which run from its last committed step?',
      matchOnDescription: true,
    });
    return picked?.info && picked.runId ? { runId: picked.runId, info: picked.info } : undefined;
  };

  registerCommand(context, COMMAND_IDS.selectTask, async (arg?: unknown) => {
    const editor = vscode.window.activeTextEditor;
    const fileUri = arg instanceof vscode.Uri ? arg : editor?.document.uri;
    // The open file is the program only when it has an EVOLVE-BLOCK; else the task's own program opens.
    const isProgram =
      fileUri !== undefined && editor?.document.uri.toString() === fileUri.toString()
        ? evolveBlockProblem(editor.document.getText(), fileName(fileUri)) === undefined
        : fileUri !== undefined;
    const task = await pickTask(context, isProgram ? fileUri : undefined, { forcePick: true });
    if (!task) return;
    if (isProgram && fileUri)
      void vscode.window.showInformationMessage(`ThetaEvolve: ${fileName(fileUri)} is evolved against ${task.title}.`);
    else await openTaskProgram(context, task);
  });

  registerCommand(context, COMMAND_IDS.setApiKey, () => promptAndStoreApiKey(context.secrets, readSettingsOrShowError()));
}
