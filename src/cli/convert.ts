// `thetaevolve convert <folder>`: writes task.json (and the evaluator's
// solution-file side) into an OpenEvolve folder, so that the candidate and
// the evaluator run apart. See src/engine/task/convert.ts for when it can.
import { convertForeignTask } from '../engine/task/convert';
import { TaskError } from '../engine/task/task';
import { booleanFlag, type ParsedArgs } from './args';
import { type CliIO, InputError } from './io';
import { taskPathFromArgs } from './taskPath';

export async function convertCommand(args: ParsedArgs, io: CliIO): Promise<number> {
  const [folder] = args.positionals as [string];
  const json = booleanFlag(args, 'json');
  let converted;
  try {
    converted = await convertForeignTask(await taskPathFromArgs(args, io, folder));
  } catch (err) {
    if (err instanceof TaskError) throw new InputError(err.message, { cause: err });
    throw err;
  }
  if (json) {
    io.stdout(JSON.stringify({ files: converted.files, name: converted.task.name }) + '\n');
  } else {
    io.stdout(`${converted.files.map((f) => `wrote ${f}`).join('\n')}\n`);
    io.stderr(
      `thetaevolve: ${converted.task.name} now runs the program in the sandbox and its evaluator outside, on the program's values only (scores protected).\n`,
    );
  }
  return 0;
}
