// The dashboard in the window: Open Dashboard, Toggle RL Trainer, the page's
// buttons, and its feed (src/dashboard/dashboardFeed.ts) from the active
// run's events or, after a reload, from the latest run database on disk.
import { stat } from 'node:fs/promises';
import * as vscode from 'vscode';
import { askText, showInfo, showWarning } from './notify';
import { errorMessage } from '../engine/common/errors';
import { trainerViewOfSettings } from '../dashboard/dashboardModel';
import { DashboardFeed, replayRunFromDisk } from '../dashboard/dashboardFeed';
import type { Settings } from '../engine/common/config';
import { applyProgramToFile } from './applyProgram';
import { registerCommand } from './commandRegistry';
import { COMMAND_IDS } from './commandIds';
import { type DashboardHost, registerDashboard, takeRestoredDashboards } from './dashboardPanel';
import type { DashboardRestore } from './dashboardRestore';
import { showProgramDiff } from './diffViews';
import { showLineage } from './steerCommands';
import { log } from './log';
import { listRunFiles, type RunController, runOrigin, type TrackedRun } from './runController';
import { isRunNode } from './runsTree';
import { readSettings, readSettingsOrShowError } from './settings';
import { forgetTrainerChoice, rememberTrainerChoice, trainerEnabledForNextRun, withTrainerChoice } from './trainerChoice';

/** What the dashboard's card buttons need of the run they act on. */
type ShownRun = Pick<TrackedRun, 'runId' | 'dbFile' | 'extension' | 'fileUri' | 'textAtRunStart'>;

