// The one way a run is put together, for the CLI (in-process) and the
// extension's engine worker alike: settings + task + where it lives in, a
// ready EvolutionRun with its response source, evaluator and trainer bridge
// out. A new evaluation backend or setting is wired here, once.
import { keyDestinations, keyOverPlainHttpWarning } from './common/endpointUrls';
import { stat } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import type { Settings } from './common/config';
import { errorMessage, ThetaEvolveError } from './common/errors';
import { ProgramDatabase } from './database/programDatabase';
import type { EngineEvent, IsolationSummary } from './common/events';
import { createEvaluationBackend, type EvaluationBackend, evaluationQueueEvent } from './evaluation';
import { EndpointClient, endpointOptionsFromSettings } from './llm/endpointClient';
import { EndpointPool, endpointSource } from './llm/endpointPool';
import { inferenceJobsRequested, type SlurmInferencePool, startSlurmInferencePool } from './llm/slurmInferencePool';
import type { SlurmInferenceOptions } from './evaluation/slurmSettings';
import { type CommittedStep, EvolutionRun } from './loop';
import { MutateSampler } from './llm/mutateSampler';
import { parseRunMeta } from './common/runMeta';
import { acquireRunLock, type RunLock } from './runLock';
import { SandboxUnavailableError } from './sandbox/evaluator';
import type { IsolationReport } from './sandbox/isolation';
import type { Task } from './task/task';
import type { PythonEnvironment } from './common/pythonEnvironment';
import { importedModules, probePython, type PythonChoice, pythonFromEnvironment, taskUsesPython } from './python/interpreter';
import { TrainerBridge, type TrainerState } from './trainer/bridge';
import { IN_SANDBOX_TRUST_REASON, type ResponseSource } from './common/types';
import { apiKeyOfModel, ensembleMembers, ModelEnsemble } from './llm/models/modelEnsemble';
import { trainedModelOf } from './common/models';

