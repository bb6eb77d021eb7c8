// `thetaevolve convert SPEC --inputs JSON`: a FunSearch specification (one
// Python file: a function decorated @funsearch.run, the evaluation, one
// decorated @funsearch.evolve, the function the model rewrites, and helpers)
// becomes a folder in OpenEvolve's layout, which ThetaEvolve runs unchanged:
//   initial_program.py  the specification's text, with EVOLVE-BLOCK markers
//                       around the @funsearch.evolve function (nothing else changed)
//   evaluator.py        foreign/funsearch_evaluator.py: the run function once per
//                       input, the scores reduced (last, mean or sum)
//   funsearch.json      the run function's name, the inputs, the reduction
//   config.yaml         the prompt text and the time limit (FunSearch's 30 s per input)
// As in FunSearch the evaluation runs in the candidate's own process, so the
// folder's scores are labelled not protected (evaluatorTrust 'in-sandbox').
import { execFile } from 'node:child_process';
import { lstat, mkdir, readdir } from 'node:fs/promises';
import { copyToNewFile, writeNewFile } from '../newFiles';
import { basename, dirname, extname, join, resolve } from 'node:path';
import { z } from 'zod';
import { EVOLVE_BLOCK_END, EVOLVE_BLOCK_START } from '../common/diff';
import { errorMessage } from '../common/errors';
import { foreignRuntimeDir } from './foreignTasks';
import { leadingDocText } from './scaffold';
import { type Task, TaskError, loadTask } from './task';
import { readTaskText } from './taskText';

export const FUNSEARCH_REDUCTIONS = ['last', 'mean', 'sum'] as const;
export type FunSearchReduction = (typeof FUNSEARCH_REDUCTIONS)[number];
/** FunSearch's Evaluator default (implementation/evaluator.py, timeout_seconds=30), per input. */
const FUNSEARCH_TIMEOUT_PER_INPUT_SEC = 30;
const PYTHON = '/usr/bin/python3';

/** Files a FunSearch conversion writes into its folder. */
export const FUNSEARCH_FILES = {
  program: 'initial_program.py',
  evaluator: 'evaluator.py',
  settings: 'funsearch.json',
  config: 'config.yaml',
} as const;

const SpecPartsSchema = z.union([
  z.object({ run: z.string(), evolve: z.string(), firstLine: z.number().int().positive(), lastLine: z.number().int().positive() }),
  z.object({ problem: z.string() }),
]);

type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
const JsonValueSchema: z.ZodType<JsonValue> = z.lazy(() =>
  z.union([z.string(), z.number().finite(), z.boolean(), z.null(), z.array(JsonValueSchema), z.record(z.string(), JsonValueSchema)]),
);
const InputsSchema = z.array(JsonValueSchema).min(1, 'needs at least one input');

/** The inputs of --inputs: a JSON array, one item per call of the run function (a list item is one argument, a tuple). */
export function parseFunSearchInputs(text: string): JsonValue[] {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new TaskError(
      `--inputs: not JSON (${errorMessage(err)}); give a JSON array of inputs, e.g. --inputs '[8]' or '[[12, 7], [15, 10]]'`,
    );
  }
  const parsed = InputsSchema.safeParse(raw);
  if (!parsed.success)
    throw new TaskError(
      `--inputs: must be a non-empty JSON array of inputs, e.g. '[8]' or '[[12, 7], [15, 10]]' (got ${text.slice(0, 60)})`,
    );
  return parsed.data;
}

