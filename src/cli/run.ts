// `thetaevolve run`: the evolution loop in-process. One JSON object per
// committed step on stdout with --json; progress for people on stderr.
import { mkdir, readFile } from 'node:fs/promises';
import { basename, dirname, resolve } from 'node:path';
import { evolveRegions } from '../engine/common/diff';
import { errorMessage } from '../engine/common/errors';
import type { EngineEvent, StepCommittedEvent } from '../engine/common/events';
import { apiKeyFromEnvironment } from '../engine/llm/endpointClient';
import { type AssembledRun, assembleRun, RunSetupError } from '../engine/runFactory';
import { scriptOfIpynb } from '../engine/notebookProgram';
import { newRunId, runDatabaseFile, runsDirectoryOf } from '../engine/runFiles';
import { loadTask, TaskError } from '../engine/task/task';
import { type TrainerState, trainerStateLine, trainerSummary } from '../engine/trainer/bridge';
import { booleanFlag, numberFlag, type ParsedArgs, stringFlag } from './args';
import { type CliIO, InputError } from './io';
import { ProgressLine } from './progress';
import { endpointStateLine, inferenceJobsLine, stepFailureLines } from './stepReport';
import { configEndpointNotice, modelApiKeysFromEnvironment, settingsFromArgs, withFlagNames } from './settingsSources';
import { cliPythonChoice } from './python';
import { describePythonEnvironment } from '../engine/common/pythonEnvironment';
import { taskPathFromArgs } from './taskPath';
import { bestText, formatScore, NO_VALID_PROGRAM } from '../engine/common/format';
import { formatUsd, type ModelStats, trainedModelOf, trainedModelOnlyText } from '../engine/common/models';
import { forDisplay, jsonForTerminal } from '../engine/common/displayText';
import { StepsInFlight } from '../engine/common/stepsInFlight';

