// The engine worker thread (bundled to dist/engineWorker.js): runs one
// EvolutionRun at a time and answers read-only queries about run databases,
// so the extension host never stalls on sql.js, sandboxes or parsing. Speaks
// src/protocol/workerMessages.ts; every message from the host is validated,
// and a malformed one gets a protocolError reply, never a crash.
import { probeTrainer } from '../engine/trainer/trainerProbe';
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { parentPort } from 'node:worker_threads';
import {
  BestSolutionSchema,
  type HostToWorker,
  type LogLevel,
  parseHostToWorker,
  type Query,
  type QueryResult,
  requestIdOf,
  type StartMessage,
  type WorkerToHost,
} from '../protocol/workerMessages';
import type { ProgramDatabase } from '../engine/database/programDatabase';
import { ReadOnlyRuns } from './readOnlyRuns';
import { errorMessage } from '../engine/common/errors';
import { type AssembledRun, assembleRun, isolationSummary, RunSetupError } from '../engine/runFactory';
import { bestSolutionFile } from '../engine/runFiles';
import { listEvaluationOutputs, readEvaluationOutput } from '../engine/evaluationOutputs';
import { parseRunMeta } from '../engine/common/runMeta';
import { importedModules, interpreterPath, probePython, pythonFromEnvironment, taskUsesPython } from '../engine/python/interpreter';
import { Evaluator, evaluatorOptionsFromSettings } from '../engine/sandbox/evaluator';
import { loadTask } from '../engine/task/task';
import { trainerStateEvent } from '../engine/trainer/bridge';
import { blameOf, lineageOf } from '../engine/database/lineage';
import { compareRunFiles, readOnlyRecordOf, runRecordOf } from '../engine/database/runComparison';
import { type ClosableSteerEvaluator, steerRun } from '../engine/steering/steerRun';
import { assertRunTaskFolderAllowed, bundledTasksDir } from '../engine/steering/runTaskFolder';
import { queuedGuidance, readInbox } from '../engine/steering/inbox';
import { runAgentTool } from '../engine/agentTools/handlers';
import type { AgentToolHost } from '../engine/agentTools/host';
import { StepsInFlight } from '../engine/common/stepsInFlight';
import type { EngineEvent } from '../engine/common/events';
import type { Settings } from '../engine/common/config';
import type { RunMeta } from '../engine/common/runMeta';
import { programName } from '../engine/common/format';

interface ActiveRun extends AssembledRun {
  runId: string;
  dbFile: string;
  /** What its steps are doing, from its events (what run_status says the run waits for). */
  inFlight: StepsInFlight;
  /** The inference server it waits for, or paused (null: neither). */
  waiting: string | null;
  /** Aborted by Stop: also ends the wait for the trainer to take the run's last groups. */
  stopAsked: AbortController;
}

const port = parentPort;
if (!port) {
  console.error('dist/engineWorker.js runs as a worker thread of the ThetaEvolve extension, not on its own.');
  process.exit(2);
}

let active: ActiveRun | null = null;
/** Aborts the start in progress (the endpoint check, reaching the trainer) when the host says stop before the run is up. */
let starting: AbortController | null = null;
/** The RL toggle as last set while a run was starting (null: not touched). */
let toggleWhileStarting: boolean | null = null;
/** Runs read by queries, kept open between them within bounds (readOnlyRuns.ts). */
const readOnlyRuns = new ReadOnlyRuns();

function send(message: WorkerToHost): void {
  port?.postMessage(message);
}

function log(level: LogLevel, message: string): void {
  send({ type: 'log', level, message });
}

port.on('message', (raw: unknown) => {
  let message: HostToWorker;
  try {
    message = parseHostToWorker(raw);
  } catch (err) {
    send({ type: 'protocolError', message: errorMessage(err), requestId: requestIdOf(raw) });
    return;
  }
  void handle(message).catch((err: unknown) => log('error', `engine worker: ${message.type} failed: ${errorMessage(err)}`));
});

process.on('unhandledRejection', (reason: unknown) => log('error', `engine worker: unhandled rejection: ${errorMessage(reason)}`));

send({ type: 'ready' });

