// A cancellable progress notification while a run starts (endpoint check,
// trainer, sandbox): cancelling it stops the start. Once the run is up it
// closes: the status bar, the dashboard and the evaluations terminal show
// the run's progress, and nothing covers the editor for the run's lifetime.
import * as vscode from 'vscode';
import { withProgress } from './notify';
import type { RunController, TrackedRun } from './runController';

export function showStartProgress(controller: RunController, run: TrackedRun): void {
  const runId = run.runId;
  void withProgress(
    { location: vscode.ProgressLocation.Notification, title: `ThetaEvolve: ${run.taskTitle}`, cancellable: true },
    (progress, token) =>
      new Promise<void>((resolve) => {
        const subscriptions: vscode.Disposable[] = [];
        const finish = (): void => {
          for (const s of subscriptions) s.dispose();
          resolve();
        };
        progress.report({
          message:
            run.message === 'resuming'
              ? 'resuming: checking the endpoint, the trainer and the sandbox'
              : 'starting: checking the endpoint, the trainer and the sandbox',
        });
        subscriptions.push(
          token.onCancellationRequested(() => {
            if (controller.active?.runId === runId) controller.stop();
          }),
          controller.onDidEngineEvent(({ runId: id, event }) => {
            if (id !== runId) return;
            if (event.type === 'run_started') finish();
            // A server that is loading or restarting is waited for: say so where the user is looking.
            if (event.type === 'endpoint_state') progress.report({ message: event.message });
          }),
          controller.onDidCloseRun((closed) => {
            if (closed.runId === runId) finish();
          }),
        );
        if (controller.active?.runId !== runId || controller.active.state !== 'starting') finish();
      }),
  );
}
