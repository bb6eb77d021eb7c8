// Task folders of the ThetaEvolve release (ypwang61/ThetaEvolve,
// openevolve_adapted/examples/<task>/), read unchanged
// (docs/architecture.md "Release task folders"):
//   configs/*.yaml                 one config per run (variables, llm, prompt, database, evaluator)
//   evaluators/evaluator_modular.py evaluate(program_path) with openevolve.modular_utils and verify.py
//   initial_programs/initial_program*.py
// A folder with one config is a task; with several, each config is one (the
// YAML's path names it). The evaluator runs the program itself, so the whole
// evaluator runs inside the sandbox (foreign/run_release.py) and the score is
// labelled not protected, as for OpenEvolve folders. The config becomes the
// run's settings below flags, --set and --config (Task.runSettings).
import { execFile } from 'node:child_process';
import { readdir, stat } from 'node:fs/promises';
import { basename, dirname, extname, join, resolve } from 'node:path';
import { z } from 'zod';
import type { Settings } from '../common/config';
import { errorMessage, zodIssueText } from '../common/errors';
import { foreignRuntimeDir, sandboxRuntimeDir } from './foreignTasks';
import { evolveBlockProblem, type Task, TaskError } from './task';
import { readTaskText } from './taskText';

const PYTHON = '/usr/bin/python3';
const SOLUTION_FILE = 'solution.json';
const CONFIG_READ_TIMEOUT_MS = 20000;
/** The trusted step only reads one JSON file. */
const REPLY_TIME_LIMIT_SEC = 30;
/** The release's defaults (openevolve/config.py) where a config is silent. */
const RELEASE_DEFAULT_TIMEOUT_SEC = 300;
const RELEASE_DEFAULT_MAX_CODE_LENGTH = 10000;
/** create_score_transform_config_from_dict's defaults: every evaluator result carries a shaped reward, even without score_transform. */
const RELEASE_DEFAULT_SHAPING = { lower: 0, upper: 1, alpha: 1, k: 5 };
/** Our prompt's feedback limit (thetaevolve.feedbackChars' maximum). */
const MAX_FEEDBACK_CHARS = 20480;

export const RELEASE_EVALUATOR = join('evaluators', 'evaluator_modular.py');
export const RELEASE_INITIAL_PROGRAM = join('initial_programs', 'initial_program.py');
/** What the release's evaluator imports its checks from. */
const RELEASE_VERIFY = join('evaluators', 'verify.py');

const finite = z.number().finite();
const ReleaseConfigSchema = z.looseObject({
  variables: z
    .looseObject({
      MAX_RUNTIME: finite.positive().nullish(),
      score_transform: z
        .looseObject({
          score_range_min: finite.nullish(),
          score_range_max: finite.nullish(),
          alpha: finite.positive().nullish(),
          optimize_mode: z.enum(['maximize', 'minimize', 'MAXIMIZE', 'MINIMIZE', 'Maximize', 'Minimize']).nullish(),
          positive_multiplier: finite.positive().nullish(),
        })
        .nullish(),
    })
    .nullish(),
  random_seed: z.number().int().min(0).nullish(),
  max_code_length: z.number().int().positive().nullish(),
  diff_based_evolution: z.boolean().nullish(),
  llm: z
    .looseObject({
      models: z.array(z.looseObject({ name: z.string().min(1), weight: finite.nullish() })).nullish(),
      temperature: finite.min(0).max(2).nullish(),
      top_p: finite.min(0).max(1).nullish(),
      max_tokens: z.number().int().positive().nullish(),
      timeout: finite.positive().nullish(),
      retries: z.number().int().min(0).nullish(),
    })
    .nullish(),
  prompt: z
    .looseObject({
      num_top_programs: z.number().int().min(0).max(32).nullish(),
      include_artifacts: z.boolean().nullish(),
      max_artifact_bytes: z.number().int().min(0).nullish(),
    })
    .nullish(),
  database: z
    .looseObject({
      population_size: z.number().int().positive().nullish(),
      archive_size: z.number().int().positive().nullish(),
      num_islands: z.number().int().positive().nullish(),
      exploitation_ratio: finite.min(0).max(1).nullish(),
      exploration_ratio: finite.min(0).max(1).nullish(),
      migration_interval: z.number().int().positive().nullish(),
      migration_rate: finite.min(0).max(1).nullish(),
    })
    .nullish(),
  evaluator: z.looseObject({ timeout: finite.positive().nullish(), cascade_evaluation: z.boolean().nullish() }).nullish(),
});
type ReleaseConfig = z.output<typeof ReleaseConfigSchema>;

