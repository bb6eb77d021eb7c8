// Evaluations in terminals:
// - while a run is active, "ThetaEvolve evaluations" streams one line per
//   evaluation (a Pseudoterminal fed by the run's events, not a task: VS
//   Code saves every edited file before a task runs, and Start Run evolves
//   the editor's text without saving it);
// - as a task of type `thetaevolve`,
//   a TaskProvider resolves {"type": "thetaevolve", "task": ..., "program": ...}
//   from tasks.json: it evaluates that file once in the sandbox and prints
//   status, score, objective, reason and the candidate's output.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { isAbsolute, join, resolve } from 'node:path';
import * as vscode from 'vscode';
import { editorPythonChoice } from './pythonInterpreter';
import { forDisplay } from '../engine/common/displayText';
import type { EngineEvent, EvaluationFinishedEvent, EvaluationStartedEvent } from '../engine/common/events';
import { errorMessage } from '../engine/common/errors';
import { loadTask } from '../engine/task/task';
import { type RunController, type TrackedRun, untrustedReason } from './runController';
import { programTextOf } from './notebookCells';
import { readSettings } from './settings';
import { bestText, formatScore } from '../engine/common/format';
import { displayObjective } from '../engine/common/scoring';
import { evaluationKey } from '../engine/evaluationOutputs';
import { OPEN_OUTPUT_TITLE, setTerminalRun } from './evaluationOutputDocuments';
import { workspaceRoots } from './runTrust';

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
  return (
    definition.type === EVALUATION_TASK_TYPE &&
    typeof definition.task === 'string' &&
    (definition.program === undefined || typeof definition.program === 'string')
  );
}

/** Lines of a failure's output shown under its evaluation: the end, where the exception is. */
const OUTPUT_TAIL_LINES = 8;

/** A researcher's request, taken at a step: what it did (an added program's outcome) or why not. */
export function steeredLine(event: Extract<EngineEvent, { type: 'steered' }>): string {
  return `step ${event.step}: ${forDisplay(event.message)}`;
}

/**
 * The terminal lines of one evaluation (exported for tests): a summary line
 * with the reason's first line, then, for a failure with output, the output's
 * last lines (the exception and the frames nearest to it), indented, and,
 * when its whole output is kept, how to open it (a terminal holds no command
 * links: the command's title and the evaluation, which is a link there).
 */
export function evaluationLines(event: EvaluationFinishedEvent): string[] {
  const who = event.jobKey === 'initial' ? 'initial program' : `${event.jobKey}#${event.sampleIndex}`;
  const parts = [
    `step ${event.step}`.padEnd(8),
    who.padEnd(14),
    event.outcome.padEnd(17),
    `score ${formatScore(event.score)}`.padEnd(20),
    `${(event.durationMs / 1000).toFixed(2)} s`.padStart(8),
  ];
  if (event.childId) parts.push(`child ${event.childId}`);
  const [headline = '', ...output] = forDisplay(event.reason).split('\n');
  if (headline.trim()) parts.push(`(${headline.trim()})`);
  const shown = output
    .map((l) => l.trimEnd())
    .filter((l) => l.trim() !== '')
    .slice(-OUTPUT_TAIL_LINES);
  const omitted = output.filter((l) => l.trim() !== '').length - shown.length;
  const open = event.outputKept ? [`      full output: ${OPEN_OUTPUT_TITLE} ${evaluationKey(event.jobKey, event.sampleIndex)}`] : [];
  return [parts.join('  '), ...(omitted > 0 ? [`      ... ${omitted} earlier line(s)`] : []), ...shown.map((l) => `      ${l}`), ...open];
}

/** The terminal line of an evaluation that started (exported for tests): on SLURM, which job evaluates which sample (squeue / sacct / the job's output name it); null when evaluated here. */
export function evaluationStartedLine(event: EvaluationStartedEvent): string | null {
  if (!event.schedulerJobId) return null;
  return (
    `step ${event.step}`.padEnd(8) + `  ${`${event.jobKey}#${event.sampleIndex}`.padEnd(14)}  running as SLURM job ${event.schedulerJobId}`
  );
}

const CRLF = '\r\n';
/** Text in one of our colours (an SGR code): the text is filtered like any other, the colour is ours. */
interface Coloured {
  sgr: number;
  text: string;
}
const colour = (sgr: number, text: string): Coloured => ({ sgr, text });
type LinePart = string | Coloured;
/**
 * What the terminal is sent for a line: every text through forDisplay (a task's title, a run id, an evaluator's
 * or a server's words may hold OSC 8 links, OSC 52 clipboard writes or cursor moves), our colours around it, CRLF.
 */
function terminalLine(parts: readonly LinePart[]): string {
  const text = parts.map((p) => (typeof p === 'string' ? forDisplay(p) : `\x1b[${p.sgr}m${forDisplay(p.text)}\x1b[0m`)).join('');
  return text.replace(/\n/g, CRLF) + CRLF;
}

/**
 * How long lines wait to be written together: written line by line
 * (several a second) the terminal never stood still.
 */
