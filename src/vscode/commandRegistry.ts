// Registering a command: every handler's failure is logged and shown, never lost.
import * as vscode from 'vscode';
import { showError } from './notify';
import { errorMessage } from '../engine/common/errors';
import { log } from './log';

export type CommandHandler = (...args: unknown[]) => unknown;

const failures = new vscode.EventEmitter<{ id: string; message: string }>();
/** A command failed (it was logged and shown as an error): what the in-host tests watch. */
export const onDidFailCommand = failures.event;

export function registerCommand(context: vscode.ExtensionContext, id: string, handler: CommandHandler): void {
  context.subscriptions.push(
    vscode.commands.registerCommand(id, async (...args: unknown[]) => {
      try {
        return await handler(...args);
      } catch (err) {
        log().error(`${id} failed: ${errorMessage(err)}`);
        failures.fire({ id, message: errorMessage(err) });
        void showError(`ThetaEvolve: ${errorMessage(err)}`);
        return undefined;
      }
    }),
  );
}

/** A file's base name, for messages. */
export function fileName(uri: vscode.Uri): string {
  return uri.path.split('/').pop() ?? uri.toString();
}
