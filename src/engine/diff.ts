// EVOLVE-BLOCK regions and SEARCH/REPLACE diffs (algorithm.md section 3).
// Unlike the release we ignore reasoning text, enforce the EVOLVE-BLOCK and
// report every block we skip, with the reason.
import { sameCodeIgnoringComments } from './codeHash';

export const EVOLVE_BLOCK_START = 'EVOLVE-BLOCK-START';
export const EVOLVE_BLOCK_END = 'EVOLVE-BLOCK-END';

/** Default cap on a child's length in characters (the release's 50,000). */
export const DEFAULT_MAX_CODE_LENGTH = 50_000;

// ---------------------------------------------------------------------------
// Regions

/** One well-formed region; 0-based line numbers of its marker lines. Editable lines lie strictly between. */
export interface EvolveRegion {
  startLine: number;
  endLine: number;
}

export type EvolveBlockProblemKind = 'no_region' | 'unbalanced' | 'multiple_regions';

export interface EvolveBlockProblem {
  kind: EvolveBlockProblemKind;
  message: string;
  /** 0-based lines the problem is about (empty for no_region). */
  lines: number[];
}

export interface EvolveBlockLocation {
  /** Well-formed START/END pairs, in file order. */
  regions: EvolveRegion[];
  /** Empty when the text has exactly one well-formed region and no stray marker. */
  problems: EvolveBlockProblem[];
}

/** Split on LF, CRLF or lone CR. */
export function splitLines(text: string): string[] {
  return text.split(/\r\n|\r|\n/);
}

function markerOf(line: string): 'start' | 'end' | null {
  if (line.includes(EVOLVE_BLOCK_START)) return 'start';
  if (line.includes(EVOLVE_BLOCK_END)) return 'end';
  return null;
}

/**
 * Find the EVOLVE-BLOCK regions of a file: a marker is any line containing
 * EVOLVE-BLOCK-START / EVOLVE-BLOCK-END, whatever the comment syntax. Reports
 * a missing region, unbalanced or nested markers and several regions, with
 * line numbers (for the CodeLens and for refusing to evolve a broken file).
 */
export function locateEvolveBlocks(text: string): EvolveBlockLocation {
  const lines = splitLines(text);
  const regions: EvolveRegion[] = [];
  const problems: EvolveBlockProblem[] = [];
  let open: number | null = null;
  lines.forEach((line, n) => {
    const marker = markerOf(line);
    if (marker === 'start') {
      if (open !== null) {
        problems.push({ kind: 'unbalanced', message: `${EVOLVE_BLOCK_START} on line ${n + 1} inside the region opened on line ${open + 1} (nested markers)`, lines: [open, n] });
      } else open = n;
    } else if (marker === 'end') {
      if (open === null) {
        problems.push({ kind: 'unbalanced', message: `${EVOLVE_BLOCK_END} on line ${n + 1} without an ${EVOLVE_BLOCK_START} before it`, lines: [n] });
      } else {
        regions.push({ startLine: open, endLine: n });
        open = null;
      }
    }
  });
  if (open !== null) {
    problems.push({ kind: 'unbalanced', message: `${EVOLVE_BLOCK_START} on line ${open + 1} has no ${EVOLVE_BLOCK_END} after it`, lines: [open] });
  }
  if (regions.length === 0 && problems.length === 0) {
    problems.push({ kind: 'no_region', message: `no ${EVOLVE_BLOCK_START} / ${EVOLVE_BLOCK_END} markers`, lines: [] });
  }
  if (regions.length > 1) {
    problems.push({
      kind: 'multiple_regions',
      message: `${regions.length} EVOLVE-BLOCK regions (lines ${regions.map((r) => `${r.startLine + 1}-${r.endLine + 1}`).join(', ')}); expected one`,
      lines: regions.map((r) => r.startLine),
    });
  }
  return { regions, problems };
}

/** Thrown when a text lacks exactly one well-formed EVOLVE-BLOCK; the message says what is wrong. */
export class EvolveBlockError extends Error {}

/** The single region of a text, or an EvolveBlockError naming the problem. */
export function singleEvolveRegion(text: string, what = 'the program'): EvolveRegion {
  const { regions, problems } = locateEvolveBlocks(text);
  const first = problems[0];
  if (first) throw new EvolveBlockError(`${what}: ${first.message}`);
  return regions[0] as EvolveRegion;
}

/** The lines strictly between the markers of the single region, joined with LF. */
export function evolveBlockContent(text: string): string {
  const region = singleEvolveRegion(text);
  return splitLines(text).slice(region.startLine + 1, region.endLine).join('\n');
}

function newlineOf(text: string): '\r\n' | '\n' {
  return text.includes('\r\n') ? '\r\n' : '\n';
}

