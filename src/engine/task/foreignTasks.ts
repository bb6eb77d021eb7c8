// Task folders written for other systems, read unchanged (docs/architecture.md "Foreign task folders"):
//   OpenEvolve   initial_program.<ext> + evaluator.py (evaluate(program_path)
//                -> dict | EvaluationResult, optional evaluate_stage1/2/3) +
//                optional config.yaml (prompt.system_message, evaluator.timeout,
//                evaluator.cascade_evaluation/cascade_thresholds, max_code_length)
//   ShinkaEvolve initial.<ext> + evaluate.py (main(program_path, results_dir)
//                writes metrics.json with combined_score, and correct.json)
// Their evaluators import the candidate and run it in their own process, so
// the whole evaluator runs inside the sandbox as the candidate command
// (foreign/run_foreign.py, which writes what the evaluator returned as the
// solution file); a tiny trusted step of ours (foreign/foreign_reply.py) maps
// that file to the reply. The score is therefore not protected from a
// hostile candidate: evaluatorTrust 'in-sandbox'.
import { BUILT_IN_FEATURES, type FeatureDimension, MAX_FEATURE_DIMENSIONS } from '../operators/features';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, cpSync, existsSync, lstatSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { readdir, stat } from 'node:fs/promises';
import { basename, dirname, extname, join, resolve } from 'node:path';
import { z } from 'zod';
import { lineCommentOf } from '../common/codeText';
import { EVOLVE_BLOCK_END, EVOLVE_BLOCK_START } from '../common/diff';
import { errorMessage, zodIssueText } from '../common/errors';
import { draftMetaInformation } from './scaffold';
import { evolveBlockProblem, type Task, TaskError, type TaskLayout } from './task';
import { isReleaseFolder, releaseConfigsOf } from './releaseTasks';
import { readTaskText } from './taskText';

export type ForeignLayout = Exclude<TaskLayout, 'task.json'>;

/** OpenEvolve's defaults (openevolve/config.py, EvaluatorConfig) where config.yaml says nothing. */
const OPENEVOLVE_DEFAULT_TIMEOUT_SEC = 300;
const OPENEVOLVE_DEFAULT_THRESHOLDS = [0.5, 0.75, 0.9];
/** database.feature_dimensions: left out of the mean that ranks a program without combined_score. */
const OPENEVOLVE_DEFAULT_FEATURE_DIMENSIONS = ['complexity', 'diversity'];
/** ShinkaEvolve folders carry no time limit: ours. */
const SHINKA_DEFAULT_TIMEOUT_SEC = 300;
/** The trusted step only reads one JSON file. */
const REPLY_TIME_LIMIT_SEC = 30;
const DEFAULT_MAX_CODE_LENGTH = 50000;
/** What reads a folder's config (PyYAML) at load time: our tooling; candidates and evaluators run the run's {python}. */
const PYTHON = '/usr/bin/python3';
const SOLUTION_FILE = 'solution.json';
const CONFIG_READ_TIMEOUT_MS = 20000;

/**
 * Our Python files (the wrapper, the trusted step, the stand-in `openevolve`
 * package): src/engine/task/foreign when run from source, dist/foreign (and
 * out/test/foreign) in a build, copied there by scripts/build.mjs.
 */
export function foreignRuntimeDir(): string {
  const dir = join(__dirname, 'foreign');
  if (!existsSync(join(dir, 'run_foreign.py')))
    throw new TaskError(`ThetaEvolve's evaluator wrapper is missing from ${dir} (a broken install or build)`);
  return dir;
}

/**
 * The wrapper folder as the candidate will read it. As root, candidates run
 * as an unprivileged user, who may not be able to reach our install (a home
 * folder is private): then a copy in the temp folder, readable by all,
 * named by its content so that an update never meets a stale copy.
 */
