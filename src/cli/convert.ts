// `thetaevolve convert <folder>`: writes task.json (and the evaluator's
// solution-file side) into an OpenEvolve folder, so that the candidate and
// the evaluator run apart. See src/engine/task/convert.ts for when it can.
// `thetaevolve convert <spec.py> --inputs JSON`: a FunSearch specification
// becomes a folder in OpenEvolve's layout (src/engine/task/funsearch.ts).
import { forDisplay, jsonForTerminal } from '../engine/common/displayText';
import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { IN_SANDBOX_TRUST_REASON } from '../engine/common/types';
import { convertForeignTask } from '../engine/task/convert';
import { convertReleaseTask } from '../engine/task/releaseConvert';
import { releaseTaskOf } from '../engine/task/releaseTasks';
import { convertFunSearchSpec, FUNSEARCH_REDUCTIONS, type FunSearchReduction, parseFunSearchInputs } from '../engine/task/funsearch';
import { isFunSearchSpecText } from '../engine/task/foreignTasks';
import { TaskError } from '../engine/task/task';
import { readTaskText } from '../engine/task/taskText';
import { booleanFlag, type ParsedArgs, stringFlag, UsageError } from './args';
import { type CliIO, InputError } from './io';
import { taskPathFromArgs } from './taskPath';

export async function convertCommand(args: ParsedArgs, io: CliIO): Promise<number> {
  const [source] = args.positionals as [string];
  const json = booleanFlag(args, 'json');
  try {
    if (await isFunSearchSpec(resolve(io.cwd, source))) return await convertSpec(args, io, resolve(io.cwd, source), json);
    for (const flag of ['inputs', 'reduce', 'output'])
      if (stringFlag(args, flag) !== undefined)
        throw new UsageError(`--${flag} applies to a FunSearch specification (a .py file), not to a folder`);
    const taskPath = await taskPathFromArgs(args, io, source);
    const converted = (await releaseTaskOf(taskPath)) ? await convertReleaseTask(taskPath) : await convertForeignTask(taskPath);
    if (json) {
      io.stdout(jsonForTerminal({ files: converted.files, name: converted.task.name }) + '\n');
    } else {
      io.stdout(`${forDisplay(converted.files.map((f) => `wrote ${f}`).join('\n'))}\n`);
      io.stderr(
        `thetaevolve: ${converted.task.name} now runs the program in the sandbox and its evaluator outside, on the program's values only (scores protected).\n`,
      );
    }
    return 0;
  } catch (err) {
    if (err instanceof TaskError) throw new InputError(err.message, { cause: err });
    throw err;
  }
}

async function isFunSearchSpec(path: string): Promise<boolean> {
  if (!(await stat(path).catch(() => null))?.isFile()) return false;
  const read = await readTaskText(path);
  return read.ok && isFunSearchSpecText(read.text);
}

async function convertSpec(args: ParsedArgs, io: CliIO, spec: string, json: boolean): Promise<number> {
  if (stringFlag(args, 'evaluator') !== undefined)
    throw new UsageError('--evaluator applies to an OpenEvolve folder, not to a FunSearch specification');
  const inputs = stringFlag(args, 'inputs');
  if (inputs === undefined)
    throw new UsageError(
      `${spec} is a FunSearch specification: give the inputs its @funsearch.run function is called with, e.g. --inputs '[8]'`,
    );
  const reduce = stringFlag(args, 'reduce') ?? 'last';
  if (!(FUNSEARCH_REDUCTIONS as readonly string[]).includes(reduce))
    throw new UsageError(`--reduce must be last, mean or sum (got ${reduce})`);
  const output = stringFlag(args, 'output');
  const converted = await convertFunSearchSpec(spec, {
    inputs: parseFunSearchInputs(inputs),
    reduce: reduce as FunSearchReduction,
    ...(output !== undefined ? { outputDir: resolve(io.cwd, output) } : {}),
  });
  if (json) {
    io.stdout(
      jsonForTerminal({
        files: converted.files,
        dir: converted.dir,
        name: converted.task.name,
        evolve: converted.evolve,
        run: converted.run,
        protected: false,
        unprotectedReason: IN_SANDBOX_TRUST_REASON,
      }) + '\n',
    );
  } else {
    io.stdout(`${forDisplay(converted.files.map((f) => `wrote ${f}`).join('\n'))}\n`);
    io.stderr(
      `thetaevolve: ${converted.dir} is a task folder in OpenEvolve's layout: ${converted.evolve}() is the EVOLVE-BLOCK, and ${converted.run}() runs once per input in the sandbox with the candidate, as in FunSearch, so its scores are not protected from a hostile candidate. Try: thetaevolve evaluate ${converted.dir} ${converted.task.initialProgramPath}\n`,
    );
  }
  return 0;
}
