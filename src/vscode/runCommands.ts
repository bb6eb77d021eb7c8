// Start / Stop / Pause / Resume Run, Select Task and Set API Key. Starting a
// run asks the task and the API key here; everything else (the endpoint
// check, the trainer, the sandbox) happens in the engine worker, which says
// why a run could not start and which setting to change.
import { mkdir } from 'node:fs/promises';
import * as vscode from 'vscode';
import { confirmTaskFolder } from './runTrust';
import { keyDestinations, keyOverPlainHttpWarning } from '../engine/common/endpointUrls';
import { pickOne, showError, showInfo, showWarning, withProgress } from './notify';
import { editorPythonChoice } from './pythonInterpreter';
import type { Settings } from '../engine/common/config';
import { locateEvolveBlocks } from '../engine/common/diff';
import { errorMessage } from '../engine/common/errors';
import { bestText } from '../engine/common/format';
import { displayObjective } from '../engine/common/scoring';
import { MUTATE_SAMPLER_LABEL } from '../engine/llm/mutateSampler';
import { newRunId, runDatabaseFile } from '../engine/runFiles';
import type { RunInfo } from '../protocol/workerMessages';
import { promptAndStoreApiKey, readApiKey, readModelApiKeys } from './apiKey';
import { fileName, registerCommand } from './commandRegistry';
import { COMMAND_IDS } from './commandIds';
import { startLiveEvaluationTerminal } from './evaluationTask';
import { log } from './log';
import { activeProgramUri, isNotebookUri, notebookStartText, notebookUriOf } from './notebookCells';
import {
  guardWorkspaceTrust,
  listRunFiles,
  type RunController,
  RunStartError,
  runOrigin,
  runsDirectoryOfFolder,
  type StartSpec,
} from './runController';
import { showStartProgress, showStateProgress } from './runProgress';
import { isRunNode, type RunsTreeProvider } from './runsTree';
import { readSettingsOrShowError, setByWorkspace } from './settings';
import { openTaskProgram } from './openTaskProgram';
import { pickTask } from './taskPicker';
import { loadTask } from '../engine/task/task';
import { withTrainerChoice } from './trainerChoice';
import { settingsWithAllowedUrls } from './urlConsent';
import { isClosing } from './trackedRun';

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
  const choice = await showWarning(
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
 * are offered: evolve the whole program (Evolve All), as OpenEvolve and ShinkaEvolve do
 * with a program without markers (its lines are marked as one EVOLVE-BLOCK,
 * an edit of the file that Undo takes back, and the run starts), mark the
 * selected lines, or scaffold a task for the file (all act on the file,
 * opened first). Broken markers are the user's to fix.
 */
function showNoEvolveBlock(fileUri: vscode.Uri, message: string, noRegion: boolean): void {
  // Short labels: a notification cuts its buttons at about 16 characters ("Evolve Whole ..."); the text says what each does.
  const whole = 'Evolve All';
  const mark = 'Mark Selection';
  const newTask = 'New Task';
  const buttons = noRegion ? [whole, mark, newTask] : [];
  const offer = noRegion
    ? `${message} Evolve All marks all its lines as the EVOLVE-BLOCK (as OpenEvolve evolves a program without markers) and starts the run; ` +
      'Mark Selection marks the selected lines; New Task writes a task for this file.'
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
  void Promise.race([showError(message, ...buttons), chosen]).then(act);
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

/** Warnings already said in this window: each is said once, not at every start. */
const warnedPlainHttp = new Set<string>();

/** A key about to go over plain http:// to another machine (thetaevolve.endpoint or a model's own endpoint): one warning per set of servers and window. */
function warnKeyOverPlainHttp(settings: Settings, apiKey: string | undefined): void {
  const warning = keyOverPlainHttpWarning(keyDestinations(settings, apiKey !== undefined && apiKey !== ''));
  if (!warning || warnedPlainHttp.has(warning)) return;
  warnedPlainHttp.add(warning);
  void showWarning(`ThetaEvolve: ${warning}.`);
}

/**
 * Whether a start may go on. A run that is stopping (Stop asked, or its steps over) is waited for, named in a
 * notification, until the worker closed it and released its lock: Start Run right after Stop starts the new run,
 * never "still active" while the status bar says stopped. A run still in progress is said, with Stop Run.
 */
async function noRunInTheWay(controller: RunController): Promise<boolean> {
  const active = controller.active;
  if (!active) return true;
  if (isClosing(active)) {
    await withProgress(
      { location: vscode.ProgressLocation.Notification, title: `ThetaEvolve: waiting for run ${active.runId} to stop` },
      () => controller.whenIdle(),
    );
    return controller.active === undefined;
  }
  const stop = 'Stop Run';
  const choice = await showWarning(`ThetaEvolve: run ${active.runId} is still active; stop it first.`, stop);
  if (choice === stop) controller.stop();
  return false;
}

export function registerRunCommands(context: vscode.ExtensionContext, controller: RunController, tree: RunsTreeProvider): void {
  /** The settings a run of `fileUri` gets: read, a workspace's URLs only with consent, weaker isolation only if allowed; undefined when refused (said). */
  const runSettings = async (fileUri: vscode.Uri | undefined, taskSettings?: Partial<Settings>): Promise<Settings | undefined> => {
    const read = readSettingsOrShowError(fileUri, taskSettings, (line) => log().info(line));
    if (!read) return undefined;
    const allowed = await settingsWithAllowedUrls(read, fileUri, context.workspaceState);
    return allowed ? withTrainerChoice(withIsolationConsent(allowed, context.workspaceState), context.workspaceState) : undefined;
  };
  const startAndFollow = async (spec: StartSpec): Promise<void> => {
    warnKeyOverPlainHttp(spec.settings, spec.apiKey);
    const started = controller.start(spec);
    const run = controller.active;
    if (!run) return;
    try {
      startLiveEvaluationTerminal(controller, run);
    } catch (err) {
      log().warn(`evaluations terminal: ${errorMessage(err)}`);
    }
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
    void showInfo(
      source === MUTATE_SAMPLER_LABEL
        ? `ThetaEvolve: using the ${MUTATE_SAMPLER_LABEL}: no model is asked; numeric literals inside the EVOLVE-BLOCK are perturbed.`
        : `ThetaEvolve: evolving with ${source}.`,
    );
    tree.scheduleRefresh(0);
  };

  registerCommand(context, COMMAND_IDS.startRun, async (arg?: unknown) => {
    if (!guardWorkspaceTrust()) return;
    if (!(await noRunInTheWay(controller))) return;
    // A notebook cell (its CodeLens, its editor) evolves its notebook: src/vscode/notebookCells.ts.
    const fileUri = arg instanceof vscode.Uri ? notebookUriOf(arg) : activeProgramUri();
    if (!fileUri) {
      void showError('ThetaEvolve: open a program with an EVOLVE-BLOCK-START / EVOLVE-BLOCK-END region first.');
      return;
    }
    const notebook = isNotebookUri(fileUri);
    const start = notebook ? await notebookStartText(fileUri) : { text: (await vscode.workspace.openTextDocument(fileUri)).getText() };
    if ('problem' in start) return offerStartButtons(`ThetaEvolve: cannot evolve ${start.problem}.`, [], () => undefined);
    const { text } = start;
    const problem = evolveBlockProblem(text, fileName(fileUri));
    if (problem) {
      showNoEvolveBlock(fileUri, `ThetaEvolve: cannot evolve ${problem}.`, locateEvolveBlocks(text).problems[0]?.kind === 'no_region');
      return;
    }
    const readSettingsFirst = await runSettings(fileUri);
    if (!readSettingsFirst) return;
    const folder = vscode.workspace.getWorkspaceFolder(fileUri) ?? vscode.workspace.workspaceFolders?.[0];
    if (!folder) {
      void showError('ThetaEvolve: open a folder first: run databases are kept in it (thetaevolve.runsDirectory).');
      return;
    }
    const task = await pickTask(context, fileUri);
    if (!task) return;
    // A release config's sampling values and database sizes, below what the user set.
    const settings = task.runSettings ? await runSettings(fileUri, task.runSettings) : readSettingsFirst;
    if (!settings) return;
    const apiKey = await readApiKey(context.secrets);
    const runsDir = runsDirectoryOfFolder(folder, settings);
    await mkdir(runsDir, { recursive: true });
    const runId = newRunId(task.name, runsDir);
    const extension = notebook ? 'py' : fileUri.path.includes('.') ? (fileUri.path.split('.').pop() ?? task.language) : task.language;
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
      modelApiKeys: await readModelApiKeys(context.secrets, settings, !setByWorkspace('models', fileUri)),
      resume: false,
      python: await editorPythonChoice(fileUri, settings),
    });
  });

  registerCommand(context, COMMAND_IDS.stopRun, () => {
    const run = controller.active;
    if (!run || !controller.stop()) return void showInfo('ThetaEvolve: no run is active.');
    showStateProgress(controller, run, 'stop');
  });

  registerCommand(context, COMMAND_IDS.pauseRun, () => {
    const run = controller.active;
    if (!run) return void showInfo('ThetaEvolve: no run is active.');
    if (!controller.pause()) return void showInfo(`ThetaEvolve: run ${run.runId} is ${run.state}.`);
    showStateProgress(controller, run, 'pause');
  });

  /**
   * Resume Run: the active run if it is paused; else a run database (given:
   * its file by the dashboard, its row by the Runs view; or picked) from its
   * last committed step.
   */
  registerCommand(context, COMMAND_IDS.resumeRun, async (arg?: unknown) => {
    const given = typeof arg === 'string' ? arg : isRunNode(arg) ? arg.dbFile : undefined;
    // A run that is stopping is waited for: then any stored run resumes, the one that stopped too.
    if (controller.active && isClosing(controller.active)) await noRunInTheWay(controller);
    const run = controller.active;
    if (run) {
      if (given !== undefined && given !== run.dbFile)
        void showInfo(`ThetaEvolve: run ${run.runId} is active; stop it before resuming another.`);
      else if (!controller.resume()) void showInfo(`ThetaEvolve: run ${run.runId} is ${run.state}, not paused.`);
      return;
    }
    if (!guardWorkspaceTrust()) return;
    const picked = given !== undefined ? await givenRun(given) : await pickRunToResume();
    if (!picked) return;
    const origin = runOrigin(picked.info.meta);
    if (!(await confirmTaskFolder(context.extensionPath, origin.taskDir, `Resume run ${picked.runId}`))) return;
    // A release config's settings again, below the user's (a task that no longer loads fails the start, named there).
    const taskSettings = await loadTask(origin.taskDir).then(
      (task) => task.runSettings,
      () => undefined,
    );
    const settings = await runSettings(origin.fileUri, taskSettings);
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
      modelApiKeys: await readModelApiKeys(context.secrets, settings, !setByWorkspace('models', origin.fileUri)),
      resume: true,
      python: await editorPythonChoice(origin.fileUri, settings),
    });
  });

  const givenRun = async (dbFile: string): Promise<{ runId: string; info: RunInfo } | undefined> => {
    const info = await controller.query({ kind: 'runInfo', dbFile });
    return { runId: info.meta.runId, info };
  };

  const pickRunToResume = async (): Promise<{ runId: string; info: RunInfo } | undefined> => {
    const files = await withProgress({ location: vscode.ProgressLocation.Window, title: 'ThetaEvolve: reading runs' }, () =>
      listRunFiles(),
    );
    if (files.length === 0) {
      void showInfo('ThetaEvolve: no run database found under the runs directory (thetaevolve.runsDirectory).');
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
              description: `${info.meta.task} · step ${Math.max(info.lastStep, 0)} · ${bestText(displayObjective(info.summary.best?.score ?? null, info.meta.direction))}`,
              detail: info.meta.programPath,
              info,
              runId: file.runId,
            }
          : { label: `$(warning) ${file.runId}`, description: 'cannot be read', detail: error ?? undefined },
      );
    const picked = await pickOne(items, {
      title: 'ThetaEvolve: Resume Run',
      placeHolder: 'Continue which run from its last committed step?',
      matchOnDescription: true,
    });
    return picked?.info && picked.runId ? { runId: picked.runId, info: picked.info } : undefined;
  };

  registerCommand(context, COMMAND_IDS.selectTask, async (arg?: unknown) => {
    const editor = vscode.window.activeTextEditor;
    // A notebook cell's task is its notebook's (src/vscode/notebookCells.ts).
    const given = arg instanceof vscode.Uri ? arg : editor?.document.uri;
    const fileUri = given && notebookUriOf(given);
    // The open file is the program only when it has an EVOLVE-BLOCK; else the task's own program opens.
    const isProgram =
      fileUri !== undefined && editor?.document.uri.toString() === fileUri.toString()
        ? evolveBlockProblem(editor.document.getText(), fileName(fileUri)) === undefined
        : fileUri !== undefined;
    const task = await pickTask(context, isProgram ? fileUri : undefined, { forcePick: true });
    if (!task) return;
    if (isProgram && fileUri) void showInfo(`ThetaEvolve: ${fileName(fileUri)} is evolved against ${task.title}.`);
    else await openTaskProgram(context, task);
  });

  registerCommand(context, COMMAND_IDS.setApiKey, () => promptAndStoreApiKey(context.secrets, readSettingsOrShowError()));
}