export function sandboxRuntimeDir(runtime: string): string {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return runtime;
  const files = readdirSync(runtime, { recursive: true, withFileTypes: true }).filter(
    (e) => e.isFile() && !e.parentPath.includes('__pycache__'),
  );
  const hash = createHash('sha256');
  for (const entry of files.sort((a, b) => join(a.parentPath, a.name).localeCompare(join(b.parentPath, b.name)))) {
    hash.update(join(entry.parentPath, entry.name).slice(runtime.length));
    hash.update(readFileSync(join(entry.parentPath, entry.name)));
  }
  const copy = join(tmpdir(), `thetaevolve-foreign-${hash.digest('hex').slice(0, 16)}`);
  // The temp folder is shared: use a copy only if root made it and nobody else can write to it.
  const ours = (path: string): boolean => {
    try {
      const stats = lstatSync(path);
      return stats.isDirectory() && stats.uid === 0 && (stats.mode & 0o022) === 0 && existsSync(join(path, 'run_foreign.py'));
    } catch {
      return false;
    }
  };
  if (ours(copy)) return copy;
  const staging = mkdtempSync(`${copy}-`);
  cpSync(runtime, staging, { recursive: true, filter: (src) => !src.includes('__pycache__') });
  for (const entry of readdirSync(staging, { recursive: true, withFileTypes: true }))
    chmodSync(join(entry.parentPath, entry.name), entry.isDirectory() ? 0o755 : 0o644);
  chmodSync(staging, 0o755);
  try {
    renameSync(staging, copy);
    return copy;
  } catch {
    // The name is taken: by another process of ours (use theirs), or by someone else (keep our own).
    if (!ours(copy)) return staging;
    rmSync(staging, { recursive: true, force: true });
    return copy;
  }
}

const OpenEvolveConfigSchema = z.looseObject({
  language: z.string().nullish(),
  max_code_length: z.number().int().positive().nullish(),
  diff_based_evolution: z.boolean().nullish(),
  prompt: z.looseObject({ system_message: z.string().nullish() }).nullish(),
  database: z
    .looseObject({
      feature_dimensions: z.array(z.string().regex(/^[^,]+$/, 'names without commas')).nullish(),
      feature_bins: z.union([z.number().int().min(1).max(1000), z.record(z.string(), z.number().int().min(1).max(1000))]).nullish(),
      archive_size: z.number().int().positive().nullish(),
    })
    .nullish(),
  evaluator: z
    .looseObject({
      timeout: z.number().finite().positive().nullish(),
      cascade_evaluation: z.boolean().nullish(),
      cascade_thresholds: z.array(z.number().finite()).nullish(),
    })
    .nullish(),
});
export type OpenEvolveConfig = z.output<typeof OpenEvolveConfigSchema>;

async function filesOf(dir: string): Promise<string[]> {
  try {
    // Links too (git stores them): reading one checks that it stays inside the folder, and says so when not.
    return (await readdir(dir, { withFileTypes: true })).filter((e) => e.isFile() || e.isSymbolicLink()).map((e) => e.name);
  } catch {
    return [];
  }
}

/** Program files named `<stem>.<ext>` (compiled or backup files left out). */
function programFiles(files: readonly string[], stem: string): string[] {
  return files.filter(
    (f) => f.startsWith(`${stem}.`) && extname(f) !== '' && basename(f, extname(f)) === stem && !/\.(pyc|pyo|orig|bak|swp)$/.test(f),
  );
}

/** OpenEvolve's evaluator is a path given to it; here evaluator.py, or another evaluator*.py beside it (evaluator_phase_1.py), sorted. */
const DEFAULT_OPENEVOLVE_EVALUATOR = 'evaluator.py';
function openEvolveEvaluators(files: readonly string[]): string[] {
  const others = files.filter((f) => /^evaluator.*\.py$/.test(f) && f !== DEFAULT_OPENEVOLVE_EVALUATOR).sort();
  return [...(files.includes(DEFAULT_OPENEVOLVE_EVALUATOR) ? [DEFAULT_OPENEVOLVE_EVALUATOR] : []), ...others];
}

