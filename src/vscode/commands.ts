// Command registrations: Start / Stop / Pause / Resume Run, the dashboard,
// diffs and Apply to File (palette, CodeLens and the Runs view's items).
import { existsSync } from 'node:fs';
import { mkdir, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import * as vscode from 'vscode';
import type { Settings } from '../engine/config';
import { locateEvolveBlocks } from '../engine/diff';
import { trainerView, trainerViewOfSettings } from '../engine/dashboardData';
import type { EngineEvent } from '../engine/events';
import { EndpointClient, endpointOptionsFromSettings } from '../engine/llm/endpointClient';
import { MUTATE_SAMPLER_LABEL } from '../engine/mutateSampler';
import { loadTask, type Task } from '../engine/task/task';
import type { Direction } from '../engine/types';
import type { RunInfo } from '../protocol/engineWorker';
import { promptAndStoreApiKey, readApiKey } from './apiKey';
import { applyProgramToFile } from './applyProgram';
import { type DashboardController, type DashboardHost, registerDashboard } from './dashboardPanel';
import { compareProgramWithFile, showProgramDiff } from './diffViews';
import { startLiveEvaluationTerminal } from './evaluationTask';
import { log } from './log';
import { programUri } from './programDocuments';
import { guardWorkspaceTrust, listRunFiles, newRunId, type RunController, type RunView, runOrigin, runsDirectoryOf } from './runController';
import { showRunProgress } from './runProgress';
import type { ProgramNode, RunsTreeProvider } from './runsTree';
import { readSettings, readSettingsOrShowError } from './settings';
import { pickTask } from './taskPicker';

export const COMMAND_IDS = {
  startRun: 'thetaevolve.startRun',
  stopRun: 'thetaevolve.stopRun',
  pauseRun: 'thetaevolve.pauseRun',
  resumeRun: 'thetaevolve.resumeRun',
  openDashboard: 'thetaevolve.openDashboard',
  showBestDiff: 'thetaevolve.showBestDiff',
  applyProgram: 'thetaevolve.applyProgram',
  setApiKey: 'thetaevolve.setApiKey',
  selectTask: 'thetaevolve.selectTask',
  toggleTrainer: 'thetaevolve.toggleTrainer',
  // The Runs view's items (hidden from the palette).
  showProgramDiff: 'thetaevolve.showProgramDiff',
  compareProgramWithFile: 'thetaevolve.compareProgramWithFile',
  applyProgramToFile: 'thetaevolve.applyProgramToFile',
  openProgram: 'thetaevolve.openProgram',
  refreshRuns: 'thetaevolve.refreshRuns',
} as const;

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function fmt(score: number | null | undefined): string {
  return score === null || score === undefined ? 'n/a' : Number(score.toPrecision(8)).toString();
}

function fileName(uri: vscode.Uri): string {
  return uri.path.split('/').pop() ?? uri.toString();
}

/** A run known by its database: what the commands need of it. */
interface RunRef {
  runId: string;
  dbFile: string;
  fileUri: vscode.Uri | undefined;
  extension: string;
  textAtRunStart: string | undefined;
}

function isProgramNode(value: unknown): value is ProgramNode {
  return typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'program' && typeof (value as { programId?: unknown }).programId === 'string';
}

/** The EVOLVE-BLOCK problem of a text, as one sentence, or undefined when it has well-formed regions (one or more). */
export function evolveBlockProblem(text: string, name: string): string | undefined {
  const first = locateEvolveBlocks(text).problems[0];
  return first ? `${name}: ${first.message}` : undefined;
}

/** Check the endpoint (health + model) before a run; undefined after showing why not. */
async function checkEndpoint(settings: Settings, apiKey: string | undefined): Promise<string | undefined> {
  const client = new EndpointClient(endpointOptionsFromSettings(settings, apiKey));
  try {
    await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `ThetaEvolve: checking ${settings.endpoint}`, cancellable: true },
      async (_progress, token) => {
        const abort = new AbortController();
        token.onCancellationRequested(() => abort.abort());
        await client.check(abort.signal);
      },
    );
    return client.label;
  } catch (err) {
    const open = 'Open Settings';
    const offline = 'Use Offline Sampler';
    void vscode.window
      .showErrorMessage(`ThetaEvolve: the inference endpoint is not ready: ${errorText(err)}`, open, offline)
      .then((choice) => {
        if (choice === open) void vscode.commands.executeCommand('workbench.action.openSettings', 'thetaevolve.endpoint');
        if (choice === offline) void vscode.commands.executeCommand('workbench.action.openSettings', 'thetaevolve.sampler');
      });
    return undefined;
  }
}

