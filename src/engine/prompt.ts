// The prompt of docs/algorithm.md section 2: a fixed system line; one weighted
// meta-information text; the parent in a fenced block under its metrics;
// the rules of the answer with short worked examples of our own. The parent
// is the only fenced block holding EVOLVE-BLOCK-START (the test server and
// people reading logs find the program that way).
import type { Rng } from './common/rng';
import { evolveRegionContents } from './common/diff';
import { FEEDBACK_METRIC, feedbackOf, feedbackText } from './common/feedback';
import type { ChatMessage } from './common/types';
import { fillTemplate } from './task/task';
import { CROSSOVER_PARENT_METRIC } from './operators/crossover';

export const SYSTEM_PROMPT =
  'You are an expert software developer and research mathematician who improves programs, one careful edit at a time, to beat the best known results on hard open problems.';

/** The parts of a Task the prompt reads (src/engine/task/task.ts's Task fits). */
export interface PromptTask {
  language: string;
  metaInformation: readonly { id: string; weight: number; text: string }[];
  variables: Readonly<Record<string, string | number>>;
}

export interface PromptProgram {
  code: string;
  /** Combined score: higher is better, penalties negative. */
  score: number;
  objective: number | null;
  metrics: Readonly<Record<string, number | string | boolean | null>>;
}

export interface BuildPromptInput {
  task: PromptTask;
  parent: PromptProgram;
  /** Draws the meta-information. */
  rng: Rng;
  /** Extra best programs to show (setting topPrograms; default none). Only their EVOLVE-BLOCK content is shown. */
  topPrograms?: readonly PromptProgram[];
  /** A researcher's guidance for the run (docs/algorithm.md section 11): its own section, after the task's text. */
  guidance?: string | null;
  /** The model's meta-recommendations in force (docs/algorithm.md section 12): their own section, marked as the model's, after the researcher's guidance. */
  recommendations?: string | null;
  /** Characters of the parent's evaluator feedback to show (setting feedbackChars; default none). */
  feedbackChars?: number;
  /** Crossover (operators/crossover.ts): a second parent to combine with the first; only its EVOLVE-BLOCK content is shown. */
  secondParent?: PromptProgram;
  /** What to answer with: SEARCH/REPLACE edits (default, the paper) or the whole EVOLVE-BLOCK rewritten (docs/algorithm.md section 12). */
  editFormat?: 'diff' | 'rewrite';
}

export interface BuiltPrompt {
  messages: ChatMessage[];
  /** The meta-information drawn, or null when the task has none. */
  metaInfoId: string | null;
}

/** Markdown fence language tags for common extensions. */
const FENCE_TAGS: Readonly<Record<string, string>> = {
  py: 'python',
  pyw: 'python',
  js: 'javascript',
  mjs: 'javascript',
  cjs: 'javascript',
  ts: 'typescript',
  rs: 'rust',
  rb: 'ruby',
  sh: 'bash',
  jl: 'julia',
  hs: 'haskell',
  kt: 'kotlin',
  cs: 'csharp',
  m: 'matlab',
  h: 'c',
  hpp: 'cpp',
  cc: 'cpp',
  cxx: 'cpp',
  cu: 'cuda',
};

export function fenceTag(language: string): string {
  const ext = language.toLowerCase().replace(/^\./, '');
  return FENCE_TAGS[ext] ?? ext;
}

/**
 * A number with enough significant digits that a change of 1e-7 shows (at
 * least 10, more for large magnitudes), trailing zeros dropped.
 */
export function formatMetric(x: number): string {
  if (!Number.isFinite(x)) return String(x);
  if (Number.isInteger(x) && Math.abs(x) < 1e15) return String(x);
  const magnitude = x === 0 ? 0 : Math.floor(Math.log10(Math.abs(x))) + 1;
  const digits = Math.min(17, Math.max(10, magnitude + 8));
  const text = x.toPrecision(digits);
  const [mantissa, exponent] = text.split('e') as [string, string | undefined];
  const trimmed = mantissa.includes('.') ? mantissa.replace(/0+$/, '').replace(/\.$/, '') : mantissa;
  return exponent === undefined ? trimmed : `${trimmed}e${exponent}`;
}

/**
 * The evaluator's feedback on the parent (common/feedback.ts), as OpenEvolve
 * and ShinkaEvolve put it into the next prompt; null when there is none. The
 * marker words and fences are broken so that the parent stays the only marked block.
 */
