// Evaluations as a terminal task of type `thetaevolve`:
// - while a run is active, "ThetaEvolve evaluations" streams one line per
//   evaluation (CustomExecution + Pseudoterminal, fed by the run's events);
// - a TaskProvider resolves {"type": "thetaevolve", "task": ..., "program": ...}
//   from tasks.json: it evaluates that file once in the sandbox and prints
//   status, score, objective, reason and the candidate's output.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { isAbsolute, join, resolve } from 'node:path';
import * as vscode from 'vscode';
import { forDisplay } from '../engine/displayText';
import type { EvaluationFinishedEvent } from '../engine/events';
import { Evaluator, evaluatorOptionsFromSettings } from '../engine/sandbox/evaluator';
import { loadTask, type Task } from '../engine/task/task';
import { type RunController, type RunView, untrustedReason } from './runController';
import { readSettings } from './settings';

export const EVALUATION_TASK_TYPE = 'thetaevolve';
export const LIVE_TERMINAL_NAME = 'ThetaEvolve evaluations';

export interface EvaluationTaskDefinition extends vscode.TaskDefinition {
  type: 'thetaevolve';
  /** A bundled task's name (circle-packing) or a folder/task.json path relative to the workspace folder. */
  task: string;
  /** The program to evaluate (default: the task's initial program). */
  program?: string;
}

function isEvaluationDefinition(definition: vscode.TaskDefinition): definition is EvaluationTaskDefinition {
  return definition.type === EVALUATION_TASK_TYPE && typeof definition.task === 'string' && (definition.program === undefined || typeof definition.program === 'string');
}

function fmt(value: number | null): string {
  return value === null ? 'n/a' : Number(value.toPrecision(8)).toString();
}

/** One terminal line for one evaluation (exported for tests). */
export function evaluationLine(event: EvaluationFinishedEvent): string {
  const who = event.jobKey === 'initial' ? 'initial program' : `${event.jobKey}#${event.sampleIndex}`;
  const parts = [
    `step ${event.step}`.padEnd(8),
    who.padEnd(14),
    event.outcome.padEnd(17),
    `score ${fmt(event.score)}`.padEnd(20),
    `${(event.durationMs / 1000).toFixed(2)} s`.padStart(8),
  ];
  if (event.childId) parts.push(`child ${event.childId}`);
  if (event.reason) parts.push(`(${forDisplay(event.reason).replace(/\s+/g, ' ').slice(0, 160)})`);
  return parts.join('  ');
}

const CRLF = '\r\n';
const toTerminal = (text: string): string => text.replace(/\r?\n/g, CRLF);
const colour = (code: number, text: string): string => `\x1b[${code}m${text}\x1b[0m`;

/** Streams the active run's evaluations; closes when the run is over. */
class LiveEvaluationTerminal implements vscode.Pseudoterminal {
  private readonly writeEmitter = new vscode.EventEmitter<string>();
  readonly onDidWrite = this.writeEmitter.event;
  private readonly closeEmitter = new vscode.EventEmitter<number>();
  readonly onDidClose = this.closeEmitter.event;
  private readonly subscriptions: vscode.Disposable[] = [];
  private opened = false;
  private ended = false;
  private readonly buffered: string[] = [];

  constructor(
    private readonly controller: RunController,
    private readonly run: RunView,
  ) {
    // Subscribe at once: evaluations may finish before VS Code opens the terminal.
    this.subscriptions.push(
      controller.onDidEngineEvent(({ runId, event }) => {
        if (runId !== run.runId) return;
        switch (event.type) {
          case 'run_started':
            this.line(`${event.task.title} with ${event.source.label}; ${event.resumedFromStep !== null ? `resuming after step ${event.resumedFromStep}` : 'new run'}`);
            break;
          case 'evaluation_finished':
            this.line(event.outcome === 'valid' ? evaluationLine(event) : colour(33, evaluationLine(event)));
            break;
          case 'step_committed':
            this.line(
              colour(36, `step ${event.step} committed: best ${fmt(event.bestEver)}${event.newBest ? ' (new best)' : ''}, valid ${event.counts.valid}/${event.samples}, ${event.samplesPerSecond.toFixed(2)} samples/s`),
            );
            break;
          case 'run_finished':
            this.line(colour(36, `run ${forDisplay(event.message)}`));
            break;
          case 'error':
            this.line(colour(31, forDisplay(event.message)));
            break;
          default:
            break;
        }
      }),
      controller.onDidCloseRun((closed) => {
        if (closed.runId !== run.runId) return;
        this.line('The run is over.');
        this.dispose();
        this.ended = true;
        if (this.opened) this.closeEmitter.fire(0);
      }),
    );
  }

  open(): void {
    this.opened = true;
    this.writeEmitter.fire(toTerminal(`ThetaEvolve evaluations of run ${this.run.runId} (${this.run.taskTitle})\n`));
    for (const text of this.buffered.splice(0)) this.writeEmitter.fire(text);
    if (this.ended) this.closeEmitter.fire(0);
  }

  close(): void {
    this.dispose();
  }

  private line(text: string): void {
    const out = toTerminal(text) + CRLF;
    if (this.opened) this.writeEmitter.fire(out);
    else this.buffered.push(out);
  }

  private dispose(): void {
    for (const s of this.subscriptions.splice(0)) s.dispose();
  }
}

