// The one run this window drives, and the window's view of every run
// database: owns the engine worker (EngineHost), relays its validated events
// to the status bar, progress, terminal, tree, dashboard and log, and answers
// questions about runs by asking the worker (never opening a database here).
import { readdir } from 'node:fs/promises';
import { basename, join } from 'node:path';
import * as vscode from 'vscode';
import { showWarning } from './notify';
import type { PythonChoice } from '../engine/python/interpreter';
import { defaultSettings, type Settings } from '../engine/common/config';
import { DEFAULT_RUNS_DIRECTORY, runsDirectoryOf } from '../engine/runFiles';
import type { RunMeta } from '../engine/common/runMeta';
import type { EngineEvent } from '../engine/common/events';
import type { Direction } from '../engine/common/types';
import type { LogLevel, ProgramRecordMessage, Query, QueryKind, QueryResult } from '../protocol/workerMessages';
import { EngineHost } from '../worker/engineHost';
import { log } from './log';
import { readSettings } from './settings';
import { workspaceRoots } from './runTrust';
import { forDisplay } from '../engine/common/displayText';
import { errorMessage, ThetaEvolveError } from '../engine/common/errors';
import { bestText, formatScore, NO_VALID_PROGRAM } from '../engine/common/format';
import { applyRunEvent, closeTrackedRun, isClosing, type RunState, startingRun, type TrackedRun } from './trackedRun';

export type { RunState, TrackedRun } from './trackedRun';

export interface StartSpec {
  runId: string;
  dbFile: string;
  taskDir: string;
  taskName: string;
  taskTitle: string;
  direction: Direction;
  fileUri: vscode.Uri | undefined;
  extension: string;
  startCode: string | null;
  textAtRunStart: string | undefined;
  settings: Settings;
  apiKey: string | undefined;
  /** Several models: stored keys by apiKeyName (src/vscode/apiKey.ts). */
  modelApiKeys?: Record<string, string>;
  resume: boolean;
  /** The run's interpreter by the editor's order (src/vscode/pythonInterpreter.ts); absent: as the command line finds one. */
  python?: PythonChoice;
}

/** A run database found under a workspace folder's runs directory. */
export interface RunFile {
  runId: string;
  dbFile: string;
  folder: vscode.WorkspaceFolder;
}

/** Nothing is evaluated in an untrusted workspace; the reason, or undefined when trusted. */
export function untrustedReason(isTrusted: boolean): string | undefined {
  return isTrusted
    ? undefined
    : 'ThetaEvolve evaluates programs, which runs code: nothing is evaluated in an untrusted workspace. Trust this workspace (Manage Workspace Trust) to start a run.';
}

/** Shows why and returns false in an untrusted workspace. */
export function guardWorkspaceTrust(isTrusted: boolean = vscode.workspace.isTrusted): boolean {
  const reason = untrustedReason(isTrusted);
  if (!reason) return true;
  const manage = 'Manage Workspace Trust';
  void showWarning(reason, manage).then((choice) => {
    if (choice === manage) void vscode.commands.executeCommand('workbench.trust.manage');
  });
  return false;
}

/** The runs directory of a workspace folder (thetaevolve.runsDirectory, relative to it). */
export function runsDirectoryOfFolder(folder: vscode.WorkspaceFolder, settings: Pick<Settings, 'runsDirectory'>): string {
  return runsDirectoryOf(folder.uri.fsPath, settings);
}

function settingsOrDefault(scope: vscode.Uri): Pick<Settings, 'runsDirectory'> {
  try {
    return readSettings(scope);
  } catch {
    return { runsDirectory: DEFAULT_RUNS_DIRECTORY };
  }
}

/** Every *.sqlite under each workspace folder's runs directory. */
export async function listRunFiles(): Promise<RunFile[]> {
  const out: RunFile[] = [];
  const seen = new Set<string>();
  for (const folder of vscode.workspace.workspaceFolders ?? []) {
    const dir = runsDirectoryOfFolder(folder, settingsOrDefault(folder.uri));
    const names = await readdir(dir).catch(() => [] as string[]);
    for (const name of names.sort()) {
      if (!name.endsWith('.sqlite')) continue;
      const dbFile = join(dir, name);
      if (seen.has(dbFile)) continue;
      seen.add(dbFile);
      out.push({ runId: basename(name, '.sqlite'), dbFile, folder });
    }
  }
  return out;
}