/** What release_config.py prints: the config, and its system texts with the variables substituted as the release does. */
const ReaderOutputSchema = z.object({
  config: z.unknown(),
  messages: z.array(z.object({ weight: finite.positive(), text: z.string() })),
  system_message: z.string().nullable(),
  variables_json: z.string(),
});

/**
 * The keys of a config this run uses (section.key); every other key is named
 * in one line at start. `variables` are all used: substituted into the texts,
 * read by the evaluator.
 */
const USED_KEYS = new Set([
  'variables',
  'random_seed',
  'max_code_length',
  'diff_based_evolution',
  'llm.models',
  'llm.temperature',
  'llm.top_p',
  'llm.max_tokens',
  'llm.timeout',
  'llm.retries',
  'prompt.system_message',
  'prompt.system_message_list',
  'prompt.use_system_message_sampling',
  'prompt.num_top_programs',
  'prompt.include_artifacts',
  'prompt.max_artifact_bytes',
  'database.population_size',
  'database.archive_size',
  'database.num_islands',
  'database.exploitation_ratio',
  'database.exploration_ratio',
  'database.migration_interval',
  'database.migration_rate',
  'evaluator.timeout',
  'evaluator.cascade_evaluation',
  'evaluator.copy_folders',
  'evaluator.copy_files',
]);

async function isFile(path: string): Promise<boolean> {
  return (await stat(path).catch(() => null))?.isFile() ?? false;
}

async function namesIn(dir: string): Promise<string[]> {
  return readdir(dir).catch(() => []);
}

/** Whether `dir` is in the release's layout: configs/*.yaml, evaluators/evaluator_modular.py, initial_programs/initial_program*.py. */
export async function isReleaseFolder(dir: string): Promise<boolean> {
  const [configs, evaluator, programs] = await Promise.all([
    releaseConfigsOf(dir),
    isFile(join(dir, RELEASE_EVALUATOR)),
    namesIn(join(dir, 'initial_programs')),
  ]);
  return configs.length > 0 && evaluator && programs.some((name) => /^initial_program.*\.py$/.test(name));
}

/** The folder's configs (configs/*.yaml, *.yml), sorted by path. */
export async function releaseConfigsOf(dir: string): Promise<string[]> {
  const names = await namesIn(join(dir, 'configs'));
  const configs = names.filter((name) => /\.ya?ml$/.test(name) && !name.startsWith('.')).map((name) => join(dir, 'configs', name));
  const files = await Promise.all(configs.map(async (path) => ((await isFile(path)) ? path : null)));
  return files.filter((f): f is string => f !== null).sort();
}

/** The release folder and config `dirOrFile` names: a config YAML in its configs/, or the folder with its only config. */
export async function releaseTaskOf(dirOrFile: string): Promise<{ dir: string; config: string } | null> {
  const given = resolve(dirOrFile);
  if (await isFile(given)) {
    const dir = dirname(dirname(given));
    if (basename(dirname(given)) !== 'configs' || !/\.ya?ml$/.test(given) || !(await isReleaseFolder(dir))) return null;
    return { dir, config: given };
  }
  if (!(await isReleaseFolder(given))) return null;
  const configs = await releaseConfigsOf(given);
  if (configs.length > 1) {
    throw new TaskError(
      `${given}: a ThetaEvolve release folder with several configs (${configs.map((c) => basename(c)).join(', ')}): name one, e.g. ${join(given, 'configs', basename(configs[0] as string))}`,
    );
  }
  return { dir: given, config: configs[0] as string };
}