export async function runCommand(args: ParsedArgs, io: CliIO): Promise<number> {
  const taskDir = await taskPathFromArgs(args, io, args.positionals[0] as string);
  const task = await loadTask(taskDir).catch((err: unknown) => {
    throw new InputError(err instanceof TaskError ? err.message : `cannot load the task at ${taskDir}: ${errorMessage(err)}`, {
      cause: err,
    });
  });
  // A release config's own settings sit below the command line's.
  const settings = settingsFromArgs(args, io.cwd, task.runSettings, (line) => io.stderr(`thetaevolve run: ${line}\n`));
  // Before anything is created: an apiKeyName a file names is refused (src/cli/settingsSources.ts).
  const modelApiKeys = modelApiKeysFromEnvironment(args, settings, io.env);

  const programFlag = stringFlag(args, 'program');
  let startCode: string | undefined;
  let startPath: string | undefined;
  if (programFlag !== undefined) {
    startPath = resolve(io.cwd, programFlag);
    startCode = await readFile(startPath, 'utf8').catch((err: unknown) => {
      throw new InputError(`cannot read the program ${startPath}`, { cause: err });
    });
    try {
      // A notebook: its Python code cells as one script (docs/guide.md "Notebook cells").
      if (startPath.endsWith('.ipynb')) startCode = scriptOfIpynb(startCode, basename(startPath));
      evolveRegions(startCode, startPath);
    } catch (err) {
      throw new InputError(errorMessage(err), { cause: err });
    }
  }

  const dbFlag = stringFlag(args, 'db');
  const runsDir = runsDirectoryOf(io.cwd, settings);
  const runId = dbFlag ? basename(dbFlag).replace(/\.sqlite$/, '') : newRunId(task.name, runsDir);
  const dbFile = dbFlag ? resolve(io.cwd, dbFlag) : runDatabaseFile(runsDir, runId);
  await mkdir(dirname(dbFile), { recursive: true });

  const json = booleanFlag(args, 'json');
  const warn = (message: string): void => io.stderr(`thetaevolve run: warning: ${withFlagNames(message)}\n`);
  const configNotice = configEndpointNotice(args, io.cwd, settings, apiKeyFromEnvironment(io.env));
  if (configNotice) io.stderr(`thetaevolve run: ${configNotice}\n`);
  if (settings['trainer.enabled'] && settings.models.length > 1)
    io.stderr(`thetaevolve run: ${trainedModelOnlyText(trainedModelOf(settings))}\n`);
  const progress = new ProgressLine(io);
  const samplesPerStep = settings.batchSize * settings.samplesPerPrompt;
  const inFlight = new StepsInFlight();
  /** One step: its bar; steps overlapping: what each is doing ("step 7 evaluating 30/32, step 8 generating 4/32"). */
  const showSteps = (): void => {
    const [only, ...others] = inFlight.current;
    if (!only) return;
    if (others.length === 0) progress.bar(`step ${only.step}`, only.finished, samplesPerStep);
    else progress.update(inFlight.text(samplesPerStep));
  };
  let lastBest: number | null = null;
  let fatal: string | null = null;
  /** After the run's last line nothing rewrites the progress line (the SLURM backend reports its queue once more as it closes). */
  let runOver = false;
  /** The last inference-jobs line printed (printed again only when it changes). */
  let lastJobsLine: string | null = null;

  const onEvent = (event: EngineEvent): void => {
    inFlight.apply(event);
    switch (event.type) {
      case 'run_started':
        io.stderr(
          `thetaevolve run: ${event.task.title} (${event.task.direction}) with ${event.source.label}; ` +
            `B=${settings.batchSize} x n=${settings.samplesPerPrompt}, K=${settings.evaluationConcurrency}` +
            `${settings.pipelineDepth > 0 ? `, steps overlapping (pipelineDepth ${settings.pipelineDepth})` : ''}; ` +
            `${event.python ? `${describePythonEnvironment(event.python)}; ` : ''}` +
            `${event.resumedFromStep !== null ? `resuming after step ${event.resumedFromStep}` : 'new run'}: ${event.dbFile}\n`,
        );
        break;
      case 'step_started':
      case 'generation_finished':
        showSteps();
        break;
      case 'evaluation_finished':
        if (event.jobKey === 'initial') {
          io.stderr(`initial program: ${event.outcome} score ${formatScore(event.score)}${event.reason ? ` (${event.reason})` : ''}\n`);
          if (event.outcome === 'valid') lastBest = event.score;
          break;
        }
        showSteps();
        break;
      case 'step_committed':
        progress.clear();
        if (json) io.stdout(jsonForTerminal(stepLine(event)) + '\n');
        io.stderr(humanStepLine(event, lastBest) + '\n');
        for (const line of stepFailureLines(event)) io.stderr(line + '\n');
        if (event.bestEver !== null) lastBest = event.bestEver;
        break;
      case 'error':
        progress.clear();
        if (event.fatal) fatal = event.message;
        else warn(event.message);
        break;
      case 'endpoint_state':
        progress.clear();
        io.stderr(endpointStateLine(event) + '\n');
        break;
      case 'evaluation_queue':
        if (runOver) break;
        progress.update(
          `SLURM: ${event.pending} pending, ${event.running} running, ${event.done} done${event.lost > 0 ? `, ${event.lost} lost` : ''}${event.queueWaitMsP50 !== null ? `, queue wait ${(event.queueWaitMsP50 / 1000).toFixed(1)} s` : ''}`,
        );
        break;
      case 'endpoint_servers': {
        const jobsLine = inferenceJobsLine(event);
        if (jobsLine !== null && jobsLine !== lastJobsLine) {
          progress.clear();
          io.stderr(jobsLine + '\n');
          lastJobsLine = jobsLine;
        }
        for (const server of event.servers) {
          if (!server.healthy) warn(`inference server ${server.baseURL} is set aside${server.lastError ? `: ${server.lastError}` : ''}`);
        }
        break;
      }
      case 'steered':
        progress.clear();
        io.stderr(`thetaevolve run: steer at step ${event.step}: ${forDisplay(event.message)}\n`);
        break;
      // Only another process (an agent's pause_run) pauses a CLI run: said, as the editor shows it.
      case 'paused':
      case 'resumed':
        progress.clear();
        io.stderr(`thetaevolve run: ${event.type} after step ${event.step}\n`);
        break;
      case 'run_finished':
        runOver = true;
        progress.clear();
        io.stderr(
          `thetaevolve run: ${event.message}; ${event.best ? `best ${formatScore(event.best.score)} (${event.best.id})` : NO_VALID_PROGRAM}; database ${dbFile}\n`,
        );
        break;
      default:
        break;
    }
  };

  let previousTrainerState: TrainerState | null = null;
  let assembled: AssembledRun;
  try {
    assembled = await assembleRun({
      runId,
      dbFile,
      task,
      settings,
      apiKey: apiKeyFromEnvironment(io.env),
      modelApiKeys,
      startCode,
      startPath,
      stepsThisInvocation: numberFlag(args, 'steps'),
      untilStep: numberFlag(args, 'until-step'),
      python: cliPythonChoice(args, settings, io),
      // The working folder is the CLI's workspace (as steer's task-folder check has it).
      workspaceFolders: [io.cwd],
      signal: io.signal,
      onEvent,
      onWarning: warn,
      onTrainerState: (state) => {
        // The bridge exists for every run; a run without a trainer says nothing about it.
        if (!settings['trainer.enabled']) return;
        const line = trainerStateLine(previousTrainerState, state);
        previousTrainerState = state;
        if (line) io.stderr(`thetaevolve run: ${line}\n`);
      },
      afterStep: () => {
        if (settings['trainer.enabled']) io.stderr(`${trainerSummary(assembled.trainer.state())}\n`);
      },
    });
  } catch (err) {
    if (err instanceof RunSetupError) throw new InputError(err.message, { cause: err });
    throw err;
  }
  const { run, trainer } = assembled;
  const onAbort = (): void => run.stop();
  io.signal.addEventListener('abort', onAbort, { once: true });
  try {
    const result = await run.run();
    if (trainer.state().pendingGroups > 0 && !io.signal.aborted) {
      const timeoutSeconds = settings['trainer.syncTimeoutSeconds'];
      io.stderr(
        `thetaevolve run: waiting up to ${timeoutSeconds} s for the trainer to take ${trainer.state().pendingGroups} spooled group(s) (Ctrl-C keeps them for the next run of this database)\n`,
      );
      const left = await trainer.flush(io.signal, timeoutSeconds * 1000);
      if (left > 0)
        warn(`${left} group(s) are still spooled beside ${dbFile}; they are sent when this database runs again with the trainer on`);
    }
    if (result.reason === 'error') throw new InputError(fatal ?? 'the run failed');
    return 0;
  } finally {
    io.signal.removeEventListener('abort', onAbort);
    await assembled.close();
  }
}