async function specParts(specPath: string): Promise<{ run: string; evolve: string; firstLine: number; lastLine: number }> {
  const script = join(foreignRuntimeDir(), 'funsearch_spec.py');
  const text = await new Promise<string>((resolvePromise, reject) => {
    execFile(
      PYTHON,
      [script, specPath],
      { timeout: 20000, maxBuffer: 1024 * 1024, env: { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8' } },
      (err, stdout, stderr) => {
        if (err) reject(new TaskError(`${specPath}: cannot read it: ${(stderr.trim().split('\n').pop() ?? '') || errorMessage(err)}`));
        else resolvePromise(stdout);
      },
    );
  });
  const parts = SpecPartsSchema.parse(JSON.parse(text));
  if ('problem' in parts) throw new TaskError(`${specPath}: not a FunSearch specification ThetaEvolve can use: ${parts.problem}`);
  return parts;
}

/** The specification's text with EVOLVE-BLOCK markers around lines first..last (1-based), nothing else changed. */
export function markEvolveFunction(text: string, firstLine: number, lastLine: number): string {
  const lines = text.split('\n');
  return [
    ...lines.slice(0, firstLine - 1),
    `# ${EVOLVE_BLOCK_START}`,
    ...lines.slice(firstLine - 1, lastLine),
    `# ${EVOLVE_BLOCK_END}`,
    ...lines.slice(lastLine),
  ].join('\n');
}

/** A YAML block scalar of `text`, indented for a key at `indent` spaces. */
function yamlBlock(text: string, indent: number): string {
  const pad = ' '.repeat(indent + 2);
  return `|\n${text
    .split('\n')
    .map((line) => (line.trim() === '' ? '' : `${pad}${line}`))
    .join('\n')}`;
}

export interface FunSearchConversion {
  dir: string;
  files: string[];
  task: Task;
  run: string;
  evolve: string;
}

/** Convert the FunSearch specification `specPath` into a new folder (default: beside it, named after it). Throws TaskError with the reason when it cannot. */
export async function convertFunSearchSpec(
  specPath: string,
  options: { inputs: JsonValue[]; reduce: FunSearchReduction; outputDir?: string },
): Promise<FunSearchConversion> {
  const spec = resolve(specPath);
  const read = await readTaskText(spec);
  if (!read.ok) throw new TaskError(`${spec}: cannot read the specification: it ${read.problem}`);
  const parts = await specParts(spec);
  const dir = resolve(options.outputDir ?? join(dirname(spec), basename(spec, extname(spec))));
  // A link planted at the folder's name (beside a cloned specification) is refused, never written through.
  if ((await lstat(dir).catch(() => null))?.isSymbolicLink())
    throw new TaskError(
      `${dir}: is a symbolic link: refused (a task folder is never written through a link); choose another folder with --output DIR`,
    );
  const existing = await readdir(dir).catch(() => null);
  if (existing !== null && existing.length > 0)
    throw new TaskError(`${dir}: already exists and is not empty: choose another folder with --output DIR`);

  const program =
    read.text.includes(EVOLVE_BLOCK_START) || read.text.includes(EVOLVE_BLOCK_END)
      ? read.text
      : markEvolveFunction(read.text, parts.firstLine, parts.lastLine);
  const inputsText = options.inputs.map((i) => JSON.stringify(i)).join(', ');
  const reduction = { last: 'score on the last input (as FunSearch ranks programs)', mean: 'mean of its scores', sum: 'sum of its scores' }[
    options.reduce
  ];
  const doc = leadingDocText(read.text);
  const systemMessage = [
    `This program is a FunSearch specification (${basename(spec)}). Improve the function \`${parts.evolve}\` between the EVOLVE-BLOCK markers: \`${parts.run}\` uses it and is called once per input (${inputsText}); the program's score is the ${reduction}, higher is better.`,
    ...(doc ? ['', doc] : []),
  ].join('\n');
  const timeout = FUNSEARCH_TIMEOUT_PER_INPUT_SEC * options.inputs.length;
  const config = [
    `# Written by \`thetaevolve convert\` from the FunSearch specification ${basename(spec)}.`,
    'prompt:',
    `  system_message: ${yamlBlock(systemMessage, 2)}`,
    'evaluator:',
    `  timeout: ${timeout}`,
    '  cascade_evaluation: false',
    '',
  ].join('\n');
  const settings = { specification: basename(spec), run: parts.run, evolve: parts.evolve, inputs: options.inputs, reduce: options.reduce };

  await mkdir(dir, { recursive: true });
  const files = Object.values(FUNSEARCH_FILES).map((f) => join(dir, f));
  await writeNewFile(join(dir, FUNSEARCH_FILES.program), program);
  await copyToNewFile(join(foreignRuntimeDir(), 'funsearch_evaluator.py'), join(dir, FUNSEARCH_FILES.evaluator));
  await writeNewFile(join(dir, FUNSEARCH_FILES.settings), `${JSON.stringify(settings, null, 2)}\n`);
  await writeNewFile(join(dir, FUNSEARCH_FILES.config), config);
  return { dir, files, task: await loadTask(dir), run: parts.run, evolve: parts.evolve };
}
