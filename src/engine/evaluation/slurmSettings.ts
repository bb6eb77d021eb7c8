// From the `thetaevolve.slurm.*` settings to the SLURM backend's options,
// validated: a bad setting fails the run's start with one clear message.
import { join } from 'node:path';
import { z } from 'zod';
import type { Settings } from '../common/config';
import { errorMessage, firstZodIssue } from '../common/errors';
import type { CandidatesPerJob } from './slurmPacking';

export type SlurmSettings = Pick<
  Settings,
  | 'slurm.partition'
  | 'slurm.account'
  | 'slurm.sbatchArguments'
  | 'slurm.exportVariables'
  | 'slurm.setupCommands'
  | 'slurm.nodeCommand'
  | 'slurm.stagingDirectory'
  | 'slurm.maxJobs'
  | 'slurm.pollSeconds'
  | 'slurm.maxResubmits'
  | 'slurm.candidatesPerJob'
>;

export type SlurmInferenceSettings = Pick<
  Settings,
  | 'slurm.inference.count'
  | 'slurm.inference.command'
  | 'slurm.inference.sbatchArguments'
  | 'slurm.inference.setupCommands'
  | 'slurm.inference.maxResubmits'
>;

/** Inference servers started as SLURM jobs (thetaevolve.slurm.inference.*). */
export interface SlurmInferenceOptions {
  count: number;
  /** The job's command, {port} and {host} filled in on the node. */
  command: string;
  sbatchArguments: string[];
  setupCommands: string[];
  maxResubmits: number;
}

/** The cluster-facing part of the SLURM backend's options (the rest comes from the run). */
export interface SlurmClusterOptions {
  partition: string;
  account: string;
  /**
   * Extra sbatch options, one word each, after ours (so they win).
   * `--export=NONE` here makes a job start from the login environment on the
   * node instead (about 1.4 s more per job).
   */
  sbatchArguments: string[];
  /** Variables of ours a job gets besides the tools' few (slurmToolEnvironment): sbatch passes its whole (scrubbed) environment on. */
  exportVariables: string[];
  /** Shell lines run first in every job (`module load ...`). */
  setupCommands: string[];
  /** How a job starts Node.js on the compute node (a shell word or path). */
  nodeCommand: string;
  /** Folder on the shared filesystem that holds the run's staging folder. */
  stagingDirectory: string;
  maxJobs: number;
  pollSeconds: number;
  maxResubmits: number;
  /** Candidates per array task, run at once by one `evaluate` on the node (slurmPacking.ts). */
  candidatesPerJob: CandidatesPerJob;
}

/** Split a command line into words the way a POSIX shell would for plain and quoted words (no expansions). */
export function splitShellWords(line: string): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  let quote: "'" | '"' | null = null;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i] as string;
    if (quote) {
      if (ch === quote) quote = null;
      else if (ch === '\\' && quote === '"' && i + 1 < line.length && '"\\$`'.includes(line[i + 1] as string)) word += line[++i];
      else word += ch;
    } else if (ch === "'" || ch === '"') {
      quote = ch;
      inWord = true;
    } else if (ch === '\\' && i + 1 < line.length) {
      word += line[++i];
      inWord = true;
    } else if (/\s/.test(ch)) {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    } else {
      word += ch;
      inWord = true;
    }
  }
  if (quote) throw new Error(`unclosed ${quote} quote in ${JSON.stringify(line)}`);
  if (inWord) words.push(word);
  return words;
}

const SbatchArgumentsSchema = z
  .string()
  .transform((text, ctx) => {
    try {
      return splitShellWords(text);
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: errorMessage(err) });
      return z.NEVER;
    }
  })
  .pipe(
    z.array(
      z.string().refine((w) => !/^--?(parsable|array|job-name|J|output|o|chdir|D|wrap)(=|$)/.test(w) && !/^-[JoDa]/.test(w), {
        message: 'names an option ThetaEvolve sets itself (--parsable, --array, --job-name, --output, --chdir, --wrap)',
      }),
    ),
  );