export interface CommandDeps {
  context: vscode.ExtensionContext;
  controller: RunController;
  tree: RunsTreeProvider;
}

export function registerCommands(deps: CommandDeps): void {
  const { context, controller, tree } = deps;
  const register = (id: string, handler: (...args: unknown[]) => unknown): void => {
    context.subscriptions.push(
      vscode.commands.registerCommand(id, async (...args: unknown[]) => {
        try {
          return await handler(...args);
        } catch (err) {
          log().error(`${id} failed: ${errorText(err)}`);
          void vscode.window.showErrorMessage(`ThetaEvolve: ${errorText(err)}`);
          return undefined;
        }
      }),
    );
  };

  const startAndFollow = async (spec: Parameters<RunController['start']>[0]): Promise<void> => {
    const started = controller.start(spec);
    const run = controller.active as RunView;
    void startLiveEvaluationTerminal(controller, run).catch((err: unknown) => log().warn(`evaluations terminal: ${errorText(err)}`));
    showRunProgress(controller, run);
    try {
      await started;
    } catch (err) {
      void vscode.window.showErrorMessage(`ThetaEvolve: the run could not start: ${errorText(err)}`);
      return;
    }
    tree.scheduleRefresh(0);
  };

  const confirmSource = async (settings: Settings, apiKey: string | undefined): Promise<boolean> => {
    if (settings.sampler === 'mutate') {
      void vscode.window.showInformationMessage(`ThetaEvolve: using the ${MUTATE_SAMPLER_LABEL}: no model is asked; numeric literals inside the EVOLVE-BLOCK are perturbed.`);
      return true;
    }
    const label = await checkEndpoint(settings, apiKey);
    if (!label) return false;
    void vscode.window.showInformationMessage(`ThetaEvolve: evolving with ${label}.`);
    return true;
  };

  // ------------------------------------------------------------- Start Run
  register(COMMAND_IDS.startRun, async (arg?: unknown) => {
    if (!guardWorkspaceTrust()) return;
    if (controller.active) {
      const stop = 'Stop Run';
      const choice = await vscode.window.showWarningMessage(`ThetaEvolve: run ${controller.active.runId} is still active; stop it first.`, stop);
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
      void vscode.window.showErrorMessage(`ThetaEvolve: cannot evolve ${problem}.`);
      return;
    }
    const settings = readSettingsOrShowError(fileUri);
    if (!settings) return;
    const folder = vscode.workspace.getWorkspaceFolder(fileUri) ?? vscode.workspace.workspaceFolders?.[0];
    if (!folder) {
      void vscode.window.showErrorMessage('ThetaEvolve: open a folder first: run databases are kept in it (thetaevolve.runsDirectory).');
      return;
    }
    const task: Task | undefined = await pickTask(context, fileUri);
    if (!task) return;
    const apiKey = await readApiKey(context.secrets);
    if (!(await confirmSource(settings, apiKey))) return;
    const runsDir = runsDirectoryOf(folder, settings);
    await mkdir(runsDir, { recursive: true });
    // Runs of a task started within one second would share a database: number the later ones.
    const stamp = newRunId(task.name);
    let runId = stamp;
    for (let n = 2; existsSync(join(runsDir, `${runId}.sqlite`)); n++) runId = `${stamp}-${n}`;
    const extension = fileUri.path.includes('.') ? (fileUri.path.split('.').pop() ?? task.language) : task.language;
    await startAndFollow({
      runId,
      dbFile: join(runsDir, `${runId}.sqlite`),
      taskDir: task.dir,
      taskName: task.name,
      taskTitle: task.title,
      direction: task.direction,
      fileUri,
      extension,
      startCode: text,
      textAtRunStart: text,
      settings,
      apiKey,
      resume: false,
    });
  });

  // ------------------------------------------------------------- Stop / Pause / Resume
  register(COMMAND_IDS.stopRun, () => {
    if (!controller.stop()) void vscode.window.showInformationMessage('ThetaEvolve: no run is active.');
  });

  register(COMMAND_IDS.pauseRun, () => {
    const run = controller.active;
    if (!run) return void vscode.window.showInformationMessage('ThetaEvolve: no run is active.');
    if (!controller.pause()) return void vscode.window.showInformationMessage(`ThetaEvolve: run ${run.runId} is ${run.state}.`);
    void vscode.window.showInformationMessage(`ThetaEvolve: run ${run.runId} pauses after the step in flight commits.`);
  });

  register(COMMAND_IDS.resumeRun, async () => {
    const run = controller.active;
    if (run) {
      if (!controller.resume()) void vscode.window.showInformationMessage(`ThetaEvolve: run ${run.runId} is ${run.state}, not paused.`);
      return;
    }
    if (!guardWorkspaceTrust()) return;
    const files = await vscode.window.withProgress({ location: vscode.ProgressLocation.Window, title: 'ThetaEvolve: reading runs' }, () => listRunFiles());
    if (files.length === 0) {
      void vscode.window.showInformationMessage('ThetaEvolve: no run database found under the runs directory (thetaevolve.runsDirectory).');
      return;
    }
    const infos = await Promise.all(
      files.map(async (file) => {
        try {
          return { file, info: await controller.query({ kind: 'runInfo', dbFile: file.dbFile }), error: null };
        } catch (err) {
          return { file, info: null, error: errorText(err) };
        }
      }),
    );
    type Item = vscode.QuickPickItem & { info?: RunInfo; runId?: string };
    const items: Item[] = infos
      .sort((a, b) => Number(b.info?.meta.createdAt ?? 0) - Number(a.info?.meta.createdAt ?? 0))
      .map(({ file, info, error }): Item =>
        info
          ? {
              label: file.runId,
              description: `${String(info.meta.task ?? '?')} · step ${Math.max(info.lastStep, 0)} · best ${fmt(info.summary.best?.score)}`,
              detail: typeof info.meta.programPath === 'string' ? info.meta.programPath : file.dbFile,
              info,
              runId: file.runId,
            }
          : { label: `$(warning) ${file.runId}`, description: 'cannot be read', detail: error ?? undefined },
      );
    const picked = await vscode.window.showQuickPick(items, { title: 'ThetaEvolve: Resume Run', placeHolder: 'Continue which run from its last committed step?', matchOnDescription: true });
    if (!picked?.info || !picked.runId) return;
    const origin = runOrigin(picked.info);
    if (!origin.taskDir) {
      void vscode.window.showErrorMessage(`ThetaEvolve: ${picked.runId} does not record its task folder; it cannot be resumed.`);
      return;
    }
    const settings = readSettingsOrShowError(origin.fileUri);
    if (!settings) return;
    const apiKey = await readApiKey(context.secrets);
    if (!(await confirmSource(settings, apiKey))) return;
    await startAndFollow({
      runId: picked.runId,
      dbFile: picked.info.dbFile,
      taskDir: origin.taskDir,
      taskName: origin.taskName,
      taskTitle: origin.taskName,
      direction: picked.info.meta.direction === 'minimize' ? 'minimize' : 'maximize',
      fileUri: origin.fileUri,
      extension: origin.extension,
      startCode: null,
      textAtRunStart: origin.startCode,
      settings,
      apiKey,
      resume: true,
    });
  });

  // ------------------------------------------------------------- best program of a run
  /** The run the palette's Show Best Diff / Apply talk about: the active (or last) one, else the newest for the file. */
  const runFor = async (fileUri: vscode.Uri | undefined): Promise<RunRef | undefined> => {
    const latest = controller.latest;
    if (latest && (!fileUri || latest.fileUri?.toString() === fileUri.toString())) {
      return { runId: latest.runId, dbFile: latest.dbFile, fileUri: latest.fileUri, extension: latest.extension, textAtRunStart: latest.textAtRunStart };
    }
    let newest: { ref: RunRef; createdAt: number } | undefined;
    for (const file of await listRunFiles()) {
      const info = await controller.query({ kind: 'runInfo', dbFile: file.dbFile }).catch(() => null);
      if (!info) continue;
      const origin = runOrigin(info);
      if (fileUri && origin.fileUri?.fsPath !== fileUri.fsPath) continue;
      const createdAt = typeof info.meta.createdAt === 'number' ? info.meta.createdAt : 0;
      if (!newest || createdAt > newest.createdAt) {
        newest = { ref: { runId: file.runId, dbFile: file.dbFile, fileUri: origin.fileUri, extension: origin.extension, textAtRunStart: origin.startCode }, createdAt };
      }
    }
    if (newest) controller.registerRun(newest.ref.runId, newest.ref.dbFile);
    return newest?.ref;
  };

  const bestOf = async (ref: RunRef): Promise<{ id: string; score: number } | null> => (await controller.query({ kind: 'summary', dbFile: ref.dbFile })).best;

  register(COMMAND_IDS.showBestDiff, async (arg?: unknown) => {
    const fileUri = arg instanceof vscode.Uri ? arg : undefined;
    const ref = await runFor(fileUri ?? vscode.window.activeTextEditor?.document.uri);
    const fallback = ref ?? (fileUri ? undefined : await runFor(undefined));
    if (!fallback) return void vscode.window.showInformationMessage('ThetaEvolve: no run yet for this file: start one with "ThetaEvolve: Start Run".');
    const best = await bestOf(fallback);
    if (!best) return void vscode.window.showInformationMessage(`ThetaEvolve: run ${fallback.runId} has no valid program yet.`);
    const target = fileUri ?? fallback.fileUri;
    if (!target) return void vscode.window.showErrorMessage(`ThetaEvolve: run ${fallback.runId} does not record the file it evolves.`);
    await compareProgramWithFile(fallback.runId, best.id, target, fallback.extension);
  });

  register(COMMAND_IDS.applyProgram, async (arg?: unknown) => {
    if (isProgramNode(arg)) return applyNode(arg);
    const fileUri = arg instanceof vscode.Uri ? arg : undefined;
    const ref = (await runFor(fileUri ?? vscode.window.activeTextEditor?.document.uri)) ?? (fileUri ? undefined : await runFor(undefined));
    if (!ref) return void vscode.window.showInformationMessage('ThetaEvolve: no run yet: start one with "ThetaEvolve: Start Run".');
    const target = fileUri ?? ref.fileUri;
    const best = await bestOf(ref);
    if (!best || !target) return void vscode.window.showInformationMessage(`ThetaEvolve: run ${ref.runId} has no program to apply yet.`);
    const program = await controller.query({ kind: 'program', dbFile: ref.dbFile, programId: best.id });
    if (!program) return void vscode.window.showErrorMessage(`ThetaEvolve: program ${best.id} is no longer in ${ref.runId}.`);
    const outcome = await applyProgramToFile(target, program.code, { textAtRunStart: ref.textAtRunStart, interactive: true });
    if (outcome === 'applied') void vscode.window.showInformationMessage(`ThetaEvolve: applied ${best.id} (score ${fmt(best.score)}) to ${fileName(target)}. Undo restores the file.`);
  });

  // ------------------------------------------------------------- the Runs view's items
  const nodeArg = (arg: unknown): ProgramNode => {
    if (!isProgramNode(arg)) throw new Error('pick a program in the Runs view');
    controller.registerRun(arg.runId, arg.dbFile);
    return arg;
  };

  const applyNode = async (node: ProgramNode): Promise<void> => {
    if (!node.fileUri) return void vscode.window.showErrorMessage(`ThetaEvolve: run ${node.runId} does not record the file it evolves.`);
    const program = await controller.query({ kind: 'program', dbFile: node.dbFile, programId: node.programId });
    if (!program) return void vscode.window.showErrorMessage(`ThetaEvolve: program ${node.programId} is no longer in ${node.runId}.`);
    const textAtRunStart = controller.latest?.runId === node.runId ? controller.latest.textAtRunStart : node.startCode;
    const outcome = await applyProgramToFile(node.fileUri, program.code, { textAtRunStart, interactive: true });
    if (outcome === 'applied') void vscode.window.showInformationMessage(`ThetaEvolve: applied ${node.programId} (score ${fmt(node.score)}) to ${fileName(node.fileUri)}. Undo restores the file.`);
  };

  register(COMMAND_IDS.showProgramDiff, async (arg?: unknown) => {
    const node = nodeArg(arg);
    if (!node.parentId) {
      void vscode.window.showInformationMessage('ThetaEvolve: this is the starting program; it has no parent to compare with.');
      return;
    }
    await showProgramDiff(node.runId, node.parentId, node.programId, node.extension);
  });

  register(COMMAND_IDS.compareProgramWithFile, async (arg?: unknown) => {
    const node = nodeArg(arg);
    if (!node.fileUri) return void vscode.window.showErrorMessage(`ThetaEvolve: run ${node.runId} does not record the file it evolves.`);
    await compareProgramWithFile(node.runId, node.programId, node.fileUri, node.extension);
  });

  register(COMMAND_IDS.applyProgramToFile, async (arg?: unknown) => applyNode(nodeArg(arg)));

  register(COMMAND_IDS.openProgram, async (arg?: unknown) => {
    const node = nodeArg(arg);
    const uri = programUri(node.runId, node.programId, `${node.programId} step ${node.step}`, node.extension);
    await vscode.window.showTextDocument(uri, { preview: true });
  });

  register(COMMAND_IDS.refreshRuns, () => tree.refresh());

  // ------------------------------------------------------------- the rest
  register(COMMAND_IDS.selectTask, async (arg?: unknown) => {
    const fileUri = arg instanceof vscode.Uri ? arg : vscode.window.activeTextEditor?.document.uri;
    const task = await pickTask(context, fileUri, { forcePick: true });
    if (task) void vscode.window.showInformationMessage(`ThetaEvolve: ${fileUri ? fileName(fileUri) : 'this workspace'} is evolved against ${task.title}.`);
  });

  register(COMMAND_IDS.setApiKey, () => promptAndStoreApiKey(context.secrets));

  // ------------------------------------------------------------- follow the best, the dashboard
  context.subscriptions.push(followBest(controller));
  // The run the dashboard loaded from disk (after a reload, before any run in this window): its card's buttons act on it.
  let runFromDisk: ShownRun | undefined;
  const shownRun = (): ShownRun | undefined => controller.latest ?? runFromDisk;
  const dashboard = wireDashboard(context, controller, {
    showDiff: showProgramDiffById,
    applyToFile: applyById,
    loadedFromDisk: (run) => (runFromDisk = run),
  });
  register(COMMAND_IDS.openDashboard, () => dashboard.show());
  register(COMMAND_IDS.toggleTrainer, async () => {
    const active = controller.active !== undefined;
    const enabled = !(active ? dashboard.model.snapshot().trainer.enabled : (readSettingsOrShowError()?.['trainer.enabled'] ?? false));
    await switchTrainer(controller, dashboard, enabled);
    void vscode.window.showInformationMessage(
      `ThetaEvolve: RL trainer ${enabled ? 'on' : 'off'}${active ? ' for this run and the next' : ' for the next run'} (thetaevolve.trainer.enabled); the dashboard shows its state.`,
    );
  });

  async function showProgramDiffById(programId: string): Promise<void> {
    const run = shownRun();
    if (!run) return;
    const program = await controller.query({ kind: 'program', dbFile: run.dbFile, programId });
    if (!program?.parentId) throw new Error(`program ${programId} has no parent to compare with`);
    await showProgramDiff(run.runId, program.parentId, programId, run.extension);
  }

  async function applyById(programId: string): Promise<void> {
    const run = shownRun();
    if (!run?.fileUri) throw new Error('no run with a file to apply to');
    const program = await controller.query({ kind: 'program', dbFile: run.dbFile, programId });
    if (!program) throw new Error(`program ${programId} is no longer in the database`);
    await applyProgramToFile(run.fileUri, program.code, { textAtRunStart: run.textAtRunStart, interactive: true });
  }
}

