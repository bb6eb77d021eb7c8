// `thetaevolve evaluate <task-dir> <program-file>... [--json] [--timeout SECONDS]
// [--allow-weak-isolation] [--result-files [--done-dir DIR]]`: sandboxed
// evaluations with the task's evaluator. Exit 0 whenever the evaluation ran,
// whatever the candidate did. Exit 1 without a sandbox unless weaker isolation
// is allowed. Several programs (a packed SLURM job) run at once, each in its
// own sandbox, and each result is written beside its program as it lands.
import { appendFile, readFile, writeFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { forMessage } from '../engine/common/displayText';
import { FEEDBACK_METRIC, feedbackOf } from '../engine/common/feedback';
import { Evaluator, evaluatorOptionsFromSettings, SandboxUnavailableError } from '../engine/sandbox/evaluator';
import { detectIsolation, type IsolationReport } from '../engine/sandbox/isolation';
import type { Settings } from '../engine/common/config';
import { errorMessage } from '../engine/common/errors';
import { writeFileAtomic } from '../engine/database/atomicFile';
import { createEvaluationBackend, type EvaluationBackend } from '../engine/evaluation';
import { evaluateJsonLine, evaluateJsonOf } from '../engine/evaluation/evaluateJson';
import { scriptOfIpynb } from '../engine/notebookProgram';
import { loadTask, type Task, TaskError } from '../engine/task/task';
import { type EvaluationResult, IN_SANDBOX_TRUST_REASON } from '../engine/common/types';
import { booleanFlag, numberFlag, type ParsedArgs, stringFlag, UsageError } from './args';
import { type CliIO, InputError } from './io';
import { cliPythonChoice } from './python';
import { describePythonEnvironment, type PythonEnvironment } from '../engine/common/pythonEnvironment';
import { importedModules, probePython, type PythonChoice, taskUsesPython } from '../engine/python/interpreter';
import { cachedPython } from './pythonCache';
import { environmentImportFailure } from '../engine/runMessages';
import { settingsFromArgs } from './settingsSources';
import { taskPathFromArgs } from './taskPath';

export async function evaluateCommand(args: ParsedArgs, io: CliIO): Promise<number> {
  const [taskDir, ...programFiles] = args.positionals as [string, string, ...string[]];
  const timeout = numberFlag(args, 'timeout');
  if (timeout !== undefined && !(timeout > 0)) throw new UsageError(`--timeout needs a positive number of seconds, got ${timeout}`);
  const json = booleanFlag(args, 'json');
  const resultFiles = booleanFlag(args, 'result-files');
  const doneDir = stringFlag(args, 'done-dir');
  if (programFiles.length > 1 && !resultFiles) throw new UsageError('several program files need --result-files (one result file each)');
  if (doneDir !== undefined && !resultFiles) throw new UsageError('--done-dir needs --result-files');
  const pythonCache = stringFlag(args, 'python-cache');
  if (pythonCache !== undefined && !resultFiles) throw new UsageError('--python-cache needs --result-files');
  const timesFile = stringFlag(args, 'times-file');
  if (timesFile !== undefined && !resultFiles) throw new UsageError('--times-file needs --result-files');
  // A SLURM job's phases (bench slurm-step-overhead reads them): best effort, never a reason to fail.
  const stamp = (what: string, at = performance.timeOrigin + performance.now()): Promise<void> =>
    timesFile === undefined
      ? Promise.resolve()
      : appendFile(resolve(io.cwd, timesFile), `${what} ${Math.round(at)}\n`).catch(() => undefined);
  await stamp('node-start', performance.timeOrigin);
  await stamp('cli-loaded');

  let task;
  try {
    task = await loadTask(await taskPathFromArgs(args, io, taskDir));
  } catch (err) {
    if (err instanceof TaskError) throw new InputError(err.message, { cause: err });
    throw err;
  }
  const programs: { path: string; code: string }[] = [];
  let unreadable = 0;
  for (const programFile of programFiles) {
    const programPath = resolve(io.cwd, programFile);
    try {
      programs.push({ path: programPath, code: await readFile(programPath, 'utf8') });
    } catch {
      const problem = `cannot read the program file ${programPath}`;
      // With --result-files one missing program (a candidate cancelled meanwhile) costs the others nothing.
      if (!resultFiles || programFiles.length === 1) throw new InputError(problem);
      io.stderr(`thetaevolve evaluate: ${problem}\n`);
      unreadable++;
    }
  }
  if (programs.length === 0) throw new InputError('none of the program files can be read');
  // A notebook: its Python code cells as one script (docs/guide.md "Notebook cells").
  for (const program of programs) {
    if (!program.path.endsWith('.ipynb')) continue;
    try {
      program.code = scriptOfIpynb(program.code, basename(program.path));
    } catch (err) {
      throw new InputError(errorMessage(err), { cause: err });
    }
  }
  const [first] = programs as [{ path: string; code: string }];

  const settings = settingsFromArgs(args, io.cwd, task.runSettings);
  const onWarning = (message: string): void => io.stderr(`thetaevolve: ${message}\n`);
  for (const notice of task.notices) onWarning(notice);
  if (settings['evaluation.backend'] === 'slurm') {
    if (resultFiles) throw new UsageError('--result-files evaluates here: it is what a SLURM job runs, not --backend slurm');
    return evaluateOnSlurm(task, first.code, settings, timeout, json, io, onWarning);
  }

  // The interpreter is asked while the sandbox is detected (synchronously, below): the two overlap. A SLURM job
  // (--result-files) starts every evaluation cold, so it asks only what the sandbox needs (no package versions).
  const pythonChoice = taskUsesPython(task) ? cliPythonChoice(args, settings, io) : null;
  const askPython = (choice: PythonChoice): Promise<PythonEnvironment> =>
    probePython(choice, resultFiles ? [] : importedModules(first.code), { packages: !resultFiles });
  const pythonProbe = pythonChoice
    ? pythonCache !== undefined
      ? cachedPython(resolve(io.cwd, pythonCache), pythonChoice, () => askPython(pythonChoice))
      : askPython(pythonChoice)
    : null;
  pythonProbe?.catch(() => undefined);
  if (io.env.THETAEVOLVE_ISOLATION !== 'fallback') detectIsolation();
  const python = pythonProbe
    ? await pythonProbe.catch((err: unknown) => {
        throw new InputError(errorMessage(err), { cause: err });
      })
    : null;
  let evaluator: Evaluator;
  try {
    evaluator = new Evaluator(task, {
      ...(python ? { python } : {}),
      // The working folder is the CLI's workspace: the interpreter's prefix may not be or hold it.
      workspaceFolders: [io.cwd],
      // thetaevolve.sandbox.* (--set / --config; a SLURM job passes the run's limits this way).
      ...evaluatorOptionsFromSettings({ ...settings, evaluationConcurrency: programs.length }),
      // THETAEVOLVE_ISOLATION=fallback: behave as where bubblewrap is missing (to see, or test, what such hosts get; still needs the consent).
      ...(io.env.THETAEVOLVE_ISOLATION === 'fallback' ? { isolation: 'fallback' as const } : {}),
      onWarning,
      ...(timeout !== undefined ? { runtimeLimitSec: timeout } : {}),
    });
  } catch (err) {
    if (err instanceof SandboxUnavailableError) throw new InputError(err.message, { cause: err });
    throw err;
  }
  if (evaluator.isolation.warning) io.stderr(`thetaevolve: ${evaluator.isolation.warning}\n`);
  // With --json, stdout is the result alone: the isolation goes to stderr.
  if (json || resultFiles) io.stderr(`thetaevolve: isolation: ${isolationLines(evaluator.isolation).join('; ')}\n`);
  if ((json || resultFiles) && python) io.stderr(`thetaevolve: ${describePythonEnvironment(python)}\n`);
  try {
    if (resultFiles) {
      await stamp('ready');
      const written = await Promise.all(programs.map((program) => evaluateToResultFile(evaluator, program, task, io, doneDir, stamp)));
      // 1 when a program had no result written: the SLURM job marks it failed (the others' results stand).
      return unreadable === 0 && written.every(Boolean) ? 0 : 1;
    }
    const evaluated = await evaluator.evaluate(first.code, { signal: io.signal });
    // What `run` says of its starting program: a module the interpreter lacks is the environment's failure, never a score.
    const importFailed = python ? environmentImportFailure(task, evaluated, python.executable, 'the program') : null;
    // The evaluation's own reason (its traceback, or a release package's own account) stays before the sentence.
    // An interrupted evaluation says nothing of the program: no score (metrics.cancelled stays for a SLURM job's reader).
    const result: EvaluationResult =
      evaluated.metrics.cancelled === true
        ? {
            ...evaluated,
            status: 'evaluation_failed',
            score: null,
            objective: null,
            reason: 'the evaluation was interrupted before it finished: not scored',
          }
        : importFailed
          ? { ...evaluated, status: 'evaluation_failed', score: null, objective: null, reason: `${evaluated.reason}\n${importFailed}` }
          : evaluated;
    if (json) {
      // protected: false when the folder's own evaluator ran with the candidate (OpenEvolve/ShinkaEvolve layout).
      io.stdout(evaluateJsonLine(evaluateJsonOf(result, task)));
    } else {
      const lines = resultLines(result, task);
      const [first, ...rest] = isolationLines(evaluator.isolation);
      lines.push(`isolation  ${first ?? ''}`, ...rest.map((line) => `           ${line}`));
      if (python) lines.push(`python     ${describePythonEnvironment(python)}`);
      if (task.evaluatorTrust !== 'separate') lines.push(`protected  no: ${IN_SANDBOX_TRUST_REASON}`);
      io.stdout(forMessage(lines.join('\n')) + '\n');
    }
    return exitCodeOf(result, io);
  } finally {
    await evaluator.close();
  }
}

/**
 * One program of --result-files: its --json line goes to result.json in its
 * own folder (written beside, then renamed: a reader never sees half a
 * result), and its folder's name into the done folder, the moment it is done:
 * a packed job's results land one by one, and one that hangs or dies loses
 * none of the others.
 */
async function evaluateToResultFile(
  evaluator: Evaluator,
  program: { path: string; code: string },
  task: Task,
  io: CliIO,
  doneDir: string | undefined,
  stamp: (what: string) => Promise<void>,
): Promise<boolean> {
  const result = await evaluator.evaluate(program.code, { signal: io.signal });
  // Stopped (SLURM's scancel, a time limit): no result, and none is written; the job's end says the rest.
  if (io.signal.aborted) return false;
  const folder = dirname(program.path);
  try {
    await writeFileAtomic(join(folder, 'result.json'), evaluateJsonLine(evaluateJsonOf(result, task)));
    if (doneDir !== undefined) await writeFile(join(resolve(io.cwd, doneDir), basename(folder)), '');
    await stamp(`result ${basename(folder)}`);
    return true;
  } catch (err) {
    io.stderr(`thetaevolve evaluate: the result of ${program.path} could not be written: ${errorMessage(err)}\n`);
    return false;
  }
}

/** What both backends print of a result: status, score, objective, time, metrics and feedback, reason. */
function resultLines(result: EvaluationResult, task: Task): string[] {
  return [
    `status     ${result.status}`,
    `score      ${result.score ?? '-'}`,
    `objective  ${result.objective === null ? '-' : result.objective} (${task.direction})`,
    `time       ${(result.durationMs / 1000).toFixed(2)} s`,
    ...metricLines(result),
    ...(result.reason ? [`reason     ${forMessage(result.reason)}`] : []),
  ];
}

/** The metrics, one a line, then the evaluator's feedback indented under its own heading. */
function metricLines(result: EvaluationResult): string[] {
  const lines = Object.entries(result.metrics)
    .filter(([key]) => key !== FEEDBACK_METRIC)
    .map(([key, value]) => `  ${forMessage(key)}: ${forMessage(String(value))}`);
  const feedback = feedbackOf(result.metrics);
  if (feedback !== '')
    lines.push(
      'feedback',
      ...forMessage(feedback)
        .split('\n')
        .map((line) => `  ${line}`),
    );
  return lines;
}

/** The isolation in lines: the summary, then each missing layer and why. */
/** `evaluate --backend slurm`: one SLURM job running our own `evaluate` on a compute node (its sandbox applies there). */
async function evaluateOnSlurm(
  task: Task,
  code: string,
  settings: Settings,
  timeout: number | undefined,
  json: boolean,
  io: CliIO,
  onWarning: (message: string) => void,
): Promise<number> {
  let backend: EvaluationBackend;
  try {
    backend = await createEvaluationBackend(
      task,
      { ...settings, evaluationConcurrency: 1 },
      {
        runId: `evaluate-${process.pid}-${Date.now()}`,
        runFolder: resolve(io.cwd, '.thetaevolve', 'evaluate'),
        signal: io.signal,
        onWarning,
        ...(timeout !== undefined ? { runtimeLimitSec: timeout } : {}),
      },
    );
  } catch (err) {
    throw new InputError(`SLURM: ${errorMessage(err)}`, { cause: err });
  }
  try {
    const result = await backend.evaluate(code, {
      signal: io.signal,
      onSubmitted: (jobId) => io.stderr(`thetaevolve: SLURM job ${jobId}\n`),
    });
    if (json) {
      io.stdout(evaluateJsonLine(evaluateJsonOf(result, task)));
    } else {
      const lines = resultLines(result, task);
      lines.push(
        `backend    ${backend.description}`,
        `isolation  ${backend.isolation.kind} on the compute node${backend.isolation.warning ? ` (${backend.isolation.warning})` : ''}`,
      );
      io.stdout(forMessage(lines.join('\n')) + '\n');
    }
    return exitCodeOf(result, io);
  } finally {
    await backend.close();
  }
}

/**
 * 0 whenever the evaluation ran, whatever the program did; 1 when it could
 * not run (the sandbox, the task's evaluator or the cluster failed), with the
 * reason on stderr: that is no score of the program's.
 */
function exitCodeOf(result: EvaluationResult, io: CliIO): number {
  if (result.status !== 'evaluation_failed') return 0;
  io.stderr(`thetaevolve evaluate: the evaluation could not run (not the program's fault): ${forMessage(result.reason)}\n`);
  return 1;
}

export function isolationLines(isolation: IsolationReport): string[] {
  return [isolation.summary, ...isolation.missing.map((why) => `missing: ${why}`)];
}