/** The file a run evolves and what it started from, from its database's meta. */
export function runOrigin(meta: RunMeta): { fileUri: vscode.Uri; extension: string; startCode: string; taskDir: string; taskName: string } {
  return {
    fileUri: vscode.Uri.file(meta.programPath),
    extension: meta.language,
    startCode: meta.startCode,
    taskDir: meta.taskDir,
    taskName: meta.task,
  };
}

/** Why a run could not start, and the setting to change when one is the cause. */
export class RunStartError extends ThetaEvolveError {
  override readonly name = 'RunStartError';
  constructor(
    message: string,
    readonly setting: string | null,
    /** The person cancelled the start (its progress notification's Cancel): nothing to report. */
    readonly cancelled = false,
  ) {
    super(message);
  }
}

/** The context key menus and the palette read (package.json `when` clauses): the active run's state, or `idle`. */
export const RUN_STATE_CONTEXT = 'thetaevolve.runState';
export type RunStateContext = RunState | 'idle';

export interface RunEvent {
  runId: string;
  event: EngineEvent;
}

export class RunController implements vscode.Disposable {
  readonly engine: EngineHost;
  private readonly eventEmitter = new vscode.EventEmitter<RunEvent>();
  /** Every validated engine event of the run this window drives. */
  readonly onDidEngineEvent = this.eventEmitter.event;
  private readonly changeEmitter = new vscode.EventEmitter<TrackedRun | undefined>();
  /** The active run's view changed (state, step, best...). */
  readonly onDidChangeRun = this.changeEmitter.event;
  private readonly closeEmitter = new vscode.EventEmitter<TrackedRun>();
  /** The run is over (or could not start) and the worker idle again. */
  readonly onDidCloseRun = this.closeEmitter.event;
  private readonly diskEmitter = new vscode.EventEmitter<TrackedRun>();
  /** A run was read back from its database (showRunFromDisk). */
  readonly onDidShowRunFromDisk = this.diskEmitter.event;
  private disk: TrackedRun | undefined;
  private current: TrackedRun | undefined;
  private last: TrackedRun | undefined;
  /** The run whose start the person cancelled (Stop while starting): its start failure is no error. */
  private cancelledStart: string | undefined;
  /** runId -> database file, for thetaevolve: documents and tree commands. */
  private readonly known = new Map<string, string>();
  private readonly unsubscribe: (() => void)[] = [];
  private pendingStart: { runId: string; resolve: () => void; reject: (err: Error) => void } | undefined;
  private publishedState: RunStateContext | undefined;

  constructor(workerFile: string, execArgv: string[] = []) {
    this.engine = new EngineHost({ workerFile, execArgv });
    // Commands and menus offer what the run's state allows (Pause while running, Resume while paused or idle...).
    this.changeEmitter.event(() => this.publishState());
    this.publishState();
    this.unsubscribe.push(
      this.engine.on('event', (runId, event) => this.onEvent(runId, event)),
      this.engine.on('startFailed', (runId, message, setting) => this.onStartFailed(runId, message, setting)),
      this.engine.on('runClosed', (runId) => this.onClosed(runId, undefined)),
      this.engine.on('exit', (code, runId) => {
        if (runId) this.onClosed(runId, `the engine worker stopped unexpectedly (exit code ${code})`);
      }),
      this.engine.on('log', (level, message) => logAt(level, `engine: ${message}`)),
      this.engine.on('protocolError', (message) => log().error(`engine protocol: ${message}`)),
    );
  }

  /** The run in progress (starting, running, paused or stopping). */
  get active(): TrackedRun | undefined {
    return this.current;
  }

  /** What `thetaevolve.runState` was last set to. */
  get stateContext(): RunStateContext | undefined {
    return this.publishedState;
  }

