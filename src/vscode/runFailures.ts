// A run that ends in an error says so where people look: a notification
// naming the run and why (the task's evaluator failing on the starting
// program, a step that could not be saved, every evaluation failing on our
// side), with the log one click away. The status bar and the Runs view keep
// showing "failed" afterwards.
import * as vscode from 'vscode';
import { showError } from './notify';
import { log } from './log';
import type { RunController } from './runController';

/** A run's error notification: its text and buttons (the in-host tests read them here). */
export interface RunFailureNotice {
  runId: string;
  message: string;
  buttons: readonly string[];
}

const notices = new vscode.EventEmitter<RunFailureNotice>();
export const onDidNotifyRunFailure = notices.event;

export function registerRunFailures(controller: RunController): vscode.Disposable {
  const openLog = 'Open Log';
  const subscription = controller.onDidEngineEvent(({ runId, event }) => {
    if (event.type !== 'run_finished' || event.reason !== 'error') return;
    const message = `ThetaEvolve: run ${runId} stopped: ${event.message}`;
    void showError(message, openLog).then((choice) => {
      if (choice === openLog) log().show(true);
    });
    notices.fire({ runId, message, buttons: [openLog] });
  });
  return vscode.Disposable.from(subscription, notices);
}