const OUTPUT_BURST_MS = 1000;
/**
 * How long the lines stand still once the pointer rests on an output link.
 * The terminal moves every line up as one arrives and forgets the link under
 * the pointer, so Ctrl+click on "full output: ..." worked only with the run
 * paused or the terminal scrolled back. VS Code asks for a line's links when
 * the pointer reaches it: from then on nothing is written until the link is
 * clicked or this long has passed (the lines then move once, and a link that
 * comes to rest under the pointer holds them again).
 */
const LINK_HOLD_MS = 6000;

/** Streams the active run's evaluations; when the run is over it says so and stays (the next run's replaces it). */
class LiveEvaluationTerminal implements vscode.Pseudoterminal {
  private readonly writeEmitter = new vscode.EventEmitter<string>();
  readonly onDidWrite = this.writeEmitter.event;
  private readonly subscriptions: vscode.Disposable[] = [];
  private opened = false;
  private ended = false;
  /** Lines not written yet: before VS Code opens the terminal, or until the burst's timer. */
  private readonly buffered: string[] = [];
  private burst: NodeJS.Timeout | undefined;
  /** Nothing is written before this time (performance.now()): the pointer rests on a link. */
  private heldUntil = 0;

  constructor(
    private readonly controller: RunController,
    private readonly run: TrackedRun,
  ) {
    // Subscribe at once: evaluations may finish before VS Code opens the terminal.
    this.subscriptions.push(
      controller.onDidEngineEvent(({ runId, event }) => {
        if (runId !== run.runId) return;
        switch (event.type) {
          case 'run_started':
            this.line(
              `${event.task.title} with ${event.source.label}; ${event.resumedFromStep !== null ? `resuming after step ${event.resumedFromStep}` : 'new run'}`,
            );
            break;
          case 'evaluation_started': {
            const line = evaluationStartedLine(event);
            if (line) this.line(colour(2, line));
            break;
          }
          case 'evaluation_finished':
            for (const [i, text] of evaluationLines(event).entries())
              this.line(event.outcome === 'valid' ? text : colour(i === 0 ? 33 : 2, text));
            break;
          case 'step_committed':
            this.line(
              colour(
                36,
                `step ${event.step} committed: ${bestText(displayObjective(event.bestEver, run.direction))}${event.newBest ? ' (new best)' : ''}, valid ${event.counts.valid}/${event.samples}, ${event.samplesPerSecond.toFixed(2)} samples/s`,
              ),
            );
            break;
          case 'steered':
            this.line(colour(event.ok ? 35 : 33, steeredLine(event)));
            break;
          case 'paused':
            // Nothing follows until Resume: written now (unless a link is pointed at), so no burst lands later.
            if (this.opened) this.flush();
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
        // Not closed: closing a terminal of ours disposes it, and its last lines are what one reads after a run.
        if (this.opened) this.flush(true);
      }),
    );
  }

  open(): void {
    this.opened = true;
    this.writeEmitter.fire(terminalLine([`ThetaEvolve evaluations of run ${this.run.runId} (${this.run.taskTitle})`]));
    this.flush(true);
  }

  /** The pointer rests on one of this terminal's output links: hold the lines still (LINK_HOLD_MS). */
  holdForLink(): void {
    this.heldUntil = performance.now() + LINK_HOLD_MS;
  }

  /** The link was opened: what waits is written at the next burst. */
  releaseHold(): void {
    this.heldUntil = 0;
    if (this.buffered.length > 0 && this.opened && !this.ended) this.armBurst(OUTPUT_BURST_MS);
  }

  close(): void {
    if (this.burst) clearTimeout(this.burst);
    this.dispose();
  }

  private line(...parts: LinePart[]): void {
    this.buffered.push(terminalLine(parts));
    if (this.opened) this.burst ??= setTimeout(() => this.flush(), OUTPUT_BURST_MS);
  }

  private armBurst(afterMs: number): void {
    if (this.burst) clearTimeout(this.burst);
    this.burst = setTimeout(() => this.flush(), afterMs);
  }

  /** Write what waits, unless a link is pointed at (then when the hold ends); `force`: now (the terminal opens or ends). */
  private flush(force = false): void {
    const held = this.heldUntil - performance.now();
    if (!force && held > 0) {
      if (this.buffered.length > 0) this.armBurst(held);
      return;
    }
    if (this.burst) clearTimeout(this.burst);
    this.burst = undefined;
    if (this.buffered.length > 0) this.writeEmitter.fire(this.buffered.splice(0).join(''));
  }

  private dispose(): void {
    for (const s of this.subscriptions.splice(0)) s.dispose();
  }
}

/**
 * Open the "ThetaEvolve evaluations" terminal for the run that just started,
 * in the panel without taking focus. A window drives one run at a time, so
 * every other evaluations terminal belongs to a run that is over: they are
 * closed, so they do not pile up.
 */
export function startLiveEvaluationTerminal(controller: RunController, run: TrackedRun): vscode.Terminal {
  for (const terminal of vscode.window.terminals) {
    if (terminal.name.includes(LIVE_TERMINAL_NAME)) terminal.dispose();
  }
  const terminal = new LiveEvaluationTerminal(controller, run);
  setTerminalRun(run, { pointedAt: () => terminal.holdForLink(), opened: () => terminal.releaseHold() });
  return vscode.window.createTerminal({ name: LIVE_TERMINAL_NAME, pty: terminal, isTransient: true });
}

/** Where a definition's task is: a bundled task's name, or a path relative to the workspace folder. */
export function resolveTaskLocation(taskField: string, extensionPath: string, folderPath: string | undefined): string {
  const bundled = join(extensionPath, 'tasks', taskField);
  const looksLikePath = taskField.includes('/') || taskField.includes('\\') || taskField.endsWith('.json') || taskField.startsWith('.');
  if (!looksLikePath && existsSync(join(bundled, 'task.json'))) return bundled;
  if (isAbsolute(taskField)) return taskField;
  return resolve(folderPath ?? process.cwd(), taskField);
}

/** Evaluates one program once, in the engine worker's sandbox, and prints what it found. */
class EvaluateFileTerminal implements vscode.Pseudoterminal {
  private readonly writeEmitter = new vscode.EventEmitter<string>();
  readonly onDidWrite = this.writeEmitter.event;
  private readonly closeEmitter = new vscode.EventEmitter<number>();
  readonly onDidClose = this.closeEmitter.event;

