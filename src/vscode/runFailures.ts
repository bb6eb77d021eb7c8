// A run that ends in an error says so where people look: a notification
// naming the run and why (the task's evaluator failing on the starting
// program, a step that could not be saved, every evaluation failing on our
// side), with the log one click away. The status bar and the Runs view keep
// showing "failed" afterwards.
import * as vscode from 'vscode';
import { showError, showWarning } from './notify';
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

/** Steps in a row without a valid child after which a run says so (a starting program the model cannot repair, a broken evaluator). */
export const STEPS_WITHOUT_VALID_CHILD = 5;

export function registerRunFailures(controller: RunController): vscode.Disposable {
  const openLog = 'Open Log';
  const warn = (runId: string, message: string): void => {
    void showWarning(message, openLog).then((choice) => {
      if (choice === openLog) log().show(true);
    });
    notices.fire({ runId, message, buttons: [openLog] });
  };
  /** Per run: steps in a row that committed no valid child, and whether that streak was said. */
  const streaks = new Map<string, { steps: number; said: boolean }>();
  const subscription = controller.onDidEngineEvent(({ runId, event }) => {
    if (event.type === 'error' && !event.fatal && event.about === 'invalid_start') {
      // A run that evolves from an invalid program says so where people look, not only in the log.
      warn(runId, `ThetaEvolve: run ${runId}: ${event.message}. Its children are scored against it until one is valid.`);
      return;
    }
    if (event.type === 'step_committed') {
      const streak = streaks.get(runId) ?? { steps: 0, said: false };
      if ((event.counts.valid ?? 0) > 0) streaks.delete(runId);
      else {
        streak.steps++;
        streaks.set(runId, streak);
        if (streak.steps >= STEPS_WITHOUT_VALID_CHILD && !streak.said) {
          streak.said = true;
          const outcomes = Object.entries(event.counts)
            .filter(([, n]) => n > 0)
            .map(([outcome, n]) => `${outcome.replace(/_/g, ' ')} ${n}`)
            .join(', ');
          warn(
            runId,
            `ThetaEvolve: run ${runId}: no valid child in the last ${streak.steps} steps (step ${event.step}: ${outcomes || 'no samples'}); the log and the evaluations terminal say why.`,
          );
        }
      }
      return;
    }
    if (event.type !== 'run_finished' || event.reason !== 'error') return;
    const message = `ThetaEvolve: run ${runId} stopped: ${event.message}`;
    void showError(message, openLog).then((choice) => {
      if (choice === openLog) log().show(true);
    });
    notices.fire({ runId, message, buttons: [openLog] });
  });
  return vscode.Disposable.from(subscription, notices);
}
