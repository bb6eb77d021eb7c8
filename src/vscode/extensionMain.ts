// The extension proper, loaded by its entry (src/extension.ts) once the
// dashboard VS Code restores has its page: wires thin adapters; all logic
// lives in src/engine (which never imports vscode) and runs in the engine
// worker (src/worker); the dashboard's model and feed live in src/dashboard.
// First: its first mark is when this bundle began to run.
import { markStartup } from './startupTimeline';
import { join } from 'node:path';
import * as vscode from 'vscode';
import { onDidFailCommand } from './commandRegistry';
import { storeApiKey } from './apiKey';
import { onDidShowMessage, onDidShowPick, type ShownMessage, type ShownPick } from './notify';
import { type FollowOutcome, onDidHandleBest } from './followBest';
import { registerCommands } from './commands';
import { registerEvaluationTasks } from './evaluationTask';
import type { DashboardHost } from './dashboardPanel';
import type { DashboardRestore } from './dashboardRestore';
import { registerEvolveBlockLens } from './evolveBlockLens';
import { log } from './log';
import { registerNotebookCells } from './notebookCells';
import { type ProgramLookup, registerProgramDocuments } from './programDocuments';
import { registerProgramFeedback } from './programFeedback';
import { registerAgentTools } from './agentTools';
import { feedbackOf } from '../engine/common/feedback';
import { RunController } from './runController';
import { RunsTreeProvider } from './runsTree';
import { onDidOfferStartFailure, type StartFailureOffer } from './runCommands';
import { rememberedTaskFile, rememberTaskFile } from './taskPicker';
import { onDidNotifyRunFailure, registerRunFailures, type RunFailureNotice } from './runFailures';
import { registerStatusBar } from './statusBar';
import { onDidAnswerSteer, type SteerAnswer } from './steerCommands';
import { type BlameAnnotation, onDidAnnotateBlame } from './blameDecorations';
import { onDidChangeStateProgress, type StateProgress } from './runProgress';
import { onDidPostComparison } from './compareRuns';
import type { CompareHostMessage } from '../protocol/compareMessages';

/** What activate() returns: the in-host tests reach the live objects through it. */
export interface ThetaEvolveApi {
  controller: RunController;
  tree: RunsTreeProvider;
  /** The dashboard (its model is what the page shows). */
  dashboard: DashboardHost;
  /** Remember the task (folder or task.json) for a file, as the task picker does after a pick. */
  rememberTaskFor: (fileUri: vscode.Uri, taskFile: string) => Promise<void>;
  /** The task (folder or task.json) remembered for a file: what Start Run on it uses without asking. */
  rememberedTaskFor: (fileUri: vscode.Uri) => string | undefined;
  /** Store in SecretStorage what Set API Key stores (`name`: a model's apiKeyName, null: the run's key; empty removes it). */
  storeApiKey: (name: string | null, value: string) => Promise<void>;
  /** A command failed (logged and shown as an error). */
  onDidFailCommand: vscode.Event<{ id: string; message: string }>;
  /** A notification or modal was shown: its text as VS Code got it (src/vscode/notify.ts). */
  onDidShowMessage: vscode.Event<ShownMessage>;
  /** A quick pick was shown: its texts as VS Code got them (src/vscode/notify.ts). */
  onDidShowPick: vscode.Event<ShownPick>;
  /** A run could not start: the notification shown, whose buttons can be answered (choose). */
  onDidOfferStartFailure: vscode.Event<StartFailureOffer>;
  /** Following the best (thetaevolve.followBest) is done with a new best of the active run: what became of it. */
  onDidHandleBest: vscode.Event<{ programId: string; outcome: FollowOutcome }>;
  /** A run ended in an error: the notification shown. */
  onDidNotifyRunFailure: vscode.Event<RunFailureNotice>;
  /** A steer request was answered (applied, queued, refused), or the live run said what it did with one. */
  onDidAnswerSteer: vscode.Event<SteerAnswer>;
  /** A Pause or Stop notification opened or ended (and why). */
  onDidChangeStateProgress: vscode.Event<StateProgress>;
  /** A program document got its blame annotations. */
  onDidAnnotateBlame: vscode.Event<{ uri: vscode.Uri; annotations: BlameAnnotation[]; drawn: boolean }>;
  /** The Compare Runs page was sent a comparison (or why the runs could not be read). */
  onDidPostComparison: vscode.Event<CompareHostMessage>;
  /** Serve more programs as thetaevolve: documents (the scheme's one file system is this extension's). */
  registerProgramLookup: (lookup: ProgramLookup) => vscode.Disposable;
}

markStartup('main bundle loaded');

/** activate() of the extension, past the dashboard's serializer: `restore` hands over the panel it restored. */
export function activateMain(context: vscode.ExtensionContext, restore: DashboardRestore): ThetaEvolveApi {
  log().info(`ThetaEvolve ${String(context.extension.packageJSON.version)} activated`);
  const controller = new RunController(join(context.extensionPath, 'dist', 'engineWorker.js'));
  const tree = new RunsTreeProvider(controller);
  context.subscriptions.push(
    controller,
    tree,
    // Several runs may be selected: Compare Runs takes them all.
    vscode.window.createTreeView('thetaevolve.runs', { treeDataProvider: tree, canSelectMany: true }),
    registerProgramDocuments({
      getProgram: async (runId, programId) => {
        const program = await controller.getProgram(runId, programId);
        return program
          ? {
              code: program.code,
              objective: program.objective,
              step: program.step,
              stepRank: program.stepRank ?? null,
              feedback: feedbackOf(program.metrics),
            }
          : null;
      },
    }),
    registerStatusBar(controller),
    registerRunFailures(controller),
    registerEvaluationTasks(context.extensionPath, controller),
    registerEvolveBlockLens(context),
    registerNotebookCells(),
    watchRunsDirectory(tree),
  );
  registerProgramFeedback(context);
  registerAgentTools(context, controller);
  const dashboard = registerCommands({ context, controller, tree, restore });
  return {
    controller,
    tree,
    dashboard,
    rememberTaskFor: (fileUri, taskFile) => rememberTaskFile(context, fileUri, taskFile),
    rememberedTaskFor: (fileUri) => rememberedTaskFile(context, fileUri),
    storeApiKey: (name, value) => storeApiKey(context.secrets, name, value),
    onDidFailCommand,
    onDidShowMessage,
    onDidShowPick,
    onDidOfferStartFailure,
    onDidHandleBest,
    onDidNotifyRunFailure,
    onDidAnswerSteer,
    onDidAnnotateBlame,
    onDidChangeStateProgress,
    onDidPostComparison,
    registerProgramLookup: registerProgramDocuments,
  };
}

/** New or removed run databases (another window, the CLI) show up in the Runs view. */
function watchRunsDirectory(tree: RunsTreeProvider): vscode.Disposable {
  const watcher = vscode.workspace.createFileSystemWatcher('**/*.sqlite', false, true, false);
  return vscode.Disposable.from(
    watcher,
    watcher.onDidCreate(() => tree.scheduleRefresh()),
    watcher.onDidDelete(() => tree.scheduleRefresh()),
  );
}
