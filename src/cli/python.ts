// The command line's interpreter (docs/guide.md "Which Python"): --python
// PATH, then the setting thetaevolve.python where a --config or --set gives
// it, then an activated environment (VIRTUAL_ENV, CONDA_PREFIX), then
// python3 on PATH.
import type { Settings } from '../engine/common/config';
import { interpreterPath, type PythonChoice, pythonFromCommandLine } from '../engine/python/interpreter';
import { type ParsedArgs, stringFlag } from './args';
import type { CliIO } from './io';

/** The --python flag every command that runs Python takes. */
export const PYTHON_FLAG = {
  kind: 'string',
  value: 'PATH',
  help: 'The Python interpreter for candidates and evaluators (default: $VIRTUAL_ENV, $CONDA_PREFIX, then python3 on PATH).',
} as const;

export function cliPythonChoice(args: ParsedArgs, settings: Pick<Settings, 'python'>, io: Pick<CliIO, 'env' | 'cwd'>): PythonChoice {
  const flag = stringFlag(args, 'python');
  if (flag === undefined && settings.python.trim() !== '')
    return { path: interpreterPath(settings.python.trim(), io.env, io.cwd), source: 'thetaevolve.python' };
  return pythonFromCommandLine(flag, io.env, io.cwd);
}
