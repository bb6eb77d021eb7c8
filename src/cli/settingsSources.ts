// Every setting the extension has, from the command line: the defaults, then
// --config FILE (a JSON object like VS Code's settings.json, `thetaevolve.*`
// keys, comments and trailing commas allowed), then each --set KEY=VALUE,
// then the dedicated flags (--batch, --endpoint, ...). Validated by the same
// zod schema as the extension's settings; a bad key or value is refused with
// one line naming it.
import { keyDestinations, keyDestinationTexts } from '../engine/common/endpointUrls';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { type ParseError, parse as parseJsoncText, printParseErrorCode } from 'jsonc-parser';
import { defaultSettings, parseSettings, SETTINGS, type SettingSpec, type Settings } from '../engine/common/config';
import { errorMessage } from '../engine/common/errors';
import { taskSettingsUnderPerson } from '../engine/task/taskModelChoice';
import { listFlag, type ParsedArgs, stringFlag, UsageError } from './args';
import { InputError } from './io';

const PREFIX = 'thetaevolve.';
const SPECS = new Map<string, SettingSpec>(SETTINGS.map((s: SettingSpec) => [s.key, s]));

/** The setting a user named, with or without the prefix; refuses unknown keys, suggesting the nearest. */
function specOf(rawKey: string, where: string): SettingSpec {
  const key = rawKey.startsWith(PREFIX) ? rawKey.slice(PREFIX.length) : rawKey;
  const spec = SPECS.get(key);
  if (spec) return spec;
  const near = [...SPECS.keys()].find((k) => k.toLowerCase() === key.toLowerCase() || k.toLowerCase().endsWith(`.${key.toLowerCase()}`));
  throw new UsageError(
    `${where}: unknown setting '${rawKey}'${near ? ` (did you mean thetaevolve.${near}?)` : ''}; see package.json's contributes.configuration for the list`,
  );
}

/** --set's text as the setting's type (the schema then checks ranges and enums). */
function valueOfText(spec: SettingSpec, text: string, where: string): unknown {
  switch (spec.type) {
    case 'boolean':
      if (text === 'true') return true;
      if (text === 'false') return false;
      throw new UsageError(`${where}: thetaevolve.${spec.key} takes true or false, got '${text}'`);
    case 'integer':
    case 'number': {
      const n = Number(text);
      if (text.trim() === '' || !Number.isFinite(n))
        throw new UsageError(`${where}: thetaevolve.${spec.key} takes a number, got '${text}'`);
      return n;
    }
    case 'string':
      return text;
    case 'modelList':
      try {
        return JSON.parse(text) as unknown;
      } catch {
        throw new UsageError(`${where}: thetaevolve.${spec.key} takes a JSON list like [{"name": "m", "weight": 1}], got '${text}'`);
      }
  }
}

/**
 * A settings.json-like text (JSONC: comments and trailing commas, as VS Code
 * reads it) parsed by VS Code's own parser; the first error is thrown with
 * its line and column.
 */
export function parseJsonc(text: string): unknown {
  const errors: ParseError[] = [];
  const value: unknown = parseJsoncText(text, errors, { allowTrailingComma: true, disallowComments: false });
  const first = errors[0];
  if (first) {
    const before = text.slice(0, first.offset).split('\n');
    throw new SyntaxError(`${printParseErrorCode(first.error)} at line ${before.length}, column ${(before.at(-1)?.length ?? 0) + 1}`);
  }
  return value;
}

/** The `thetaevolve.*` entries of a --config file; keys of other extensions are ignored, unknown thetaevolve keys refused. */
export function readConfigFile(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new UsageError(`--config: cannot read ${path}: ${errorMessage(err)}`, { cause: err });
  }
  let parsed: unknown;
  try {
    parsed = parseJsonc(text);
  } catch (err) {
    throw new UsageError(`--config: ${path} is not JSON: ${errorMessage(err)}`, { cause: err });
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new UsageError(`--config: ${path} must hold a JSON object of "thetaevolve.*" settings`);
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(parsed)) {
    if (!key.startsWith(PREFIX)) continue;
    out[specOf(key, `--config ${path}`).key] = value;
  }
  return out;
}

