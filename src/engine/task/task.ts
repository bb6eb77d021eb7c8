// The task format: a folder with task.json (validated by the zod schema
// below, also published as media/task.schema.json for editors), the initial
// program and the trusted evaluator. See src/engine/task/README.md.
import { readdir, stat } from 'node:fs/promises';
import { basename, dirname, extname, isAbsolute, join, relative, resolve } from 'node:path';
import { z } from 'zod';
import { DirectionSchema } from '../common/events';
import type { Direction, EvaluatorTrust } from '../common/types';
import { locateEvolveBlocks } from '../common/diff';
import { errorMessage, fieldPathText, ThetaEvolveError } from '../common/errors';
import type { Settings } from '../common/config';
import { detectForeignLayout, isFunSearchSpecText, loadForeignTask } from './foreignTasks';
import { loadReleaseTask, releaseTaskOf } from './releaseTasks';
import { readTaskText } from './taskText';
import { type FeatureDimension, MAX_FEATURE_DIMENSIONS } from '../operators/features';

/** A `{name}` placeholder in a template (anything else in braces is literal text). */
const PLACEHOLDER = /\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** Placeholders the sandbox fills in the candidate's command. */
export const CANDIDATE_PLACEHOLDERS = ['program', 'workDir', 'python'] as const;
/** Placeholders the sandbox fills in the evaluator's command. */
export const EVALUATOR_PLACEHOLDERS = ['solution', 'taskDir', 'python'] as const;

const DEFAULT_SOLUTION_MAX_BYTES = 16 * 1024 * 1024;

const positiveSeconds = z
  .number()
  .finite()
  .positive()
  .max(7 * 24 * 3600);
const commandTemplate = z
  .array(z.string().min(1, 'must not be an empty string'))
  .min(1, 'needs at least the program to run')
  .describe('Program and arguments, one per item (no shell). `{name}` placeholders are filled in; see the task README.');