  /** The active run, else the one that ended last in this window. */
  get latest(): TrackedRun | undefined {
    return this.current ?? this.last;
  }

  /**
   * Resolves once no run is active in this window (at once when none is): a run that is stopping is over
   * when the worker closed it and released its lock.
   */
  whenIdle(): Promise<void> {
    const run = this.current;
    if (!run) return Promise.resolve();
    return new Promise((resolve) => {
      const subscription = this.closeEmitter.event((closed) => {
        if (closed !== run) return;
        subscription.dispose();
        resolve();
      });
    });
  }

  /** Start (or resume) a run in the worker; resolves once it started, rejects with the reason it could not. */
  start(spec: StartSpec): Promise<void> {
    if (this.current)
      return Promise.reject(
        new Error(
          isClosing(this.current)
            ? `run ${this.current.runId} is still stopping: start once it has stopped`
            : `run ${this.current.runId} is still active: stop it first`,
        ),
      );
    this.known.set(spec.runId, spec.dbFile);
    this.current = startingRun(spec, spec.resume);
    log().info(
      `${spec.resume ? 'resuming' : 'starting'} run ${spec.runId}: task ${spec.taskName}, sampler ${spec.settings.sampler}, database ${spec.dbFile}`,
    );
    const started = new Promise<void>((resolve, reject) => (this.pendingStart = { runId: spec.runId, resolve, reject }));
    try {
      this.engine.start({
        runId: spec.runId,
        dbFile: spec.dbFile,
        taskDir: spec.taskDir,
        startCode: spec.startCode,
        startPath: spec.fileUri?.scheme === 'file' ? spec.fileUri.fsPath : null,
        settings: spec.settings,
        apiKey: spec.apiKey ?? null,
        ...(spec.modelApiKeys ? { modelApiKeys: spec.modelApiKeys } : {}),
        resume: spec.resume,
        ...(spec.python ? { python: spec.python } : {}),
        workspaceFolders: workspaceRoots(),
      });
    } catch (err) {
      this.current = undefined;
      this.pendingStart = undefined;
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
    this.changeEmitter.fire(this.current);
    return started;
  }

  stop(): boolean {
    if (!this.current) return false;
    if (this.current.state === 'starting') this.cancelledStart = this.current.runId;
    this.current.state = 'stopping';
    this.current.message = 'stopping: the step in flight is abandoned';
    this.engine.stop();
    this.changeEmitter.fire(this.current);
    return true;
  }

  pause(): boolean {
    if (!this.current || this.current.state !== 'running') return false;
    this.current.state = 'pausing';
    this.current.message = 'pausing after the step in flight commits';
    this.engine.pause();
    this.changeEmitter.fire(this.current);
    return true;
  }

  resume(): boolean {
    if (!this.current || (this.current.state !== 'paused' && this.current.state !== 'pausing')) return false;
    this.engine.resume();
    if (this.current.state === 'pausing') {
      // Asked back before the pause took effect: the run simply goes on.
      this.current.state = 'running';
      this.current.message = 'running';
      this.changeEmitter.fire(this.current);
    }
    return true;
  }

  /** RL on or off for the active run (its own state: its settings say what it runs with). */
  setTrainerEnabled(enabled: boolean): void {
    if (!this.current) return;
    this.current.settings = { ...this.current.settings, 'trainer.enabled': enabled };
    this.engine.setTrainerEnabled(enabled);
  }

  /** The run the window last read from its database while driving none (after a reload): the status bar shows it. */
  get fromDisk(): TrackedRun | undefined {
    return this.disk;
  }

  /** A run read back from its database: remembered, and shown in the status bar until this window drives a run. */
  showRunFromDisk(run: {
    runId: string;
    dbFile: string;
    meta: RunMeta;
    taskTitle: string;
    lastStep: number;
    bestScore: number | null;
  }): void {
    this.registerRun(run.runId, run.dbFile);
    const origin = runOrigin(run.meta);
    this.disk = {
      runId: run.runId,
      dbFile: run.dbFile,
      fileUri: origin.fileUri,
      extension: origin.extension,
      textAtRunStart: undefined,
      taskName: run.meta.task,
      taskTitle: run.taskTitle,
      direction: run.meta.direction,
      settings: defaultSettings(),
      state: 'finished',
      lastStep: run.lastStep,
      bestScore: run.bestScore,
      bestId: null,
      samplesPerSecond: null,
      costUsd: null,
      evaluationsThisStep: 0,
      sourceLabel: run.meta.source,
      finishReason: null,
      waitingForServer: false,
      waitingForTrainer: null,
      trainerAwaiting: null,
      isolation: run.meta.isolation ?? null,
      queue: null,
      inferenceJobs: null,
      message: `not running: read from ${basename(run.dbFile)}`,
      readFromDisk: true,
    };
    this.diskEmitter.fire(this.disk);
  }

  /** Remember where a run's database is (runs found on disk). */
  registerRun(runId: string, dbFile: string): void {
    this.known.set(runId, dbFile);
  }

  dbFileOf(runId: string): string | undefined {
    return this.known.get(runId);
  }

  query<K extends QueryKind>(query: Extract<Query, { kind: K }>, options?: { timeoutMs?: number }): Promise<QueryResult<K>> {
    return this.engine.query(query, options);
  }

  /** A program of a known run (the thetaevolve: documents' lookup). */
  async getProgram(runId: string, programId: string): Promise<ProgramRecordMessage | null> {
    let dbFile = this.known.get(runId);
    if (!dbFile) {
      const found = (await listRunFiles()).find((r) => r.runId === runId);
      if (!found) return null;
      dbFile = found.dbFile;
      this.known.set(runId, dbFile);
    }
    return this.engine.query({ kind: 'program', dbFile, programId });
  }

  dispose(): void {
    for (const off of this.unsubscribe) off();
    void this.engine.dispose();
    this.eventEmitter.dispose();
    this.changeEmitter.dispose();
    this.closeEmitter.dispose();
    this.diskEmitter.dispose();
  }

  /** A resumed run's best so far, from its database (the status bar shows it before the first new step commits). */
  private readBest(run: TrackedRun): void {
    void this.engine.query({ kind: 'summary', dbFile: run.dbFile }).then(
      (summary) => {
        if (!summary.best || run.bestScore !== null) return;
        run.bestScore = summary.best.score;
        run.bestId = summary.best.id;
        if (this.current === run) this.changeEmitter.fire(run);
      },
      (err: unknown) => log().warn(`run ${run.runId}: its best so far could not be read: ${errorMessage(err)}`),
    );
  }

  private publishState(): void {
    const state: RunStateContext = this.current?.state ?? 'idle';
    if (state === this.publishedState) return;
    this.publishedState = state;
    void vscode.commands.executeCommand('setContext', RUN_STATE_CONTEXT, state);
  }

  private onEvent(runId: string, event: EngineEvent): void {
    const run = this.current?.runId === runId ? this.current : undefined;
    logEvent(runId, event);
    if (run) {
      applyRunEvent(run, event, log());
      if (event.type === 'run_started') {
        if (event.resumedFromStep !== null) this.readBest(run);
        if (this.pendingStart?.runId === runId) {
          this.pendingStart.resolve();
          this.pendingStart = undefined;
        }
      }
    }
    this.eventEmitter.fire({ runId, event });
    if (run && event.type !== 'evaluation_started') this.changeEmitter.fire(run);
  }

  private onStartFailed(runId: string, message: string, setting: string | null): void {
    const cancelled = this.cancelledStart === runId;
    this.cancelledStart = undefined;
    if (cancelled) log().info(`run ${runId}: the start was cancelled`);
    else log().error(`run ${runId} could not start: ${message}`);
    // A new start was asked for: the window's previous run no longer speaks for it (the status bar shows none).
    if (cancelled) this.last = undefined;
    if (this.pendingStart?.runId === runId) {
      this.pendingStart.reject(new RunStartError(message, setting, cancelled));
      this.pendingStart = undefined;
    }
    if (this.current?.runId === runId) {
      const run = this.current;
      run.state = 'error';
      run.message = message;
      this.current = undefined;
      this.changeEmitter.fire(undefined);
      // What follows the run (its progress notification, its evaluations terminal) ends with it.
      this.closeEmitter.fire(run);
    }
  }

  private onClosed(runId: string, failure: string | undefined): void {
    const run = this.current?.runId === runId ? this.current : undefined;
    if (failure) log().error(`run ${runId}: ${failure}`);
    if (this.pendingStart?.runId === runId) {
      this.pendingStart.reject(new Error(failure ?? 'the run ended before it started'));
      this.pendingStart = undefined;
    }
    if (!run) return;
    closeTrackedRun(run, failure);
    this.current = undefined;
    this.last = run;
    this.changeEmitter.fire(undefined);
    this.closeEmitter.fire(run);
  }
}

function logAt(level: LogLevel, message: string): void {
  const channel = log();
  switch (level) {
    case 'trace':
      return channel.trace(message);
    case 'debug':
      return channel.debug(message);
    case 'info':
      return channel.info(message);
    case 'warn':
      return channel.warn(message);
    case 'error':
      return channel.error(message);
  }
}

/** Run events into the ThetaEvolve log, at levels people can filter. */
function logEvent(runId: string, event: EngineEvent): void {
  const channel = log();
  switch (event.type) {
    case 'run_started':
      channel.info(
        `[${runId}] ${event.task.title} (${event.task.direction}) with ${event.source.label}; ` +
          `${event.resumedFromStep !== null ? `resuming after step ${event.resumedFromStep}` : 'new run'}; database ${event.dbFile}`,
      );
      if (event.isolation)
        (event.isolation.weak ? channel.warn : channel.info).call(
          channel,
          `[${runId}] sandbox: ${event.isolation.summary}${event.isolation.missing.length ? ` (missing: ${event.isolation.missing.join('; ')})` : ''}`,
        );
      return;
    case 'step_started':
      channel.debug(`[${runId}] step ${event.step}: ${event.parents.length} parents`);
      return;
    case 'evaluation_started':
      channel.trace(`[${runId}] step ${event.step} ${event.jobKey}#${event.sampleIndex}: evaluating`);
      return;
    case 'evaluation_finished':
      channel.debug(
        `[${runId}] step ${event.step} ${event.jobKey}#${event.sampleIndex}: ${event.outcome} score ${formatScore(event.score)} in ${(event.durationMs / 1000).toFixed(2)} s${event.reason ? ` (${forDisplay(event.reason)})` : ''}`,
      );
      return;
    case 'step_committed':
      channel.info(
        `[${runId}] step ${event.step}: ${bestText(event.bestEver)}${event.newBest ? ' NEW BEST' : ''}, step mean ${formatScore(event.mean)}, valid ${event.counts.valid}/${event.samples}, db ${event.dbSize}, ${event.samplesPerSecond.toFixed(2)} samples/s`,
      );
      // Why requests failed: each distinct reason once, with its count in the step.
      for (const failure of event.failures ?? [])
        channel.warn(`[${runId}] step ${event.step}: ${failure.count} request(s) failed: ${failure.message}`);
      return;
    case 'new_best':
      channel.info(`[${runId}] new best ${event.id} at step ${event.step}: score ${formatScore(event.score)}`);
      return;
    case 'paused':
      channel.info(`[${runId}] paused after step ${event.step}`);
      return;
    case 'resumed':
      channel.info(`[${runId}] resumed after step ${event.step}`);
      return;
    case 'run_finished':
      channel.info(
        `[${runId}] ${event.message}; ${event.best ? `best ${formatScore(event.best.score)} (${event.best.id})` : NO_VALID_PROGRAM}`,
      );
      return;
    case 'error':
      if (event.fatal) channel.error(`[${runId}] ${event.message}`);
      else channel.warn(`[${runId}] ${event.message}`);
      return;
    case 'endpoint_state':
      if (event.waiting) channel.warn(`[${runId}] ${event.message}`);
      else channel.info(`[${runId}] ${event.message}`);
      return;
  }
}