/** The flags that set one setting each, by flag name. */
const FLAG_SETTINGS: Record<string, keyof Settings> = {
  sampler: 'sampler',
  endpoint: 'endpoint',
  model: 'model',
  batch: 'batchSize',
  samples: 'samplesPerPrompt',
  'eval-concurrency': 'evaluationConcurrency',
  seed: 'seed',
  backend: 'evaluation.backend',
};

const FLAG_OF_SETTING = new Map<string, string>([
  ...Object.entries(FLAG_SETTINGS).map(([flag, key]): [string, string] => [key, `--${flag}`]),
  ['trainer.url', '--trainer URL'],
  ['trainer.protocol', '--trainer-protocol'],
  ['lazyPenalty', '--lazy-penalty-level'],
  ['rewardShaping.process', '--reward-process'],
]);

/**
 * The engine names settings (thetaevolve.model); on the command line each
 * gets the flag that sets it: `thetaevolve.model (--model)`, or
 * `thetaevolve.maxTokens (--set maxTokens=...)`.
 */
export function withFlagNames(message: string): string {
  // A setting already followed by a parenthesis (its flag, or its value) is left as it is.
  return message.replace(/thetaevolve\.([A-Za-z]+(?:\.[A-Za-z]+)*)(?! \()/g, (whole, key: string) => {
    if (!SPECS.has(key)) return whole;
    return `${whole} (${FLAG_OF_SETTING.get(key) ?? `--set ${key}=...`})`;
  });
}

/** The ThetaEvolve release's reward processes (run.sh REWARD_PROCESS_TYPE), as --reward-process takes them. */
const REWARD_PROCESSES = ['original_reward', 'rl_normalized_reward', 'format_reward', 'validation_reward', 'improve_reward'] as const;

/** Whether the command line's own --set gives `key` (it wins over --config). */
function setOnCommandLine(args: ParsedArgs, key: string): boolean {
  return listFlag(args, 'set').some((assignment) => {
    const eq = assignment.indexOf('=');
    const name = assignment.slice(0, eq).trim();
    return eq > 0 && (name === key || name === `${PREFIX}${key}`);
  });
}

/**
 * When a --config file names a server that receives a key (thetaevolve.endpoint, or thetaevolve.models with their
 * own endpoints) and a key will be sent: a line naming every origin that receives one, with the setting and the key.
 * A config file is easy to hand over ("try my settings"), and OPENAI_API_KEY goes wherever its servers point.
 */
export function configEndpointNotice(args: ParsedArgs, cwd: string, settings: Settings, apiKey: string | undefined): string | null {
  const configFile = stringFlag(args, 'config');
  if (configFile === undefined) return null;
  const path = resolve(cwd, configFile);
  const fromFile = readConfigFile(path);
  const modelsFromFile = fromFile['models'] !== undefined && !setOnCommandLine(args, 'models') && settings.models.length > 0;
  const endpointFromFile = fromFile['endpoint'] === settings.endpoint;
  if (!modelsFromFile && !endpointFromFile) return null;
  const destinations = keyDestinations(settings, apiKey !== undefined && apiKey !== '', 'OPENAI_API_KEY');
  if (destinations.length === 0) return null;
  return `--config ${path} names servers that receive a key: ${keyDestinationTexts(destinations).join(', ')}`;
}

/**
 * The keys of thetaevolve.models' apiKeyName entries, from the environment: only for models the command line
 * itself names (--set models=...). A --config file or a task's config is a file that can be handed over: its
 * apiKeyName could send any variable of this environment (AWS_SECRET_ACCESS_KEY) to the server it names, so it is
 * refused, naming the way to say it on the command line.
 */
export function modelApiKeysFromEnvironment(
  args: ParsedArgs,
  settings: Settings,
  env: Readonly<Record<string, string | undefined>>,
): Record<string, string> {
  const named = settings.models.filter((m) => m.apiKeyName !== undefined);
  if (named.length === 0 || settings.sampler !== 'llm') return {};
  if (!setOnCommandLine(args, 'models')) {
    const configFile = stringFlag(args, 'config');
    const where = configFile !== undefined ? `--config ${configFile}` : "the task's config";
    throw new InputError(
      `thetaevolve.models of ${where} names apiKeyName ${named.map((m) => `${m.apiKeyName} (model "${m.name}")`).join(', ')}: ` +
        "a key is read from an environment variable only for a model the command line itself names (--set 'models=[...]'), " +
        'never for one a file names, which could send any variable of your environment to the server it chooses',
    );
  }
  const keys: Record<string, string> = {};
  for (const { apiKeyName } of named) {
    const value = apiKeyName === undefined ? undefined : env[apiKeyName]?.trim();
    if (apiKeyName !== undefined && value) keys[apiKeyName] = value;
  }
  return keys;
}

/**
 * Settings of a `run` (or `evaluate`) command line: defaults < the task's own
 * config (`taskSettings`: a release config's models, sampling values,
 * database sizes) < --config < --set < flags. A model or models of the
 * command line drops the config's llm.models whole (`onNotice` says so).
 */
export function settingsFromArgs(
  args: ParsedArgs,
  cwd: string,
  taskSettings: Partial<Settings> = {},
  onNotice: (line: string) => void = () => undefined,
): Settings {
  // What the command line sets, by where (for the line that says who overrides the config's models).
  const raw: Record<string, unknown> = {};
  const setBy = new Map<string, string>();
  const configFile = stringFlag(args, 'config');
  if (configFile !== undefined) {
    const fromFile = readConfigFile(resolve(cwd, configFile));
    Object.assign(raw, fromFile);
    for (const key of Object.keys(fromFile)) setBy.set(key, `thetaevolve.${key} of --config ${configFile}`);
  }
  for (const assignment of listFlag(args, 'set')) {
    const eq = assignment.indexOf('=');
    if (eq <= 0) throw new UsageError(`--set takes KEY=VALUE, got '${assignment}'`);
    const spec = specOf(assignment.slice(0, eq).trim(), '--set');
    raw[spec.key] = valueOfText(spec, assignment.slice(eq + 1), '--set');
    setBy.set(spec.key, `--set ${spec.key}=...`);
  }
  const backend = stringFlag(args, 'backend');
  if (backend !== undefined && backend !== 'local' && backend !== 'slurm')
    throw new UsageError(`--backend must be local or slurm, got '${backend}'`);
  const sampler = stringFlag(args, 'sampler');
  if (sampler !== undefined && sampler !== 'llm' && sampler !== 'mutate')
    throw new UsageError(`--sampler must be llm or mutate, got '${sampler}'`);
  for (const [flag, key] of Object.entries(FLAG_SETTINGS)) {
    const value = args.flags[flag];
    if (value === undefined) continue;
    raw[key] = value;
    setBy.set(key, `--${flag} ${String(value)}`);
  }
  const trainer = stringFlag(args, 'trainer');
  const protocol = stringFlag(args, 'trainer-protocol');
  if (protocol !== undefined && protocol !== 'atropos' && protocol !== 'slime')
    throw new UsageError(`--trainer-protocol must be atropos or slime, got '${protocol}'`);
  if (protocol !== undefined && trainer === undefined) throw new UsageError('--trainer-protocol needs --trainer URL');
  if (trainer !== undefined) {
    raw['trainer.enabled'] = true;
    raw['trainer.url'] = trainer;
  }
  if (protocol !== undefined) raw['trainer.protocol'] = protocol;
  if (args.flags['allow-weak-isolation'] === true) raw['sandbox.allowWeakIsolation'] = true;
  // The release's run.sh choices: LAZY_OUTPUT_PENALTY and REWARD_PROCESS_TYPE.
  const lazyLevel = args.flags['lazy-penalty-level'];
  if (lazyLevel !== undefined) {
    if (lazyLevel !== 0 && lazyLevel !== 1 && lazyLevel !== 2)
      throw new UsageError(`--lazy-penalty-level must be 0, 1 or 2, got ${JSON.stringify(lazyLevel)}`);
    raw.lazyPenalty = lazyLevel === 2;
  }
  const process = stringFlag(args, 'reward-process');
  if (process !== undefined) {
    if (!(REWARD_PROCESSES as readonly string[]).includes(process))
      throw new UsageError(`--reward-process must be one of ${REWARD_PROCESSES.join(', ')}, got '${process}'`);
    raw['rewardShaping.process'] = process;
  }
  const task = taskSettingsUnderPerson(
    taskSettings,
    (key) => setBy.has(key),
    (key) => setBy.get(key) ?? key,
  );
  if (task.notice) onNotice(task.notice);
  try {
    return parseSettings({ ...defaultSettings(), ...task.settings, ...raw });
  } catch (err) {
    throw new UsageError(errorMessage(err), { cause: err });
  }
}