/**
 * "Apply to File": the file's text with its EVOLVE-BLOCK content replaced by
 * the program's, everything else (markers, code around, line endings) kept.
 * Throws EvolveBlockError when either text lacks exactly one region.
 */
export function replaceEvolveBlock(fileText: string, programText: string): string {
  const target = singleEvolveRegion(fileText, 'the file');
  const source = singleEvolveRegion(programText, 'the program');
  const fileLines = splitLines(fileText);
  const content = splitLines(programText).slice(source.startLine + 1, source.endLine);
  const result = [...fileLines.slice(0, target.startLine + 1), ...content, ...fileLines.slice(target.endLine)];
  return result.join(newlineOf(fileText));
}

// ---------------------------------------------------------------------------
// Parsing responses

export interface DiffBlock {
  /** 0-based position among the response's complete blocks. */
  index: number;
  search: string[];
  replace: string[];
}

export interface ParsedResponse {
  blocks: DiffBlock[];
  /** A SEARCH opened but never closed (a truncated response): not applied. */
  unterminated: boolean;
  /** The answer with reasoning removed, LF line ends. */
  answer: string;
}

/**
 * Drop reasoning: closed `<think>...</think>` spans, everything before a
 * stray `</think>` (servers that eat the opening tag), and an unclosed
 * `<think>` to the end.
 */
export function stripReasoning(text: string): string {
  let out = text.replace(/<think>[\s\S]*?<\/think>/gi, '');
  const strayClose = out.toLowerCase().lastIndexOf('</think>');
  if (strayClose !== -1) out = out.slice(strayClose + '</think>'.length);
  const unclosed = out.toLowerCase().indexOf('<think>');
  if (unclosed !== -1) out = out.slice(0, unclosed);
  return out;
}