export const TaskFileSchema = z
  .strictObject({
    $schema: z.string().optional().describe('Path or URL of this JSON Schema (for editors).'),
    name: z
      .string()
      .regex(/^[a-z0-9][a-z0-9._-]*$/, 'must be lower-case letters, digits, ".", "_" or "-", starting with a letter or digit')
      .max(80)
      .describe('Short identifier, e.g. "circle-packing".'),
    title: z.string().min(1).describe('Human title.'),
    description: z.string().default('').describe('What the problem is, in a few sentences.'),
    direction: DirectionSchema.describe('Whether a larger or a smaller objective is better.'),
    initialProgram: z
      .string()
      .min(1)
      .describe(
        'The program evolution starts from, relative to the task folder; it holds exactly one EVOLVE-BLOCK-START / EVOLVE-BLOCK-END region.',
      ),
    candidate: z
      .strictObject({
        command: commandTemplate.describe(
          'How to run a candidate program inside the sandbox, e.g. ["{python}", "{program}"]. Placeholders: {python} (the run\'s Python interpreter), {program} (the program file), {workDir} (its empty working directory) and any variable.',
        ),
        runtimeLimitSec: positiveSeconds.describe(
          'Wall-clock limit of one candidate run, in seconds (the whole process tree is killed after it).',
        ),
        solutionFile: z
          .string()
          .regex(/^[A-Za-z0-9._-]+$/, 'must be a plain file name (no folders)')
          .default('solution.json')
          .describe('File the candidate writes in its working directory.'),
        solutionMaxBytes: z
          .number()
          .int()
          .positive()
          .max(1024 * 1024 * 1024)
          .default(DEFAULT_SOLUTION_MAX_BYTES)
          .describe('Larger solution files are rejected (no_solution) without being read.'),
      })
      .describe('The candidate contract: run in an empty working directory, write the solution file there.'),
    evaluator: z
      .strictObject({
        command: commandTemplate.describe(
          'The trusted evaluator, run outside the sandbox on the solution file only, e.g. ["{python}", "{taskDir}/evaluate.py", "{solution}"]. Placeholders: {python}, {solution}, {taskDir}, any variable or tolerance. It prints one JSON line {"valid", "objective", "metrics", "reason"} (plus "unreadable": true when the file is not a solution at all).',
        ),
        timeLimitSec: positiveSeconds.describe("The evaluator's own wall-clock limit, in seconds."),
        stages: z
          .array(
            z.strictObject({
              command: commandTemplate.describe('A cheaper evaluator, with the same placeholders and reply as `command`.'),
              threshold: z.number().finite().describe('The score (higher is better) a solution needs at this stage to go on to the next.'),
            }),
          )
          .max(8)
          .optional()
          .describe(
            "A cascade (docs/algorithm.md section 12, OpenEvolve's evaluate_stage1/2/3): stages run in order before `command`; a solution scoring under a stage's threshold stops there and keeps that stage's result. Absent: `command` alone.",
          ),
      })
      .describe('How the objective is computed from the solution file.'),
    metaInformation: z
      .array(
        z.strictObject({
          id: z
            .string()
            .regex(/^[A-Za-z0-9._-]+$/, 'must be letters, digits, ".", "_" or "-"')
            .describe('Stable identifier, recorded with each child.'),
          weight: z.number().finite().positive().describe('Drawn with probability proportional to weight.'),
          text: z
            .string()
            .min(1)
            .describe('Problem statement and hints shown in the prompt; {placeholders} are filled from the variables.'),
        }),
      )
      .min(1, 'needs at least one text')
      .describe('Weighted meta-information texts; one is drawn per prompt.'),
    variables: z
      .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'variable names are identifiers'), z.union([z.string(), z.number().finite()]))
      .default({})
      .describe(
        'Template values for the texts and commands. MAX_RUNTIME and target_value are provided from the limits and targetValue unless set here.',
      ),
    tolerances: z
      .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'tolerance names are identifiers'), z.number().finite().min(0))
      .default({})
      .describe('Numerical tolerances of the validity check, passed to the evaluator command through {placeholders} of the same name.'),
    targetValue: z.number().finite().nullable().default(null).describe("Value to reach, in the task's own objective units (null: none)."),
    rewardShaping: z
      .strictObject({
        enabled: z.boolean().default(false).describe('Shape rewards for RL (docs/algorithm.md section 5).'),
        lower: z.number().finite().default(0).describe('L: objective mapped to 0.'),
        upper: z.number().finite().default(1).describe('U: objective mapped to 1.'),
        alpha: z.number().finite().min(0).default(1).describe('Exponent a.'),
        k: z.number().finite().min(0).default(1).describe('Scale k.'),
      })
      .refine((s) => s.upper > s.lower, { message: 'upper must be greater than lower', path: ['upper'] })
      .default({ enabled: false, lower: 0, upper: 1, alpha: 1, k: 1 })
      .describe('R(s) = k * clip(H(s), 0, 1)^alpha, H = (s - L) / (U - L) when maximising, (U - s) / (U - L) when minimising.'),
    maxCodeLength: z.number().int().positive().default(50000).describe('Children longer than this many characters are rejected.'),
    features: z
      .array(
        z.strictObject({
          metric: z
            .string()
            .min(1)
            .describe(
              "A metric of the evaluator's reply (a number; true/false count as 1/0, anything else as 0); `score` and `complexity`, when the reply has no metric of that name, are the program's score and code length.",
            ),
          bins: z.number().int().min(1).max(1000).default(10).describe('Bins of this axis.'),
        }),
      )
      .min(1)
      .max(MAX_FEATURE_DIMENSIONS)
      .optional()
      .describe(
        "Behaviour dimensions (docs/algorithm.md section 12, OpenEvolve's database.feature_dimensions): metrics that are the axes of each island's MAP-Elites grid, each min-max scaled over the values seen into its bins. Absent: score and code length, as the paper.",
      ),
  })
  .describe('A ThetaEvolve task: the problem, the initial program, how candidates run and how they are scored.');

export type TaskFile = z.output<typeof TaskFileSchema>;

/** The layouts a task folder may have: ours (task.json), OpenEvolve's, ShinkaEvolve's, the ThetaEvolve release's (read unchanged). */
export const TASK_LAYOUTS = ['task.json', 'openevolve', 'shinka', 'release'] as const;
export type TaskLayout = (typeof TASK_LAYOUTS)[number];