/** thetaevolve.followBest: each new best of the active run goes into its file (non-interactive, undoable). */
function followBest(controller: RunController): vscode.Disposable {
  // One apply at a time, in order, each skipped once a newer best exists: bests of
  // consecutive steps must not race (an older one landing last, or a newer one
  // refused because the file changed under it).
  let queue: Promise<void> = Promise.resolve();
  let newest: string | null = null;
  return controller.onDidEngineEvent(({ runId, event }) => {
    if (event.type !== 'new_best' || event.step === 0) return;
    const run = controller.active;
    if (!run || run.runId !== runId || !run.fileUri) return;
    if (!vscode.workspace.getConfiguration('thetaevolve', run.fileUri).get<boolean>('followBest', false)) return;
    const fileUri = run.fileUri;
    newest = event.id;
    queue = queue
      .then(async () => {
        if (newest !== event.id) return;
        const program = await controller.query({ kind: 'program', dbFile: run.dbFile, programId: event.id });
        if (!program) return;
        const outcome = await applyProgramToFile(fileUri, program.code, { textAtRunStart: run.textAtRunStart, interactive: false });
        log().info(`follow best: ${event.id} (score ${fmt(event.score)}) -> ${fileName(fileUri)}: ${outcome}`);
        // The file now holds the new best: later bests may replace it again.
        if (outcome === 'applied') {
          const document = await vscode.workspace.openTextDocument(fileUri);
          run.textAtRunStart = document.getText();
        }
      })
      .catch((err: unknown) => log().warn(`follow best: ${errorText(err)}`));
  });
}

