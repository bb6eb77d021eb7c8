// `thetaevolve convert` of a ThetaEvolve release folder (docs/architecture.md
// "Release task folders"): writes task.json so that the program runs alone in
// the sandbox (the parts of openevolve.modular_utils it calls inlined in its
// command: foreign/release_stubs.py) and saves its solution file, and the
// folder's verify.py scores only that file outside (a copy of
// foreign/release_converted_evaluator.py): scores protected. Refused, with
// the reason, where the folder's evaluator is not the release's standard one
// or its programs need files beside them.
import { copyFile, readFile, stat, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { foreignRuntimeDir } from './foreignTasks';
import { loadReleaseTask, RELEASE_EVALUATOR, RELEASE_INITIAL_PROGRAM, readReleaseConfig } from './releaseTasks';
import { literalPlaceholders, nonEmpty } from './scaffold';
import { TaskError, type TaskFile, TaskFileSchema } from './task';

const PLACEHOLDER = /\{[A-Za-z_][A-Za-z0-9_]*\}/;
/** The trusted step reads one small file and runs verify.py on it. */
const EVALUATOR_TIME_LIMIT_SEC = 300;

export const CONVERTED_RELEASE_FILES = {
  taskFile: 'task.json',
  evaluator: 'thetaevolve_release_evaluator.py',
  stubs: 'thetaevolve_release_stubs.py',
} as const;

/** The stubs a converted folder carries: the stand-in's BaseConfig (one dict-like config class, not a copy), then release_stubs.py. */
async function releaseStubsText(runtime: string): Promise<string> {
  const parts = ['openevolve/modular_utils/config_controller.py', 'release_stubs.py'];
  const texts = await Promise.all(parts.map((part) => readFile(join(runtime, part), 'utf8')));
  return `${texts.map((text) => text.trim()).join('\n\n\n')}\n`;
}

/** The candidate's inlined wrapper: the stubs without their comments, then the program run as __main__. */
function candidateWrapper(stubs: string): string {
  const code = stubs
    .split('\n')
    .filter((line) => !line.trimStart().startsWith('#'))
    .join('\n')
    .trim();
  return `${code}\n\nimport runpy\ninstall(json.loads(sys.argv[2]))\nrunpy.run_path(sys.argv[1], run_name="__main__")\n`;
}

/** Convert the release folder (its only config) or config `dirOrConfig` in place; returns the files written. */
export async function convertReleaseTask(dirOrConfig: string): Promise<{ files: string[]; task: TaskFile }> {
  const task = await loadReleaseTask(dirOrConfig);
  const taskFile = join(task.dir, CONVERTED_RELEASE_FILES.taskFile);
  if (
    await stat(taskFile).then(
      () => true,
      () => false,
    )
  )
    throw new TaskError(`${taskFile} already exists: the folder is already converted (delete it to convert another config)`);
  const evaluatorSource = await readFile(join(task.dir, RELEASE_EVALUATOR), 'utf8');
  if (!/\bObjectiveBasedProblemEvaluator\b/.test(evaluatorSource) || !/^\s*from\s+verify\s+import\b/m.test(evaluatorSource))
    throw new TaskError(
      `${join(task.dir, RELEASE_EVALUATOR)}: cannot convert: only the release's standard evaluator (ObjectiveBasedProblemEvaluator with verify.py's validate_solution and compute_objective_value) is known to score a solution alone; use the folder as it is`,
    );
  const { config, variablesJson } = await readReleaseConfig(task.source);
  const copies = [
    ...((config.evaluator?.copy_folders as unknown[] | undefined) ?? []),
    ...((config.evaluator?.copy_files as unknown[] | undefined) ?? []),
  ];
  if (copies.length > 0)
    throw new TaskError(
      `${task.source}: cannot convert: evaluator.copy_folders / copy_files put files beside the program (${copies.map(String).join(', ')}), which a converted candidate cannot read; use the folder as it is`,
    );
  if (PLACEHOLDER.test(variablesJson))
    throw new TaskError(`${task.source}: cannot convert: a variable's text holds a {name} placeholder, which task.json would fill in`);
  const runtime = foreignRuntimeDir();
  const stubs = await releaseStubsText(runtime);
  const texts = task.metaInformation.map((m) => ({ id: m.id, weight: m.weight, text: m.text }));
  const literal = Object.assign({}, ...texts.map((m) => literalPlaceholders(m.text, ['MAX_RUNTIME']))) as Record<string, string>;
  const shaping = task.rewardShaping;
  const raw = {
    name: task.name,
    title: task.title.replace(/ \(ThetaEvolve release folder\)$/, ''),
    description:
      `${task.description}\n\nConverted from the ThetaEvolve release config ${basename(task.source)} by \`thetaevolve convert\`: the objective is verify.py's compute_objective_value of the solution the program saves.`.trim(),
    direction: task.direction,
    initialProgram: RELEASE_INITIAL_PROGRAM,
    candidate: {
      command: ['{python}', '-c', candidateWrapper(stubs), '{program}', variablesJson],
      runtimeLimitSec: task.variables.MAX_RUNTIME,
      solutionFile: 'solution.json',
    },
    evaluator: {
      command: ['{python}', `{taskDir}/${CONVERTED_RELEASE_FILES.evaluator}`, '{solution}', '{taskDir}', variablesJson],
      timeLimitSec: EVALUATOR_TIME_LIMIT_SEC,
    },
    metaInformation: texts,
    ...nonEmpty('variables', literal),
    rewardShaping: { enabled: false, lower: shaping.lower, upper: shaping.upper, alpha: shaping.alpha, k: shaping.k },
    maxCodeLength: task.maxCodeLength,
  };
  const spec = TaskFileSchema.parse(raw);
  await copyFile(join(runtime, 'release_converted_evaluator.py'), join(task.dir, CONVERTED_RELEASE_FILES.evaluator));
  await writeFile(join(task.dir, CONVERTED_RELEASE_FILES.stubs), stubs, { flag: 'wx' });
  // task.json last: until it exists the folder still loads as the release's.
  await writeFile(taskFile, `${JSON.stringify(raw, null, 2)}\n`, { flag: 'wx' });
  return {
    files: [join(task.dir, CONVERTED_RELEASE_FILES.evaluator), join(task.dir, CONVERTED_RELEASE_FILES.stubs), taskFile],
    task: spec,
  };
}
