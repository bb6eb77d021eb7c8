// The task a command names: its task-dir argument, or with `--evaluator FILE`
// that file of an OpenEvolve folder (OpenEvolve takes the evaluator's path as
// an argument; a folder may hold several, e.g. evaluator_phase_1.py).
import { resolve } from 'node:path';
import { taskPathWithEvaluator } from '../engine/task/foreignTasks';
import { TaskError } from '../engine/task/task';
import { type ParsedArgs, stringFlag } from './args';
import { type CliIO, InputError } from './io';

export const EVALUATOR_FLAG = {
  kind: 'string',
  value: 'FILE',
  help: "OpenEvolve folders: the evaluator to use, a .py file in the folder (default evaluator.py, or the folder's only evaluator*.py).",
} as const;

export async function taskPathFromArgs(args: ParsedArgs, io: CliIO, taskDir: string): Promise<string> {
  const evaluator = stringFlag(args, 'evaluator');
  if (evaluator === undefined) return resolve(io.cwd, taskDir);
  try {
    return await taskPathWithEvaluator(resolve(io.cwd, taskDir), resolve(io.cwd, evaluator));
  } catch (err) {
    if (err instanceof TaskError) throw new InputError(err.message, { cause: err });
    throw err;
  }
}