/** What the dashboard's card buttons need of the run they act on. */
type ShownRun = Pick<RunView, 'runId' | 'dbFile' | 'extension' | 'fileUri' | 'textAtRunStart'>;

/**
 * After a window reload the extension starts with an empty dashboard: fill it
 * from the most recently written run database of the workspace (steps,
 * database state, best program), all read in the engine worker.
 */
async function showLatestRunFromDisk(controller: RunController, host: DashboardHost): Promise<ShownRun | undefined> {
  if (controller.latest) return undefined;
  const files = await listRunFiles();
  const dated = await Promise.all(files.map(async (file) => ({ file, mtimeMs: (await stat(file.dbFile).catch(() => null))?.mtimeMs ?? 0 })));
  const latest = dated.sort((a, b) => b.mtimeMs - a.mtimeMs)[0]?.file;
  if (!latest) return undefined;
  const dbFile = latest.dbFile;
  const [info, steps, snapshot, improvements] = await Promise.all([
    controller.query({ kind: 'runInfo', dbFile }),
    controller.query({ kind: 'steps', dbFile }),
    controller.query({ kind: 'snapshot', dbFile }),
    controller.query({ kind: 'improvements', dbFile }),
  ]);
  const origin = runOrigin(info);
  const task = origin.taskDir ? await loadTask(origin.taskDir).catch(() => null) : null;
  const best = info.summary.best ? await controller.query({ kind: 'program', dbFile, programId: info.summary.best.id }) : null;
  const lineageDepth = best ? (await controller.query({ kind: 'ancestors', dbFile, programId: best.id })).length : 0;
  // A run started (or the page got a run) while this was read: that one is shown.
  if (controller.latest || host.model.hasRun) return undefined;
  controller.registerRun(latest.runId, dbFile);
  const sourceLabel = typeof info.meta.source === 'string' ? info.meta.source : 'unknown source';
  host.load((model) => {
    model.setRun({
      runId: latest.runId,
      taskName: origin.taskName,
      taskTitle: task?.title ?? origin.taskName,
      direction: info.meta.direction === 'minimize' ? 'minimize' : 'maximize',
      targetValue: task?.targetValue ?? null,
      source: { kind: sourceLabel === MUTATE_SAMPLER_LABEL ? 'mutate' : 'llm', label: sourceLabel },
      batchSize: null,
      samplesPerPrompt: null,
      resumedFromStep: null,
    });
    let bestEver: number | null = null;
    let improvement = 0;
    let elapsedMs = 0;
    for (const row of steps) {
      for (; improvement < improvements.length && (improvements[improvement]?.step ?? Infinity) <= row.step; improvement++) {
        const score = improvements[improvement]?.score ?? null;
        if (score !== null && (bestEver === null || score > bestEver)) bestEver = score;
      }
      elapsedMs += row.stats.timings.totalMs;
      // The database keeps no per-step size: the tile shows the current one.
      model.addStep({ ...row.stats, bestEver, dbSize: snapshot.programs, elapsedMs });
    }
    model.setDatabase(snapshot);
    model.setBest(best ? { id: best.id, step: best.step, score: best.score, objective: best.objective, parentId: best.parentId, lineageDepth } : null);
    model.setRunState({ state: 'finished', message: `${steps.length} committed step(s), from ${basename(dbFile)}; Resume Run continues it` });
  });
  return { runId: latest.runId, dbFile, extension: origin.extension, fileUri: origin.fileUri, textAtRunStart: undefined };
}

