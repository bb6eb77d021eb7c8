// Wiring only: every command of the extension, registered by the module of
// its concern.
import type * as vscode from 'vscode';
import { registerDashboardCommands } from './dashboardCommands';
import { registerEvaluationOutputs } from './evaluationOutputDocuments';
import { LIVE_TERMINAL_NAME } from './evaluationTask';
import { followBest } from './followBest';
import { registerMarkEvolveBlock } from './markEvolveBlock';
import { registerNewTask } from './newTask';
import { registerProgramCommands } from './programCommands';
import { registerRunCommands } from './runCommands';
import { registerDeleteRun } from './deleteRun';
import { registerSteerCommands } from './steerCommands';
import { registerBlameDecorations } from './blameDecorations';
import { registerCompareRuns } from './compareRuns';
import type { RunController } from './runController';
import type { RunsTreeProvider } from './runsTree';
import type { DashboardHost } from './dashboardPanel';
import type { DashboardRestore } from './dashboardRestore';

export { COMMAND_IDS } from './commandIds';
export { evolveBlockProblem } from './runCommands';

export interface CommandDeps {
  context: vscode.ExtensionContext;
  controller: RunController;
  tree: RunsTreeProvider;
  /** The serializer the entry registered: the dashboard takes the panels it restores. */
  restore: DashboardRestore;
}

/** Registers every command; returns the dashboard they feed. */
export function registerCommands({ context, controller, tree, restore }: CommandDeps): DashboardHost {
  registerRunCommands(context, controller, tree);
  registerDeleteRun(context, controller, tree);
  registerProgramCommands(context, controller, tree);
  registerSteerCommands(context, controller, tree);
  registerBlameDecorations(context, controller);
  const dashboard = registerDashboardCommands(context, controller, restore);
  registerEvaluationOutputs(context, controller, LIVE_TERMINAL_NAME);
  registerCompareRuns(context, controller);
  registerNewTask(context);
  registerMarkEvolveBlock(context);
  context.subscriptions.push(followBest(controller));
  return dashboard;
}
