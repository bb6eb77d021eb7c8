// A cancellable progress notification while a run starts (endpoint check,
// trainer, sandbox): cancelling it stops the start. Once the run is up it
// closes: the status bar, the dashboard and the evaluations terminal show
// the run's progress, and nothing covers the editor for the run's lifetime.
import * as vscode from 'vscode';
import { showInfo, withProgress } from './notify';
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

/** A Pause or Stop in progress: its notification, and when it ended (`outcome`: the state the run reached). */
export interface StateProgress {
  runId: string;
  asked: 'pause' | 'stop';
  /** null while it is shown; then what ended it: paused, running (resumed first), stopped. */
  outcome: 'paused' | 'running' | 'stopped' | null;
}

const stateProgress = new vscode.EventEmitter<StateProgress>();
/** Each Pause or Stop notification as it opens and as it ends (the in-host tests follow them here). */
export const onDidChangeStateProgress = stateProgress.event;

/**
 * A notification while a Pause or Stop takes effect, ended by the state it
 * waits for (paused; or running again, resumed before the pause took
 * effect; or the run closed), so none outlives its state. A Stop ends with
 * a confirmation that the run stopped.
 */
export function showStateProgress(controller: RunController, run: TrackedRun, asked: 'pause' | 'stop'): void {
  const runId = run.runId;
  const title =
    asked === 'pause' ? `ThetaEvolve: run ${runId} pauses after the step in flight commits` : `ThetaEvolve: stopping run ${runId}`;
  stateProgress.fire({ runId, asked, outcome: null });
  void withProgress(
    { location: vscode.ProgressLocation.Notification, title, cancellable: false },
    () =>
      new Promise<void>((resolve) => {
        const subscriptions: vscode.Disposable[] = [];
        let over = false;
        const finish = (outcome: 'paused' | 'running' | 'stopped'): void => {
          if (over) return;
          over = true;
          for (const s of subscriptions) s.dispose();
          resolve();
          stateProgress.fire({ runId, asked, outcome });
          if (outcome === 'stopped' && asked === 'stop')
            void showInfo(`ThetaEvolve: run ${runId} stopped; Resume Run continues it from its last committed step.`);
        };
        const check = (current: TrackedRun | undefined): void => {
          if (!current || current.runId !== runId) return;
          if (asked === 'pause' && current.state === 'paused') finish('paused');
          else if (asked === 'pause' && current.state === 'running') finish('running');
          else if (current.state === 'finished' || current.state === 'error') finish('stopped');
        };
        subscriptions.push(
          controller.onDidChangeRun((changed) => check(changed)),
          controller.onDidEngineEvent(({ runId: id, event }) => {
            if (id !== runId) return;
            if (event.type === 'paused' && asked === 'pause') finish('paused');
            if (event.type === 'resumed' && asked === 'pause') finish('running');
          }),
          controller.onDidCloseRun((closed) => {
            if (closed.runId === runId) finish('stopped');
          }),
        );
        if (controller.active?.runId !== runId) finish('stopped');
      }),
  );
}