export interface Task {
  /** Absolute folder holding task.json. */
  dir: string;
  /** The path that loads this task again: `dir`, or the evaluator file of an OpenEvolve folder loaded with another evaluator than its default. */
  source: string;
  name: string;
  title: string;
  description: string;
  direction: Direction;
  /** Extension of the initial program without the dot, e.g. "py". */
  language: string;
  initialProgramPath: string;
  /** Its text (has exactly one EVOLVE-BLOCK). */
  initialProgram: string;
  /** Raw texts with {placeholders}. */
  metaInformation: { id: string; weight: number; text: string }[];
  /** Template values: the task's variables plus MAX_RUNTIME, target_value and the tolerances. */
  variables: Record<string, string | number>;
  runtimeLimitSec: number;
  evaluatorTimeLimitSec: number;
  /** In the task's own objective units. */
  targetValue: number | null;
  rewardShaping: { enabled: boolean; lower: number; upper: number; alpha: number; k: number };
  maxCodeLength: number;
  // Beyond docs/contracts.md: what the sandbox needs to run and score a candidate.
  /** Command template run inside the sandbox ({program}, {workDir}, variables). */
  candidateCommand: string[];
  /** Command template of the trusted evaluator ({solution}, {taskDir}, variables, tolerances). */
  evaluatorCommand: string[];
  /** Metrics that are the MAP-Elites axes (operators/features.ts); absent: score and code length. */
  features?: FeatureDimension[];
  /** Cheaper evaluator stages run before evaluatorCommand (operators/cascade.ts); absent or empty: none. */
  evaluatorStages?: { command: string[]; threshold: number }[];
  solutionFile: string;
  solutionMaxBytes: number;
  tolerances: Record<string, number>;
  /** Which layout the folder is in (see foreignTasks.ts for the other systems'). */
  layout: TaskLayout;
  /** 'in-sandbox': the evaluator runs with the candidate, so the score is not protected from a hostile candidate. */
  evaluatorTrust: EvaluatorTrust;
  /**
   * How a valid objective becomes the score: 'direction' (task.json: a
   * positive objective, 1/objective when minimising) or 'combined_score'
   * (other systems: their combined_score as it is, higher is better).
   */
  scoreRule: 'direction' | 'combined_score';
  /**
   * Host folders the candidate command may read, by placeholder name: the
   * sandbox mounts each read-only and fills `{name}` with where it appears.
   * Empty for task.json tasks (their candidate sees only its program).
   */
  sandboxReadOnlyDirs: Record<string, string>;
  /** Lines to tell whoever uses the task, once (e.g. that the whole program is evolved for want of markers). */
  notices: string[];
  /** Run settings the task's own config gives (a release config: sampling, database sizes); the user's flags and settings win. */
  runSettings?: Partial<Settings>;
}

/** A task file that cannot be used; the message names the file and the field. */
export class TaskError extends ThetaEvolveError {
  override readonly name = 'TaskError';
}

function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  const text = JSON.stringify(value);
  if (text === undefined) return String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let node: unknown = root;
  for (const key of path) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<PropertyKey, unknown>)[key];
  }
  return node;
}

/**
 * Validate the parsed content of a task.json. Throws a TaskError naming
 * `file`, the field and what is wrong.
 */
export function parseTaskFile(raw: unknown, file: string): TaskFile {
  const result = TaskFileSchema.safeParse(raw);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  if (!issue) throw new TaskError(`${file}: invalid task file`);
  let path: PropertyKey[] = [...issue.path];
  let message = issue.message;
  if (issue.code === 'unrecognized_keys') {
    const keys = issue.keys;
    path = [...path, keys[0] ?? '?'];
    message = `unknown field${keys.length > 1 ? `s ${keys.map((k) => `"${k}"`).join(', ')}` : ''} (allowed fields are listed in media/task.schema.json)`;
    return fail(file, path, message);
  }
  const got = valueAt(raw, path);
  return fail(file, path, `${message} (got ${describeValue(got)})`);
}

function fail(file: string, path: readonly PropertyKey[], message: string): never {
  throw new TaskError(`${file}: field ${fieldPathText(path, '(top level)', 'bracketed')}: ${message}`);
}

/** Names of the `{placeholders}` in a template text. */
export function placeholdersOf(text: string): string[] {
  return [...text.matchAll(PLACEHOLDER)].map((m) => m[1] as string);
}