async function handle(message: HostToWorker): Promise<void> {
  switch (message.type) {
    case 'start':
      return startRun(message);
    case 'stop':
      if (!active && starting) return starting.abort();
      if (!active) return send({ type: 'protocolError', message: 'stop: no run is active', requestId: null });
      active.stopAsked.abort();
      active.run.stop();
      return;
    case 'pause':
      if (!active) return send({ type: 'protocolError', message: 'pause: no run is active', requestId: null });
      active.run.pause();
      return;
    case 'resume':
      if (!active) return send({ type: 'protocolError', message: 'resume: no run is active', requestId: null });
      active.run.resume();
      return;
    case 'setTrainerEnabled':
      // A toggle while the run is still starting applies as soon as its bridge exists.
      if (!active && starting) {
        toggleWhileStarting = message.enabled;
        return;
      }
      if (!active)
        return send({
          type: 'protocolError',
          message: 'setTrainerEnabled: no run is active (the setting thetaevolve.trainer.enabled applies to the next run)',
          requestId: null,
        });
      return switchTrainer(active, message.enabled);
    case 'query':
      try {
        const result = await answer(message.query);
        send({ type: 'reply', requestId: message.requestId, ok: true, result });
      } catch (err) {
        send({ type: 'reply', requestId: message.requestId, ok: false, error: errorMessage(err) });
      }
      return;
  }
}

/** The dashboard's RL switch for the active run; a refusal (no URL, atropos without token ids) is shown on the page. */
function switchTrainer(run: ActiveRun, enabled: boolean): void {
  try {
    run.trainer.setEnabled(enabled);
  } catch (err) {
    log('error', `RL trainer: ${errorMessage(err)}`);
    send({ type: 'event', runId: run.runId, event: trainerStateEvent({ ...run.trainer.state(), lastError: errorMessage(err) }) });
  }
}

async function startRun(message: StartMessage): Promise<void> {
  if (active || starting) {
    send({
      type: 'startFailed',
      runId: message.runId,
      message: `run ${active?.runId ?? 'another'} is still ${active ? 'active' : 'starting'}: stop it first`,
      setting: null,
    });
    return;
  }
  const dbFile = resolve(message.dbFile);
  const runId = message.runId;
  const startSignal = (starting = new AbortController()).signal;
  const inFlight = new StepsInFlight();
  let activeWhileStarting: ActiveRun | null = null;
  // Events before the run is active (run_started, endpoint waits) only feed the steps in flight.
  const noteActivity = (event: EngineEvent): void => {
    inFlight.apply(event);
    const target = activeWhileStarting;
    if (!target) return;
    if (event.type === 'endpoint_state') target.waiting = event.waiting ? `the inference server: ${event.message}` : null;
    else if (event.type === 'paused') target.waiting = `nothing: paused after step ${event.step} (resume_run continues it)`;
    else if (event.type === 'resumed') target.waiting = null;
  };
  toggleWhileStarting = null;
  let runAnnounced = false;
  let assembled: AssembledRun;
  try {
    assembled = await assembleRun({
      runId,
      dbFile,
      task: await loadTask(message.taskDir),
      settings: message.settings,
      apiKey: message.apiKey ?? undefined,
      modelApiKeys: message.modelApiKeys,
      startCode: message.startCode ?? undefined,
      startPath: message.startPath ?? undefined,
      resume: message.resume,
      ...(message.python ? { python: message.python } : {}),
      workspaceFolders: message.workspaceFolders ?? [],
      // In the editor a typo or a server not started is said in seconds, with Retry (src/vscode/runCommands.ts).
      unreachableServerFailsFast: true,
      signal: startSignal,
      onEvent: (event) => {
        noteActivity(event);
        send({ type: 'event', runId, event });
        if (event.type === 'run_started') {
          runAnnounced = true;
          send({ type: 'event', runId, event: trainerStateEvent(assembled.trainer.state()) });
        }
      },
      onWarning: (text) => log('warn', text),
      // The host learns of a run from run_started: trainer states wait for it.
      onTrainerState: (state) => {
        if (runAnnounced) send({ type: 'event', runId, event: trainerStateEvent(state) });
      },
    });
  } catch (err) {
    send({
      type: 'startFailed',
      runId,
      message: startSignal.aborted ? 'stopped before the run started' : errorMessage(err),
      setting: err instanceof RunSetupError ? err.setting : null,
    });
    return;
  } finally {
    starting = null;
  }
  const current: ActiveRun = { ...assembled, runId, dbFile, inFlight, waiting: null, stopAsked: new AbortController() };
  activeWhileStarting = current;
  active = current;
  if (toggleWhileStarting !== null) switchTrainer(current, toggleWhileStarting);
  readOnlyRuns.drop(dbFile);
  try {
    await current.run.run();
    const pending = await deliverLastGroups(current, message.settings['trainer.syncTimeoutSeconds']);
    // What the trainer has not taken stays in the spool beside the database and goes out when the run resumes.
    if (pending > 0)
      log(
        'warn',
        `RL trainer: ${pending} group(s) are still spooled beside ${dbFile}; they are sent when this run resumes with the trainer on`,
      );
  } catch (err) {
    log('error', `run ${runId} failed: ${errorMessage(err)}`);
  } finally {
    await current.close();
    if (active === current) active = null;
    readOnlyRuns.drop(dbFile);
    send({ type: 'runClosed', runId });
  }
}

