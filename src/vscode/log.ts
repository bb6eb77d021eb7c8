// The "ThetaEvolve" log channel (with levels, set by the user in the Output view).
import * as vscode from 'vscode';

let channel: vscode.LogOutputChannel | undefined;

export function log(): vscode.LogOutputChannel {
  channel ??= vscode.window.createOutputChannel('ThetaEvolve', { log: true });
  return channel;
}
