// Drafts for a new task around an existing program: the meta-information text
// from the program's own docstring or leading comment, used where a folder
// carries no prompt (ShinkaEvolve's, an OpenEvolve folder without
// config.yaml) and by "New Task for This File".

import { placeholdersOf, TaskError, TaskFileSchema } from './task';
import type { Direction } from '../common/types';

const MAX_DOC_CHARS = 2000;

/** The first documentation text of a program: a Python/Julia docstring, else its leading comment block. */
export function leadingDocText(code: string): string | null {
  const triple = /("""|''')([\s\S]*?)\1/.exec(code);
  if (triple && (triple[2] ?? '').trim() !== '') return dedent(triple[2] as string).slice(0, MAX_DOC_CHARS);
  const block = /\/\*\*?([\s\S]*?)\*\//.exec(code);
  const comment: string[] = [];
  for (const [i, line] of code.split(/\r?\n/).entries()) {
    if (i === 0 && line.startsWith('#!')) continue;
    const m = /^\s*(?:#|\/\/|--|%|;)\s?(.*)$/.exec(line);
    const text = m?.[1];
    if (text?.includes('EVOLVE-BLOCK')) {
      if (comment.length > 0) break;
      continue;
    }
    if (text === undefined) {
      if (comment.length > 0 || line.trim() !== '') break;
      continue;
    }
    comment.push(text);
  }
  const fromLines = comment.join('\n').trim();
  if (fromLines !== '') return fromLines.slice(0, MAX_DOC_CHARS);
  if (block && (block[1] ?? '').trim() !== '') return dedent((block[1] as string).replace(/^\s*\* ?/gm, '')).slice(0, MAX_DOC_CHARS);
  return null;
}

function dedent(text: string): string {
  const [first = '', ...rest] = text.replace(/\r\n?/g, '\n').split('\n');
  const indents = rest.filter((l) => l.trim() !== '').map((l) => /^\s*/.exec(l)?.[0].length ?? 0);
  const cut = indents.length > 0 ? Math.min(...indents) : 0;
  return [first.trim(), ...rest.map((l) => l.slice(cut))].join('\n').trim();
}

/** A meta-information text for the prompt: the program's documentation, and what the model is to do. */
export function draftMetaInformation(code: string, language: string): string {
  const doc = leadingDocText(code);
  const goal =
    // Not naming the markers: a text holding them would read as a marked region (CodeLens warnings in task.json).
    `Improve the marked region of the ${language} program so that its score gets better. ` +
    'Keep the functions the evaluator calls and what they return; the program must finish within {MAX_RUNTIME} seconds.';
  return doc ? `${doc}\n\n${goal}` : goal;
}

/** A text's `{placeholders}` other than `known`, as variables standing for themselves (so task.json keeps them literally). */
export function literalPlaceholders(text: string, known: readonly string[]): Record<string, string> {
  return Object.fromEntries(
    placeholdersOf(text)
      .filter((n) => !known.includes(n))
      .map((n) => [n, `{${n}}`]),
  );
}

/** `{ [key]: values }` when there are any, else nothing (a drafted task.json leaves empty fields out). */
export function nonEmpty(key: string, values: Record<string, string>): Record<string, Record<string, string>> {
  return Object.keys(values).length > 0 ? { [key]: values } : {};
}

/** How a candidate in this language runs (one argument per item, no shell); the user edits it for anything else. */
function runnerOf(language: string): string[] {
  const runners: Record<string, string[]> = {
    py: ['{python}'],
    js: ['/usr/bin/env', 'node'],
    mjs: ['/usr/bin/env', 'node'],
    cjs: ['/usr/bin/env', 'node'],
    sh: ['/bin/sh'],
    rb: ['/usr/bin/env', 'ruby'],
    jl: ['/usr/bin/env', 'julia'],
    r: ['/usr/bin/env', 'Rscript'],
    pl: ['/usr/bin/env', 'perl'],
  };
  return runners[language.toLowerCase()] ?? ['/usr/bin/env', language];
}

const PYTHON_EVALUATOR = `"""Evaluator of {PROGRAM} (drafted by ThetaEvolve's "New Task for This File": edit it).

ThetaEvolve runs the program in a sandbox, where it writes solution.json in
its working directory. This file runs outside the sandbox, on a copy of that
file only, and prints one JSON line:
    {"valid": true, "objective": 2.5, "metrics": {}, "reason": ""}
A valid objective is a positive number; task.json's direction says whether
larger or smaller is better. The whole contract: the task README.
"""
import json
import math
import sys


def score(solution):
    """The objective of a solution; raises ValueError saying why it is invalid."""
    # Replace with your problem's check. The draft expects {"value": <number>}.
    value = solution.get("value") if isinstance(solution, dict) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError('solution.json needs a finite number under "value"')
    if value <= 0:
        raise ValueError("the value must be positive")
    return float(value)


def main(path):
    try:
        with open(path, encoding="utf-8") as f:
            solution = json.load(f)
    except ValueError as err:
        return {"valid": False, "unreadable": True, "reason": f"solution.json is not JSON: {err}"}
    try:
        objective = score(solution)
    except ValueError as err:
        return {"valid": False, "reason": str(err)}
    return {"valid": True, "objective": objective, "metrics": {}, "reason": ""}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1])))
`;

const NODE_EVALUATOR = `// Evaluator of {PROGRAM} (drafted by ThetaEvolve's "New Task for This File": edit it).
//
// ThetaEvolve runs the program in a sandbox, where it writes solution.json in
// its working directory. This file runs outside the sandbox, on a copy of that
// file only, and prints one JSON line:
//     {"valid": true, "objective": 2.5, "metrics": {}, "reason": ""}
// A valid objective is a positive number; task.json's direction says whether
// larger or smaller is better. The whole contract: the task README.
const fs = require('node:fs');

/** The objective of a solution; throws saying why it is invalid. */
function score(solution) {
  // Replace with your problem's check. The draft expects {"value": <number>}.
  const value = solution && typeof solution === 'object' ? solution.value : undefined;
  if (typeof value !== 'number' || !Number.isFinite(value)) throw new Error('solution.json needs a finite number under "value"');
  if (value <= 0) throw new Error('the value must be positive');
  return value;
}

function main(path) {
  let solution;
  try {
    solution = JSON.parse(fs.readFileSync(path, 'utf8'));
  } catch (err) {
    return { valid: false, unreadable: true, reason: \`solution.json is not JSON: \${err.message}\` };
  }
  try {
    return { valid: true, objective: score(solution), metrics: {}, reason: '' };
  } catch (err) {
    return { valid: false, reason: err.message };
  }
}

console.log(JSON.stringify(main(process.argv[2])));
`;

/** A direction read from the program's own words, with the words that said it (null: nothing said either way). */
export interface InferredDirection {
  direction: Direction;
  /** The phrase found, as it is written, e.g. "Minimise". */
  evidence: string | null;
}

// Words that say which way is better, in the program's leading text; the first found decides.
const DIRECTION_WORDS: readonly { pattern: RegExp; direction: Direction }[] = [
  {
    pattern: /\b(minimi[sz](?:e|es|ing|ation)|as (?:small|low|short) as|smaller is better|lower is better|reduce|decrease)\b/i,
    direction: 'minimize',
  },
  {
    pattern: /\b(maximi[sz](?:e|es|ing|ation)|as (?:large|high|big|long) as|larger is better|higher is better|increase)\b/i,
    direction: 'maximize',
  },
];

/**
 * Which way the program's leading text (docstring or first comments) says is
 * better: "Minimise ...", "as small as", "lower is better"; maximize with no
 * evidence when it says nothing (a person confirms it either way).
 */
export function inferDirection(code: string): InferredDirection {
  const doc = leadingDocText(code) ?? '';
  let best: { at: number; found: string; direction: Direction } | null = null;
  for (const { pattern, direction } of DIRECTION_WORDS) {
    const m = pattern.exec(doc);
    if (m && (best === null || m.index < best.at)) best = { at: m.index, found: m[1] ?? m[0], direction };
  }
  return best ? { direction: best.direction, evidence: best.found } : { direction: 'maximize', evidence: null };
}

export interface DraftedTask {
  /** task.json's text (valid against the schema). */
  taskJson: string;
  /** The evaluator template's file name, e.g. evaluate.py. */
  evaluatorFile: string;
  evaluatorText: string;
}

/**
 * A task around `programFile` (a name in the same folder): task.json with the
 * direction, time limits, a meta-information text drafted from the program's
 * docstring and a target to fill in, and an evaluator template that reads the
 * solution file. `taken` says which evaluator names already exist there.
 */
export function draftTask(input: {
  programFile: string;
  code: string;
  taken?: (name: string) => boolean;
  /** Which way is better (default: what inferDirection reads in the program). */
  direction?: Direction;
  /** What the program's result measures, in a person's words (e.g. "the sum of the radii"), for the prompt and the description. */
  objective?: string;
}): DraftedTask {
  const direction = input.direction ?? inferDirection(input.code).direction;
  const objective = input.objective?.trim() ?? '';
  const dot = input.programFile.lastIndexOf('.');
  const stem = dot > 0 ? input.programFile.slice(0, dot) : input.programFile;
  const language = dot > 0 ? input.programFile.slice(dot + 1) : '';
  if (language === '') throw new TaskError(`${input.programFile}: a program needs a file extension (it names the language, e.g. .py)`);
  const node = ['js', 'mjs', 'cjs'].includes(language.toLowerCase());
  const evaluatorExt = node ? 'cjs' : 'py';
  const evaluatorFile =
    [`evaluate.${evaluatorExt}`, `evaluate_${stem}.${evaluatorExt}`].find((n) => n !== input.programFile && !input.taken?.(n)) ??
    `evaluate_${stem}_task.${evaluatorExt}`;
  const doc = leadingDocText(input.code);
  const better = direction === 'minimize' ? 'smaller is better' : 'larger is better';
  const goalLine = objective ? `\nThe objective is ${objective}; ${better}.` : `\nThe objective: ${better}.`;
  const text = `${draftMetaInformation(input.code, language)}${goalLine}\nThe program writes solution.json in its working directory (the draft evaluator reads {"value": <number>}).`;
  const name =
    stem
      .toLowerCase()
      .replace(/[^a-z0-9._-]+/g, '-')
      .replace(/^[^a-z0-9]+/, '')
      .slice(0, 80) || 'task';
  const raw = {
    name,
    title: `Evolve ${input.programFile}`,
    description: doc?.split(/\n\s*\n/)[0]?.trim() || (objective ? `The objective is ${objective} (${direction}).` : ''),
    direction,
    initialProgram: input.programFile,
    candidate: { command: [...runnerOf(language), '{program}'], runtimeLimitSec: 60 },
    evaluator: {
      command: [node ? '/usr/bin/env' : '{python}', ...(node ? ['node'] : []), `{taskDir}/${evaluatorFile}`, '{solution}'],
      timeLimitSec: 60,
    },
    metaInformation: [{ id: 'docstring', weight: 1, text }],
    ...nonEmpty('variables', literalPlaceholders(text, ['MAX_RUNTIME', 'target_value'])),
    targetValue: null,
  };
  TaskFileSchema.parse(raw);
  const template = (node ? NODE_EVALUATOR : PYTHON_EVALUATOR).replace('{PROGRAM}', input.programFile);
  return { taskJson: `${JSON.stringify(raw, null, 2)}\n`, evaluatorFile, evaluatorText: template };
}