/**
 * Fill `{name}` placeholders from `values`; unknown names are left as they
 * are (task loading has already rejected them where it matters).
 */
export function fillTemplate(text: string, values: Readonly<Record<string, string | number>>): string {
  return text.replace(PLACEHOLDER, (whole, name: string) => {
    // Own keys only: "{constructor}" in a text stays as written.
    const value = Object.prototype.hasOwnProperty.call(values, name) ? values[name] : undefined;
    return value === undefined ? whole : String(value);
  });
}

/** What makes a program unusable for evolution (no region, unbalanced or nested markers), or null: a program may hold several regions (docs/algorithm.md). */
export function evolveBlockProblem(code: string): string | null {
  return locateEvolveBlocks(code).problems[0]?.message ?? null;
}

/**
 * Load and check a task folder: one with task.json (or that file's path), or
 * a folder in OpenEvolve's or ShinkaEvolve's layout, unchanged (or the path
 * of one of its files: an OpenEvolve folder's evaluator*.py picks that evaluator).
 */
export async function loadTask(dirOrFile: string): Promise<Task> {
  let dir = resolve(dirOrFile);
  let file = join(dir, 'task.json');
  try {
    if ((await stat(dir)).isFile()) {
      file = dir;
      dir = resolve(dir, '..');
      // A config YAML of a ThetaEvolve release folder names that task.
      if (await releaseTaskOf(file)) return await loadReleaseTask(file);
      // A file of another system's folder names it (OpenEvolve: a .py file other than the program is the evaluator to use).
      if (basename(file) !== 'task.json' && (await detectForeignLayout(dir)) !== null) return await loadForeignTask(file);
    } else if (!(await isFile(file))) {
      if (await releaseTaskOf(dir)) return await loadReleaseTask(dir);
      const layout = await detectForeignLayout(dir);
      if (layout !== null) return await loadForeignTask(dir);
      throw new TaskError(
        `${dir}: not a task folder: it holds no task.json, nor an OpenEvolve layout (initial_program.* + evaluator.py), a ShinkaEvolve one (initial.* + evaluate.py) or a ThetaEvolve release one (configs/*.yaml + evaluators/evaluator_modular.py + initial_programs/)`,
      );
    }
  } catch (err) {
    if (err instanceof TaskError) throw err;
    throw new TaskError(`${dirOrFile}: no such task folder`);
  }
  const read = await readTaskText(file, dirname(file));
  if (!read.ok) throw new TaskError(`${file}: cannot read the task file (a task folder holds task.json): it ${read.problem}`);
  const text = read.text;
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    if (isFunSearchSpecText(text))
      throw new TaskError(
        `${file}: a FunSearch specification, not a task: convert it first with thetaevolve convert ${file} --inputs JSON`,
      );
    throw new TaskError(`${file}: not valid JSON: ${errorMessage(err)}`, { cause: err });
  }
  const spec = parseTaskFile(raw, file);

  if (isAbsolute(spec.initialProgram))
    fail(file, ['initialProgram'], `must be relative to the task folder (got ${describeValue(spec.initialProgram)})`);
  const initialProgramPath = resolve(dir, spec.initialProgram);
  if (relative(dir, initialProgramPath).startsWith('..')) fail(file, ['initialProgram'], 'must stay inside the task folder');
  const program = await readTaskText(initialProgramPath, dir);
  if (!program.ok) return fail(file, ['initialProgram'], `cannot read ${initialProgramPath}: it ${program.problem}`);
  const initialProgram = program.text;
  const blockProblem = evolveBlockProblem(initialProgram);
  if (blockProblem) fail(file, ['initialProgram'], `${basename(initialProgramPath)}: ${blockProblem}`);
  if (initialProgram.length > spec.maxCodeLength) {
    fail(file, ['maxCodeLength'], `the initial program is ${initialProgram.length} characters, over this limit (${spec.maxCodeLength})`);
  }
  const language = extname(initialProgramPath).slice(1);
  if (language === '') fail(file, ['initialProgram'], 'needs a file extension (it names the language, e.g. .py)');

  const variables: Record<string, string | number> = {
    MAX_RUNTIME: spec.candidate.runtimeLimitSec,
    ...(spec.targetValue !== null ? { target_value: spec.targetValue } : {}),
    ...spec.tolerances,
    ...spec.variables,
  };
  spec.metaInformation.forEach((m, i) => {
    for (const name of placeholdersOf(m.text)) {
      if (!(name in variables)) {
        fail(file, ['metaInformation', i, 'text'], `uses {${name}}, which is not a variable (known: ${Object.keys(variables).join(', ')})`);
      }
    }
  });
  const ids = new Set<string>();
  spec.metaInformation.forEach((m, i) => {
    if (ids.has(m.id)) fail(file, ['metaInformation', i, 'id'], `duplicate id ${describeValue(m.id)}`);
    ids.add(m.id);
  });
  checkCommand(file, ['candidate', 'command'], spec.candidate.command, [...CANDIDATE_PLACEHOLDERS, ...Object.keys(variables)]);
  checkCommand(file, ['evaluator', 'command'], spec.evaluator.command, [...EVALUATOR_PLACEHOLDERS, ...Object.keys(variables)]);
  if (!spec.candidate.command.some((arg) => arg.includes('{program}'))) {
    fail(file, ['candidate', 'command'], 'must pass the program with {program}');
  }
  if (!spec.evaluator.command.some((arg) => arg.includes('{solution}'))) {
    fail(file, ['evaluator', 'command'], 'must pass the solution file with {solution}');
  }
  (spec.evaluator.stages ?? []).forEach((stage, i) => {
    checkCommand(file, ['evaluator', 'stages', i, 'command'], stage.command, [...EVALUATOR_PLACEHOLDERS, ...Object.keys(variables)]);
    if (!stage.command.some((arg) => arg.includes('{solution}')))
      fail(file, ['evaluator', 'stages', i, 'command'], 'must pass the solution file with {solution}');
  });

  return {
    dir,
    source: dir,
    name: spec.name,
    title: spec.title,
    description: spec.description,
    direction: spec.direction,
    language,
    initialProgramPath,
    initialProgram,
    metaInformation: spec.metaInformation.map((m) => ({ id: m.id, weight: m.weight, text: m.text })),
    variables,
    runtimeLimitSec: spec.candidate.runtimeLimitSec,
    evaluatorTimeLimitSec: spec.evaluator.timeLimitSec,
    targetValue: spec.targetValue,
    rewardShaping: { ...spec.rewardShaping },
    maxCodeLength: spec.maxCodeLength,
    candidateCommand: [...spec.candidate.command],
    evaluatorCommand: [...spec.evaluator.command],
    ...(spec.features ? { features: spec.features.map((f) => ({ metric: f.metric, bins: f.bins })) } : {}),
    ...(spec.evaluator.stages && spec.evaluator.stages.length > 0
      ? { evaluatorStages: spec.evaluator.stages.map((stage) => ({ command: [...stage.command], threshold: stage.threshold })) }
      : {}),
    solutionFile: spec.candidate.solutionFile,
    solutionMaxBytes: spec.candidate.solutionMaxBytes,
    tolerances: { ...spec.tolerances },
    layout: 'task.json',
    evaluatorTrust: 'separate',
    scoreRule: 'direction',
    sandboxReadOnlyDirs: {},
    notices: [],
  };
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

function checkCommand(file: string, path: PropertyKey[], command: readonly string[], known: readonly string[]): void {
  command.forEach((arg, i) => {
    for (const name of placeholdersOf(arg)) {
      if (!known.includes(name)) fail(file, [...path, i], `uses {${name}}, which is not a placeholder here (known: ${known.join(', ')})`);
    }
  });
}

/** Every task folder (holding task.json) directly under `tasksRoot`, sorted by name. */
export async function listBundledTasks(tasksRoot: string): Promise<Task[]> {
  const root = resolve(tasksRoot);
  let entries: string[];
  try {
    entries = (await readdir(root, { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => e.name);
  } catch {
    throw new TaskError(`${root}: cannot list the tasks folder`);
  }
  const tasks: Task[] = [];
  for (const entry of entries.sort()) {
    const dir = join(root, entry);
    try {
      if (!(await stat(join(dir, 'task.json'))).isFile()) continue;
    } catch {
      continue;
    }
    tasks.push(await loadTask(dir));
  }
  return tasks.sort((a, b) => a.name.localeCompare(b.name));
}