function layoutOfFiles(files: readonly string[]): ForeignLayout | null {
  if (files.includes('task.json')) return null;
  if (openEvolveEvaluators(files).length > 0 && programFiles(files, 'initial_program').length > 0) return 'openevolve';
  if (files.includes('evaluate.py') && programFiles(files, 'initial').length > 0) return 'shinka';
  return null;
}

/** Which other system's layout `dir` is in, or null (task.json wins where both are present). */
export async function detectForeignLayout(dir: string): Promise<ForeignLayout | null> {
  return layoutOfFiles(await filesOf(dir));
}

/** The files naming a task in `dir`: its task.json, ShinkaEvolve's evaluate.py, each evaluator of an OpenEvolve folder, or each config of a release folder; none when it is no task folder. */
export async function taskFilesIn(dir: string): Promise<string[]> {
  const files = await filesOf(dir);
  if (files.includes('task.json')) return [join(dir, 'task.json')];
  if (await isReleaseFolder(dir)) return releaseConfigsOf(dir);
  const layout = layoutOfFiles(files);
  if (layout === 'openevolve') return openEvolveEvaluators(files).map((f) => join(dir, f));
  if (layout === 'shinka') return [join(dir, 'evaluate.py')];
  return [];
}

/** The task files of the folder holding `file` and of the folders next to it (hidden ones and node_modules left out), in any layout. */
export async function taskFilesBeside(file: string): Promise<string[]> {
  const dir = dirname(resolve(file));
  const subfolders = await readdir(dir, { withFileTypes: true }).then(
    (entries) =>
      entries.filter((e) => e.isDirectory() && !e.name.startsWith('.') && e.name !== 'node_modules').map((e) => join(dir, e.name)),
    () => [],
  );
  // A release program sits in initial_programs/: its folder's configs are the tasks beside it.
  const parent = dirname(dir);
  const releaseParent = basename(dir) === 'initial_programs' && (await isReleaseFolder(parent)) ? [parent] : [];
  const found = await Promise.all([...releaseParent, dir, ...subfolders.sort()].map(taskFilesIn));
  return found.flat();
}

/** A foreign folder as given (the folder, or one of its files) with the evaluator to use. */
export interface ForeignFolder {
  dir: string;
  layout: ForeignLayout;
  /** The evaluator's file name in `dir`: evaluate.py (ShinkaEvolve); evaluator.py or the one given (OpenEvolve). */
  evaluatorName: string;
}

/**
 * Which folder and evaluator `dirOrFile` names: a folder (its evaluator.py,
 * or its only evaluator*.py), or a .py file in an OpenEvolve folder other
 * than the program, which is then the evaluator (as OpenEvolve takes it).
 */
export async function foreignFolderOf(dirOrFile: string): Promise<ForeignFolder> {
  let dir = resolve(dirOrFile);
  let given: string | null = null;
  if ((await stat(dir).catch(() => null))?.isFile()) {
    given = basename(dir);
    dir = dirname(dir);
  }
  const files = await filesOf(dir);
  const layout = layoutOfFiles(files);
  if (layout === null)
    throw new TaskError(`${dir}: not an OpenEvolve (initial_program.* + evaluator.py) or ShinkaEvolve (initial.* + evaluate.py) folder`);
  if (layout === 'shinka') return { dir, layout, evaluatorName: 'evaluate.py' };
  if (given !== null && extname(given) === '.py' && !programFiles([given], 'initial_program').includes(given))
    return { dir, layout, evaluatorName: given };
  const evaluators = openEvolveEvaluators(files);
  if (evaluators[0] === DEFAULT_OPENEVOLVE_EVALUATOR || evaluators.length === 1)
    return { dir, layout, evaluatorName: evaluators[0] as string };
  throw new TaskError(
    `${dir}: holds several evaluators (${evaluators.join(', ')}) and no evaluator.py: name one with --evaluator FILE, or give its path as the task`,
  );
}