const ExportVariablesSchema = z
  .string()
  .transform((text) => text.split(/[\s,]+/).filter((name) => name !== ''))
  .pipe(z.array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'holds a word that is not a variable name (letters, digits, _)')));

const CandidatesPerJobSchema = z
  .string()
  .trim()
  .regex(/^(auto|\d+)$/, 'must be auto or a whole number of candidates')
  .transform((text): CandidatesPerJob => (text === 'auto' ? 'auto' : Number(text)))
  .refine((value) => value === 'auto' || (value >= 1 && value <= 1000), 'must be auto or a number from 1 to 1000');

const NodeCommandSchema = z
  .string()
  .trim()
  .min(1, 'is empty: say how a job starts Node.js, e.g. node or /opt/node20/bin/node')
  .refine((s) => !/[\n\r]/.test(s), 'must be one line');
const SlurmNameSchema = z
  .string()
  .trim()
  .refine((s) => /^[A-Za-z0-9_.,+-]*$/.test(s), 'may hold only letters, digits and _ . , + -');

function settingLines(text: string): string[] {
  return text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '');
}

function settingField<K extends string, T>(settings: Record<K, unknown>, key: K, schema: z.ZodType<T>): T {
  const parsed = schema.safeParse(settings[key]);
  if (parsed.success) return parsed.data;
  throw new Error(`Setting thetaevolve.${key} ${firstZodIssue(parsed.error, '').message} (got ${JSON.stringify(settings[key])}).`);
}

/** Validate thetaevolve.slurm.inference.*; null when no inference job is asked for. Throws one message naming the bad setting. */
export function slurmInferenceOptionsFromSettings(settings: SlurmInferenceSettings): SlurmInferenceOptions | null {
  const count = settings['slurm.inference.count'];
  if (count === 0) return null;
  const command = settingField(
    settings,
    'slurm.inference.command',
    z
      .string()
      .trim()
      .min(1, 'is empty: say what an inference job runs, e.g. vllm serve MODEL --host {host} --port {port}')
      .refine((s) => s.includes('{port}'), 'has no {port}: the server must listen on the port the job picked')
      .refine((s) => !/[\n\r]/.test(s), 'must be one line'),
  );
  return {
    count,
    command,
    sbatchArguments: settingField(settings, 'slurm.inference.sbatchArguments', SbatchArgumentsSchema),
    setupCommands: settingLines(settings['slurm.inference.setupCommands']),
    maxResubmits: settings['slurm.inference.maxResubmits'],
  };
}

/**
 * Validate the SLURM settings; `runFolder` is where the run keeps its files
 * (the default staging place). Throws one message naming the bad setting.
 */
export function slurmOptionsFromSettings(settings: SlurmSettings, runFolder: string): SlurmClusterOptions {
  const field = <T>(key: keyof SlurmSettings, schema: z.ZodType<T>): T => {
    const parsed = schema.safeParse(settings[key]);
    if (parsed.success) return parsed.data;
    throw new Error(`Setting thetaevolve.${key} ${firstZodIssue(parsed.error, '').message} (got ${JSON.stringify(settings[key])}).`);
  };
  const staging = settings['slurm.stagingDirectory'].trim();
  return {
    partition: field('slurm.partition', SlurmNameSchema),
    account: field('slurm.account', SlurmNameSchema),
    sbatchArguments: field('slurm.sbatchArguments', SbatchArgumentsSchema),
    exportVariables: field('slurm.exportVariables', ExportVariablesSchema),
    setupCommands: settings['slurm.setupCommands']
      .split(/\r?\n/)
      .map((l) => l.trim())
      .filter((l) => l !== ''),
    nodeCommand: field('slurm.nodeCommand', NodeCommandSchema),
    stagingDirectory: staging === '' ? join(runFolder, 'slurm') : staging,
    maxJobs: settings['slurm.maxJobs'],
    pollSeconds: settings['slurm.pollSeconds'],
    maxResubmits: settings['slurm.maxResubmits'],
    candidatesPerJob: field('slurm.candidatesPerJob', CandidatesPerJobSchema),
  };
}
