// Entry point of the extension: wires thin adapters; all logic lives in
// src/engine (which never imports vscode).
import * as vscode from 'vscode';
import { registerCommands } from './vscode/commands';
import { log } from './vscode/log';
import { RunsTreeProvider } from './vscode/runsTree';
import { runHostTestsIfRequested } from './vscode/testHook';

export function activate(context: vscode.ExtensionContext): void {
  log().info(`ThetaEvolve ${String(context.extension.packageJSON.version)} activated`);
  registerCommands(context);
  const runs = new RunsTreeProvider();
  context.subscriptions.push(runs, vscode.window.registerTreeDataProvider('thetaevolve.runs', runs));
  runHostTestsIfRequested();
}

export function deactivate(): void {}
