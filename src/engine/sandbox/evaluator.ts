// Sandboxed evaluation of candidate programs (docs/algorithm.md section 4,
// docs/architecture.md "Sandbox"). The candidate runs isolated in an empty working
// directory and writes its solution file there; afterwards the trusted
// evaluator, outside the sandbox, reads only a copy of that file and
// computes the objective. A candidate never reports its own score.
import { randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { constants as fsConstants } from 'node:fs';
import { access, chmod, chown, mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { availableParallelism, constants as osConstants, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Settings } from '../common/config';
import { fillTemplate, type Task } from '../task/task';
import type { EvaluationResult, ScoredEvaluationResult } from '../common/types';
import type { EvaluateOptions, EvaluationBackend } from '../evaluation/backend';
import { Semaphore } from '../async/semaphore';
import { createSandboxCgroup, inCgroupCommand, oomKills, removeSandboxCgroup, type SandboxCgroup, setSandboxCpuShare } from './cgroup';
import { removeTree } from './cleanup';
import {
  BWRAP_FD,
  bwrapArguments,
  candidateEnvironment,
  copyOutCommand,
  detectIsolation,
  HOW_TO_ALLOW_WEAK,
  HOW_TO_GET_A_SANDBOX,
  type IsolationInfo,
  type IsolationReport,
  isolationReport,
  limitedCommand,
  openFilesLimitWithoutCgroup,
  SANDBOX_PROGRAM_DIR,
  SANDBOX_READ_ONLY_ROOT,
  SANDBOX_PROGRAM_MISSING_BYTE,
  SANDBOX_PROGRAM_NOT_EXECUTABLE_BYTE,
  SANDBOX_STARTED_BYTE,
  SANDBOX_TMPFS_PATHS,
  SANDBOX_WORK_DIR,
  sandboxExecProfile,
  seccompFilterFor,
} from './isolation';
import { type ReadOnlyCopies, readOnlyCopies } from './readOnlyCopies';
import { pidNamespaceCommand } from './rootNamespaces';
import { LAUNCHER_STARTED, LAUNCHER_STARTED_FD, seccompLauncherCommand } from './seccompLauncher';
import { killMarkedProcesses } from './survivors';
import { type ProcessOutcome, type ProcessSpec, runProcess } from './process';
import { readSolutionFile, type SolutionRead, solutionReadProblem } from './solutionFile';
import {
  cancelledResult,
  DEFAULT_MEMORY_LIMIT_MB,
  infrastructureFailure,
  penaltyResult,
  scoreEvaluatorRun,
  scoreSolutionBytes,
  trustedEvaluatorSpec,
  trustedEvaluatorTemplate,
  trustedSolutionPath,
  withOutput,
} from './trustedEvaluator';
import {
  candidateModulesToWarm,
  keepingAlive,
  learnedModules,
  startWarmProcess,
  trustedModulesToWarm,
  type WarmableCommand,
  warmableCommand,
  warmInput,
  warmLauncherCommand,
  WarmPool,
  type WarmProcess,
  WarmRefill,
} from './warmPool';
import { errorMessage, ThetaEvolveError } from '../common/errors';
import type { PythonEnvironment } from '../common/pythonEnvironment';
import { DEFAULT_PYTHON } from '../python/interpreter';
import { homeDirectories, type InterpreterBinds, interpreterBinds, reachableByOthers } from './interpreterBinds';

export interface EvaluatorOptions {
  /** K: evaluations running at once (default 16). */
  concurrency: number;
  /** Address-space limit of the candidate, MiB (default 4096). */
  memoryLimitMb: number;
  /** Candidate stdout and stderr kept, bytes each (default 64 KiB). */
  outputLimitBytes: number;
  /** Overrides task.runtimeLimitSec. */
  runtimeLimitSec?: number;
  /** Processes and threads one candidate may have at once (default 256). */
  processLimit?: number;
  /** 'fallback' skips bubblewrap even where it works (default 'auto'). */
  isolation?: 'auto' | 'fallback';
  /** 'off' uses no cgroup even where one can be had (tests of hosts without one; default 'auto'). */
  cgroup?: 'auto' | 'off';
  /**
   * Run candidates even when the isolation is weaker than the full sandbox
   * (no bwrap, macOS, Windows). Default false: the constructor throws
   * SandboxUnavailableError instead. Only the user may set this.
   */
  allowWeakIsolation?: boolean;
  /** Where evaluation folders are made (default: the temp folder; as root, one the unprivileged user can traverse). */
  scratchDir?: string;
  /** Told when something could not be cleaned up (a folder left on disk); the evaluation result is not affected. */
  onWarning?: (message: string) => void;
  /**
   * 'auto' (a run's): with the full sandbox, Python commands run in
   * interpreters started, confined and warmed ahead of need with CPU the
   * evaluations leave idle, one per candidate (warmPool.ts); 'off' (default,
   * for a few evaluations, where warm ones left over would be wasted):
   * every process starts cold.
   */
  warmInterpreters?: 'auto' | 'off';
  /** The run's interpreter: fills {python}, starts the seccomp launcher, and its prefixes are readable in bwrap (default: DEFAULT_PYTHON, nothing bound). */
  python?: Pick<PythonEnvironment, 'executable' | 'prefixes'>;
  /**
   * The person's workspace folders (the editor's; the CLI's working folder):
   * the interpreter's prefix may neither be nor hold one, as it may not a
   * home or the task's folder (docs/guide.md "Which Python"); a venv inside
   * one is fine. Default: none.
   */
  workspaceFolders?: readonly string[];
}

/** No sandbox here, and the user has not allowed weaker isolation: nothing is run. */
export class SandboxUnavailableError extends ThetaEvolveError {
  override readonly name = 'SandboxUnavailableError';
  constructor(readonly isolation: IsolationReport) {
    super(
      `No sandbox for candidate programs here (${isolation.missing[0] ?? isolation.summary}). Model-written code is not run without isolation. ` +
        `${HOW_TO_GET_A_SANDBOX} ${HOW_TO_ALLOW_WEAK}`,
    );
  }
}

export const DEFAULT_EVALUATOR_OPTIONS: Readonly<EvaluatorOptions> = {
  concurrency: 16,
  memoryLimitMb: DEFAULT_MEMORY_LIMIT_MB,
  outputLimitBytes: 64 * 1024,
};

const DEFAULT_PROCESS_LIMIT = 256;
/** Files a candidate may write (RLIMIT_FSIZE) at least; the solution cap decides what is read. */
const MIN_FILE_SIZE_LIMIT = 256 * 1024 * 1024;
/** The memory limit from which warm interpreters import modules ahead (numpy holds some 30 MiB). */
const WARM_IMPORTS_MIN_MEMORY_MB = 1024;
/** How often the memory of a candidate's processes is summed (fast allocators get at most this long past the limit). */
const MEMORY_WATCH_INTERVAL_MS = 50;

/** The sandbox options from the run settings. */
export function evaluatorOptionsFromSettings(
  settings: Pick<Settings, 'evaluationConcurrency' | 'sandbox.memoryLimitMb' | 'sandbox.outputLimitKb' | 'sandbox.allowWeakIsolation'>,
  runtimeLimitSec?: number,
): EvaluatorOptions {
  return {
    concurrency: settings.evaluationConcurrency,
    memoryLimitMb: settings['sandbox.memoryLimitMb'],
    outputLimitBytes: settings['sandbox.outputLimitKb'] * 1024,
    allowWeakIsolation: settings['sandbox.allowWeakIsolation'],
    ...(runtimeLimitSec !== undefined ? { runtimeLimitSec } : {}),
  };
}

/** A candidate's run: the process, whether the sandbox got as far as starting it, and the solution it handed over. */
type SandboxRun = ProcessOutcome & {
  sandboxStarted: boolean;
  solution: SolutionRead;
  /** The program the sandbox had to start (the interpreter) and why it could not: not there, or not executable; null when it could. */
  unstartable: { program: string; why: 'missing' | 'not_executable' } | null;
};

/** Why `program` cannot be started on the host (not there, not executable), or null when it can. */
async function unstartableOnHost(program: string): Promise<SandboxRun['unstartable']> {
  try {
    await access(program, fsConstants.X_OK);
    return null;
  } catch (err) {
    return { program, why: (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'missing' : 'not_executable' };
  }
}

/** Signal names by number, for "killed by SIGKILL" where bwrap reports 128 + n. */
const SIGNAL_NAMES = new Map(Object.entries(osConstants.signals).map(([name, n]) => [n, name]));

/** The `local` evaluation backend: K sandboxed evaluations at once on this machine. */
export class Evaluator implements EvaluationBackend {
  readonly kind = 'local';
  /** Which isolation candidates get (kind and warning as before, plus the layers and what is missing and why). */
  readonly isolation: IsolationReport;
  /** Folders that could not be removed after an evaluation (also told to onWarning). */
  readonly cleanupFailures: string[] = [];
  private readonly info: IsolationInfo;
  private readonly options: Required<
    Omit<EvaluatorOptions, 'runtimeLimitSec' | 'scratchDir' | 'onWarning' | 'python' | 'workspaceFolders'>
  > & {
    runtimeLimitSec: number;
  };
  /** Candidate sandboxes started ahead of need (null: each candidate's starts when it comes). */
  private readonly warmCandidates: WarmPool<SandboxRun> | null;
  /** Trusted evaluators started ahead of need, each with its own private folder (null: cold). */
  private readonly warmTrusted: WarmPool<ProcessOutcome> | null;
  /** Starts warm processes with the CPU evaluations leave idle (null: no warm pools). */
  private readonly warmRefill: WarmRefill | null;
  /** What warm candidate sandboxes import ahead: the task's imports, and numpy once a candidate imports it. */
  private readonly warmCandidateModules: string[] = [];
  /** The candidate's command as warm sandboxes run it (null: not a Python script: cold). */
  private readonly warmCandidateCommand: WarmableCommand | null;
  /** The interpreter {python} names (the same path inside bwrap, where its prefixes are bound). */
  private readonly python: string;
  /** The interpreter's prefixes as bwrap binds them, made once (a linked tree as root can take seconds): awaited by each bwrap run. */
  private readonly pythonBinds: Promise<InterpreterBinds>;
  /** What starts the seccomp launcher without bwrap: the run's interpreter where the candidate's user can run it, else the python3 isolation found. */
  private readonly launcherPython: string;
  /** The prefixes' binds once made (warm sandboxes are started only after: their bwrap arguments are built synchronously). */
  private pythonPrefixDirs: Pick<InterpreterBinds, 'dirs' | 'links'> | null = null;
  private readonly scratchDir: string;
  /** The task's read-only folders as the sandbox gets them (readOnlyCopies.ts), by name. */
  private readonly readOnlyCopies: ReadOnlyCopies;
  private readonly seccompFilter: Buffer | null;
  private readonly onWarning: ((message: string) => void) | undefined;
  /** The K concurrent evaluations. */
  private readonly slots: Semaphore;
  private readonly closing = new AbortController();
  private readonly inFlight = new Set<Promise<EvaluationResult>>();
  /** Cgroups of finished bwrap sandboxes being removed (their processes are gone with the PID namespace): awaited by close(). */
  private readonly cgroupRemovals = new Set<Promise<void>>();

  constructor(
    readonly task: Task,
    options: EvaluatorOptions,
  ) {
    const check = (name: string, value: number, min: number): void => {
      if (!Number.isFinite(value) || value < min)
        throw new RangeError(`Evaluator option ${name} must be a number >= ${min} (got ${value})`);
    };
    check('concurrency', options.concurrency, 1);
    check('memoryLimitMb', options.memoryLimitMb, 16);
    check('outputLimitBytes', options.outputLimitBytes, 1);
    if (options.runtimeLimitSec !== undefined) check('runtimeLimitSec', options.runtimeLimitSec, 0.001);
    this.options = {
      concurrency: Math.floor(options.concurrency),
      memoryLimitMb: options.memoryLimitMb,
      outputLimitBytes: Math.floor(options.outputLimitBytes),
      runtimeLimitSec: options.runtimeLimitSec ?? task.runtimeLimitSec,
      processLimit: options.processLimit ?? DEFAULT_PROCESS_LIMIT,
      isolation: options.isolation ?? 'auto',
      cgroup: options.cgroup ?? 'auto',
      allowWeakIsolation: options.allowWeakIsolation ?? false,
      warmInterpreters: options.warmInterpreters ?? 'off',
    };
    this.info = detectIsolation(this.options.isolation, this.options.cgroup);
    this.isolation = isolationReport(this.info);
    if (this.isolation.weak && !this.options.allowWeakIsolation) throw new SandboxUnavailableError(this.isolation);
    // bwrap needs no folder of the candidate on the host (only the evaluator's, ours), so any temp folder does.
    this.scratchDir = options.scratchDir ?? (this.info.kind === 'bwrap' ? tmpdir() : this.info.scratchBase);
    // Copies, not the folders themselves: no dotfiles or run data inside, readable below a private folder.
    this.readOnlyCopies = readOnlyCopies(task.sandboxReadOnlyDirs, this.scratchDir, this.info.runAs !== null);
    this.python = options.python?.executable ?? DEFAULT_PYTHON;
    // Without bwrap as root the launcher runs as nobody: the run's interpreter only where nobody can reach it.
    const launcherCanRun = options.python && (this.info.runAs === null || options.python.prefixes.every(reachableByOthers));
    this.launcherPython = (launcherCanRun ? options.python?.executable : undefined) ?? this.info.seccompLauncher ?? DEFAULT_PYTHON;
    this.pythonBinds =
      // Only where candidates start it: a task that names its own interpreter (/usr/bin/python3) needs no bind.
      this.info.kind === 'bwrap' && options.python && task.candidateCommand.some((arg) => arg.includes('{python}'))
        ? interpreterBinds(options.python.prefixes, this.info.runAs, this.info.scratchBase, [
            ...homeDirectories(),
            task.dir,
            ...(options.workspaceFolders ?? []),
          ])
        : Promise.resolve({ dirs: [], links: [], made: [] });
    // A failure is each evaluation's (an infrastructure failure naming the prefix), not an unhandled rejection.
    this.pythonBinds.catch(() => undefined);
    this.onWarning = options.onWarning;
    this.seccompFilter = seccompFilterFor(this.info);
    this.slots = new Semaphore(this.options.concurrency);
    const warm = this.options.warmInterpreters === 'auto' && this.info.kind === 'bwrap' && process.platform === 'linux';
    this.warmCandidateCommand = warmableCommand(
      this.filledCandidateCommand(`${SANDBOX_PROGRAM_DIR}/program.${task.language}`, SANDBOX_WORK_DIR, true),
    );
    this.warmCandidates = warm ? this.warmCandidatePool() : null;
    this.warmTrusted = warm ? this.warmTrustedPool() : null;
    const pools = [this.warmCandidates, this.warmTrusted].filter((p) => p !== null);
    this.warmRefill = pools.length > 0 ? new WarmRefill(pools, availableParallelism()) : null;
    // Every running evaluation listens on it: K of them, not a leak.
    setMaxListeners(0, this.closing.signal);
  }

  /** Queues behind the concurrency limit; never throws for candidate failures. A cancelled evaluation resolves as no_solution with metrics.cancelled. */
  evaluate(code: string, options: EvaluateOptions = {}): Promise<EvaluationResult> {
    if (this.warmCandidates && this.options.memoryLimitMb >= WARM_IMPORTS_MIN_MEMORY_MB)
      this.warmCandidateModules.push(...learnedModules(code, this.warmCandidateModules));
    const promise = this.evaluateNow(code, options);
    this.inFlight.add(promise);
    this.warmRefill?.setBusy(this.inFlight.size);
    void promise.finally(() => {
      this.inFlight.delete(promise);
      this.warmRefill?.setBusy(this.inFlight.size);
    });
    return promise;
  }

  /** Cancel queued and running evaluations and wait until every one has cleaned up. */
  /** One line for people: where and how candidates run. */
  get description(): string {
    return `local sandbox (${this.isolation.summary}), ${this.options.concurrency} at once`;
  }

  /** Whether candidates run in interpreters warmed ahead of need (warmPool.ts). */
  get warmInterpreters(): boolean {
    return this.warmCandidates !== null;
  }

  /** Start warming interpreters now, as the CPU allows (a run's first responses take longer than warming them). */
  warmUp(): void {
    // A failure to make the binds is each evaluation's to report; warming just does not start.
    void this.pythonPrefixesMade().then(
      () => {
        if (!this.closing.signal.aborted) this.warmRefill?.start();
      },
      () => undefined,
    );
  }

  /** The interpreter's prefixes bound in bwrap, made once: every sandbox's arguments include them. */
  private async pythonPrefixesMade(): Promise<void> {
    this.pythonPrefixDirs ??= await this.pythonBinds;
  }

  /** Start the warm interpreters now and resolve once they are all warm (none: at once). */
  async warmed(): Promise<void> {
    if (this.closing.signal.aborted) return;
    await this.pythonPrefixesMade();
    await Promise.all([this.warmCandidates?.warmed(), this.warmTrusted?.warmed()]);
  }

  async close(): Promise<void> {
    this.closing.abort();
    await Promise.allSettled([this.warmCandidates?.close(), this.warmTrusted?.close()]);
    await Promise.allSettled([...this.inFlight]);
    await Promise.allSettled([...this.cgroupRemovals]);
    const pythonBinds = await this.pythonBinds.catch(() => ({ made: [] }));
    for (const copy of [...this.readOnlyCopies.made, ...pythonBinds.made]) await this.cleanUp(copy);
  }

  private async evaluateNow(code: string, options: { signal?: AbortSignal; onStart?: () => void }): Promise<EvaluationResult> {
    const started = performance.now();
    const elapsed = <R extends EvaluationResult>(result: R): R => ({ ...result, durationMs: performance.now() - started });
    if (this.closing.signal.aborted)
      return elapsed(penaltyResult('no_solution', 'the evaluator is closed', { metrics: { cancelled: true } }));
    if (code.length > this.task.maxCodeLength) {
      return elapsed(
        penaltyResult('no_solution', `the program is ${code.length} characters, over the task's limit of ${this.task.maxCodeLength}`),
      );
    }
    const signal = options.signal ? AbortSignal.any([options.signal, this.closing.signal]) : this.closing.signal;
    let release: () => void;
    try {
      release = await this.slots.acquire(signal);
    } catch {
      return elapsed(cancelledResult()); // cancelled while queued
    }
    try {
      options.onStart?.();
      return elapsed(await this.runAndScore(code, signal));
    } catch (err) {
      // Our own failure (disk full, temp folder gone): still a result, not a throw, and never the candidate's score.
      return elapsed(infrastructureFailure(`the sandbox failed: ${errorMessage(err)}`, { metrics: { sandbox_failed: true } }));
    } finally {
      release();
    }
  }

  private async cleanUp(path: string): Promise<void> {
    this.reportCleanup(await removeTree(path));
  }

  private reportCleanup(problem: string | null): void {
    if (problem === null) return;
    this.cleanupFailures.push(problem);
    this.onWarning?.(`Sandbox cleanup: ${problem}`);
  }

  private async runAndScore(code: string, signal: AbortSignal): Promise<EvaluationResult> {
    // The folder holds the trusted evaluator's copy, and without bwrap the candidate's files; a warm bwrap evaluation needs none.
    const root = this.info.kind === 'bwrap' && this.warmTrusted ? null : await mkdtemp(join(this.scratchDir, 'thetaevolve-eval-'));
    try {
      const trustedDir = root ? join(root, 'trusted') : null;
      if (trustedDir) await mkdir(trustedDir, { mode: 0o700 });
      const programName = `program.${this.task.language}`;
      const run = this.warmCandidates
        ? await this.runWarm(this.warmCandidates, code, programName, signal)
        : this.info.kind === 'bwrap' || root === null
          ? await this.runInBwrap(code, programName, signal)
          : await this.runOnHost(root, code, programName, signal);
      const output = { stdout: run.stdout, stderr: run.stderr };
      // Another system's folder: its metrics are exactly what its evaluator returned (which times itself).
      const runtime: ScoredEvaluationResult['metrics'] =
        this.task.layout === 'task.json' ? { runtime_seconds: Math.round(run.durationMs) / 1000 } : {};
      if (run.aborted) return { ...cancelledResult(), ...output };
      if (run.spawnError)
        return infrastructureFailure(`the sandbox could not start the program: ${run.spawnError}`, {
          ...output,
          metrics: { sandbox_failed: true },
        });
      if (run.unstartable) {
        // Nothing of the candidate ran: the interpreter (or the task's command) is not there in the sandbox, ours to fix.
        const { program, why } = run.unstartable;
        return infrastructureFailure(
          `the sandbox cannot start ${program}: it ${why === 'missing' ? 'does not exist' : 'is not executable'} ` +
            `${this.info.kind === 'bwrap' ? 'inside the sandbox' : 'for the sandbox user'} (the interpreter or the task's command is missing, not the program)`,
          { ...output, metrics: { sandbox_failed: true } },
        );
      }
      if (!run.sandboxStarted && !run.timedOut) {
        // bwrap gave up before the program ran (a folder it cannot bind, no user namespace): ours to fix, not the model's.
        return infrastructureFailure(withOutput(`the sandbox failed to start (${this.describeExit(run)})`, run.stderr), {
          ...output,
          metrics: { sandbox_failed: true },
        });
      }
      if (run.timedOut) {
        return penaltyResult('timeout', `the program ran past its ${this.options.runtimeLimitSec} s limit and was killed`, {
          ...output,
          metrics: runtime,
        });
      }
      if (run.memoryExceeded) {
        const reason = `the program's processes together held more than ${this.options.memoryLimitMb} MiB of memory and were killed`;
        return penaltyResult('no_solution', withOutput(reason, run.stderr), { ...output, metrics: runtime });
      }
      if (run.exitCode !== 0) {
        return penaltyResult('no_solution', withOutput(this.describeExit(run), run.stderr), { ...output, metrics: runtime });
      }
      const read = run.solution;
      if (!read.ok) return penaltyResult('no_solution', read.reason, { ...output, metrics: runtime });
      const limits = { memoryLimitMb: this.options.memoryLimitMb, python: this.python };
      const scored =
        this.warmTrusted || trustedDir === null
          ? await this.scoreWarm(read.bytes, signal)
          : await scoreSolutionBytes(this.task, read.bytes, trustedDir, limits, signal);
      return { ...scored, ...output, metrics: { ...scored.metrics, ...runtime } };
    } finally {
      if (root) await this.cleanUp(root);
    }
  }

  /**
   * The candidate in a warm sandbox, once that one is warm; one that died
   * while warming (its limits, a setup failure) is no verdict on the
   * candidate, which then runs in a fresh sandbox as without the pool.
   */
  private async runWarm(pool: WarmPool<SandboxRun>, code: string, programName: string, signal: AbortSignal): Promise<SandboxRun> {
    await this.pythonPrefixesMade();
    // From now on warm sandboxes can be built (their arguments include the binds).
    this.warmRefill?.start();
    const warm = pool.take();
    if (!warm) return this.runInBwrap(code, programName, signal);
    await keepingAlive(warm.ready);
    if (warm.isGone) return this.runInBwrap(code, programName, signal);
    return warm.start(warmInput(this.warmCandidateCommand as WarmableCommand, code), signal);
  }

  /** The trusted evaluator in a warm interpreter: its private folder is made now, the copy goes there, then it runs there. */
  private async scoreWarm(bytes: Buffer, signal: AbortSignal): Promise<EvaluationResult> {
    const warm = this.warmTrusted?.take() ?? null;
    const limits = { memoryLimitMb: this.options.memoryLimitMb, python: this.python };
    const dir = await mkdtemp(join(this.scratchDir, 'thetaevolve-trusted-'));
    try {
      await writeFile(trustedSolutionPath(this.task, dir), bytes, { mode: 0o600 });
      if (warm) await keepingAlive(warm.ready);
      // None waiting, or one that died warming (no verdict on anything): the trusted evaluator runs cold instead.
      if (!warm || warm.isGone) return await scoreSolutionBytes(this.task, bytes, dir, limits, signal);
      const command = warmableCommand(trustedEvaluatorTemplate(this.task, dir, this.python)) as WarmableCommand;
      const run = await warm.start(warmInput(command, '', dir), signal);
      return scoreEvaluatorRun(this.task, bytes, run, limits);
    } catch (err) {
      warm?.discard();
      throw err;
    } finally {
      await this.cleanUp(dir);
    }
  }

  /**
   * Trusted evaluators started ahead (a Python evaluator command only), the
   * evaluator's own imports done, in the scratch folder until their work
   * (and private folder) comes.
   */
  private warmTrustedPool(): WarmPool<ProcessOutcome> | null {
    // A cascade runs its stages one after the other, each a process of its own: started when the solution comes.
    if ((this.task.evaluatorStages ?? []).length > 0) return null;
    const command = warmableCommand(trustedEvaluatorTemplate(this.task, this.scratchDir, this.python));
    if (!command) return null;
    const modules = this.options.memoryLimitMb >= WARM_IMPORTS_MIN_MEMORY_MB ? trustedModulesToWarm(command.script) : [];
    const launcher = warmLauncherCommand(command, modules, null);
    const limits = { memoryLimitMb: this.options.memoryLimitMb, python: this.python };
    // It can yield the CPU by its niceness only where that can be raised again when its work comes (as root).
    const yielder = process.getuid?.() === 0 ? { renice: true as const } : null;
    const create = (): WarmProcess<ProcessOutcome> =>
      startWarmProcess(
        trustedEvaluatorSpec(this.task, this.scratchDir, limits, this.closing.signal, launcher),
        async (run) => run,
        yielder,
      );
    return new WarmPool(create, this.options.concurrency);
  }

  /** Candidate sandboxes started ahead (a Python candidate command only), numpy and the initial program's imports done. */
  private warmCandidatePool(): WarmPool<SandboxRun> | null {
    const programName = `program.${this.task.language}`;
    const inside = this.warmCandidateCommand;
    if (!inside) return null;
    // The script's own imports (another system's wrapper) are read where the host has it.
    const onHost = warmableCommand(this.filledCandidateCommand(`${SANDBOX_PROGRAM_DIR}/${programName}`, SANDBOX_WORK_DIR, false));
    // Below this memory limit imports ahead could hold memory the candidate would not: only the interpreter is started.
    if (this.options.memoryLimitMb >= WARM_IMPORTS_MIN_MEMORY_MB)
      this.warmCandidateModules.push(
        ...candidateModulesToWarm(
          this.task.initialProgram,
          onHost?.script ?? null,
          this.readOnlyDirs().map((d) => d.hostDir),
        ),
      );
    const create = (): WarmProcess<SandboxRun> => {
      const modules = [...this.warmCandidateModules];
      const { spec, cgroup, startedProgram } = this.bwrapProcess(null, programName, { command: inside, modules }, this.closing.signal);
      // It yields the CPU by its sandbox's CPU share.
      const yielder = cgroup?.cpu ? { share: (yielding: boolean) => setSandboxCpuShare(cgroup, yielding ? 'waiting' : 'running') } : null;
      return startWarmProcess(spec, async (run) => this.bwrapOutcome(run, cgroup, startedProgram), yielder);
    };
    return new WarmPool(create, this.options.concurrency);
  }

  private describeExit(run: ProcessOutcome): string {
    if (run.exitSignal === 'SIGXFSZ') return 'the program was killed for writing a file over the size limit';
    if (run.exitSignal) return `the program was killed by ${run.exitSignal}`;
    if (this.info.kind === 'bwrap' && run.exitCode === 1 && run.stderr.startsWith('bwrap:'))
      return 'the sandbox failed to start the program';
    // bwrap and the shell report a signal as 128 + its number.
    const signalName = run.exitCode !== null && run.exitCode > 128 ? SIGNAL_NAMES.get(run.exitCode - 128) : undefined;
    if (this.info.kind === 'bwrap' && signalName === 'SIGXFSZ') return 'the program was killed for writing a file over the size limit';
    if (this.info.kind === 'bwrap' && signalName) return `the program was killed by ${signalName}`;
    return `the program exited with code ${String(run.exitCode)}`;
  }

  /** The memory limit for all of a candidate's processes together (RLIMIT_AS holds each one; this, their sum). */
  private memoryWatch(cgroup: SandboxCgroup | null, tmpfsPaths: readonly string[] = []): NonNullable<ProcessSpec['memoryWatch']> {
    return {
      limitBytes: this.options.memoryLimitMb * 1024 * 1024,
      intervalMs: MEMORY_WATCH_INTERVAL_MS,
      tmpfsPaths,
      ...(cgroup ? { kernelKilled: () => oomKills(cgroup) > 0 } : {}),
    };
  }

  /** A foreign task's folder and our wrapper, readable by the candidate (task.json tasks have none): where each is on the host and in bwrap. */
  private readOnlyDirs(): { name: string; hostDir: string; sandboxDir: string }[] {
    return Object.entries(this.readOnlyCopies.copies).map(([name, hostDir]) => ({
      name,
      hostDir,
      sandboxDir: `${SANDBOX_READ_ONLY_ROOT}/${name}`,
    }));
  }

  /** The candidate's command with the task's variables (and read-only folders, by where the candidate sees them), under the resource limits. */
  private limitedCandidateCommand(
    programPath: string,
    workPath: string,
    processLimit: number | null,
    inBwrap: boolean,
    warm: { command: WarmableCommand; modules: readonly string[] } | null = null,
  ): string[] {
    const filled = warm
      ? warmLauncherCommand(warm.command, warm.modules, programPath)
      : this.filledCandidateCommand(programPath, workPath, inBwrap);
    // Without bwrap the launcher installs the same filter (bwrap installs it itself) and says when the candidate started;
    // the run's interpreter starts it where the run has one (the python3 found at detection proved the launcher works here).
    const command = this.launcherFilter(inBwrap)
      ? seccompLauncherCommand(this.launcherPython, this.seccompFilter as Buffer, filled, LAUNCHER_STARTED_FD)
      : filled;
    // Windows has neither prlimit nor a POSIX shell: the program runs as it is (the isolation report says there is none).
    if (process.platform === 'win32') return command;
    return limitedCommand(
      command,
      {
        memoryLimitMb: this.options.memoryLimitMb,
        processLimit,
        fileSizeLimitBytes: Math.max(MIN_FILE_SIZE_LIMIT, 2 * this.task.solutionMaxBytes),
        // Socket buffers count in a cgroup; without one, the number of descriptors bounds them.
        ...(this.info.layers.cgroup ? {} : { openFilesLimit: openFilesLimitWithoutCgroup(this.options.memoryLimitMb) }),
      },
      this.info.prlimitPath,
    );
  }

  /** The candidate's command with the task's variables (read-only folders as the candidate sees them, or as the host has them). */
  private filledCandidateCommand(programPath: string, workPath: string, inBwrap: boolean): string[] {
    const dirs = Object.fromEntries(this.readOnlyDirs().map((d) => [d.name, inBwrap ? d.sandboxDir : d.hostDir]));
    return this.task.candidateCommand.map((arg) =>
      fillTemplate(arg, { ...this.task.variables, ...dirs, python: this.python, program: programPath, workDir: workPath }),
    );
  }

  /** Whether the seccomp launcher starts the candidate (no bwrap, on Linux where it works). */
  private launcherFilter(inBwrap: boolean): boolean {
    return !inBwrap && this.info.seccompLauncher !== null && this.seccompFilter !== null;
  }

  /**
   * The full sandbox: nothing of the candidate touches the host's disk. The
   * program comes in on a descriptor, the working directory is a
   * size-capped tmpfs, and the solution comes out on another descriptor
   * after everything else in the sandbox was killed.
   */
  private async runInBwrap(code: string, programName: string, signal: AbortSignal): Promise<SandboxRun> {
    await this.pythonPrefixesMade();
    const { spec, cgroup, startedProgram } = this.bwrapProcess(Buffer.from(code, 'utf8'), programName, null, signal);
    let run: ProcessOutcome;
    try {
      run = await runProcess(spec);
    } catch (err) {
      if (cgroup) this.removeCgroupLater(cgroup);
      throw err;
    }
    return this.bwrapOutcome(run, cgroup, startedProgram);
  }

  /**
   * The bwrap sandbox's process: the program bound from a descriptor, or
   * (warm: code null) a tmpfs program folder the warm launcher writes the
   * code into once it comes; its cgroup is made here.
   */
  private bwrapProcess(
    code: Buffer | null,
    programName: string,
    warm: { command: WarmableCommand; modules: readonly string[] } | null,
    signal: AbortSignal,
  ): { spec: ProcessSpec; cgroup: SandboxCgroup | null; startedProgram: string } {
    // Inside bwrap the kernel counts processes per user namespace, so the limit is per evaluation.
    const processLimit = this.info.processLimit ? this.options.processLimit : null;
    const limited = this.limitedCandidateCommand(`${SANDBOX_PROGRAM_DIR}/${programName}`, SANDBOX_WORK_DIR, processLimit, true, warm);
    // What the command starts (the interpreter): the wrapper checks it is there before anything runs.
    const startedProgram = warm
      ? warm.command.interpreter
      : (this.filledCandidateCommand(`${SANDBOX_PROGRAM_DIR}/${programName}`, SANDBOX_WORK_DIR, true)[0] ?? '');
    const seccomp = this.seccompFilter;
    const env = candidateEnvironment('/tmp', '/tmp');
    // Made before any sandbox is built (runInBwrap, runWarm and warmUp await them).
    const pythonPrefixes = this.pythonPrefixDirs?.dirs ?? [];
    const pythonPrefixLinks = this.pythonPrefixDirs?.links ?? [];
    const args = [
      ...bwrapArguments({
        programName,
        env,
        tmpfsSizeOption: this.info.tmpfsSizeOption,
        disableUsernsOption: this.info.disableUsernsOption,
        seccomp: seccomp !== null,
        readOnlyDirs: this.readOnlyDirs(),
        // Room for the longest program the task allows (4 bytes a character at most).
        ...(code === null ? { warmProgramBytes: 4 * this.task.maxCodeLength + 64 * 1024 } : {}),
        pythonPrefixes,
        pythonPrefixLinks,
      }),
      '--',
      ...copyOutCommand(`${SANDBOX_WORK_DIR}/${this.task.solutionFile}`, this.task.solutionMaxBytes, limited, startedProgram),
    ];
    const runAs = this.info.runAs;
    const cgroup = this.sandboxCgroup(this.info.processLimit ? this.options.processLimit : null);
    const bwrap = [this.info.bwrapPath as string, ...args];
    // In a cgroup, a root shell enters it first and drops to the unprivileged user itself.
    const drop = runAs && this.info.cgroupSetpriv ? { setpriv: this.info.cgroupSetpriv, ...runAs } : null;
    const command = cgroup ? inCgroupCommand(cgroup, bwrap, drop) : bwrap;
    const spec: ProcessSpec = {
      file: command[0] as string,
      args: command.slice(1),
      cwd: '/',
      env: {},
      bwrapInfoFd: true,
      inputs: [
        ...(seccomp ? [{ fd: BWRAP_FD.seccomp, data: seccomp }] : []),
        ...(code !== null ? [{ fd: BWRAP_FD.program, data: code }] : []),
      ],
      capture: { fd: BWRAP_FD.solution, limitBytes: this.task.solutionMaxBytes + 3 },
      timeoutMs: this.options.runtimeLimitSec * 1000,
      outputLimitBytes: this.options.outputLimitBytes,
      // The scratch tmpfs are RAM: what a candidate keeps there counts towards its memory.
      memoryWatch: this.memoryWatch(cgroup, code === null ? [...SANDBOX_TMPFS_PATHS, SANDBOX_PROGRAM_DIR] : SANDBOX_TMPFS_PATHS),
      signal,
      ...(runAs && !cgroup ? { uid: runAs.uid, gid: runAs.gid } : {}),
    };
    return { spec, cgroup, startedProgram };
  }

  /** What a finished bwrap sandbox gave: whether it started, the memory verdict, the solution copied out; its cgroup goes. */
  private bwrapOutcome(run: ProcessOutcome, cgroup: SandboxCgroup | null, startedProgram: string): SandboxRun {
    try {
      const memoryExceeded = run.memoryExceeded || (cgroup !== null && oomKills(cgroup) > 0);
      const tag = run.captured !== null && run.captured.length > 0 ? String.fromCharCode(run.captured[0] as number) : '';
      const sandboxStarted = tag === SANDBOX_STARTED_BYTE;
      const why = tag === SANDBOX_PROGRAM_MISSING_BYTE ? 'missing' : tag === SANDBOX_PROGRAM_NOT_EXECUTABLE_BYTE ? 'not_executable' : null;
      return {
        ...run,
        memoryExceeded,
        sandboxStarted,
        unstartable: why ? { program: startedProgram, why } : null,
        solution: this.copiedOut(sandboxStarted ? (run.captured as Buffer).subarray(1) : null),
      };
    } finally {
      if (cgroup) this.removeCgroupLater(cgroup);
    }
  }

  /** Off the result's path: the kernel may take a few milliseconds to let the last exited process leave it. */
  private removeCgroupLater(cgroup: SandboxCgroup): void {
    const removal = removeSandboxCgroup(cgroup).then((problem) => this.reportCleanup(problem));
    this.cgroupRemovals.add(removal);
    void removal.finally(() => this.cgroupRemovals.delete(removal));
  }

  /** The evaluation's own cgroup where the isolation has one (memory, processes, CPU share); null without. */
  private sandboxCgroup(pids: number | null): SandboxCgroup | null {
    const support = this.info.cgroup;
    if (!this.info.layers.cgroup || !support?.available) return null;
    return createSandboxCgroup(support, { memoryBytes: this.options.memoryLimitMb * 1024 * 1024, pids });
  }

  /** What the copy-out wrapper sent after its start byte: a tag byte, then the file's first maxBytes + 1 bytes. */
  private copiedOut(captured: Buffer | null): SolutionRead {
    const name = this.task.solutionFile;
    const tag = captured && captured.length > 0 ? String.fromCharCode(captured[0] as number) : 'N';
    if (tag === 'L') return { ok: false, reason: solutionReadProblem('symlink', name) };
    if (tag === 'X') return { ok: false, reason: solutionReadProblem('not_regular', name) };
    if (tag !== 'F' || !captured) return { ok: false, reason: solutionReadProblem('missing', name) };
    const bytes = captured.subarray(1);
    if (bytes.length > this.task.solutionMaxBytes)
      return { ok: false, reason: solutionReadProblem('too_large', name, this.task.solutionMaxBytes) };
    if (bytes.length === 0) return { ok: false, reason: solutionReadProblem('empty', name) };
    return { ok: true, bytes: Buffer.from(bytes) };
  }

  /** Weaker isolation the user allowed: a folder on the host, limits, and every leftover process killed. */
  private async runOnHost(root: string, code: string, programName: string, signal: AbortSignal): Promise<SandboxRun> {
    const programDir = join(root, 'program');
    const workDir = join(root, 'work');
    await mkdir(programDir);
    await mkdir(workDir);
    await writeFile(join(programDir, programName), code, { mode: 0o444 });
    const runAs = this.info.runAs;
    if (runAs) {
      // The unprivileged candidate user may pass through and read the
      // program, write only its working directory, and never see trusted/.
      await chmod(root, 0o711);
      await chmod(programDir, 0o755);
      await chown(workDir, runAs.uid, runAs.gid);
    }
    // The kernel counts processes per user here: only applied for our own unprivileged user, shared by K.
    const processLimit = this.info.processLimit ? this.options.processLimit * this.options.concurrency : null;
    const limited = this.limitedCandidateCommand(join(programDir, programName), workDir, processLimit, false);
    // Every process of this evaluation carries this in its environment, so leftovers (a double-forked daemon) can be found and killed.
    const evaluationId = randomBytes(12).toString('hex');
    const env = { ...candidateEnvironment(workDir, workDir), THETAEVOLVE_EVALUATION: evaluationId };
    let command = limited;
    let asUser = runAs;
    if (this.info.kind === 'sandbox-exec' && this.info.sandboxExecPath) {
      command = [
        this.info.sandboxExecPath,
        '-D',
        `WORK_DIR=${workDir}`,
        '-D',
        `PROGRAM_DIR=${programDir}`,
        '-p',
        sandboxExecProfile(),
        ...limited,
      ];
    } else if (this.info.pidNamespaceTools) {
      // As root: a PID namespace that dies with the candidate, and the drop to the unprivileged user inside it.
      // Without a cgroup nothing counts SysV segments or the private /tmp and /dev/shm: a quarter of the memory limit each at most.
      const limitBytes = this.options.memoryLimitMb * 1024 * 1024;
      const sharedMemoryBytes = this.info.layers.cgroup ? limitBytes : limitBytes / 4;
      command = pidNamespaceCommand(limited, this.info.pidNamespaceTools, { sharedMemoryBytes, keepDir: root });
      asUser = null;
    }
    // The kernel counts processes per user here, so the cgroup's process limit is the one per evaluation.
    const cgroup = this.sandboxCgroup(this.options.processLimit);
    if (cgroup) command = inCgroupCommand(cgroup, command, null);
    const launched = this.launcherFilter(false);
    let run: ProcessOutcome;
    try {
      run = await runProcess({
        file: command[0] as string,
        args: command.slice(1),
        cwd: workDir,
        env,
        ...(launched ? { capture: { fd: LAUNCHER_STARTED_FD, limitBytes: 2 } } : {}),
        timeoutMs: this.options.runtimeLimitSec * 1000,
        outputLimitBytes: this.options.outputLimitBytes,
        memoryWatch: this.memoryWatch(cgroup),
        signal,
        ...(asUser ? { uid: asUser.uid, gid: asUser.gid } : {}),
      });
      if (cgroup && oomKills(cgroup) > 0) run = { ...run, memoryExceeded: true };
    } finally {
      // Before the solution is read: nothing may still be writing it.
      killMarkedProcesses(`THETAEVOLVE_EVALUATION=${evaluationId}`, runAs ? runAs.uid : null);
      if (cgroup) this.reportCleanup(await removeSandboxCgroup(cgroup));
    }
    const solution = await readSolutionFile(join(workDir, this.task.solutionFile), this.task.solutionFile, this.task.solutionMaxBytes);
    // Without the launcher nothing is set up between the spawn and the program: a failure to start is the spawn error.
    const sandboxStarted = !launched || run.captured?.toString('latin1') === LAUNCHER_STARTED;
    // 126/127: the shell's and prlimit's "could not execute"; the program it names, checked now, says whose failure it was.
    const program = this.filledCandidateCommand(join(programDir, programName), workDir, false)[0] ?? '';
    const unstartable = (run.exitCode === 126 || run.exitCode === 127) && program.startsWith('/') ? await unstartableOnHost(program) : null;
    return { ...run, sandboxStarted, solution, unstartable };
  }
}