/** The task path for `--evaluator FILE` of the task folder `taskDir`: the evaluator file itself, which must be in that folder. */
export async function taskPathWithEvaluator(taskDir: string, evaluatorFile: string): Promise<string> {
  const evaluator = resolve(evaluatorFile);
  let dir = resolve(taskDir);
  if ((await stat(dir).catch(() => null))?.isFile()) dir = dirname(dir);
  if (dirname(evaluator) !== dir)
    throw new TaskError(
      `--evaluator ${evaluator}: must be a file in the task folder ${dir} (the sandbox shows the evaluator that folder only)`,
    );
  if (!(await stat(evaluator).catch(() => null))?.isFile()) throw new TaskError(`--evaluator ${evaluator}: no such file`);
  if (extname(evaluator) !== '.py') throw new TaskError(`--evaluator ${evaluator}: an OpenEvolve evaluator is a Python file`);
  if (layoutOfFiles(await filesOf(dir)) !== 'openevolve')
    throw new TaskError(`--evaluator ${evaluator}: applies to OpenEvolve folders (initial_program.* + an evaluator), and ${dir} is none`);
  return evaluator;
}

/** Whether a file reads as a FunSearch specification (it names both decorators, perhaps commented out as in FunSearch's notebooks). */
export function isFunSearchSpecText(text: string): boolean {
  return /@funsearch\.run\b/.test(text) && /@funsearch\.evolve\b/.test(text);
}