function feedbackSection(parent: PromptProgram, maxChars: number): string | null {
  const text = feedbackOf(parent.metrics);
  if (maxChars <= 0 || text === '') return null;
  const shown = feedbackText(text, maxChars)
    .replace(/EVOLVE-BLOCK-/g, 'EVOLVE_BLOCK_')
    .replace(/`{3,}/g, "'''");
  return ['# Evaluator feedback on the current program', '```text', shown, '```'].join('\n');
}

function metricsLine(program: PromptProgram): string {
  const parts = [`score = ${formatMetric(program.score)}`];
  if (program.objective !== null) parts.push(`objective = ${formatMetric(program.objective)}`);
  for (const [name, value] of Object.entries(program.metrics).slice(0, 24)) {
    if (
      name === 'score' ||
      name === 'objective' ||
      name === 'combined_score' ||
      name === FEEDBACK_METRIC ||
      name === CROSSOVER_PARENT_METRIC
    )
      continue;
    parts.push(`${name} = ${typeof value === 'number' ? formatMetric(value) : String(value)}`);
  }
  return parts.join(', ');
}

function fenced(code: string, tag: string): string {
  const body = code.replace(/\r\n?/g, '\n').replace(/\n+$/, '');
  // A fence longer than any backtick run inside the code, so the block cannot end early.
  const longestRun = Math.max(2, ...(body.match(/`+/g) ?? []).map((run) => run.length));
  const fence = '`'.repeat(longestRun + 1);
  return `${fence}${tag}\n${body}\n${fence}`;
}

function drawMetaInformation(task: PromptTask, rng: Rng): { id: string; text: string } | null {
  const candidates = task.metaInformation.filter((m) => m.weight > 0);
  if (candidates.length === 0) return null;
  const chosen = candidates[rng.weightedIndex(candidates.map((m) => m.weight))];
  return chosen ? { id: chosen.id, text: fillTemplate(chosen.text, task.variables) } : null;
}

const C_LIKE_LANGUAGES = new Set([
  'c',
  'h',
  'cpp',
  'cc',
  'cxx',
  'hpp',
  'cu',
  'java',
  'js',
  'mjs',
  'cjs',
  'ts',
  'rs',
  'go',
  'cs',
  'kt',
  'swift',
  'scala',
]);

/** Our own two short worked examples, in the language family of the task. */
function workedExamples(language: string): string {
  const cLike = C_LIKE_LANGUAGES.has(language.toLowerCase());
  const first = cLike
    ? [
        '    double step = 0.1;',
        '    for (int it = 0; it < 200; it++) {',
        '=======',
        '    double step = 0.02;',
        '    for (int it = 0; it < 2000; it++) {',
      ]
    : ['    step = 0.1', '    for _ in range(200):', '=======', '    step = 0.02', '    for _ in range(2000):'];
  const second = cLike
    ? ['    return best;', '=======', '    best = polish(best, 1e-9);', '    return best;']
    : ['    return best', '=======', '    best = polish(best, tol=1e-9)', '    return best'];
  const block = (lines: string[]): string => ['<<<<<<< SEARCH', ...lines, '>>>>>>> REPLACE'].join('\n');
  return [
    'Example 1 (a finer search): the search stalls because its step is coarse, so I shrink the step and give it ten times more iterations.',
    '',
    block(first),
    '',
    'Example 2 (a final local refinement): the result is returned unpolished; a short local refinement at the end recovers the last digits.',
    '',
    block(second),
  ].join('\n');
}

function answerRules(language: string): string {
  return [
    '# How to answer',
    'First explain briefly what you will change and why it should raise the score.',
    'Then give one or more edits, each in exactly this form:',
    '',
    '<<<<<<< SEARCH',
    '(lines copied exactly from the current program, indentation included)',
    '=======',
    '(the lines that replace them)',
    '>>>>>>> REPLACE',
    '',
    'Rules:',
    '- Each SEARCH section must match consecutive lines of the current program exactly, character for character.',
    '- Edits apply in order; each replaces the first match of its SEARCH lines.',
    '- Change only lines strictly between the EVOLVE-BLOCK-START and EVOLVE-BLOCK-END markers; never edit or move the markers.',
    '- Do not rewrite the whole program: keep each SEARCH section short and specific.',
    '- The program must keep writing its solution the same way; the evaluator is fixed.',
    '',
    workedExamples(language),
  ].join('\n');
}

