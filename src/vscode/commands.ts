// Command registrations. Commands whose feature has not landed yet say so
// plainly instead of pretending.
import * as vscode from 'vscode';
import { promptAndStoreApiKey } from './apiKey';

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
} as const;

function notYetAvailable(title: string): () => void {
  return () => {
    void vscode.window.showInformationMessage(`ThetaEvolve: ${title} is not available yet in this version.`);
  };
}

export function registerCommands(context: vscode.ExtensionContext): void {
  const register = (id: string, handler: (...args: unknown[]) => unknown): void => {
    context.subscriptions.push(vscode.commands.registerCommand(id, handler));
  };
  register(COMMAND_IDS.startRun, notYetAvailable('Start Run'));
  register(COMMAND_IDS.stopRun, notYetAvailable('Stop Run'));
  register(COMMAND_IDS.pauseRun, notYetAvailable('Pause Run'));
  register(COMMAND_IDS.resumeRun, notYetAvailable('Resume Run'));
  register(COMMAND_IDS.openDashboard, notYetAvailable('Open Dashboard'));
  register(COMMAND_IDS.showBestDiff, notYetAvailable('Show Best Diff'));
  register(COMMAND_IDS.applyProgram, notYetAvailable('Apply Program to File'));
  register(COMMAND_IDS.selectTask, notYetAvailable('Select Task'));
  register(COMMAND_IDS.setApiKey, () => promptAndStoreApiKey(context.secrets));
}