export function registerDashboardCommands(
  context: vscode.ExtensionContext,
  controller: RunController,
  restore: DashboardRestore,
): DashboardHost {
  // The run the dashboard loaded from disk (after a reload, or picked in the Runs view), until a run starts: its card's buttons act on it.
  let runFromDisk: ShownRun | undefined;
  const shownRun = (): ShownRun | undefined => controller.active ?? runFromDisk ?? controller.latest;
  const query = controller.query.bind(controller);
  /** Show a run from its database; `isStale` true once read (a run started meanwhile) leaves the page as it is. */
  const showRunFromDisk = async (file: { runId: string; dbFile: string }, isStale: () => boolean): Promise<void> => {
    const replayed = await replayRunFromDisk(host, query, file, isStale);
    if (!replayed) return;
    // The status bar shows it too, as before the reload.
    controller.showRunFromDisk(replayed);
    const origin = runOrigin(replayed.meta);
    runFromDisk = {
      runId: replayed.runId,
      dbFile: replayed.dbFile,
      extension: origin.extension,
      fileUri: origin.fileUri,
      textAtRunStart: undefined,
    };
  };

  const host: DashboardHost = registerDashboard(context, {
    start: async () => {
      await vscode.commands.executeCommand(COMMAND_IDS.startRun);
    },
    stop: () => void controller.stop(),
    pause: () => void controller.pause(),
    resume: async () => {
      // A paused run resumes in place; a run that is over goes on from its last committed step (the one the page shows).
      await vscode.commands.executeCommand(COMMAND_IDS.resumeRun, controller.active ? undefined : shownRun()?.dbFile);
    },
    setRlEnabled: async (enabled: boolean) => void (await switchTrainer(context.workspaceState, controller, host, enabled)),
    showDiff: async (programId: string) => {
      const run = shownRun();
      if (!run) return;
      const program = await controller.query({ kind: 'program', dbFile: run.dbFile, programId });
      if (!program?.parentId) throw new Error(`program ${programId} has no parent to compare with`);
      await showProgramDiff(run.runId, program.parentId, programId, run.extension);
    },
    applyToFile: async (programId: string) => {
      const run = shownRun();
      if (!run?.fileUri) throw new Error('no run with a file to apply to');
      const program = await controller.query({ kind: 'program', dbFile: run.dbFile, programId });
      if (!program) throw new Error(`program ${programId} is no longer in the database`);
      await applyProgramToFile(run.fileUri, program.code, {
        textAtRunStart: run.textAtRunStart,
        interactive: true,
        program: { runId: run.runId, dbFile: run.dbFile, programId },
      });
    },
    showLineage: async (programId: string) => {
      const run = shownRun();
      if (!run) return;
      await showLineage(controller, { ...run, programId });
    },
    showLatestRun: () => showLatestRun(),
  });
  /** The workspace's latest run, read once at a time (activation and a restored page both ask). */
  let readingLatest: Promise<void> | undefined;
  const showLatestRun = (): Promise<void> =>
    (readingLatest ??= (async () => {
      if (controller.latest || host.model.hasRun) return;
      const latest = await latestRunFile();
      if (!latest) return;
      await showRunFromDisk(latest, () => controller.latest !== undefined || host.model.hasRun);
    })().finally(() => (readingLatest = undefined)));
  // After a reload the window shows its latest run at once, the page open or not: the status bar and the
  // dashboard's model come back from the database, so a page restored or opened gets the run in its first snapshot.
  host.whileLoading(showLatestRun());

  const state = context.workspaceState;
  showTrainerSettings(host, state);
  const feed = new DashboardFeed(host, query, (what, message) => log().debug(`dashboard: ${what}: ${message}`));
  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration(async (change) => {
      // A setting changed by hand is the new word on RL: the toggle's earlier choice gives way.
      if (change.affectsConfiguration('thetaevolve.trainer.enabled')) await forgetTrainerChoice(state);
      if (change.affectsConfiguration('thetaevolve.trainer') && !controller.active) showTrainerSettings(host, state);
    }),
    controller.onDidEngineEvent(({ event }) => {
      if (event.type === 'run_started') runFromDisk = undefined;
      feed.handle(event, controller.active?.dbFile);
      // Once no run is in progress, the RL card shows what the next run does.
      if (event.type === 'run_finished') showTrainerSettings(host, state);
    }),
  );

  // From the palette: the window's run; from a run of the Runs view: that run, read from its database (the active one is shown live).
  registerCommand(context, COMMAND_IDS.openDashboard, async (arg?: unknown) => {
    const picked = isRunNode(arg) ? arg : undefined;
    const active = controller.active;
    if (picked && active && picked.dbFile !== active.dbFile) {
      void showInfo(`ThetaEvolve: the dashboard follows the active run ${active.runId}; stop it to see ${picked.runId} there.`);
    } else if (picked && !active) {
      await showRunFromDisk(picked, () => controller.active !== undefined);
    }
    host.show();
  });
  registerCommand(context, COMMAND_IDS.toggleTrainer, async () => {
    const active = controller.active !== undefined;
    const settings = active ? undefined : readSettingsOrShowError();
    const wanted = !(active ? host.model.snapshot().trainer.enabled : settings ? trainerEnabledForNextRun(settings, state) : false);
    const enabled = await switchTrainer(state, controller, host, wanted);
    if (enabled !== wanted) return;
    void showInfo(
      `ThetaEvolve: RL trainer ${enabled ? 'on' : 'off'}${active ? ' for this run and the next' : ' for the next run'}; the dashboard shows its state.`,
    );
  });
  // Last: a panel restored before the extension loaded is taken now, everything it may ask for set up.
  takeRestoredDashboards(restore, host);
  return host;
}

/** The most recently written run database of the workspace. */
async function latestRunFile(): Promise<{ runId: string; dbFile: string } | undefined> {
  const files = await listRunFiles();
  const dated = await Promise.all(
    files.map(async (file) => ({ file, mtimeMs: (await stat(file.dbFile).catch(() => null))?.mtimeMs ?? 0 })),
  );
  return dated.sort((a, b) => b.mtimeMs - a.mtimeMs)[0]?.file;
}

/** Asks for the trainer's URL (turning RL on without one); undefined when the user cancels. */
async function askTrainerUrl(protocol: string): Promise<string | undefined> {
  const url = await askText({
    title: 'ThetaEvolve: RL trainer URL',
    prompt: `Base URL of the ${protocol} trainer (thetaevolve.trainer.url, kept in your User settings), e.g. http://127.0.0.1:8000`,
    placeHolder: 'http://HOST:PORT',
    ignoreFocusOut: true,
    validateInput: (value) => (/^https?:\/\/[^\s/]+/.test(value.trim()) ? undefined : 'an http:// or https:// URL'),
  });
  return url?.trim() || undefined;
}

