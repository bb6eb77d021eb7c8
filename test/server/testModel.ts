// The test server's "model": reads the program out of the prompt and proposes
// one plausible SEARCH/REPLACE edit inside its EVOLVE-BLOCK (a perturbed
// numeric literal), deterministically from a seed. Also the tokeniser: one
// token per whitespace-led chunk, so the pieces concatenate back to the text.
import { applyResponse, evolveRegionContents } from '../../src/engine/common/diff';
import { Rng } from '../../src/engine/common/rng';

export interface ProposedAnswer {
  /** The answer text (explanation + SEARCH/REPLACE block, or no block). */
  answer: string;
  /** What a reasoning model would think first. */
  reasoning: string;
  /** True when the answer holds a SEARCH/REPLACE block. */
  hasDiff: boolean;
}

const FENCE = /```[^\n]*\n([\s\S]*?)```/g;
// A numeric literal not glued to an identifier or another number.
const NUMBER = /(?<![A-Za-z_\d.])\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![A-Za-z_\d.])/g;

/** The fenced code block containing EVOLVE-BLOCK-START, or null. */
export function programInPrompt(text: string): string | null {
  for (const match of text.matchAll(FENCE)) {
    const body = match[1] ?? '';
    if (body.includes('EVOLVE-BLOCK-START')) return body;
  }
  return null;
}

function isCommentLine(line: string): boolean {
  const t = line.trim();
  return t.startsWith('#') || t.startsWith('//') || t.startsWith('--') || t.startsWith('%');
}

function perturb(literal: string, rng: Rng): string {
  if (/^\d+$/.test(literal)) {
    const value = Number.parseInt(literal, 10);
    const deltas = value <= 1 ? [1, 2] : [-2, -1, 1, 2];
    return String(value + rng.pick(deltas));
  }
  const value = Number(literal);
  const decimals = Math.max(2, (literal.split('.')[1] ?? '').replace(/[eE].*$/, '').length);
  const factor = 1 + (rng.next() * 0.4 - 0.2);
  let next = (value === 0 ? rng.next() * 0.1 : value * factor).toFixed(decimals);
  if (next === literal || Number(next) === value) next = (value + 10 ** -decimals).toFixed(decimals);
  return next;
}

/**
 * Lines [from, to) whose text, joined, first occurs in the program exactly at
 * the edited line: the applier replaces the first match, so the SEARCH text
 * must not match earlier.
 */
function uniqueWindow(lines: string[], target: number, lo: number, hi: number): [number, number] {
  const offsetOf = (i: number) => lines.slice(0, i).reduce((n, l) => n + l.length + 1, 0);
  const program = lines.join('\n');
  let from = target;
  let to = target + 1;
  for (let grow = 0; grow < 2 * (hi - lo); grow++) {
    const text = lines.slice(from, to).join('\n');
    if (program.indexOf(text) === offsetOf(from)) break;
    if (grow % 2 === 0 && to < hi) to++;
    else if (from > lo) from--;
    else if (to < hi) to++;
    else break;
  }
  return [from, to];
}

/** The heading of a meta-recommendations request (src/engine/operators/metaRecommendations.ts META_REQUEST_HEADING). */
const META_REQUEST_HEADING = '# Review of an evolution run';

/** A meta-recommendations request's answer: a few recommendations naming the steps it reviewed. */
function recommend(request: string): ProposedAnswer {
  const window = /^Steps (\d+) to (\d+):/m.exec(request);
  const steps = window ? `steps ${window[1]} to ${window[2]}` : 'the last steps';
  return {
    answer: [
      `- Keep the constants the new best programs of ${steps} changed, and tune them further.`,
      '- Avoid the edits that made children fail.',
      '- Try one larger change per child rather than many small ones.',
    ].join('\n'),
    reasoning: `I read the review of ${steps}.`,
    hasDiff: false,
  };
}

/** Propose one edit of the program in the last user message. */
/** The prompt asks for the whole EVOLVE-BLOCK rewritten (src/engine/prompt.ts, rewrite mode). */
function asksForRewrite(text: string): boolean {
  return text.includes('Do not use SEARCH/REPLACE blocks.');
}

