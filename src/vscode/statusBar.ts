// The status bar items of the active run: step, best objective (in the
// task's direction, as the dashboard shows it), samples/s; and on SLURM a
// second item beside it with the evaluation queue and the inference jobs (in
// one item the text passed the 40% of the window's width VS Code gives an
// item, and the servers were cut off). Clicking either opens the dashboard.
import { formatUsd } from '../engine/common/models';
import * as vscode from 'vscode';
import { statusBarText } from './notify';
import type { RunController, TrackedRun } from './runController';
import { queueText } from '../dashboard/dashboardFeed';
import { forDisplay } from '../engine/common/displayText';
import { bestText } from '../engine/common/format';
import { inferenceJobText } from '../engine/common/inferenceJobs';
import { displayObjective } from '../engine/common/scoring';

/** What the item says after the step and best: the state, when it is not plainly running. */
const STATE_SUFFIX: Record<TrackedRun['state'], string> = {
  starting: '',
  running: '',
  pausing: ' · pausing',
  paused: ' · paused',
  stopping: ' · stopping',
  finished: ' · done',
  error: ' · failed',
};

/** The run's inference jobs while it holds them: once it is over, its last report names jobs it has cancelled since. */
function heldInferenceJobs(run: TrackedRun): TrackedRun['inferenceJobs'] {
  return run.state === 'finished' || run.state === 'error' ? null : run.inferenceJobs;
}

/** The run item's text (exported for the in-host tests). Throughput only while the run samples. */
export function statusText(run: TrackedRun): string {
  const icon =
    run.state === 'paused'
      ? '$(debug-pause)'
      : run.state === 'finished'
        ? '$(check)'
        : run.state === 'error'
          ? '$(error)'
          : run.waitingForServer || run.waitingForTrainer !== null
            ? '$(watch)'
            : '$(sync~spin)';
  const step = run.lastStep >= 0 ? `step ${run.lastStep}` : run.state === 'starting' ? 'starting' : 'step 0';
  const live = run.state === 'running' || run.state === 'pausing';
  const waiting = live && (run.waitingForServer || run.waitingForTrainer !== null);
  const rate = live && !waiting && run.samplesPerSecond !== null ? ` · ${run.samplesPerSecond.toFixed(1)} samples/s` : '';
  const state = run.readFromDisk
    ? ' · not running'
    : run.state === 'finished' && run.finishReason === 'stopped'
      ? ' · stopped'
      : live && run.waitingForServer
        ? ' · waiting for the server'
        : live && run.waitingForTrainer !== null
          ? ` · waiting for the trainer at ${run.waitingForTrainer}`
          : STATE_SUFFIX[run.state];
  const sandbox = run.isolation?.weak ? ' · $(warning) weak sandbox' : '';
  const spent = run.costUsd !== null ? ` · ${formatUsd(run.costUsd)}` : '';
  return `${icon} ThetaEvolve ${step} · ${bestText(displayObjective(run.bestScore, run.direction), 6)}${rate}${spent}${state}${sandbox}`;
}

/**
 * The SLURM item's text (exported for the in-host tests): the evaluation queue while the run is live and the
 * inference jobs' servers up while it holds them; null (the item hidden) when there is neither.
 */
export function clusterStatusText(run: TrackedRun): string | null {
  const live = run.state === 'running' || run.state === 'pausing';
  const queue = live && run.queue ? `${run.queue.running} running, ${run.queue.pending} queued` : null;
  const inference = heldInferenceJobs(run);
  // A job's server is up once it joined the endpoint pool (its baseURL is known only then).
  const servers = inference ? `servers ${inference.jobs.filter((job) => job.baseURL !== null).length}/${inference.jobs.length} up` : null;
  if (queue === null && servers === null) return null;
  return `$(server-environment) SLURM ${[queue, servers].filter((part) => part !== null).join(' · ')}`;
}

/** Both items' tooltip (exported for the in-host tests): the run's message, queue, inference jobs, sandbox. */
export function statusTooltip(run: TrackedRun): vscode.MarkdownString {
  const queue = run.queue ? `\n\n${queueText(run.queue)}` : '';
  const inference = heldInferenceJobs(run);
  const jobs = inference
    ? `\n\nInference jobs (SLURM):\n${inference.jobs.map((job) => forDisplay(inferenceJobText(job, inference.servers))).join('\n')}`
    : '';
  const sandbox = run.isolation
    ? `\n\nSandbox: ${run.isolation.summary}${run.isolation.weak ? ` (weaker than the full sandbox: ${run.isolation.missing.join('; ')})` : ''}`
    : '';
  // The task's title, the run's message and the jobs' states (an evaluator's, server's or scheduler's words) are shown as text, never as Markdown.
  const tooltip = new vscode.MarkdownString();
  tooltip.appendMarkdown('**').appendText(`ThetaEvolve: ${run.taskTitle}`).appendMarkdown(`** (${run.direction})\n\nRun `);
  tooltip.appendText(`${run.runId}: ${run.message}${queue}${jobs}${sandbox}`).appendMarkdown('\n\nClick to open the dashboard.');
  return tooltip;
}

/** What a screen reader reads of an item's text: its words, not its $(icon) names. */
function withoutIcons(text: string): string {
  return text.replace(/\$\([^)]*\)\s*/g, '');
}

export function registerStatusBar(controller: RunController): vscode.Disposable {
  const item = vscode.window.createStatusBarItem('thetaevolve.run', vscode.StatusBarAlignment.Left, 50);
  item.name = 'ThetaEvolve run';
  item.command = 'thetaevolve.openDashboard';
  // Just right of the run's item: items of one priority and extension keep the order they were first shown in.
  const cluster = vscode.window.createStatusBarItem('thetaevolve.cluster', vscode.StatusBarAlignment.Left, 50);
  cluster.name = 'ThetaEvolve SLURM';
  cluster.command = 'thetaevolve.openDashboard';
  const render = (): void => {
    // After a reload, the run the window read back from its database, as the dashboard shows it.
    const run = controller.latest ?? controller.fromDisk;
    if (!run) {
      item.hide();
      cluster.hide();
      return;
    }
    // Built once for both items: the run changes with every engine event.
    const tooltip = statusTooltip(run);
    item.text = statusBarText(statusText(run));
    // A weaker sandbox stays visible for the whole run, not only in a log.
    item.backgroundColor = run.isolation?.weak ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
    item.tooltip = tooltip;
    item.accessibilityInformation = { label: withoutIcons(item.text), role: 'button' };
    item.show();
    const text = clusterStatusText(run);
    if (text === null) {
      cluster.hide();
      return;
    }
    cluster.text = statusBarText(text);
    cluster.tooltip = tooltip;
    cluster.accessibilityInformation = { label: withoutIcons(text), role: 'button' };
    cluster.show();
  };
  const subscriptions = [controller.onDidChangeRun(render), controller.onDidCloseRun(render), controller.onDidShowRunFromDisk(render)];
  render();
  return vscode.Disposable.from(item, cluster, ...subscriptions);
}