/**
 * The RL toggle (dashboard switch and command): the active run's trainer
 * bridge (the worker answers with trainer_state, which the dashboard shows)
 * and the choice for the next run (src/vscode/trainerChoice.ts; never a
 * settings file). Turning it on without a trainer URL asks for one (kept in
 * the user's settings); without an answer nothing changes. A run that started
 * without a URL cannot be pointed at one mid-run: it says so and stays off.
 * Returns whether the trainer is on afterwards.
 */
async function switchTrainer(state: vscode.Memento, controller: RunController, host: DashboardHost, enabled: boolean): Promise<boolean> {
  const settings = readSettingsOrShowError();
  if (!settings) return false;
  const run = controller.active;
  if (enabled && run && !run.settings['trainer.url'].trim()) {
    host.setTrainer({
      ...trainerViewOfSettings({ ...trainerSettingsOf(run.settings), enabled: false }),
      message: `Off: this run started without thetaevolve.trainer.url${settings['trainer.url'].trim() ? ' (set since)' : ''}; stop it and resume it to train while it evolves.`,
    });
    void showWarning(
      `ThetaEvolve: run ${run.runId} started without a trainer URL (thetaevolve.trainer.url): ${settings['trainer.url'].trim() ? 'stop and resume it' : 'set the URL, then stop and resume it'} to train while it evolves.`,
      'Open Settings',
    ).then((choice) => {
      if (choice) void vscode.commands.executeCommand('workbench.action.openSettings', 'thetaevolve.trainer.url');
    });
    return false;
  }
  if (enabled && !run && !settings['trainer.url'].trim()) {
    const url = await askTrainerUrl(settings['trainer.protocol']);
    if (!url) {
      // Nothing is stuck: RL stays off and the card says why.
      showTrainerSettings(host, state);
      void showInfo('ThetaEvolve: the RL trainer stays off (no thetaevolve.trainer.url given).');
      return false;
    }
    await vscode.workspace.getConfiguration('thetaevolve').update('trainer.url', url, vscode.ConfigurationTarget.Global);
  }
  await rememberTrainerChoice(state, enabled);
  if (run) controller.setTrainerEnabled(enabled);
  else {
    showTrainerSettings(host, state);
    if (enabled) await probeTrainerFor(controller, host, state);
  }
  return enabled;
}

/** RL on with no run: whether the trainer answers, said within seconds on the RL card (and in a warning when it does not). */
async function probeTrainerFor(controller: RunController, host: DashboardHost, state: vscode.Memento): Promise<void> {
  let settings: Settings;
  try {
    settings = withTrainerChoice(readSettings(), state);
  } catch {
    return;
  }
  const url = settings['trainer.url'].trim();
  if (!url) return;
  const view = trainerViewOfSettings(trainerSettingsOf(settings));
  host.setTrainer({ ...view, message: `${view.message} Asking whether the trainer at ${url} answers...` });
  let probe: { answers: boolean; message: string };
  try {
    probe = await controller.query({ kind: 'probeTrainer', url });
  } catch (err) {
    probe = { answers: false, message: `the trainer at ${url} could not be asked (${errorMessage(err)})` };
  }
  // Only what is still the next run's choice is shown: the toggle may have gone off, or a run started, meanwhile.
  if (controller.active || !withTrainerChoice(readSettings(), state)['trainer.enabled']) return;
  host.setTrainer({ ...view, message: `${view.message} ${probe.message[0]?.toUpperCase()}${probe.message.slice(1)}.` });
  if (!probe.answers) void showWarning(`ThetaEvolve: RL trainer on for the next run, but ${probe.message}.`);
}

function trainerSettingsOf(settings: Settings): Parameters<typeof trainerViewOfSettings>[0] {
  return {
    enabled: settings['trainer.enabled'],
    protocol: settings['trainer.protocol'],
    url: settings['trainer.url'],
    mode: settings['trainer.mode'],
  };
}

/** The RL card while no run is in progress: what the next run does. */
function showTrainerSettings(host: DashboardHost, state: vscode.Memento): void {
  let settings: Settings;
  try {
    settings = readSettings();
  } catch {
    return; // A bad setting is reported when a run starts.
  }
  host.setTrainer(trainerViewOfSettings(trainerSettingsOf(withTrainerChoice(settings, state))));
}