/**
 * A run's steps are over: the groups its committed steps released are handed to the trainer before the run
 * closes, as the CLI's run does (asynchronous mode, or a trainer that was away, leaves some behind), waiting
 * up to trainer.syncTimeoutSeconds; Stop ends the wait and they stay spooled. Resolves with the groups left.
 */
async function deliverLastGroups(run: ActiveRun, timeoutSeconds: number): Promise<number> {
  const pending = run.trainer.state().pendingGroups;
  if (pending === 0 || run.stopAsked.signal.aborted) return pending;
  log(
    'info',
    `RL trainer: waiting up to ${timeoutSeconds} s for the trainer to take ${pending} spooled group(s) (Stop keeps them for the next run)`,
  );
  return run.trainer.flush(run.stopAsked.signal, timeoutSeconds * 1000);
}

async function answer(query: Query): Promise<unknown> {
  if (query.kind === 'evaluate') return evaluateProgram(query);
  if (query.kind === 'agentTool') return runAgentTool(query.tool, query.input, agentToolHost(query));
  if (query.kind === 'probeTrainer') return probeTrainer(query.url);
  if (query.kind === 'steer') return steer(query);
  if (query.kind === 'comparison') return compareRuns(query.dbFiles.map((f) => resolve(f)));
  if (query.kind === 'bestSolution') return readBestSolution(resolve(query.dbFile));
  if (query.kind === 'evaluationOutputs') return listEvaluationOutputs(resolve(query.dbFile));
  if (query.kind === 'evaluationOutput') return readEvaluationOutput(resolve(query.dbFile), query.step, query.jobKey, query.sampleIndex);
  const file = resolve(query.dbFile);
  const live = active && active.dbFile === file ? active.run.database : null;
  if (query.kind === 'queuedGuidance') {
    const items = await readInbox(file);
    const pick = (db: ProgramDatabase): QueryResult<'queuedGuidance'> => {
      const queued = queuedGuidance(items, (id) => db.appliedRequest(id));
      return queued && { text: queued.text, step: db.lastStep + 1 };
    };
    return live ? pick(live) : readOnlyRuns.read(file, pick);
  }
  const ask = (db: ProgramDatabase): unknown => {
    switch (query.kind) {
      case 'program': {
        const program = db.get(query.programId);
        return program ? { ...program, stepRank: db.stepRank(program.id) } : null;
      }
      case 'improvements': {
        const improvements = db.improvements();
        const parentIds = improvements.flatMap((p) => (p.parentId !== null ? [p.parentId] : []));
        const ranks = db.stepRanks([...improvements.map((p) => p.id), ...parentIds]);
        // Each row's parent named as the row is (its diff opens against it).
        const parentName = (id: string | null): string | null => {
          const parent = id !== null ? db.get(id) : null;
          return parent ? programName({ step: parent.step, stepRank: ranks.get(parent.id) ?? null }) : null;
        };
        return improvements.map((p) => ({
          ...p,
          stepRank: ranks.get(p.id) ?? null,
          live: db.isLive(p.id),
          parentName: parentName(p.parentId),
        }));
      }
      case 'summary':
        return db.summary();
      case 'runInfo':
        return {
          dbFile: file,
          lastStep: db.lastStep,
          summary: db.summary(),
          meta: parseRunMeta(db.meta(), file),
          banned: db.bannedIds(),
        };
      case 'snapshot':
        return db.stateSnapshot();
      case 'steps':
        return db.steps();
      case 'validScores':
        return db.validScores();
      case 'lineageDepth':
        return db.lineageDepth(query.programId);
      case 'ancestors':
        return db.ancestors(query.programId).map((p) => ({ id: p.id, step: p.step, score: p.score }));
      case 'lineage':
      case 'blame': {
        const program = db.get(query.programId);
        if (!program) throw new Error(`no program ${query.programId} in ${file}`);
        const lineage = lineageOf(db, program);
        const ranks = db.stepRanks(lineage.programs.map((entry) => entry.id));
        const programs = lineage.programs.map((entry) => ({
          ...entry,
          objective: db.get(entry.id)?.objective ?? null,
          stepRank: ranks.get(entry.id) ?? null,
        }));
        return query.kind === 'lineage' ? { ...lineage, programs } : { ...blameOf(db, program), programs };
      }
    }
  };
  if (live) return ask(live);
  return readOnlyRuns.read(file, ask);
}