  constructor(
    private readonly definition: EvaluationTaskDefinition,
    private readonly extensionPath: string,
    private readonly folder: vscode.WorkspaceFolder | undefined,
    private readonly controller: RunController,
  ) {}

  open(): void {
    void this.evaluate().then(
      (code) => this.closeEmitter.fire(code),
      (err: unknown) => {
        this.write(colour(31, `ThetaEvolve: ${forDisplay(errorMessage(err))}`));
        this.closeEmitter.fire(1);
      },
    );
  }

  close(): void {}

  private write(...parts: LinePart[]): void {
    this.writeEmitter.fire(terminalLine(parts));
  }

  private async evaluate(): Promise<number> {
    const reason = untrustedReason(vscode.workspace.isTrusted);
    if (reason) {
      this.write(colour(33, reason));
      return 1;
    }
    const folderPath = this.folder?.uri.fsPath;
    const taskDir = resolveTaskLocation(this.definition.task, this.extensionPath, folderPath);
    const task = await loadTask(taskDir);
    const programPath = this.definition.program
      ? isAbsolute(this.definition.program)
        ? this.definition.program
        : resolve(folderPath ?? process.cwd(), this.definition.program)
      : task.initialProgramPath;
    // A notebook is its Python code cells as one script, unsaved edits included (src/vscode/notebookCells.ts).
    const code = programPath.endsWith('.ipynb') ? await programTextOf(vscode.Uri.file(programPath)) : await readFile(programPath, 'utf8');
    const settings = readSettings(vscode.Uri.file(programPath));
    this.write(`Evaluating ${programPath} with task ${task.title} (${task.direction})...`);
    // The candidate's and the evaluator's limits, plus room for the sandbox to start and clean up.
    const timeoutMs = (task.runtimeLimitSec + task.evaluatorTimeLimitSec + 60) * 1000;
    const python = await editorPythonChoice(vscode.Uri.file(programPath), settings);
    const result = await this.controller.query(
      { kind: 'evaluate', taskDir: task.source, code, settings, python, workspaceFolders: workspaceRoots() },
      { timeoutMs },
    );
    if (result.isolation.warning) this.write(colour(33, result.isolation.warning));
    this.write(`isolation  ${result.isolation.summary}`);
    for (const why of result.isolation.missing) this.write(`           missing: ${why}`);
    this.write('');
    this.write('status     ', colour(result.status === 'ok' ? 32 : 33, result.status));
    this.write(`score      ${formatScore(result.score)}`);
    this.write(`objective  ${formatScore(result.objective)}`);
    this.write(`reason     ${forDisplay(result.reason) || '-'}`);
    this.write(`time       ${(result.durationMs / 1000).toFixed(2)} s`);
    const metrics = Object.entries(result.metrics);
    if (metrics.length > 0) this.write(`metrics    ${forDisplay(metrics.map(([k, v]) => `${k}=${String(v)}`).join(', '))}`);
    this.write('');
    this.write('--- candidate stdout ---');
    this.write(forDisplay(result.stdout).trimEnd() || '(empty)');
    this.write('--- candidate stderr ---');
    this.write(forDisplay(result.stderr).trimEnd() || '(empty)');
    // Exit codes to chain tasks on: 0 valid, 2 evaluated but not valid (1: could not evaluate at all).
    return result.status === 'ok' ? 0 : 2;
  }
}

/** The TaskProvider of `thetaevolve` tasks (tasks.json). */
export function registerEvaluationTasks(extensionPath: string, controller: RunController): vscode.Disposable {
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
        new vscode.CustomExecution(
          async (resolved) =>
            new EvaluateFileTerminal(isEvaluationDefinition(resolved) ? resolved : definition, extensionPath, folder, controller),
        ),
      );
    },
  });
}