/**
 * The RL toggle (dashboard switch and command): the setting the next run
 * reads, and the active run's trainer bridge at once (the worker answers
 * with trainer_state, which the dashboard shows).
 */
async function switchTrainer(controller: RunController, host: DashboardHost, enabled: boolean): Promise<void> {
  const config = vscode.workspace.getConfiguration('thetaevolve');
  const target = vscode.workspace.workspaceFolders?.length ? vscode.ConfigurationTarget.Workspace : vscode.ConfigurationTarget.Global;
  await config.update('trainer.enabled', enabled, target);
  if (controller.active) controller.setTrainerEnabled(enabled);
  else showTrainerSettings(host);
}

/** The RL card from the settings, while no run is in progress. */
function showTrainerSettings(host: DashboardHost): void {
  let settings: Settings;
  try {
    settings = readSettings();
  } catch {
    return; // A bad setting is reported when a run starts.
  }
  host.setTrainer(
    trainerViewOfSettings({ enabled: settings['trainer.enabled'], protocol: settings['trainer.protocol'], url: settings['trainer.url'], mode: settings['trainer.mode'] }),
  );
}

/** Feed the dashboard from the active run's events; its buttons drive the controller. */
function wireDashboard(
  context: vscode.ExtensionContext,
  controller: RunController,
  actions: { showDiff: (programId: string) => Promise<void>; applyToFile: (programId: string) => Promise<void>; loadedFromDisk: (run: ShownRun) => void },
): DashboardHost {
  const dashboardController: DashboardController = {
    start: async () => {
      await vscode.commands.executeCommand(COMMAND_IDS.startRun);
    },
    stop: () => void controller.stop(),
    pause: () => void controller.pause(),
    resume: async () => {
      await vscode.commands.executeCommand(COMMAND_IDS.resumeRun);
    },
    setRlEnabled: (enabled: boolean) => switchTrainer(controller, host, enabled),
    showDiff: (programId: string) => actions.showDiff(programId),
    applyToFile: (programId: string) => actions.applyToFile(programId),
    showLatestRun: async () => {
      const shown = await showLatestRunFromDisk(controller, host);
      if (shown) actions.loadedFromDisk(shown);
    },
  };
  const host = registerDashboard(context, dashboardController);
  showTrainerSettings(host);
  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration((change) => {
      if (change.affectsConfiguration('thetaevolve.trainer') && !controller.active) showTrainerSettings(host);
    }),
  );
  const refreshDatabase = (dbFile: string): void => {
    void controller
      .query({ kind: 'snapshot', dbFile })
      .then((snapshot) => host.setDatabase(snapshot))
      .catch((err: unknown) => log().debug(`dashboard: database snapshot: ${errorText(err)}`));
  };
  const validScores: number[] = [];
  context.subscriptions.push(
    controller.onDidEngineEvent(({ event }: { event: EngineEvent }) => {
      const run = controller.active;
      try {
        switch (event.type) {
          case 'run_started':
            host.setRun({
              runId: event.runId,
              taskName: event.task.name,
              taskTitle: event.task.title,
              direction: event.task.direction as Direction,
              targetValue: event.task.targetValue,
              source: event.source,
              batchSize: typeof event.settings.batchSize === 'number' ? event.settings.batchSize : null,
              samplesPerPrompt: typeof event.settings.samplesPerPrompt === 'number' ? event.settings.samplesPerPrompt : null,
              resumedFromStep: event.resumedFromStep,
            });
            host.setRunState({ state: 'running', message: event.resumedFromStep !== null ? `resumed after step ${event.resumedFromStep}` : 'running' });
            if (run) refreshDatabase(run.dbFile);
            break;
          case 'evaluation_finished':
            if (event.outcome === 'valid' && event.score !== null) validScores.push(event.score);
            break;
          case 'step_committed':
            host.addStep(event);
            host.addValidScores(validScores.splice(0));
            if (run) refreshDatabase(run.dbFile);
            break;
          case 'new_best': {
            const best = { id: event.id, step: event.step, score: event.score, objective: event.objective, parentId: event.parentId };
            if (!run) break;
            void controller
              .query({ kind: 'ancestors', dbFile: run.dbFile, programId: event.id })
              .then((ancestors) => host.setBest({ ...best, lineageDepth: ancestors.length }))
              .catch((err: unknown) => log().debug(`dashboard: best: ${errorText(err)}`));
            break;
          }
          case 'paused':
            host.setRunState({ state: 'paused', message: `paused after step ${event.step}` });
            break;
          case 'resumed':
            host.setRunState({ state: 'running', message: 'running' });
            break;
          case 'run_finished':
            host.setRunState({ state: event.reason === 'error' ? 'error' : 'finished', message: event.message });
            showTrainerSettings(host);
            break;
          case 'trainer_state':
            host.setTrainer(trainerView(event.state));
            break;
          default:
            break;
        }
      } catch (err) {
        log().debug(`dashboard: ${event.type}: ${errorText(err)}`);
      }
    }),
  );
  return host;
}
