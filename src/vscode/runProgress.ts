// A cancellable progress notification for the active run: cancelling it
// stops the run (the step in flight is abandoned, committed steps are kept).
import * as vscode from 'vscode';
import type { RunController, TrackedRun } from './runController';
import { formatScore } from '../engine/format';

export function showRunProgress(controller: RunController, run: TrackedRun): void {
  const runId = run.runId;
  void vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `ThetaEvolve: ${run.taskTitle}`, cancellable: true },
    (progress, token) =>
      new Promise<void>((resolve) => {
        const maxSteps = run.settings.maxSteps;
        const samplesPerStep = run.settings.batchSize * run.settings.samplesPerPrompt;
        let step = run.lastStep;
        const subscriptions: vscode.Disposable[] = [];
        const finish = (): void => {
          for (const s of subscriptions) s.dispose();
          resolve();
        };
        progress.report({ message: run.message });
        subscriptions.push(
          token.onCancellationRequested(() => {
            if (controller.active?.runId === runId) controller.stop();
          }),
          controller.onDidEngineEvent(({ runId: id, event }) => {
            if (id !== runId) return;
            switch (event.type) {
              case 'step_started':
                progress.report({ message: `step ${event.step}: sampling and evaluating ${samplesPerStep} children` });
                break;
              case 'step_committed': {
                const increment = maxSteps > 0 ? (100 * (event.step - Math.max(step, 0))) / maxSteps : undefined;
                step = event.step;
                const best = formatScore(event.bestEver, 6);
                progress.report({ increment, message: `step ${event.step} committed · best ${best}${event.newBest ? ' (new best)' : ''}` });
                break;
              }
              case 'paused':
                progress.report({ message: `paused after step ${event.step}` });
                break;
              case 'run_finished':
                progress.report({ message: event.message });
                break;
              default:
                break;
            }
          }),
          controller.onDidCloseRun((closed) => {
            if (closed.runId === runId) finish();
          }),
        );
        if (controller.active?.runId !== runId) finish();
      }),
  );
}