/** The run cannot be assembled; the message is one line a person can act on, `setting` the setting to change (if one is). */
export class RunSetupError extends ThetaEvolveError {
  override readonly name = 'RunSetupError';
  constructor(
    message: string,
    readonly setting: string | null = null,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export interface RunRequest {
  runId: string;
  /** Absolute path of the run database. */
  dbFile: string;
  task: Task;
  settings: Settings;
  apiKey: string | undefined;
  /** Several models: the keys by each model's apiKeyName, resolved where the user named them (the engine reads no environment variable for them). */
  modelApiKeys?: Readonly<Record<string, string>>;
  /** Text to start from (default: the task's initial program); a resumed run keeps what it started with. */
  startCode?: string;
  /** The file that text came from. */
  startPath?: string;
  /** true: the database must exist; false: it must not; undefined: resume when it exists. */
  resume?: boolean;
  /** Steps in this invocation (CLI --steps). */
  stepsThisInvocation?: number;
  /** Stop once this step is committed, counting the steps a resumed database already has (CLI --until-step). */
  untilStep?: number;
  /**
   * Fail the start at once when nothing answers at the endpoint (connection
   * refused, host not found) instead of waiting thetaevolve.serverRetrySeconds:
   * the editor's choice, which offers Retry; the CLI waits (a script may start
   * its server beside it).
   */
  unreachableServerFailsFast?: boolean;
  /** The interpreter chosen for the run (the CLI's or the editor's order); default: an activated environment, then python3 on PATH. */
  python?: PythonChoice;
  /** The person's workspace folders (the CLI: its working folder): the interpreter's prefix may not be or hold one. */
  workspaceFolders?: readonly string[];
  /** Aborts the assembly (endpoint check, reaching the trainer). */
  signal: AbortSignal;
  onEvent: (event: EngineEvent) => void;
  /** Problems worth a person's attention that do not stop the run. */
  onWarning: (message: string) => void;
  onTrainerState?: (state: TrainerState) => void;
  /** After each committed step, once the trainer took it (or was skipped). */
  afterStep?: (committed: CommittedStep) => void;
}

export interface AssembledRun {
  run: EvolutionRun;
  source: ResponseSource;
  evaluator: EvaluationBackend;
  /** Made for every run, disabled or not, so a run's RL toggle can turn it on mid-run. */
  trainer: TrainerBridge;
  /** Whether the database existed (the run goes on after its last committed step). */
  resumed: boolean;
  /** Closes the evaluator's sandboxes and the trainer bridge (its spool keeps what was not sent). */
  close(): Promise<void>;
}

/**
 * Assemble a run: checks the database against `resume`, makes the response
 * source and checks the endpoint (model served, token ids), starts the
 * trainer bridge (refusing atropos without token ids), opens the sandbox.
 * Throws RunSetupError with the reason; nothing is left open then.
 */
export async function assembleRun(request: RunRequest): Promise<AssembledRun> {
  // One process runs a database at a time: a second run would overwrite the first one's steps.
  let lock: RunLock;
  try {
    lock = await acquireRunLock(request.dbFile);
  } catch (err) {
    throw new RunSetupError(errorMessage(err), null, { cause: err });
  }
  try {
    const assembled = await assembleLockedRun(request);
    return {
      ...assembled,
      close: async () => {
        try {
          await assembled.close();
        } finally {
          await lock.release();
        }
      },
    };
  } catch (err) {
    await lock.release();
    throw err;
  }
}

async function assembleLockedRun(request: RunRequest): Promise<AssembledRun> {
  const { task, settings, dbFile, signal } = request;
  const exists = await stat(dbFile).then(
    () => true,
    () => false,
  );
  if (request.resume === true && !exists) throw new RunSetupError(`cannot resume: ${dbFile} does not exist`);
  if (request.resume === false && exists) throw new RunSetupError(`${dbFile} already exists: resume it instead`);

  let startCode = request.startCode;
  let startPath = request.startPath;
  // The trainer's spool may hold a step that was spooled but never committed (killed in between): the database says which.
  let lastCommittedStep = -1;
  // Bans as the database holds them: from the run's own database once it is open, before that (and after) as last read.
  let banned: ReadonlySet<string> = new Set<string>();
  const running: { run: EvolutionRun | null } = { run: null };
  const bannedIds = (): ReadonlySet<string> => {
    const db = running.run?.database;
    if (db) banned = new Set(db.bannedIds());
    return banned;
  };
  if (exists) {
    const info = await readResumeInfo(dbFile);
    // Another task's programs would be scored by this task's evaluator and mixed into its population.
    if (info.task !== task.name) {
      // The same folder with another evaluator (an OpenEvolve folder's --evaluator FILE): name the one the run used.
      const ranWith = /\.py$/.test(info.taskDir) ? info.taskDir : null;
      if (ranWith !== null && dirname(ranWith) === task.dir && ranWith !== task.source)
        throw new RunSetupError(
          `${dbFile} was run with the evaluator ${basename(ranWith)} of ${task.dir}, not ${task.source === task.dir ? 'its default one' : basename(task.source)}: ` +
            `resume it with --evaluator ${ranWith} (in the editor: pick the task '${info.task}')`,
        );
      throw new RunSetupError(
        `${dbFile} is a run of the task '${info.task}' (${info.taskDir}), not of '${task.name}': resume it with its own task, or give another database`,
      );
    }
    // A resumed run goes on from what it started with, whatever the caller sent.
    startCode = info.startCode;
    startPath = info.programPath;
    lastCommittedStep = info.lastStep;
    banned = new Set(info.banned);
  }

  // The researcher's Python, asked first: a missing interpreter is named in one line before anything starts.
  const python = await runPython(request, startCode ?? task.initialProgram);

  // Inference servers as SLURM jobs: submitted now, the run waits for one to answer (or a server of thetaevolve.endpoint).
  const inference = await startInference(request);
  // One server: its client; several base URLs in thetaevolve.endpoint: a pool spreading requests over them.
  const source: ResponseSource =
    inference?.pool ??
    (settings.sampler === 'mutate'
      ? new MutateSampler({ seed: settings.seed, language: task.language })
      : settings.models.length > 0
        ? modelEnsemble(request)
        : endpointSource(endpointOptionsFromSettings(settings, request.apiKey, { onWarning: request.onWarning })));
  const endpoint = source instanceof EndpointClient || source instanceof EndpointPool || source instanceof ModelEnsemble ? source : null;
  // Every server that receives a key, each named with its setting: a model's own endpoint, not only thetaevolve.endpoint.
  const plainHttp = endpoint
    ? keyOverPlainHttpWarning(keyDestinations(settings, request.apiKey !== undefined && request.apiKey !== ''))
    : null;
  if (plainHttp) request.onWarning(plainHttp);
  if (endpoint) {
    // Before anything is created: a server that is down or serves another model is the commonest reason a run cannot start,
    // and the trainer bridge needs to know whether the endpoint gives token ids.
    // A server that is loading or restarting is waited for (thetaevolve.serverRetrySeconds), and said so.
    // (A pool sets a server that is away aside and uses the others; it waits only when all are out.)
    const unsubscribe = endpoint.addStatusListener((status) =>
      request.onEvent({ type: 'endpoint_state', time: Date.now(), waiting: status.waiting, message: status.message }),
    );
    await endpoint
      .check(signal, { waitForServer: true, unreachableFailsFast: request.unreachableServerFailsFast ?? false })
      .catch(async (err: unknown) => {
        await inference?.close();
        throw new RunSetupError(
          signal.aborted
            ? 'stopped before the run started'
            : source instanceof ModelEnsemble
              ? errorMessage(err)
              : `the inference endpoint is not ready: ${errorMessage(err)}`,
          source instanceof ModelEnsemble ? 'thetaevolve.models' : 'thetaevolve.endpoint',
          { cause: err },
        );
      })
      .finally(unsubscribe);
  }

  const trainer = new TrainerBridge({
    settings,
    dbFile,
    groupSize: settings.samplesPerPrompt,
    lastCommittedStep,
    name: `thetaevolve-${task.name}`,
    tokenSupport: endpoint ? endpoint.tokenSupport : null,
    onWarning: (text) => request.onWarning(`RL trainer: ${text}`),
    onState: request.onTrainerState,
    bannedIds,
  });
  try {
    await trainer.start(signal);
  } catch (err) {
    await trainer.close();
    await inference?.close();
    throw new RunSetupError(
      signal.aborted ? 'stopped before the run started' : `RL trainer: ${errorMessage(err)}`,
      'thetaevolve.trainer.url',
      { cause: err },
    );
  }

  // The evaluation backend the settings choose (the local sandbox, or SLURM jobs whose probe runs now).
  let evaluator: EvaluationBackend;
  try {
    evaluator = await createEvaluationBackend(task, settings, {
      runId: request.runId,
      runFolder: dirname(dbFile),
      signal,
      onQueue: (queue) => request.onEvent(evaluationQueueEvent(queue)),
      onWarning: request.onWarning,
      ...(python ? { python } : {}),
      ...(request.workspaceFolders ? { workspaceFolders: request.workspaceFolders } : {}),
    });
  } catch (err) {
    await trainer.close();
    await inference?.close();
    if (signal.aborted) throw new RunSetupError('stopped before the run started', null, { cause: err });
    // No sandbox here and weaker isolation not allowed: the message says how to get one, or which setting allows less.
    const setting =
      err instanceof SandboxUnavailableError
        ? 'thetaevolve.sandbox.allowWeakIsolation'
        : settings['evaluation.backend'] === 'slurm'
          ? 'thetaevolve.slurm.partition'
          : null;
    throw new RunSetupError(errorMessage(err), setting, { cause: err });
  }
  if (evaluator.isolation.warning) request.onWarning(evaluator.isolation.warning);
  if (task.evaluatorTrust === 'in-sandbox')
    request.onWarning(`Scores are not protected from a hostile candidate: ${IN_SANDBOX_TRUST_REASON}.`);
  for (const notice of task.notices) request.onWarning(notice);

  const run = (running.run = new EvolutionRun({
    runId: request.runId,
    apiKey: request.apiKey,
    task,
    settings,
    dbFile,
    startCode,
    startPath,
    source,
    evaluator,
    stepsThisInvocation: request.stepsThisInvocation,
    untilStep: request.untilStep,
    isolation: isolationSummary(evaluator.isolation, evaluator.kind),
    ...(python ? { python } : {}),
    onEvent: request.onEvent,
    beforeCommit: async (committed, stepSignal) => {
      await trainer.spoolStep(committed, stepSignal);
      // Committed with the step's statistics (the commit writes them after this hook): how it was sampled, and by which policy.
      committed.stats.sampling = {
        batchSize: settings.batchSize,
        samplesPerPrompt: settings.samplesPerPrompt,
        ...trainer.policyOf(committed),
      };
    },
    afterCommit: async (committed, stepSignal) => {
      // Per-server throughput, health and errors when requests are spread over several servers.
      if (source instanceof EndpointPool) request.onEvent(inference ? inference.serversEvent() : source.serversEvent());
      await trainer.afterCommit(committed, stepSignal);
      request.afterStep?.(committed);
    },
    // The trainer's synchronous mode hands each step over once committed, before the next one generates.
    stepsMayOverlap: () => !trainer.holdsEachStep(),
  }));
  return {
    run,
    source,
    evaluator,
    trainer,
    resumed: exists,
    close: async () => {
      await evaluator.close();
      await trainer.close();
      // Stop leaves no inference job in the queue.
      await inference?.close();
      if (source instanceof EndpointPool || source instanceof ModelEnsemble) source.dispose();
    },
  };
}

/** The run's interpreter, asked what it is (version, prefixes, package versions); null when the task runs no Python. */
async function runPython(request: RunRequest, startCode: string): Promise<PythonEnvironment | null> {
  if (!taskUsesPython(request.task)) return null;
  const choice = request.python ?? pythonFromEnvironment(process.env);
  try {
    return await probePython(choice, request.task.language === 'py' ? importedModules(startCode) : []);
  } catch (err) {
    throw new RunSetupError(errorMessage(err), choice.source === 'thetaevolve.python' ? 'thetaevolve.python' : null, { cause: err });
  }
}

/** Several models (thetaevolve.models): one client per model, each with its own endpoint and key. */
function modelEnsemble(request: RunRequest): ModelEnsemble {
  const { settings } = request;
  const trained = trainedModelOf(settings);
  if (settings['trainer.model'] && !settings.models.some((m) => m.name === trained))
    throw new RunSetupError(
      `thetaevolve.trainer.model is "${trained}", which thetaevolve.models does not list (${settings.models.map((m) => m.name).join(', ')})`,
      'thetaevolve.trainer.model',
    );
  try {
    const members = ensembleMembers(settings, (spec) => apiKeyOfModel(spec, request.apiKey, request.modelApiKeys ?? {}), {
      onWarning: request.onWarning,
    });
    return new ModelEnsemble(members, trained);
  } catch (err) {
    throw new RunSetupError(errorMessage(err), 'thetaevolve.models', { cause: err });
  }
}

/** The run's inference jobs on SLURM (thetaevolve.slurm.inference.*), started and waited for; null when it has none. */
async function startInference(request: RunRequest): Promise<SlurmInferencePool | null> {
  let inference: SlurmInferenceOptions | null;
  try {
    inference = inferenceJobsRequested(request.settings);
  } catch (err) {
    // The message names the bad setting ("Setting thetaevolve.slurm.inference.command has no {port} ...").
    const setting = /Setting (thetaevolve\.\S+)/.exec(errorMessage(err))?.[1] ?? 'thetaevolve.slurm.inference.command';
    throw new RunSetupError(errorMessage(err), setting, { cause: err });
  }
  if (!inference) return null;
  try {
    return await startSlurmInferencePool(request.settings, inference, {
      runId: request.runId,
      runFolder: dirname(request.dbFile),
      apiKey: request.apiKey,
      signal: request.signal,
      onEvent: request.onEvent,
      onWarning: request.onWarning,
    });
  } catch (err) {
    throw new RunSetupError(
      request.signal.aborted ? 'stopped before the run started' : `SLURM inference jobs: ${errorMessage(err)}`,
      'thetaevolve.slurm.inference.command',
      { cause: err },
    );
  }
}

/** What people are shown of a backend's isolation (a SLURM backend reports the compute node's kind and warning only). */
export function isolationSummary(
  report: EvaluationBackend['isolation'] & Partial<Pick<IsolationReport, 'summary' | 'missing' | 'weak'>>,
  backend: EvaluationBackend['kind'] = 'local',
): IsolationSummary {
  const summary = report.summary ?? report.kind;
  return {
    kind: report.kind,
    // Where candidates run is part of what protects this machine: on SLURM, not here at all.
    summary: backend === 'slurm' ? `${summary} on the SLURM compute nodes` : summary,
    missing: [...(report.missing ?? [])],
    weak: report.weak ?? report.kind !== 'bwrap',
    warning: report.warning,
  };
}

/** What a resumed run needs of its database, read without keeping it open. */
async function readResumeInfo(
  dbFile: string,
): Promise<{ startCode: string; programPath: string; lastStep: number; task: string; taskDir: string; banned: string[] }> {
  let db: ProgramDatabase;
  try {
    db = await ProgramDatabase.openReadOnly(dbFile);
  } catch (err) {
    throw new RunSetupError(`cannot read the run database ${dbFile}: ${errorMessage(err)}`, null, { cause: err });
  }
  try {
    const meta = parseRunMeta(db.meta(), dbFile);
    return {
      startCode: meta.startCode,
      programPath: meta.programPath,
      lastStep: db.lastStep,
      task: meta.task,
      taskDir: meta.taskDir,
      banned: db.bannedIds(),
    };
  } catch (err) {
    throw new RunSetupError(errorMessage(err), null, { cause: err });
  } finally {
    await db.close();
  }
}
