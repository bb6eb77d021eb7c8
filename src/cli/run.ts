// `thetaevolve run`: the evolution loop in-process. One JSON object per
// committed step on stdout with --json; progress for people on stderr.
import { existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { basename, dirname, resolve } from 'node:path';
import { defaultSettings, parseSettings, type Settings } from '../engine/config';
import { singleEvolveRegion } from '../engine/diff';
import type { EngineEvent, StepCommittedEvent } from '../engine/events';
import { apiKeyFromEnvironment, EndpointClient, endpointOptionsFromSettings } from '../engine/llm/endpointClient';
import { ProgramDatabase } from '../engine/database/programDatabase';
import { EvolutionRun } from '../engine/loop';
import { TrainerBridge, type TrainerState, trainerStateLine, trainerSummary } from '../engine/trainer/bridge';
import { MutateSampler } from '../engine/mutateSampler';
import { Evaluator, evaluatorOptionsFromSettings } from '../engine/sandbox/evaluator';
import { loadTask, TaskError } from '../engine/task/task';
import type { ResponseSource } from '../engine/types';
import { booleanFlag, numberFlag, type ParsedArgs, stringFlag, UsageError } from './args';
import { type CliIO, InputError } from './io';
import { ProgressLine } from './progress';

/** Settings from the defaults and the command-line flags (validated like VS Code's). */
export function settingsFromFlags(args: ParsedArgs): Settings {
  const raw: Record<string, unknown> = { ...defaultSettings() };
  const set = (key: keyof Settings, value: unknown): void => {
    if (value !== undefined) raw[key] = value;
  };
  const sampler = stringFlag(args, 'sampler');
  if (sampler !== undefined && sampler !== 'llm' && sampler !== 'mutate') throw new UsageError(`--sampler must be llm or mutate, got '${sampler}'`);
  set('sampler', sampler);
  set('endpoint', stringFlag(args, 'endpoint'));
  set('model', stringFlag(args, 'model'));
  set('batchSize', numberFlag(args, 'batch'));
  set('samplesPerPrompt', numberFlag(args, 'samples'));
  set('evaluationConcurrency', numberFlag(args, 'eval-concurrency'));
  set('seed', numberFlag(args, 'seed'));
  const trainer = stringFlag(args, 'trainer');
  const protocol = stringFlag(args, 'trainer-protocol');
  if (protocol !== undefined && protocol !== 'atropos' && protocol !== 'slime') throw new UsageError(`--trainer-protocol must be atropos or slime, got '${protocol}'`);
  if (protocol !== undefined && trainer === undefined) throw new UsageError('--trainer-protocol needs --trainer URL');
  if (trainer !== undefined) {
    set('trainer.enabled', true);
    set('trainer.url', trainer);
  }
  set('trainer.protocol', protocol);
  if (booleanFlag(args, 'allow-weak-isolation')) set('sandbox.allowWeakIsolation', true);
  try {
    return parseSettings(raw);
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
}

function newRunId(taskName: string): string {
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\..*$/, '').replace('T', '-');
  return `${taskName}-${stamp}`;
}

export async function runCommand(args: ParsedArgs, io: CliIO): Promise<number> {
  const settings = settingsFromFlags(args);
  const taskDir = resolve(io.cwd, args.positionals[0] as string);
  const task = await loadTask(taskDir).catch((err: unknown) => {
    throw new InputError(err instanceof TaskError ? err.message : `cannot load the task at ${taskDir}: ${String(err)}`);
  });

  const programFlag = stringFlag(args, 'program');
  let startCode: string | undefined;
  let startPath: string | undefined;
  if (programFlag !== undefined) {
    startPath = resolve(io.cwd, programFlag);
    startCode = await readFile(startPath, 'utf8').catch(() => {
      throw new InputError(`cannot read the program ${startPath}`);
    });
    try {
      singleEvolveRegion(startCode, startPath);
    } catch (err) {
      throw new InputError(err instanceof Error ? err.message : String(err));
    }
  }

  const dbFlag = stringFlag(args, 'db');
  const runId = dbFlag ? basename(dbFlag).replace(/\.sqlite$/, '') : newRunId(task.name);
  const dbFile = resolve(io.cwd, dbFlag ?? `.thetaevolve/runs/${runId}.sqlite`);
  await mkdir(dirname(dbFile), { recursive: true });
  const resuming = existsSync(dbFile);

  const json = booleanFlag(args, 'json');
  const warn = (message: string): void => io.stderr(`thetaevolve run: warning: ${message}\n`);
  const source: ResponseSource =
    settings.sampler === 'mutate'
      ? new MutateSampler({ seed: settings.seed, language: task.language })
      : new EndpointClient(endpointOptionsFromSettings(settings, apiKeyFromEnvironment(io.env), { onWarning: warn }));
  const trainer = settings['trainer.enabled'] ? await startTrainer(settings, source, dbFile, resuming, task.name, io, warn) : null;
  const evaluator = new Evaluator(task, evaluatorOptionsFromSettings(settings));
  if (evaluator.isolation.warning) warn(evaluator.isolation.warning);

  const progress = new ProgressLine(io);
  const samplesPerStep = settings.batchSize * settings.samplesPerPrompt;
  let finished = 0;
  let lastBest: number | null = null;
  let fatal: string | null = null;

  const onEvent = (event: EngineEvent): void => {
    switch (event.type) {
      case 'run_started':
        io.stderr(
          `thetaevolve run: ${event.task.title} (${event.task.direction}) with ${event.source.label}; ` +
            `B=${settings.batchSize} x n=${settings.samplesPerPrompt}, K=${settings.evaluationConcurrency}; ` +
            `${event.resumedFromStep !== null ? `resuming after step ${event.resumedFromStep}` : 'new run'}: ${event.dbFile}\n`,
        );
        break;
      case 'step_started':
        finished = 0;
        progress.update(`step ${event.step}: 0/${samplesPerStep}`);
        break;
      case 'evaluation_finished':
        if (event.jobKey === 'initial') {
          io.stderr(`initial program: ${event.outcome} score ${formatScore(event.score)}${event.reason ? ` (${event.reason})` : ''}\n`);
          if (event.outcome === 'valid') lastBest = event.score;
          break;
        }
        finished++;
        progress.bar(`step ${event.step}`, finished, samplesPerStep);
        break;
      case 'step_committed':
        progress.clear();
        if (json) io.stdout(JSON.stringify(stepLine(event)) + '\n');
        io.stderr(humanStepLine(event, lastBest) + '\n');
        if (event.bestEver !== null) lastBest = event.bestEver;
        break;
      case 'error':
        progress.clear();
        if (event.fatal) fatal = event.message;
        else warn(event.message);
        break;
      case 'run_finished':
        progress.clear();
        io.stderr(`thetaevolve run: ${event.message}; best ${event.best ? `${formatScore(event.best.score)} (${event.best.id})` : 'none'}; database ${dbFile}\n`);
        break;
      default:
        break;
    }
  };

  const run = new EvolutionRun({
    runId,
    task,
    settings,
    dbFile,
    startCode: resuming ? undefined : startCode,
    startPath,
    source,
    evaluator,
    stepsThisInvocation: numberFlag(args, 'steps'),
    onEvent,
    beforeCommit: trainer ? (committed, signal) => trainer.spoolStep(committed, signal) : undefined,
    afterCommit: trainer
      ? async (committed, signal) => {
          await trainer.afterCommit(committed, signal);
          io.stderr(`${trainerSummary(trainer.state())}\n`);
        }
      : undefined,
  });
  const onAbort = (): void => run.stop();
  io.signal.addEventListener('abort', onAbort, { once: true });
  try {
    const result = await run.run();
    if (trainer && trainer.state().pendingGroups > 0 && !io.signal.aborted) {
      const timeoutSeconds = settings['trainer.syncTimeoutSeconds'];
      io.stderr(`thetaevolve run: waiting up to ${timeoutSeconds} s for the trainer to take ${trainer.state().pendingGroups} spooled group(s) (Ctrl-C keeps them for the next run of this database)\n`);
      const left = await trainer.flush(io.signal, timeoutSeconds * 1000);
      if (left > 0) warn(`${left} group(s) are still spooled beside ${dbFile}; they are sent when this database runs again with the trainer on`);
    }
    if (result.reason === 'error') throw new InputError(fatal ?? 'the run failed');
    return 0;
  } finally {
    io.signal.removeEventListener('abort', onAbort);
    await evaluator.close();
    await trainer?.close();
  }
}

/** The RL trainer bridge, started: refuses atropos without token ids (the endpoint is checked first to learn whether it gives them). */
async function startTrainer(settings: Settings, source: ResponseSource, dbFile: string, resuming: boolean, taskName: string, io: CliIO, warn: (message: string) => void): Promise<TrainerBridge> {
  if (source instanceof EndpointClient) {
    await source.check(io.signal).catch((err: unknown) => {
      throw new InputError(err instanceof Error ? err.message : String(err));
    });
  }
  // The spool may hold a step that was spooled but never committed (killed in between): the database says which.
  let lastCommittedStep = -1;
  if (resuming) {
    const database = await ProgramDatabase.openReadOnly(dbFile).catch((err: unknown) => {
      throw new InputError(`cannot read the run database ${dbFile}: ${err instanceof Error ? err.message : String(err)}`);
    });
    try {
      lastCommittedStep = database.lastStep;
    } finally {
      await database.close();
    }
  }
  let previous: TrainerState | null = null;
  const bridge = new TrainerBridge({
    settings,
    dbFile,
    groupSize: settings.samplesPerPrompt,
    lastCommittedStep,
    name: `thetaevolve-${taskName}`,
    tokenSupport: source instanceof EndpointClient ? source.tokenSupport : null,
    onWarning: warn,
    onState: (state) => {
      const line = trainerStateLine(previous, state);
      previous = state;
      if (line) io.stderr(`thetaevolve run: ${line}\n`);
    },
  });
  try {
    await bridge.start(io.signal);
  } catch (err) {
    await bridge.close();
    throw new InputError(`--trainer: ${err instanceof Error ? err.message : String(err)}`);
  }
  return bridge;
}

function formatScore(score: number | null): string {
  return score === null ? 'n/a' : Number(score.toPrecision(10)).toString();
}

/** The `run --json` line of product.md: step, best, mean, counts, dbSize, elapsedMs and more. */
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
  };
}

function humanStepLine(e: StepCommittedEvent, previousBest: number | null): string {
  const gain = e.newBest && e.bestEver !== null && previousBest !== null ? ` (+${Number((e.bestEver - previousBest).toPrecision(3))})` : '';
  const valid = e.counts.valid;
  return (
    `step ${e.step}: best ${formatScore(e.bestEver)}${gain}${e.newBest ? ' NEW BEST' : ''} | ` +
    `step mean ${formatScore(e.mean)} | valid ${valid}/${e.samples} | ` +
    `no diff ${e.counts.no_diff}, no change ${e.counts.no_change + e.counts.duplicate}, no solution ${e.counts.no_solution + e.counts.timeout}, invalid ${e.counts.invalid_solution}, failed requests ${e.counts.request_failed} | ` +
    `db ${e.dbSize} | ${(e.timings.totalMs / 1000).toFixed(1)} s`
  );
}