/** The `run --json` line of docs/architecture.md "Command line": step, best, mean, counts, dbSize, elapsedMs and more. */
export function stepLine(e: StepCommittedEvent): Record<string, unknown> {
  return {
    step: e.step,
    best: e.bestEver,
    stepBest: e.best,
    mean: e.mean,
    p10: e.p10,
    p50: e.p50,
    p90: e.p90,
    counts: e.counts,
    samples: e.samples,
    dbSize: e.dbSize,
    newBest: e.newBest,
    tokens: e.tokens,
    timings: e.timings,
    samplesPerSecond: e.samplesPerSecond,
    elapsedMs: e.elapsedMs,
    failures: e.failures ?? [],
    ...(e.cascade ? { cascade: e.cascade } : {}),
    // Several models and cost (docs/algorithm.md section 12): the run's spend so far, null without prices.
    costUsd: e.runCostUsd ?? null,
    ...(e.models ? { models: e.models } : {}),
  };
}

function humanStepLine(e: StepCommittedEvent, previousBest: number | null): string {
  const gain = e.newBest && e.bestEver !== null && previousBest !== null ? ` (+${Number((e.bestEver - previousBest).toPrecision(3))})` : '';
  const valid = e.counts.valid;
  return (
    `step ${e.step}: ${bestText(e.bestEver)}${gain}${e.newBest ? ' NEW BEST' : ''} | ` +
    `step mean ${formatScore(e.mean)} | valid ${valid}/${e.samples} | ` +
    `no diff ${e.counts.no_diff}, no change ${e.counts.no_change + e.counts.duplicate}, no solution ${e.counts.no_solution + e.counts.timeout}, invalid ${e.counts.invalid_solution}, failed requests ${e.counts.request_failed}${e.counts.evaluation_failed > 0 ? `, failed evaluations ${e.counts.evaluation_failed}` : ''}${e.counts.not_novel > 0 ? `, not novel ${e.counts.not_novel}` : ''} | ` +
    `db ${e.dbSize} | ${
      e.cascade
        ? `stopped at stage ${Object.entries(e.cascade)
            .map(([stage, n]) => `${stage}: ${n}`)
            .join(', ')} | `
        : ''
    }${(e.timings.totalMs / 1000).toFixed(1)} s` +
    (e.runCostUsd !== undefined ? ` | spent ${formatUsd(e.runCostUsd)}` : '') +
    (e.models ? ` | ${modelSamplesText(e.models)}` : '')
  );
}

/** Each model's samples and valid children in a step: "big 6 (3 valid), small 2 (0 valid)". */
function modelSamplesText(models: Readonly<Record<string, ModelStats>>): string {
  return Object.entries(models)
    .map(([name, m]) => `${forDisplay(name)} ${m.samples} (${m.valid} valid${m.editFormat === 'rewrite' ? ', rewrite' : ''})`)
    .join(', ');
}