/** A program's EVOLVE-BLOCK contents in fenced blocks without marker lines, so the parent stays the only marked block. */
function regionBlocks(code: string, tag: string): string[] {
  let regions: string[];
  try {
    regions = evolveRegionContents(code);
  } catch {
    // No usable region: show the code without marker lines.
    regions = [
      code
        .split(/\r?\n/)
        .filter((l) => !/EVOLVE-BLOCK-(START|END)/.test(l))
        .join('\n'),
    ];
  }
  // Several regions: each in its own fenced block, in file order.
  return regions.length === 1
    ? [fenced(regions[0] as string, tag)]
    : regions.map((body, r) => `Region ${r + 1} of ${regions.length}:\n${fenced(body, tag)}`);
}

/** The crossover section: the second parent's marked code and what to do with it. */
function secondParentSection(program: PromptProgram, tag: string): string {
  return [
    '# Second parent, to combine with the current program',
    `Metrics: ${metricsLine(program)}`,
    'Only the code between its EVOLVE-BLOCK markers is shown. Write a child that combines the strengths of both programs: edit the current program above, bringing in the ideas of this one that should raise the score.',
    '',
    regionBlocks(program.code, tag).join('\n\n'),
  ].join('\n');
}

/**
 * The rules of a full rewrite (small models often cannot copy SEARCH lines
 * exactly): the whole EVOLVE-BLOCK in one fenced block, checked like an edit.
 */
function rewriteRules(language: string): string {
  const tag = fenceTag(language);
  return [
    '# How to answer',
    'First explain briefly what you will change and why it should raise the score.',
    'Then give the whole new code between the EVOLVE-BLOCK-START and EVOLVE-BLOCK-END markers in one fenced block:',
    '',
    '```' + tag,
    '(every line that goes between the markers, rewritten as you see fit)',
    '```',
    '',
    'Rules:',
    '- Give exactly one fenced code block: the code between the markers, complete (not only the lines you change), without the marker lines.',
    '- Only the code between the markers is replaced; everything outside them stays as it is.',
    '- Do not use SEARCH/REPLACE blocks.',
    '- The program must keep writing its solution the same way; the evaluator is fixed.',
  ].join('\n');
}

/** Build the chat messages for one parent. */
export function buildPrompt(input: BuildPromptInput): BuiltPrompt {
  const { task, parent, rng } = input;
  const tag = fenceTag(task.language);
  const meta = drawMetaInformation(task, rng);
  const sections: string[] = [];
  if (meta) sections.push(meta.text.trim());
  if (input.guidance) sections.push(['# Guidance from the researcher', input.guidance.trim()].join('\n'));
  if (input.recommendations)
    sections.push(
      [
        '# Recommendations written by the model',
        'An earlier review of this run, by a language model, of what improved the score and what failed (not the researcher):',
        '',
        input.recommendations.trim(),
      ].join('\n'),
    );
  sections.push(['# Current program', `Metrics (higher score is better): ${metricsLine(parent)}`, '', fenced(parent.code, tag)].join('\n'));
  const feedback = feedbackSection(parent, input.feedbackChars ?? 0);
  if (feedback) sections.push(feedback);
  if (input.secondParent) sections.push(secondParentSection(input.secondParent, tag));
  const top = input.topPrograms ?? [];
  if (top.length > 0) {
    const shown = top.map((program, i) => {
      const bodies = regionBlocks(program.code, tag);
      return [`## Program ${i + 1}`, `Metrics: ${metricsLine(program)}`, '', bodies.join('\n\n')].join('\n');
    });
    sections.push(
      [
        '# Strong programs from the database, for inspiration',
        'Only the code between their EVOLVE-BLOCK markers is shown; edit the current program above, not these.',
        '',
        shown.join('\n\n'),
      ].join('\n'),
    );
  }
  sections.push(input.editFormat === 'rewrite' ? rewriteRules(task.language) : answerRules(task.language));
  return {
    messages: [
      { role: 'system', content: SYSTEM_PROMPT },
      { role: 'user', content: sections.join('\n\n') },
    ],
    metaInfoId: meta?.id ?? null,
  };
}
