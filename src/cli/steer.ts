// `thetaevolve steer <db-file> --add FILE | --guidance FILE | --clear-guidance | --recommendations FILE |
// --ban ID | --unban ID | --pin ID ... [--json]`: one steer request on a run,
// live or stopped (docs/architecture.md "Steering a run"). Bad input is one
// line and exit 1, with the database unchanged.
import { forDisplay, jsonForTerminal } from '../engine/common/displayText';
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { errorMessage } from '../engine/common/errors';
import { type SteerRequest, type SteerResult, steerResultText } from '../engine/common/steering';
import { DatabaseFileError } from '../engine/database/programDatabase';
import { Evaluator, evaluatorOptionsFromSettings, SandboxUnavailableError } from '../engine/sandbox/evaluator';
import { SteerInputError } from '../engine/steering/applySteer';
import { assertRunTaskFolderAllowed, bundledTasksDir } from '../engine/steering/runTaskFolder';
import { type ClosableSteerEvaluator, steerRun } from '../engine/steering/steerRun';
import { runsDirectoryOf } from '../engine/runFiles';
import { loadTask, TaskError } from '../engine/task/task';
import { booleanFlag, numberFlag, type ParsedArgs, stringFlag, UsageError } from './args';
import { type CliIO, InputError } from './io';
import { cliPythonChoice } from './python';
import { probePython, taskUsesPython } from '../engine/python/interpreter';
import { settingsFromArgs } from './settingsSources';

const ACTIONS = ['add', 'guidance', 'clear-guidance', 'recommendations', 'ban', 'unban', 'pin'] as const;
/** Flags that only mean something with one action. */
const COMPANIONS: Readonly<Record<string, (typeof ACTIONS)[number]>> = {
  island: 'add',
  parent: 'add',
  note: 'add',
  descendants: 'ban',
  share: 'pin',
  steps: 'pin',
};
const DEFAULT_PIN_SHARE = 0.25;
const DEFAULT_PIN_STEPS = 5;

export async function steerCommand(args: ParsedArgs, io: CliIO): Promise<number> {
  const dbFile = resolve(io.cwd, args.positionals[0] as string);
  const given = ACTIONS.filter((action) => args.flags[action] !== undefined);
  if (given.length !== 1)
    throw new UsageError(
      given.length === 0
        ? `'steer' needs one of ${ACTIONS.map((a) => `--${a}`).join(', ')}`
        : `'steer' takes one action at a time, got ${given.map((a) => `--${a}`).join(' and ')}`,
    );
  const action = given[0] as (typeof ACTIONS)[number];
  for (const [flag, owner] of Object.entries(COMPANIONS))
    if (args.flags[flag] !== undefined && owner !== action) throw new UsageError(`--${flag} goes with --${owner}`);
  const request = await requestOf(action, args, io);
  let result: SteerResult;
  try {
    result = await steerRun(dbFile, request, {
      openEvaluator: (meta) => openTaskEvaluator(meta.taskDir, args, io),
      signal: io.signal,
    });
  } catch (err) {
    if (err instanceof SteerInputError || err instanceof DatabaseFileError) throw new InputError(err.message, { cause: err });
    throw err;
  }
  io.stdout((booleanFlag(args, 'json') ? jsonForTerminal(result) : forDisplay(resultLine(result, dbFile))) + '\n');
  return 0;
}

async function requestOf(action: (typeof ACTIONS)[number], args: ParsedArgs, io: CliIO): Promise<SteerRequest> {
  const text = async (flag: string): Promise<string> => {
    const file = resolve(io.cwd, stringFlag(args, flag) as string);
    return readFile(file, 'utf8').catch((err: unknown) => {
      throw new InputError(`cannot read --${flag} ${file}: ${errorMessage(err)}`, { cause: err });
    });
  };
  switch (action) {
    case 'add': {
      const island = numberFlag(args, 'island');
      const parentId = stringFlag(args, 'parent');
      const note = stringFlag(args, 'note');
      return {
        kind: 'add',
        code: await text('add'),
        ...(island !== undefined ? { island } : {}),
        ...(parentId !== undefined ? { parentId } : {}),
        ...(note !== undefined ? { note } : {}),
      };
    }
    case 'guidance': {
      const guidance = await text('guidance');
      if (guidance.trim() === '')
        throw new InputError(`--guidance ${stringFlag(args, 'guidance')} is empty (--clear-guidance removes guidance)`);
      return { kind: 'guidance', text: guidance };
    }
    case 'clear-guidance':
      return { kind: 'clearGuidance' };
    case 'recommendations':
      // An empty file removes them (docs/guide.md "Meta-recommendations").
      return { kind: 'recommendations', text: (await text('recommendations')).trim() };
    case 'ban':
      return { kind: 'ban', id: stringFlag(args, 'ban') as string, descendants: booleanFlag(args, 'descendants') };
    case 'unban':
      return { kind: 'unban', id: stringFlag(args, 'unban') as string };
    case 'pin': {
      const share = numberFlag(args, 'share') ?? DEFAULT_PIN_SHARE;
      if (!(share > 0 && share <= 1)) throw new UsageError(`--share needs a number in (0, 1], got ${share}`);
      return { kind: 'pin', id: stringFlag(args, 'pin') as string, share, steps: numberFlag(args, 'steps') ?? DEFAULT_PIN_STEPS };
    }
  }
}

/**
 * The sandboxed evaluator of the run's task, for --add on a stopped run (and `mcp`'s add_program, whose
 * `runsDirectories` are its --runs). The task folder the database names must lie in the working folder, a
 * runs folder or the bundled tasks (src/engine/steering/runTaskFolder.ts): refused before anything of it is read.
 */
export async function openTaskEvaluator(
  taskDir: string,
  args: ParsedArgs,
  io: CliIO,
  command = 'steer',
  runsDirectories: readonly string[] = [],
): Promise<ClosableSteerEvaluator> {
  const settings = settingsFromArgs(args, io.cwd);
  await assertRunTaskFolderAllowed(taskDir, {
    workspace: [io.cwd],
    runs: [runsDirectoryOf(io.cwd, settings), ...runsDirectories],
    bundled: bundledTasksDir(),
  });
  const task = await loadTask(taskDir).catch((err: unknown) => {
    throw new InputError(err instanceof TaskError ? err.message : `cannot load the run's task at ${taskDir}: ${errorMessage(err)}`, {
      cause: err,
    });
  });
  const python = taskUsesPython(task)
    ? await probePython(cliPythonChoice(args, settings, io)).catch((err: unknown) => {
        throw new InputError(errorMessage(err), { cause: err });
      })
    : null;
  try {
    const evaluator = new Evaluator(task, {
      ...evaluatorOptionsFromSettings({ ...settings, evaluationConcurrency: 1 }),
      ...(python ? { python } : {}),
      // The working folder is the CLI's workspace: the interpreter's prefix may not be or hold it.
      workspaceFolders: [io.cwd],
      onWarning: (message) => io.stderr(`thetaevolve ${command}: ${message}\n`),
    });
    if (evaluator.isolation.warning) io.stderr(`thetaevolve ${command}: ${evaluator.isolation.warning}\n`);
    return evaluator;
  } catch (err) {
    if (err instanceof SandboxUnavailableError) throw new InputError(err.message, { cause: err });
    throw err;
  }
}

function resultLine(result: SteerResult, dbFile: string): string {
  return 'queued' in result ? `${result.kind}: queued for the next step of the live run of ${dbFile}` : steerResultText(result);
}