export function proposeAnswer(lastUserMessage: string, seed: number): ProposedAnswer {
  if (lastUserMessage.startsWith(META_REQUEST_HEADING)) return recommend(lastUserMessage);
  const proposed = proposeEdit(lastUserMessage, seed);
  if (!proposed.hasDiff || !asksForRewrite(lastUserMessage)) return proposed;
  // A rewrite: the same change, given as the whole region in one fenced block.
  const program = programInPrompt(lastUserMessage) as string;
  const child = applyResponse(program, proposed.answer).child ?? program;
  const region = evolveRegionContents(child)[0] ?? '';
  return {
    answer: ['I rewrite the block with one constant changed.', '', '```python', region, '```'].join('\n'),
    reasoning: proposed.reasoning,
    hasDiff: true,
  };
}

function proposeEdit(lastUserMessage: string, seed: number): ProposedAnswer {
  const rng = Rng.fromSeed(seed >>> 0);
  const program = programInPrompt(lastUserMessage);
  if (program === null) {
    return {
      answer: 'I could not find a program with an EVOLVE-BLOCK in your message, so I have no edit to propose.',
      reasoning: 'The message holds no fenced code block marked EVOLVE-BLOCK-START.',
      hasDiff: false,
    };
  }
  const lines = program.replace(/\n$/, '').split('\n');
  const start = lines.findIndex((l) => l.includes('EVOLVE-BLOCK-START'));
  let end = lines.findIndex((l, i) => i > start && l.includes('EVOLVE-BLOCK-END'));
  if (end < 0) end = lines.length;
  const candidates: { line: number; literals: RegExpMatchArray[] }[] = [];
  for (let i = start + 1; i < end; i++) {
    const line = lines[i] as string;
    if (isCommentLine(line)) continue;
    const code = line.replace(/\s#.*$|\s\/\/.*$/, '');
    const literals = [...code.matchAll(NUMBER)];
    if (literals.length > 0) candidates.push({ line: i, literals });
  }
  if (candidates.length === 0) {
    return {
      answer: 'The EVOLVE-BLOCK has no numeric constant to tune; I have no edit to propose.',
      reasoning: 'No numeric literal inside the EVOLVE-BLOCK.',
      hasDiff: false,
    };
  }
  const chosen = rng.pick(candidates);
  const literal = rng.pick(chosen.literals);
  const original = lines[chosen.line] as string;
  const at = literal.index ?? 0;
  const replacementLiteral = perturb(literal[0], rng);
  const edited = original.slice(0, at) + replacementLiteral + original.slice(at + literal[0].length);
  const [from, to] = uniqueWindow(lines, chosen.line, start + 1, end);
  const search = lines.slice(from, to);
  const replace = search.map((l, k) => (from + k === chosen.line ? edited : l));
  const lineNumber = chosen.line + 1;
  const answer = [
    `Changing ${literal[0]} to ${replacementLiteral} on line ${lineNumber} explores a nearby setting of this constant, which may improve the score.`,
    '',
    '<<<<<<< SEARCH',
    ...search,
    '=======',
    ...replace,
    '>>>>>>> REPLACE',
  ].join('\n');
  const reasoning =
    `The EVOLVE-BLOCK has ${candidates.length} line(s) with numeric constants. ` +
    `A small perturbation of the constant on line ${lineNumber} is a cheap experiment.`;
  return { answer, reasoning, hasDiff: true };
}

/** Whitespace-led chunks: their concatenation is the text. */
export function tokenPieces(text: string): string[] {
  return text.match(/\s*\S+|\s+/g) ?? [];
}

/** FNV-1a of the piece, within a Qwen-sized vocabulary. */
export function tokenId(piece: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < piece.length; i++) {
    h ^= piece.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h % 151643;
}

export function tokenize(text: string): number[] {
  return tokenPieces(text).map(tokenId);
}

/** Dimensions of the test server's embeddings (unless its embeddingDimensions says otherwise). */
export const EMBEDDING_DIMENSIONS = 256;

/**
 * The test server's embedding of a text: its character trigrams hashed into
 * EMBEDDING_DIMENSIONS buckets, counted and normalised, so texts that share
 * most trigrams (a near-duplicate) are close in cosine and unrelated ones far.
 */
export function embedText(text: string, dimensions = EMBEDDING_DIMENSIONS): number[] {
  const vector = new Array<number>(dimensions).fill(0);
  const padded = `  ${text}  `;
  for (let i = 0; i + 3 <= padded.length; i++) {
    let hash = 2166136261;
    for (let j = i; j < i + 3; j++) hash = Math.imul(hash ^ padded.charCodeAt(j), 16777619);
    const bucket = (hash >>> 0) % dimensions;
    vector[bucket] = (vector[bucket] ?? 0) + 1;
  }
  const norm = Math.sqrt(vector.reduce((n, x) => n + x * x, 0)) || 1;
  return vector.map((x) => x / norm);
}