/**
 * The release's `openevolve` package around a task folder: searched only
 * inside the release checkout, from the folder up to the checkout's root (the
 * first ancestor holding openevolve_adapted/), never above it: a package
 * planted in /tmp/openevolve would score every release folder under /tmp.
 * At each level, openevolve/ (the release's openevolve_adapted/) or
 * openevolve_adapted/openevolve/ (the root). A package someone else could
 * change (writable by group or others, or owned by another user than root and
 * us) is passed over. Its `openevolve` folder, or null (then an installed
 * one, or ours). docs/architecture.md "Release task folders".
 */
export async function releasePackageNear(dir: string): Promise<string | null> {
  const levels: string[] = [];
  for (let at = resolve(dir); ; at = dirname(at)) {
    levels.push(at);
    if ((await stat(join(at, 'openevolve_adapted')).catch(() => null))?.isDirectory()) break;
    if (dirname(at) === at) return null;
  }
  for (const at of levels)
    for (const candidate of [join(at, 'openevolve'), join(at, 'openevolve_adapted', 'openevolve')])
      if ((await isFile(join(candidate, 'modular_utils', 'evaluation_controller.py'))) && (await onlyOursToChange(candidate, at)))
        return candidate;
  return null;
}

/** The most entries of a package looked at for who may change it (the release's has about a hundred). */
const PACKAGE_ENTRIES_CHECKED = 5000;

/** Whether no one but root and this user can change `pkg`: its tree, and the folders from `root` down to it. */
async function onlyOursToChange(pkg: string, root: string): Promise<boolean> {
  const uid = process.getuid?.();
  const owned = (s: { uid: number }): boolean => uid === undefined || s.uid === 0 || s.uid === uid;
  const ours = (s: { uid: number; mode: number }): boolean => owned(s) && (s.mode & 0o022) === 0;
  for (let at = pkg; ; at = dirname(at)) {
    const s = await stat(at).catch(() => null);
    // A sticky level (/tmp) lets no one else move our entries in it.
    const sticky = at === root && s !== null && owned(s) && (s.mode & 0o1000) !== 0;
    if (!s || !(ours(s) || sticky)) return false;
    if (at === root || dirname(at) === at) break;
  }
  const queue = [pkg];
  let seen = 0;
  while (queue.length > 0) {
    const folder = queue.pop() as string;
    const entries = await readdir(folder, { withFileTypes: true }).catch(() => null);
    if (!entries) return false;
    for (const entry of entries) {
      if (++seen > PACKAGE_ENTRIES_CHECKED) return false;
      const path = join(folder, entry.name);
      // A link is judged by what it leads to (Python follows it) and not walked into.
      const s = await stat(path).catch(() => null);
      if (!s || !ours(s)) return false;
      if (entry.isDirectory()) queue.push(path);
    }
  }
  return true;
}