/** Run our config reader (PyYAML, as OpenEvolve itself reads the file) and check what we use. */
export async function readOpenEvolveConfig(file: string): Promise<OpenEvolveConfig> {
  const script = join(foreignRuntimeDir(), 'read_config.py');
  const text = await new Promise<string>((resolvePromise, reject) => {
    execFile(
      PYTHON,
      [script, file],
      { timeout: CONFIG_READ_TIMEOUT_MS, maxBuffer: 8 * 1024 * 1024, env: { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8' } },
      (err, stdout, stderr) => {
        if (err)
          reject(new TaskError(`${file}: cannot read it: ${(stderr.trim().split('\n').pop() ?? '') || errorMessage(err)}`, { cause: err }));
        else resolvePromise(stdout);
      },
    );
  });
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new TaskError(`${file}: the YAML reader gave no JSON: ${errorMessage(err)}`, { cause: err });
  }
  const parsed = OpenEvolveConfigSchema.safeParse(raw ?? {});
  if (parsed.success) return parsed.data;
  throw new TaskError(`${file}: field ${zodIssueText(parsed.error, '(top level)')}`);
}

/** A task name from the folder: lower-case, our characters; a bare number ("2") gets its parent's name. */
function taskNameOf(dir: string): string {
  const clean = (s: string): string =>
    s
      .toLowerCase()
      .replace(/[^a-z0-9._-]+/g, '-')
      .replace(/^[^a-z0-9]+/, '')
      .slice(0, 80);
  const own = clean(basename(dir));
  const name = /^[0-9]+$/.test(own) ? clean(`${basename(dirname(dir))}-${own}`) : own;
  return name === '' ? 'task' : name;
}

function titleOf(name: string, layout: ForeignLayout): string {
  const words = name.replace(/[-_.]+/g, ' ').trim();
  return `${words.charAt(0).toUpperCase()}${words.slice(1)} (${layout === 'openevolve' ? 'OpenEvolve' : 'ShinkaEvolve'} folder)`;
}

/** `def name(` at the start of a line (the evaluator's entry points). */
function defines(source: string, name: string): boolean {
  return new RegExp(`^(async\\s+)?def\\s+${name}\\s*\\(`, 'm').test(source);
}

async function readText(file: string, what: string): Promise<string> {
  const read = await readTaskText(file, dirname(file));
  if (!read.ok) throw new TaskError(`${file}: cannot read the ${what}: it ${read.problem}`);
  return read.text;
}

/**
 * A program without any EVOLVE-BLOCK marker, as OpenEvolve and ShinkaEvolve
 * take it: the whole program is evolved. Here that is the program between
 * two marker comments (a first `#!` line kept above them), with the line
 * that says so; null when it has markers or its language's comments are unknown.
 */
export function wholeProgramBlock(
  program: string,
  language: string,
  fileName: string,
  layout: ForeignLayout,
): { program: string; notice: string } | null {
  const comment = lineCommentOf(language);
  if (comment === null || program.includes(EVOLVE_BLOCK_START) || program.includes(EVOLVE_BLOCK_END)) return null;
  const shebang = program.startsWith('#!') ? program.slice(0, program.indexOf('\n') + 1 || program.length) : '';
  const body = program.slice(shebang.length);
  const wrapped = `${shebang}${comment} ${EVOLVE_BLOCK_START}\n${body}${body.endsWith('\n') || body === '' ? '' : '\n'}${comment} ${EVOLVE_BLOCK_END}\n`;
  const system = layout === 'openevolve' ? 'OpenEvolve' : 'ShinkaEvolve';
  return {
    program: wrapped,
    notice: `${fileName} has no EVOLVE-BLOCK markers: the whole program is evolved, as ${system} does (put ${comment} ${EVOLVE_BLOCK_START} / ${comment} ${EVOLVE_BLOCK_END} lines around the code to evolve to narrow it).`,
  };
}

/** What a folder's files say about running it (config.yaml for OpenEvolve; our defaults otherwise). */
export interface FolderSettings {
  /** The candidate's limit: OpenEvolve's evaluator.timeout per cascade stage. */
  runtimeLimitSec: number;
  /** prompt.system_message, the task's prompt text. */
  systemMessage: string | null;
  maxCodeLength: number;
  /** The cascade thresholds for run_foreign.py ("0.5,0.75,0.9"), or "off". */
  cascade: string;
  /** OpenEvolve's evaluator.timeout, which bounds each of its cascade's later stages (their earlier metrics kept). */
  stageTimeoutSec: number;
  /** OpenEvolve's feature dimensions ("complexity,diversity"), which its mean of metrics leaves out. */
  featureDimensions: string;
  /**
   * The MAP-Elites axes config.yaml's feature_dimensions name (featureAxes,
   * operators/features.ts). Null: none beyond score and code length, the
   * paper's grid.
   */
  features: FeatureDimension[] | null;
}

/** OpenEvolve's diversity (edit distance to a reference set of programs) has no counterpart here: that axis is left out. */
const OPENEVOLVE_DIVERSITY = 'diversity';
/** OpenEvolve's database.archive_size default, which sets the least number of bins per axis when feature_bins is a number. */
const OPENEVOLVE_DEFAULT_ARCHIVE_SIZE = 100;
const OPENEVOLVE_DEFAULT_FEATURE_BINS = 10;
/** The most bins an axis may have (task.json's limit). */
const MAX_FEATURE_BINS = 1000;

/** An OpenEvolve folder's settings from its config.yaml (OpenEvolve's defaults where it is silent) and evaluator.py. */
export async function openEvolveSettings(dir: string, evaluatorSource: string, evaluatorName: string): Promise<FolderSettings> {
  if (!defines(evaluatorSource, 'evaluate') && !defines(evaluatorSource, 'evaluate_stage1')) {
    throw new TaskError(`${join(dir, evaluatorName)}: defines no evaluate(program_path) (OpenEvolve's entry point)`);
  }
  const config = (await filesOf(dir)).includes('config.yaml') ? await readOpenEvolveConfig(join(dir, 'config.yaml')) : {};
  const timeout = config.evaluator?.timeout ?? OPENEVOLVE_DEFAULT_TIMEOUT_SEC;
  // OpenEvolve gives each cascade stage the timeout; so does the limit of the whole run here.
  let stages = 1;
  let cascade = 'off';
  if ((config.evaluator?.cascade_evaluation ?? true) && defines(evaluatorSource, 'evaluate_stage1')) {
    stages = ['evaluate_stage1', 'evaluate_stage2', 'evaluate_stage3'].filter((name) => defines(evaluatorSource, name)).length;
    cascade = (config.evaluator?.cascade_thresholds ?? OPENEVOLVE_DEFAULT_THRESHOLDS).join(',');
  }
  return {
    runtimeLimitSec: timeout * Math.max(1, stages),
    systemMessage: config.prompt?.system_message?.trim() || null,
    maxCodeLength: config.max_code_length ?? DEFAULT_MAX_CODE_LENGTH,
    cascade,
    stageTimeoutSec: timeout,
    featureDimensions: (config.database?.feature_dimensions ?? OPENEVOLVE_DEFAULT_FEATURE_DIMENSIONS).join(','),
    features: featureAxes(config.database ?? {}),
  };
}

/**
 * The MAP-Elites axes of config.yaml's database.feature_dimensions, as
 * OpenEvolve bins them (openevolve/database.py): a number feature_bins gives
 * each axis at least archive_size^(1/dimensions) bins, a map gives each its own
 * (10 where it names none). `score` and `complexity` are the program's score
 * and code length unless the evaluator reports them (operators/features.ts);
 * `combined_score` is the score; `diversity` is left out. Null when only
 * score and code length remain: the paper's grid.
 */
function featureAxes(database: NonNullable<OpenEvolveConfig['database']>): FeatureDimension[] | null {
  const names = database.feature_dimensions ?? [];
  const bins = database.feature_bins ?? OPENEVOLVE_DEFAULT_FEATURE_BINS;
  const leastBins = Math.floor(Math.pow(database.archive_size ?? OPENEVOLVE_DEFAULT_ARCHIVE_SIZE, 1 / Math.max(1, names.length)) + 0.99);
  const binsOf = (name: string): number =>
    Math.min(MAX_FEATURE_BINS, typeof bins === 'number' ? Math.max(bins, leastBins) : (bins[name] ?? OPENEVOLVE_DEFAULT_FEATURE_BINS));
  const axes = names
    .filter((name) => name !== OPENEVOLVE_DIVERSITY)
    .map((name) => ({ metric: name === 'combined_score' ? BUILT_IN_FEATURES.score : name, bins: binsOf(name) }))
    .slice(0, MAX_FEATURE_DIMENSIONS);
  const builtIn: readonly string[] = Object.values(BUILT_IN_FEATURES);
  return axes.some((axis) => !builtIn.includes(axis.metric)) ? axes : null;
}

/** Load a folder in OpenEvolve's or ShinkaEvolve's layout as a Task. */
export async function loadForeignTask(dirOrFile: string): Promise<Task> {
  const { dir, layout, evaluatorName } = await foreignFolderOf(dirOrFile);
  const files = await filesOf(dir);
  const stem = layout === 'openevolve' ? 'initial_program' : 'initial';
  const programs = programFiles(files, stem);
  if (programs.length !== 1) throw new TaskError(`${dir}: needs exactly one ${stem}.<ext> (found ${programs.join(', ')})`);
  const initialProgramPath = join(dir, programs[0] as string);
  const programText = await readText(initialProgramPath, 'initial program');
  const language = extname(initialProgramPath).slice(1);
  const whole = wholeProgramBlock(programText, language, basename(initialProgramPath), layout);
  const initialProgram = whole?.program ?? programText;
  const blockProblem = evolveBlockProblem(initialProgram);
  if (blockProblem) {
    throw new TaskError(
      `${initialProgramPath}: ${blockProblem}; ThetaEvolve evolves the marked regions: put # EVOLVE-BLOCK-START and # EVOLVE-BLOCK-END lines around the code to evolve`,
    );
  }
  const evaluatorPath = join(dir, evaluatorName);
  const evaluatorSource = await readText(evaluatorPath, 'evaluator');

  const runtime = foreignRuntimeDir();
  let settings: FolderSettings;
  if (layout === 'openevolve') {
    settings = await openEvolveSettings(dir, evaluatorSource, evaluatorName);
  } else {
    if (!defines(evaluatorSource, 'main'))
      throw new TaskError(`${evaluatorPath}: defines no main(program_path, results_dir) (ShinkaEvolve's entry point)`);
    settings = {
      runtimeLimitSec: SHINKA_DEFAULT_TIMEOUT_SEC,
      systemMessage: null,
      maxCodeLength: DEFAULT_MAX_CODE_LENGTH,
      cascade: 'off',
      stageTimeoutSec: SHINKA_DEFAULT_TIMEOUT_SEC,
      featureDimensions: '',
      features: null,
    };
  }
  const { runtimeLimitSec, systemMessage, maxCodeLength } = settings;
  if (initialProgram.length > maxCodeLength) {
    throw new TaskError(
      `${initialProgramPath}: the initial program is ${initialProgram.length} characters, over the code length limit (${maxCodeLength})`,
    );
  }
  // Where the folder alone picks this evaluator, the folder names the task; else its evaluator file does (Task.source).
  const folderPicks = await foreignFolderOf(dir).then(
    (folder) => folder.evaluatorName,
    () => null,
  );
  // Another evaluator is another task (a resumed run checks the name).
  const name =
    taskNameOf(dir) +
    (layout === 'openevolve' && evaluatorName !== DEFAULT_OPENEVOLVE_EVALUATOR ? `-${taskNameOf(basename(evaluatorName, '.py'))}` : '');
  const metaText = systemMessage ?? draftMetaInformation(initialProgram, language);
  return {
    dir,
    source: folderPicks === evaluatorName ? dir : join(dir, evaluatorName),
    name,
    title: titleOf(name, layout),
    description:
      (systemMessage ?? metaText)
        .split(/\n\s*\n/)[0]
        ?.trim()
        .slice(0, 400) ?? '',
    direction: 'maximize',
    language,
    initialProgramPath,
    initialProgram,
    metaInformation: [{ id: systemMessage ? 'system_message' : 'docstring', weight: 1, text: metaText }],
    variables: { MAX_RUNTIME: runtimeLimitSec },
    runtimeLimitSec,
    evaluatorTimeLimitSec: REPLY_TIME_LIMIT_SEC,
    targetValue: null,
    rewardShaping: { enabled: false, lower: 0, upper: 1, alpha: 1, k: 1 },
    maxCodeLength,
    candidateCommand: [
      '{python}',
      '{runtimeDir}/run_foreign.py',
      layout,
      '{taskDir}',
      '{program}',
      SOLUTION_FILE,
      ...(layout === 'openevolve' ? [settings.cascade, evaluatorName, String(settings.stageTimeoutSec)] : []),
    ],
    evaluatorCommand: [
      '{python}',
      join(runtime, 'foreign_reply.py'),
      '{solution}',
      ...(layout === 'openevolve' ? [settings.featureDimensions] : []),
    ],
    solutionFile: SOLUTION_FILE,
    solutionMaxBytes: 16 * 1024 * 1024,
    tolerances: {},
    layout,
    evaluatorTrust: 'in-sandbox',
    scoreRule: 'combined_score',
    sandboxReadOnlyDirs: { taskDir: dir, runtimeDir: sandboxRuntimeDir(runtime) },
    notices: whole ? [whole.notice] : [],
    ...(settings.features ? { features: settings.features } : {}),
  };
}
