// `thetaevolve convert`: an OpenEvolve folder becomes one of ours (task.json),
// with the candidate and the evaluator kept apart. Possible when the evaluator
// only calls functions of the program without arguments and judges what they
// return (the AlphaEvolve problems do): the candidate side calls them in the
// sandbox and writes their values to solution.json (solution_wrapper.py,
// inlined in the candidate command); the trusted side hands the folder's own
// evaluate() a stand-in program returning those values (converted_evaluator.py,
// copied in as thetaevolve_evaluate.py with foreign_eval.py as
// thetaevolve_foreign.py). Anything else is refused with the reason.
import { copyFile, readFile, stat, writeFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { foreignFolderOf, foreignRuntimeDir, loadForeignTask, openEvolveSettings } from './foreignTasks';
import { literalPlaceholders, nonEmpty } from './scaffold';
import { type TaskFile, TaskError, TaskFileSchema } from './task';

/** Files a conversion writes into the folder. */
export const CONVERTED_FILES = { taskFile: 'task.json', evaluator: 'thetaevolve_evaluate.py', library: 'thetaevolve_foreign.py' } as const;

const PYTHON = '/usr/bin/python3';

/** The program's functions the evaluator calls with no arguments; null with the reason when it calls anything else or nothing. */
export function calledProgramFunctions(evaluatorSource: string, programSource: string): { names: string[] } | { problem: string } {
  const calls = [...evaluatorSource.matchAll(/\bprogram\.([A-Za-z_][A-Za-z0-9_]*)\s*\(([^)]*)\)/g)];
  if (calls.length === 0) {
    return {
      problem:
        'evaluator.py calls no function of the program as program.NAME(): it runs the program some other way, so only the whole evaluator can run it (in the sandbox, as the folder is)',
    };
  }
  const withArguments = calls.filter((c) => (c[2] ?? '').trim() !== '').map((c) => c[1] as string);
  if (withArguments.length > 0) {
    return {
      problem: `evaluator.py calls program.${withArguments[0]}(...) with arguments, so the program's values depend on the evaluator's inputs and cannot be written once to a solution file`,
    };
  }
  const names = [...new Set(calls.map((c) => c[1] as string))];
  const missing = names.filter((n) => !new RegExp(`^\\s*def\\s+${n}\\s*\\(`, 'm').test(programSource));
  if (missing.length > 0) return { problem: `evaluator.py calls program.${missing[0]}(), which the initial program does not define` };
  return { names };
}

/** Convert the OpenEvolve folder `dir` (or its evaluator file) in place; returns the files written. Throws TaskError with the reason when it cannot. */
export async function convertForeignTask(dirOrEvaluator: string): Promise<{ files: string[]; task: TaskFile }> {
  const given = resolve(dirOrEvaluator);
  const dir = (await stat(given).catch(() => null))?.isFile() ? dirname(given) : given;
  if (
    await stat(join(dir, CONVERTED_FILES.taskFile)).then(
      () => true,
      () => false,
    )
  ) {
    throw new TaskError(`${join(dir, CONVERTED_FILES.taskFile)} already exists: the folder is already in ThetaEvolve's layout`);
  }
  const { evaluatorName } = await foreignFolderOf(given);
  const task = await loadForeignTask(given);
  if (task.layout !== 'openevolve') {
    throw new TaskError(
      `${task.dir}: a ShinkaEvolve folder's evaluate.py runs the program itself (main(program_path, results_dir)), so it cannot be given only a solution file; use the folder as it is (its scores are labelled not protected)`,
    );
  }
  const evaluatorSource = await readFile(join(task.dir, evaluatorName), 'utf8');
  const called = calledProgramFunctions(evaluatorSource, task.initialProgram);
  if ('problem' in called) throw new TaskError(`${task.dir}: cannot convert: ${called.problem}`);
  const names = called.names.join(',');
  const settings = await openEvolveSettings(task.dir, evaluatorSource, evaluatorName);
  const runtime = foreignRuntimeDir();
  // Inlined without its comments (they talk about {placeholders}).
  const wrapper = (await readFile(join(runtime, 'solution_wrapper.py'), 'utf8'))
    .split('\n')
    .filter((line) => !line.trimStart().startsWith('#'))
    .join('\n')
    .trim();
  const meta = task.metaInformation[0] as { id: string; weight: number; text: string };
  const raw = {
    name: task.name,
    title: task.title.replace(/ \(OpenEvolve folder\)$/, ''),
    description:
      `${task.description}\n\nConverted from an OpenEvolve folder by \`thetaevolve convert\`: the score is evaluator.py's combined_score.`.trim(),
    direction: 'maximize',
    initialProgram: basename(task.initialProgramPath),
    candidate: { command: [PYTHON, '-c', wrapper, '{program}', names], runtimeLimitSec: task.runtimeLimitSec },
    evaluator: {
      command: [
        PYTHON,
        `{taskDir}/${CONVERTED_FILES.evaluator}`,
        '{solution}',
        names,
        settings.cascade,
        settings.featureDimensions,
        evaluatorName,
      ],
      timeLimitSec: task.runtimeLimitSec,
    },
    metaInformation: [meta],
    ...nonEmpty('variables', literalPlaceholders(meta.text, ['MAX_RUNTIME'])),
    maxCodeLength: settings.maxCodeLength,
  };
  const spec = TaskFileSchema.parse(raw);
  const written = [
    join(task.dir, CONVERTED_FILES.evaluator),
    join(task.dir, CONVERTED_FILES.library),
    join(task.dir, CONVERTED_FILES.taskFile),
  ];
  await copyFile(join(runtime, 'converted_evaluator.py'), written[0] as string);
  await copyFile(join(runtime, 'foreign_eval.py'), written[1] as string);
  // task.json last: until it exists the folder still loads as OpenEvolve's.
  await writeFile(written[2] as string, `${JSON.stringify(raw, null, 2)}\n`, { flag: 'wx' });
  return { files: written, task: spec };
}