/** Start the "ThetaEvolve evaluations" task for the run that just started. */
export async function startLiveEvaluationTerminal(controller: RunController, run: RunView): Promise<void> {
  const folder = (run.fileUri && vscode.workspace.getWorkspaceFolder(run.fileUri)) ?? vscode.workspace.workspaceFolders?.[0];
  const definition: EvaluationTaskDefinition = { type: EVALUATION_TASK_TYPE, task: run.taskName, ...(run.fileUri ? { program: run.fileUri.fsPath } : {}) };
  const terminal = new LiveEvaluationTerminal(controller, run);
  const task = new vscode.Task(
    definition,
    folder ?? vscode.TaskScope.Workspace,
    LIVE_TERMINAL_NAME,
    'ThetaEvolve',
    new vscode.CustomExecution(async () => terminal),
  );
  task.isBackground = true;
  task.presentationOptions = { reveal: vscode.TaskRevealKind.Silent, panel: vscode.TaskPanelKind.Dedicated, clear: true, echo: false, focus: false };
  await vscode.tasks.executeTask(task);
}

/** Where a definition's task is: a bundled task's name, or a path relative to the workspace folder. */
export function resolveTaskLocation(taskField: string, extensionPath: string, folderPath: string | undefined): string {
  const bundled = join(extensionPath, 'tasks', taskField);
  const looksLikePath = taskField.includes('/') || taskField.includes('\\') || taskField.endsWith('.json') || taskField.startsWith('.');
  if (!looksLikePath && existsSync(join(bundled, 'task.json'))) return bundled;
  if (isAbsolute(taskField)) return taskField;
  return resolve(folderPath ?? process.cwd(), taskField);
}

/** Evaluates one program once and prints what the sandbox found. */
class EvaluateFileTerminal implements vscode.Pseudoterminal {
  private readonly writeEmitter = new vscode.EventEmitter<string>();
  readonly onDidWrite = this.writeEmitter.event;
  private readonly closeEmitter = new vscode.EventEmitter<number>();
  readonly onDidClose = this.closeEmitter.event;
  private evaluator: Evaluator | undefined;

  constructor(
    private readonly definition: EvaluationTaskDefinition,
    private readonly extensionPath: string,
    private readonly folder: vscode.WorkspaceFolder | undefined,
  ) {}

  open(): void {
    void this.evaluate().then(
      (code) => this.closeEmitter.fire(code),
      (err: unknown) => {
        this.write(colour(31, `ThetaEvolve: ${forDisplay(err instanceof Error ? err.message : String(err))}`));
        this.closeEmitter.fire(1);
      },
    );
  }

  close(): void {
    void this.evaluator?.close();
  }

  private write(text: string): void {
    this.writeEmitter.fire(toTerminal(text) + CRLF);
  }

  private async evaluate(): Promise<number> {
    const reason = untrustedReason(vscode.workspace.isTrusted);
    if (reason) {
      this.write(colour(33, reason));
      return 1;
    }
    const folderPath = this.folder?.uri.fsPath;
    const task: Task = await loadTask(resolveTaskLocation(this.definition.task, this.extensionPath, folderPath));
    const programPath = this.definition.program ? (isAbsolute(this.definition.program) ? this.definition.program : resolve(folderPath ?? process.cwd(), this.definition.program)) : task.initialProgramPath;
    const code = await readFile(programPath, 'utf8');
    const settings = readSettings(vscode.Uri.file(programPath));
    this.write(`Evaluating ${programPath} with task ${task.title} (${task.direction})...`);
    this.evaluator = new Evaluator(task, { ...evaluatorOptionsFromSettings(settings), concurrency: 1 });
    if (this.evaluator.isolation.warning) this.write(colour(33, this.evaluator.isolation.warning));
    this.write(`isolation  ${this.evaluator.isolation.summary}`);
    for (const why of this.evaluator.isolation.missing) this.write(`           missing: ${why}`);
    try {
      const result = await this.evaluator.evaluate(code);
      this.write('');
      this.write(`status     ${result.status === 'ok' ? colour(32, result.status) : colour(33, result.status)}`);
      this.write(`score      ${fmt(result.score)}`);
      this.write(`objective  ${fmt(result.objective)}`);
      this.write(`reason     ${forDisplay(result.reason) || '-'}`);
      this.write(`time       ${(result.durationMs / 1000).toFixed(2)} s`);
      const metrics = Object.entries(result.metrics);
      if (metrics.length > 0) this.write(`metrics    ${forDisplay(metrics.map(([k, v]) => `${k}=${String(v)}`).join(', '))}`);
      this.write('');
      this.write('--- candidate stdout ---');
      this.write(forDisplay(result.stdout).trimEnd() || '(empty)');
      this.write('--- candidate stderr ---');
      this.write(forDisplay(result.stderr).trimEnd() || '(empty)');
      return 0;
    } finally {
      await this.evaluator.close();
    }
  }
}

/** The TaskProvider of `thetaevolve` tasks (tasks.json). */
export function registerEvaluationTasks(extensionPath: string): vscode.Disposable {
  return vscode.tasks.registerTaskProvider(EVALUATION_TASK_TYPE, {
    provideTasks: () => [],
    resolveTask: (task: vscode.Task): vscode.Task | undefined => {
      const definition = task.definition;
      if (!isEvaluationDefinition(definition)) return undefined;
      const folder = typeof task.scope === 'object' ? task.scope : vscode.workspace.workspaceFolders?.[0];
      const name = definition.program ? `evaluate ${definition.program}` : `evaluate ${definition.task}`;
      return new vscode.Task(
        definition,
        task.scope ?? vscode.TaskScope.Workspace,
        task.name || name,
        'ThetaEvolve',
        new vscode.CustomExecution(async (resolved) => new EvaluateFileTerminal(isEvaluationDefinition(resolved) ? resolved : definition, extensionPath, folder)),
      );
    },
  });
}