/** Runs compared; the run this worker runs is read from its open database, as it stands after its last commit. */
function compareRuns(files: string[]): Promise<unknown> {
  return compareRunFiles(files, Date.now(), (file) => {
    const live = active && active.dbFile === file ? active.run.database : null;
    // Read through the cache: a run the Runs view or the dashboard just read is not opened again (seconds at paper scale).
    return live ? runRecordOf(live, file) : readOnlyRuns.read(file, (db) => readOnlyRecordOf(db, file));
  });
}

/**
 * A steer request, through steerRun like the CLI's: the run lock says live or stopped. This worker's own run
 * holds its lock in this thread (runLock's heldHere), so its requests wait in its inbox for its next step (a
 * `steered` event answers); a stopped run gets it applied now. The extension host never takes a run's lock:
 * its thread would take this worker's lock for a stale one.
 */
async function steer(query: Extract<Query, { kind: 'steer' }>): Promise<QueryResult<'steer'>> {
  const file = resolve(query.dbFile);
  try {
    return await steerRun(file, query.request, { openEvaluator: taskEvaluatorFor(query.settings, query.workspaceFolders ?? []) });
  } finally {
    readOnlyRuns.drop(file);
  }
}

/** The sandboxed evaluator of a stopped run's task, for a steer request's `add`. */
function taskEvaluatorFor(settings: Settings, workspaceFolders: readonly string[]): (meta: RunMeta) => Promise<ClosableSteerEvaluator> {
  return async (meta) => {
    const task = await loadTask(meta.taskDir);
    // The interpreter resolved now, never the one the database names (a run database is data: docs/architecture.md
    // "The researcher's Python"): the machine setting thetaevolve.python, else VIRTUAL_ENV, CONDA_PREFIX, python3 on PATH.
    const python = taskUsesPython(task)
      ? await probePython(
          settings.python.trim() !== ''
            ? { path: interpreterPath(settings.python.trim(), process.env), source: 'thetaevolve.python' }
            : pythonFromEnvironment(process.env),
        )
      : null;
    const evaluator = new Evaluator(task, {
      ...evaluatorOptionsFromSettings(settings),
      concurrency: 1,
      ...(python ? { python } : {}),
      workspaceFolders,
    });
    if (evaluator.isolation.warning) log('warn', evaluator.isolation.warning);
    return evaluator;
  };
}

/** The agent tools' view of this worker: its own run read from its open database, other runs read-only; steering through steerRun. */
function agentToolHost(query: Extract<Query, { kind: 'agentTool' }>): AgentToolHost {
  return {
    runsDirectories: query.runsDirectories,
    runFiles: active ? [active.dbFile] : [],
    trusted: query.trusted,
    read: (file, use) => {
      const live = active && active.dbFile === resolve(file) ? active.run.database : null;
      return live ? Promise.resolve(use(live)) : readOnlyRuns.read(resolve(file), use);
    },
    // No one can be asked here: a task folder the database names elsewhere is refused (the editor's Add This File to the Run asks).
    openEvaluator: async (meta) => {
      await assertRunTaskFolderAllowed(meta.taskDir, {
        workspace: query.workspaceFolders,
        runs: query.runsDirectories,
        bundled: bundledTasksDir(),
      });
      return taskEvaluatorFor(query.settings, query.workspaceFolders)(meta);
    },
    activity: (file) => {
      if (!active || active.dbFile !== resolve(file)) return null;
      const steps = active.inFlight.text();
      return active.waiting ?? (steps ? `its steps in flight: ${steps}` : null);
    },
    changed: (file) => readOnlyRuns.drop(resolve(file)),
  };
}

/** The best program's solution kept beside a run's database, or null (none kept yet, or not readable as ours). */
async function readBestSolution(dbFile: string): Promise<QueryResult<'bestSolution'>> {
  const text = await readFile(bestSolutionFile(dbFile), 'utf8').catch(() => null);
  if (text === null) return null;
  try {
    const parsed = BestSolutionSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/** One sandboxed evaluation for the host (the tasks.json `thetaevolve` task): the host never runs the sandbox itself. */
async function evaluateProgram(query: Extract<Query, { kind: 'evaluate' }>): Promise<QueryResult<'evaluate'>> {
  const task = await loadTask(query.taskDir);
  const python = taskUsesPython(task)
    ? await probePython(query.python ?? pythonFromEnvironment(process.env), importedModules(query.code))
    : null;
  const evaluator = new Evaluator(task, {
    ...evaluatorOptionsFromSettings(query.settings),
    concurrency: 1,
    ...(python ? { python } : {}),
    workspaceFolders: query.workspaceFolders ?? [],
  });
  try {
    const result = await evaluator.evaluate(query.code);
    return { taskTitle: task.title, direction: task.direction, isolation: isolationSummary(evaluator.isolation), ...result };
  } finally {
    await evaluator.close();
  }
}