/** Run release_config.py (PyYAML, as the release reads its configs) and check what we use. */
export async function readReleaseConfig(
  file: string,
): Promise<{ config: ReleaseConfig; raw: Record<string, unknown>; texts: { weight: number; text: string }[]; variablesJson: string }> {
  const script = join(foreignRuntimeDir(), 'release_config.py');
  const stdout = await new Promise<string>((resolvePromise, reject) => {
    execFile(
      PYTHON,
      [script, file],
      { timeout: CONFIG_READ_TIMEOUT_MS, maxBuffer: 8 * 1024 * 1024, env: { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8' } },
      (err, out, stderr) => {
        if (err)
          reject(new TaskError(`${file}: cannot read it: ${(stderr.trim().split('\n').pop() ?? '') || errorMessage(err)}`, { cause: err }));
        else resolvePromise(out);
      },
    );
  });
  let output: z.output<typeof ReaderOutputSchema>;
  try {
    output = ReaderOutputSchema.parse(JSON.parse(stdout));
  } catch (err) {
    throw new TaskError(`${file}: the YAML reader gave no usable JSON: ${errorMessage(err)}`, { cause: err });
  }
  const parsed = ReleaseConfigSchema.safeParse(output.config);
  if (!parsed.success) throw new TaskError(`${file}: field ${zodIssueText(parsed.error, '(top level)')}`);
  const texts = output.messages.filter((m) => m.text.trim() !== '');
  const system = output.system_message?.trim();
  // "system_message" alone is the name of OpenEvolve's default template, not a text.
  if (texts.length === 0 && system && system !== 'system_message') texts.push({ weight: 1, text: system });
  return { config: parsed.data, raw: output.config as Record<string, unknown>, texts, variablesJson: output.variables_json };
}

/** Every section.key of the config that changes nothing here (secrets named, never shown). */
export function unusedConfigKeys(raw: Record<string, unknown>): string[] {
  const unused: string[] = [];
  for (const [key, value] of Object.entries(raw)) {
    if (USED_KEYS.has(key)) continue;
    if (value !== null && typeof value === 'object' && !Array.isArray(value) && ['llm', 'prompt', 'database', 'evaluator'].includes(key)) {
      for (const inner of Object.keys(value)) if (!USED_KEYS.has(`${key}.${inner}`)) unused.push(`${key}.${inner}`);
    } else unused.push(key);
  }
  return unused;
}

/** The run settings a config gives (flags, --set and --config win over them), with what to tell about them. */
export function runSettingsOfConfig(config: ReleaseConfig): { settings: Partial<Settings>; notices: string[] } {
  const settings: Partial<Settings> = {};
  const notices: string[] = [];
  const { llm, database: db, prompt } = config;
  const models = llm?.models ?? [];
  const first = models[0];
  // Said whatever their number: the release's RL runs sample from the trained model, which the server lists under its own name.
  if (models.length > 1) {
    // The weighted list as it is (docs/algorithm.md section 12): each prompt draws one by weight.
    settings.models = models.map((m) => (m.weight == null ? { name: m.name } : { name: m.name, weight: m.weight }));
    notices.push(
      `llm.models lists ${models.length} models (${models.map((m) => `${m.name} ${m.weight ?? 1}`).join(', ')}): each prompt draws one by weight unless you name a model or models (--model, --set, your settings), which replace the list; with RL on, only thetaevolve.trainer.model's rollouts (default ${first?.name}) are sent.`,
    );
  } else if (first) {
    settings.model = first.name;
    notices.push(`llm.models: this run asks for ${first.name} (--model or --set model=... picks another).`);
  }
  if (llm?.temperature != null) settings.temperature = llm.temperature;
  if (llm?.top_p != null) settings.topP = llm.top_p;
  if (llm?.max_tokens != null) settings.maxTokens = llm.max_tokens;
  if (llm?.timeout != null) settings.requestTimeoutSeconds = Math.ceil(llm.timeout);
  if (llm?.retries != null) settings.maxRetries = llm.retries;
  if (db?.population_size != null) settings['database.populationSize'] = db.population_size;
  if (db?.archive_size != null) settings['database.archiveSize'] = db.archive_size;
  if (db?.num_islands != null) settings['database.numIslands'] = db.num_islands;
  if (db?.exploitation_ratio != null) settings['database.exploitationRatio'] = db.exploitation_ratio;
  if (db?.exploration_ratio != null) settings['database.explorationRatio'] = db.exploration_ratio;
  if (db?.migration_interval != null) settings['database.migrationInterval'] = db.migration_interval;
  if (db?.migration_rate != null) settings['database.migrationRate'] = db.migration_rate;
  if (prompt?.num_top_programs != null) settings.topPrograms = prompt.num_top_programs;
  if (prompt?.include_artifacts === false) settings.feedbackChars = 0;
  else if (prompt?.max_artifact_bytes != null) settings.feedbackChars = Math.min(MAX_FEEDBACK_CHARS, prompt.max_artifact_bytes);
  if (config.random_seed != null) settings.seed = config.random_seed;
  if (config.diff_based_evolution === false)
    notices.push('diff_based_evolution is false, but ThetaEvolve asks for SEARCH/REPLACE diffs, as the release gym does.');
  if (config.evaluator?.cascade_evaluation === true)
    notices.push('evaluator.cascade_evaluation: the release evaluator has one stage; it runs once.');
  return { settings, notices };
}

/** A task name from the folder and the config's postfix (config_<task>_it_XL.yaml: "<task>-it_xl"). */
function releaseTaskName(dir: string, config: string): string {
  const clean = (s: string): string =>
    s
      .toLowerCase()
      .replace(/[^a-z0-9._-]+/g, '-')
      .replace(/^[^a-z0-9]+/, '');
  const folder = basename(dir);
  const stem = basename(config, extname(config));
  const postfix = stem.startsWith(`config_${folder}_`) ? stem.slice(`config_${folder}_`.length) : stem.replace(/^config_?/, '');
  return clean(postfix ? `${folder}-${postfix}` : folder).slice(0, 80) || 'task';
}

/** Whether the evaluator minimises: the release passes maximize=False to ObjectiveBasedProblemEvaluator for such tasks. */
function evaluatorMinimises(source: string): boolean {
  return /\bmaximize\s*=\s*False\b/.test(source);
}

/** Load a release task: its folder (one config) or a config YAML in its configs/; the program from --program, else initial_programs/initial_program.py. */
export async function loadReleaseTask(dirOrFile: string): Promise<Task> {
  const found = await releaseTaskOf(dirOrFile);
  if (found === null)
    throw new TaskError(
      `${dirOrFile}: not a ThetaEvolve release task folder (configs/*.yaml, evaluators/evaluator_modular.py, initial_programs/initial_program.py) or a config in one`,
    );
  const { dir, config: configPath } = found;
  const initialProgramPath = join(dir, RELEASE_INITIAL_PROGRAM);
  // Each read only inside the folder, as a task.json folder's are: a link out of it is refused, naming where it leads.
  const program = await readTaskText(initialProgramPath, dir);
  if (!program.ok) throw new TaskError(`${initialProgramPath}: cannot read the initial program: it ${program.problem}`);
  const initialProgram = program.text;
  const blockProblem = evolveBlockProblem(initialProgram);
  if (blockProblem) throw new TaskError(`${initialProgramPath}: ${blockProblem}`);
  const evaluatorPath = join(dir, RELEASE_EVALUATOR);
  const evaluator = await readTaskText(evaluatorPath, dir);
  if (!evaluator.ok) throw new TaskError(`${evaluatorPath}: cannot read the evaluator: it ${evaluator.problem}`);
  const verifyPath = join(dir, RELEASE_VERIFY);
  if (await isFile(verifyPath)) {
    const verify = await readTaskText(verifyPath, dir);
    if (!verify.ok) throw new TaskError(`${verifyPath}: cannot read the evaluator's verify.py: it ${verify.problem}`);
  }
  const configText = await readTaskText(configPath, dir);
  if (!configText.ok) throw new TaskError(`${configPath}: cannot read the config: it ${configText.problem}`);
  if (!/^def\s+evaluate\s*\(/m.test(evaluator.text)) throw new TaskError(`${evaluatorPath}: defines no evaluate(program_path)`);

  const { config, raw, texts } = await readReleaseConfig(configPath);
  if (texts.length === 0)
    throw new TaskError(
      `${configPath}: gives no system text (prompt.system_message_list with use_system_message_sampling, or prompt.system_message)`,
    );
  const transform = config.variables?.score_transform;
  const mode = transform?.optimize_mode?.toLowerCase() ?? null;
  const direction = evaluatorMinimises(evaluator.text) ? 'minimize' : 'maximize';
  if (mode !== null && mode !== direction)
    throw new TaskError(
      `${configPath}: variables.score_transform.optimize_mode is ${mode}, but ${RELEASE_EVALUATOR} ${direction}s (maximize=${direction === 'maximize' ? 'True' : 'False'}): make them agree`,
    );
  const shaping = {
    lower: transform?.score_range_min ?? RELEASE_DEFAULT_SHAPING.lower,
    upper: transform?.score_range_max ?? RELEASE_DEFAULT_SHAPING.upper,
    alpha: transform?.alpha ?? RELEASE_DEFAULT_SHAPING.alpha,
    k: transform?.positive_multiplier ?? RELEASE_DEFAULT_SHAPING.k,
  };
  if (!(shaping.upper > shaping.lower))
    throw new TaskError(`${configPath}: variables.score_transform: score_range_max must be greater than score_range_min`);
  const maxCodeLength = config.max_code_length ?? RELEASE_DEFAULT_MAX_CODE_LENGTH;
  if (initialProgram.length > maxCodeLength)
    throw new TaskError(
      `${initialProgramPath}: the initial program is ${initialProgram.length} characters, over max_code_length (${maxCodeLength})`,
    );
  const maxRuntime = config.variables?.MAX_RUNTIME ?? RELEASE_DEFAULT_TIMEOUT_SEC;
  // The sandbox's limit is the release's evaluator.timeout (its gym's limit on one evaluation); the program's own is MAX_RUNTIME.
  const runtimeLimitSec = config.evaluator?.timeout ?? Math.max(maxRuntime, RELEASE_DEFAULT_TIMEOUT_SEC);
  const { settings, notices } = runSettingsOfConfig(config);
  const unused = unusedConfigKeys(raw);
  if (unused.length > 0) notices.unshift(`${basename(configPath)}: these keys change nothing here: ${unused.join(', ')}`);
  const releasePackage = await releasePackageNear(dir);
  const runtime = foreignRuntimeDir();
  const name = releaseTaskName(dir, configPath);
  const words = name.replace(/[-_.]+/g, ' ').trim();
  const first = texts[0] as { text: string };
  return {
    dir,
    source: configPath,
    name,
    title: `${words.charAt(0).toUpperCase()}${words.slice(1)} (ThetaEvolve release folder)`,
    description:
      first.text
        .split(/\n\s*\n/)[0]
        ?.trim()
        .slice(0, 400) ?? '',
    direction,
    language: 'py',
    initialProgramPath,
    initialProgram,
    metaInformation: texts.map((t, i) => ({ id: `system_message_${i + 1}`, weight: t.weight, text: t.text })),
    // The texts are substituted already (the release's rules); MAX_RUNTIME stays known for the prompt's own use.
    variables: { MAX_RUNTIME: maxRuntime },
    runtimeLimitSec,
    evaluatorTimeLimitSec: REPLY_TIME_LIMIT_SEC,
    targetValue: null,
    // Off, as the release's default reward (original_reward); thetaevolve.rewardShaping.mode / --reward-process turn it on.
    rewardShaping: { enabled: false, ...shaping },
    maxCodeLength,
    candidateCommand: [
      '{python}',
      '{runtimeDir}/run_release.py',
      '{taskDir}',
      `{taskDir}/configs/${basename(configPath)}`,
      '{program}',
      SOLUTION_FILE,
      releasePackage !== null ? '{releasePackage}' : '-',
    ],
    evaluatorCommand: ['{python}', join(runtime, 'foreign_reply.py'), '{solution}'],
    solutionFile: SOLUTION_FILE,
    solutionMaxBytes: 16 * 1024 * 1024,
    tolerances: {},
    layout: 'release',
    evaluatorTrust: 'in-sandbox',
    // The release's combined_score: the objective when maximising (a valid 0 stays valid), 1/objective when minimising.
    scoreRule: direction === 'maximize' ? 'combined_score' : 'direction',
    sandboxReadOnlyDirs: {
      taskDir: dir,
      runtimeDir: sandboxRuntimeDir(runtime),
      ...(releasePackage !== null ? { releasePackage } : {}),
    },
    notices: [
      ...notices,
      releasePackage !== null
        ? `openevolve.modular_utils: the release's own package at ${releasePackage} (ThetaEvolve's stand-in where it does not import)`
        : "openevolve.modular_utils: ThetaEvolve's stand-in (no release checkout around the folder; an openevolve package installed in the Python used is preferred)",
    ],
    runSettings: settings,
  };
}