const SEARCH_LINE = /^\s*<{5,}\s*SEARCH\s*$/;
const DIVIDER_LINE = /^\s*={5,}\s*$/;
const REPLACE_LINE = /^\s*>{5,}\s*REPLACE\s*$/;
const FENCE_LINE = /^\s*(```|~~~)/;

/** Strip a markdown fence pair wrapped around a SEARCH or REPLACE section by the model. */
function unfence(lines: string[]): string[] {
  if (lines.length >= 2 && FENCE_LINE.test(lines[0] as string) && FENCE_LINE.test(lines[lines.length - 1] as string)) {
    return lines.slice(1, -1);
  }
  return lines;
}

/** Parse the SEARCH/REPLACE blocks of a model's answer (reasoning ignored, fences and CRLF tolerated). */
export function parseDiffBlocks(response: string): ParsedResponse {
  const answer = stripReasoning(response).replace(/\r\n?/g, '\n');
  const blocks: DiffBlock[] = [];
  let state: 'outside' | 'search' | 'replace' = 'outside';
  let search: string[] = [];
  let replace: string[] = [];
  for (const line of answer.split('\n')) {
    if (state === 'outside') {
      if (SEARCH_LINE.test(line)) {
        state = 'search';
        search = [];
      }
    } else if (state === 'search') {
      if (DIVIDER_LINE.test(line)) {
        state = 'replace';
        replace = [];
      } else if (SEARCH_LINE.test(line)) search = []; // a restarted block: the earlier one was never finished
      else search.push(line);
    } else if (REPLACE_LINE.test(line)) {
      blocks.push({ index: blocks.length, search: unfence(search), replace: unfence(replace) });
      state = 'outside';
    } else replace.push(line);
  }
  return { blocks, unterminated: state !== 'outside', answer };
}

// ---------------------------------------------------------------------------
// Applying

export type SkipReason = 'empty_search' | 'no_match' | 'outside_evolve_block' | 'marker_in_replace';

export interface SkippedBlock {
  index: number;
  reason: SkipReason;
  /** The start of the SEARCH text, for people. */
  search: string;
  detail: string;
}

export type ApplyStatus = 'applied' | 'no_diff_blocks' | 'no_valid_change' | 'outside_evolve_block' | 'no_evolve_block' | 'too_long';

export interface ApplyResult {
  status: ApplyStatus;
  /** The child when at least one block applied (also for no_valid_change and too_long), else null. Parent's line ends. */
  child: string | null;
  applied: number;
  skipped: SkippedBlock[];
  /** Complete blocks found in the answer. */
  blocks: number;
  /** One line for people. */
  message: string;
}

export interface ApplyOptions {
  /** Language (file extension) for the comment-insensitive no-change check; '' compares whitespace-normalised text only. */
  language?: string;
  maxLength?: number;
}

const EXCERPT_CHARS = 120;

function excerpt(lines: string[]): string {
  const text = lines.join('\n');
  return text.length <= EXCERPT_CHARS ? text : `${text.slice(0, EXCERPT_CHARS - 3)}...`;
}

function indexOfLines(haystack: string[], needle: string[], from: number, to: number): number {
  const last = to - needle.length;
  for (let i = from; i <= last; i++) {
    let ok = true;
    for (let j = 0; j < needle.length; j++) {
      if (haystack[i + j] !== needle[j]) {
        ok = false;
        break;
      }
    }
    if (ok) return i;
  }
  return -1;
}

/**
 * Apply one block to the lines of a program with one region: the first exact
 * whole-line match inside the region's interior is replaced. A match only
 * outside (or across a marker line) is rejected, as is a replacement that
 * carries a marker (it would move the region).
 */
function applyBlock(lines: string[], region: EvolveRegion, block: DiffBlock): { lines: string[] } | { reason: SkipReason; detail: string } {
  if (block.search.every((l) => l.trim() === '')) return { reason: 'empty_search', detail: 'the SEARCH section is empty' };
  if (block.replace.some((l) => markerOf(l) !== null)) {
    return { reason: 'marker_in_replace', detail: 'the replacement contains an EVOLVE-BLOCK marker' };
  }
  const at = indexOfLines(lines, block.search, region.startLine + 1, region.endLine);
  if (at === -1) {
    const anywhere = indexOfLines(lines, block.search, 0, lines.length);
    if (anywhere !== -1) {
      return { reason: 'outside_evolve_block', detail: `the SEARCH text matches lines ${anywhere + 1}-${anywhere + block.search.length}, outside the EVOLVE-BLOCK (lines ${region.startLine + 2}-${region.endLine})` };
    }
    return { reason: 'no_match', detail: 'the SEARCH text matches no lines of the program exactly' };
  }
  return { lines: [...lines.slice(0, at), ...block.replace, ...lines.slice(at + block.search.length)] };
}

/**
 * Turn a parent and a model's answer into a child (algorithm.md section 3):
 * blocks apply in order, each to the result of the ones before it.
 */
export function applyResponse(parent: string, response: string, options: ApplyOptions = {}): ApplyResult {
  const maxLength = options.maxLength ?? DEFAULT_MAX_CODE_LENGTH;
  const language = options.language ?? '';
  const parsed = parseDiffBlocks(response);
  const location = locateEvolveBlocks(parent);
  const result = (status: ApplyStatus, child: string | null, applied: number, skipped: SkippedBlock[], message: string): ApplyResult => ({
    status, child, applied, skipped, blocks: parsed.blocks.length, message,
  });
  const brokenRegion = location.problems[0];
  if (brokenRegion) return result('no_evolve_block', null, 0, [], `the parent has no usable EVOLVE-BLOCK: ${brokenRegion.message}`);
  if (parsed.blocks.length === 0) {
    return result('no_diff_blocks', null, 0, [], parsed.unterminated ? 'the answer has an unterminated SEARCH/REPLACE block only' : 'the answer has no SEARCH/REPLACE block');
  }

  const parentLines = splitLines(parent);
  let lines = parentLines;
  let region = location.regions[0] as EvolveRegion;
  let applied = 0;
  const skipped: SkippedBlock[] = [];
  for (const block of parsed.blocks) {
    const outcome = applyBlock(lines, region, block);
    if ('reason' in outcome) {
      skipped.push({ index: block.index, reason: outcome.reason, search: excerpt(block.search), detail: outcome.detail });
      continue;
    }
    // The replacement holds no marker and the match sat inside the region, so only the END line moves.
    region = { startLine: region.startLine, endLine: region.endLine + block.replace.length - block.search.length };
    lines = outcome.lines;
    applied++;
  }

  const skippedNote = skipped.length > 0 ? `; skipped ${skipped.length} (${skipped.map((s) => `block ${s.index + 1}: ${s.reason}`).join(', ')})` : '';
  if (applied === 0) {
    if (skipped.some((s) => s.reason === 'outside_evolve_block' || s.reason === 'marker_in_replace')) {
      return result('outside_evolve_block', null, 0, skipped, `no block applied inside the EVOLVE-BLOCK${skippedNote}`);
    }
    return result('no_valid_change', null, 0, skipped, `no block applied${skippedNote}`);
  }
  const child = lines.join(newlineOf(parent));
  if (sameCodeIgnoringComments(child, parent, language)) {
    return result('no_valid_change', child, applied, skipped, `the child equals the parent up to comments and blank space${skippedNote}`);
  }
  if (child.length > maxLength) {
    return result('too_long', child, applied, skipped, `the child has ${child.length} characters, over the limit of ${maxLength}${skippedNote}`);
  }
  return result('applied', child, applied, skipped, `applied ${applied} of ${parsed.blocks.length} blocks${skippedNote}`);
}
