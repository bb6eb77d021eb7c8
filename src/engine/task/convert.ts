// `thetaevolve convert`: an OpenEvolve folder becomes one of ours (task.json),
// with the candidate and the evaluator kept apart. Possible when the evaluator
// only calls functions of the program without arguments and judges what they
// return (the AlphaEvolve problems do; foreign/program_calls.py finds the calls,
// whatever the evaluator names the module): the candidate side calls them in the
// sandbox and writes their values to solution.json (solution_wrapper.py,
// inlined in the candidate command); the trusted side hands the folder's own
// evaluate() a stand-in program returning those values (converted_evaluator.py,
// copied in as thetaevolve_evaluate.py with foreign_eval.py as
// thetaevolve_foreign.py). Anything else is refused with the reason.
import { execFile } from 'node:child_process';
import { readFile, stat } from 'node:fs/promises';
import { copyToNewFile, writeNewFile } from '../newFiles';
import { basename, dirname, join, resolve } from 'node:path';
import { z } from 'zod';
import { errorMessage } from '../common/errors';
import { foreignFolderOf, foreignRuntimeDir, loadForeignTask, openEvolveSettings } from './foreignTasks';
import { literalPlaceholders, nonEmpty } from './scaffold';
import { type TaskFile, TaskError, TaskFileSchema } from './task';

/** Files a conversion writes into the folder. */
export const CONVERTED_FILES = {
  taskFile: 'task.json',
  evaluator: 'thetaevolve_evaluate.py',
  library: 'thetaevolve_foreign.py',
  /** Our `openevolve.evaluation_result`, for evaluators that import it where OpenEvolve is not installed. */
  evaluationResult: 'thetaevolve_evaluation_result.py',
} as const;

/** Our own parser of the evaluator (standard library only), not the researcher's Python. */
const PYTHON = '/usr/bin/python3';

const ProgramUsesSchema = z.object({
  modules: z.array(z.string()),
  uses: z.array(
    z.object({ module: z.string(), name: z.string().nullable(), line: z.number().int(), arguments: z.number().int(), called: z.boolean() }),
  ),
});
export type ProgramUses = z.infer<typeof ProgramUsesSchema>;

/** What the evaluator does with the program it loads (foreign/program_calls.py parses it; nothing runs). */
export async function programUsesOf(evaluatorPath: string): Promise<ProgramUses> {
  const script = join(foreignRuntimeDir(), 'program_calls.py');
  const text = await new Promise<string>((resolvePromise, reject) => {
    execFile(
      PYTHON,
      [script, evaluatorPath],
      { timeout: 20000, maxBuffer: 8 * 1024 * 1024, env: { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8' } },
      (err, stdout, stderr) => {
        if (err)
          reject(
            new TaskError(`${evaluatorPath}: cannot parse it: ${(stderr.trim().split('\n').pop() ?? '') || errorMessage(err)}`, {
              cause: err,
            }),
          );
        else resolvePromise(stdout);
      },
    );
  });
  return ProgramUsesSchema.parse(JSON.parse(text));
}

/** The program's functions the evaluator calls with no arguments; the reason otherwise (arguments, a function or the module handed on, nothing called). */
export function convertibleCalls(
  uses: ProgramUses,
  programSource: string,
  evaluatorName: string,
): { names: string[] } | { problem: string } {
  if (uses.modules.length === 0) {
    return {
      problem: `${evaluatorName} loads the program in a way convert does not follow (no importlib module_from_spec/exec_module or import_module): only the whole evaluator can run it (in the sandbox, as the folder is)`,
    };
  }
  const at = (u: ProgramUses['uses'][number]): string => `${evaluatorName} line ${u.line}`;
  const withArguments = uses.uses.find((u) => u.called && u.arguments > 0);
  if (withArguments) {
    return {
      problem: `${at(withArguments)} calls ${withArguments.module}.${withArguments.name}(...) with arguments, so the program's values depend on the evaluator's inputs and cannot be written once to a solution file`,
    };
  }
  const handedOn = uses.uses.find((u) => !u.called);
  if (handedOn) {
    return {
      problem:
        handedOn.name === null
          ? `${at(handedOn)} hands the program module ${handedOn.module} on to other code, which may call anything in it with any arguments`
          : `${at(handedOn)} hands ${handedOn.module}.${handedOn.name} on uncalled (e.g. to a timeout helper), so other code calls it, perhaps with arguments`,
    };
  }
  const names = [...new Set(uses.uses.map((u) => u.name as string))];
  if (names.length === 0) {
    return { problem: `${evaluatorName} loads the program as ${uses.modules.join(', ')} but calls none of its functions` };
  }
  const defined = names.filter((n) => new RegExp(`^\\s*def\\s+${n}\\s*\\(`, 'm').test(programSource));
  if (defined.length === 0) {
    return { problem: `${evaluatorName} calls ${names.map((n) => `${n}()`).join(', ')}, none of which the initial program defines` };
  }
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
  const called = convertibleCalls(await programUsesOf(join(task.dir, evaluatorName)), task.initialProgram, evaluatorName);
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
    candidate: { command: ['{python}', '-c', wrapper, '{program}', names], runtimeLimitSec: task.runtimeLimitSec },
    evaluator: {
      command: [
        '{python}',
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
  const copies: [string, string][] = [
    ['converted_evaluator.py', CONVERTED_FILES.evaluator],
    ['foreign_eval.py', CONVERTED_FILES.library],
    [join('openevolve', 'evaluation_result.py'), CONVERTED_FILES.evaluationResult],
  ];
  for (const [from, to] of copies) await copyToNewFile(join(runtime, from), join(task.dir, to));
  // task.json last: until it exists the folder still loads as OpenEvolve's.
  const taskFile = join(task.dir, CONVERTED_FILES.taskFile);
  await writeNewFile(taskFile, `${JSON.stringify(raw, null, 2)}\n`);
  return { files: [...copies.map(([, to]) => join(task.dir, to)), taskFile], task: spec };
}
