// EVOLVE-BLOCK regions and SEARCH/REPLACE diffs (docs/algorithm.md section 3).
// Unlike the release we ignore reasoning text, enforce the EVOLVE-BLOCK and
// report every block we skip, with the reason.
import { sameCodeIgnoringComments } from './codeText';
import { ThetaEvolveError } from './errors';

export const EVOLVE_BLOCK_START = 'EVOLVE-BLOCK-START';
export const EVOLVE_BLOCK_END = 'EVOLVE-BLOCK-END';

/** Default cap on a child's length in characters (the release's 50,000). */
export const DEFAULT_MAX_CODE_LENGTH = 50_000;

// ---------------------------------------------------------------------------
// Lines that keep their own endings

/** A text as lines plus each line's own ending ('' for the last): lines.map((l, i) => l + ends[i]).join('') is the text. */
interface EndedLines {
  lines: string[];
  ends: string[];
}

/** Split on LF, CRLF or lone CR. */
export function splitLines(text: string): string[] {
  return text.split(/\r\n|\r|\n/);
}

function splitKeepingEnds(text: string): EndedLines {
  const lines: string[] = [];
  const ends: string[] = [];
  const pattern = /\r\n|\r|\n/g;
  let from = 0;
  for (let m = pattern.exec(text); m !== null; m = pattern.exec(text)) {
    lines.push(text.slice(from, m.index));
    ends.push(m[0]);
    from = m.index + m[0].length;
  }
  lines.push(text.slice(from));
  ends.push('');
  return { lines, ends };
}

function joinKeepingEnds(text: EndedLines): string {
  let out = '';
  for (let i = 0; i < text.lines.length; i++) out += (text.lines[i] as string) + (text.ends[i] as string);
  return out;
}

/** The ending most lines of a text use (LF when it has none): what new lines get. */
function dominantEnd(ends: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const end of ends) if (end !== '') counts.set(end, (counts.get(end) ?? 0) + 1);
  let best = '\n';
  let bestCount = 0;
  for (const [end, count] of counts) {
    if (count > bestCount) {
      best = end;
      bestCount = count;
    }
  }
  return best;
}

/**
 * Replace `count` lines at `at` with `replacement`. Every untouched line keeps
 * its own ending; replacement line k takes the ending of replaced line k
 * (the last one the ending of the last replaced line, so a missing final
 * newline stays missing), extra lines the file's dominant ending.
 */
function spliceLines(text: EndedLines, at: number, count: number, replacement: readonly string[], fallbackEnd: string): EndedLines {
  const ends = replacement.map((_, k) => {
    if (k === replacement.length - 1 && count > 0) return text.ends[at + count - 1] as string;
    const end = k < count - 1 ? (text.ends[at + k] as string) : count > 1 ? (text.ends[at + count - 2] as string) : (text.ends[at] ?? '');
    return end === '' ? fallbackEnd : end;
  });
  return {
    lines: [...text.lines.slice(0, at), ...replacement, ...text.lines.slice(at + count)],
    ends: [...text.ends.slice(0, at), ...ends, ...text.ends.slice(at + count)],
  };
}

// ---------------------------------------------------------------------------
// Regions

/** One well-formed region; 0-based line numbers of its marker lines. Editable lines lie strictly between. */
export interface EvolveRegion {
  startLine: number;
  endLine: number;
}

export type EvolveBlockProblemKind = 'no_region' | 'unbalanced';

export interface EvolveBlockProblem {
  kind: EvolveBlockProblemKind;
  message: string;
  /** 0-based lines the problem is about (empty for no_region). */
  lines: number[];
}

export interface EvolveBlockLocation {
  /** Well-formed START/END pairs, in file order (a file may hold several). */
  regions: EvolveRegion[];
  /** Empty when the text has at least one well-formed region and no stray marker. */
  problems: EvolveBlockProblem[];
}

function markerOf(line: string): 'start' | 'end' | null {
  if (line.includes(EVOLVE_BLOCK_START)) return 'start';
  if (line.includes(EVOLVE_BLOCK_END)) return 'end';
  return null;
}

function locateInLines(lines: readonly string[]): EvolveBlockLocation {
  const regions: EvolveRegion[] = [];
  const problems: EvolveBlockProblem[] = [];
  let open: number | null = null;
  lines.forEach((line, n) => {
    const marker = markerOf(line);
    if (marker === 'start') {
      if (open !== null) {
        problems.push({
          kind: 'unbalanced',
          message: `${EVOLVE_BLOCK_START} on line ${n + 1} inside the region opened on line ${open + 1} (nested markers)`,
          lines: [open, n],
        });
      } else open = n;
    } else if (marker === 'end') {
      if (open === null) {
        problems.push({
          kind: 'unbalanced',
          message: `${EVOLVE_BLOCK_END} on line ${n + 1} without an ${EVOLVE_BLOCK_START} before it`,
          lines: [n],
        });
      } else {
        regions.push({ startLine: open, endLine: n });
        open = null;
      }
    }
  });
  if (open !== null) {
    problems.push({
      kind: 'unbalanced',
      message: `${EVOLVE_BLOCK_START} on line ${open + 1} has no ${EVOLVE_BLOCK_END} after it`,
      lines: [open],
    });
  }
  if (regions.length === 0 && problems.length === 0) {
    problems.push({ kind: 'no_region', message: `no ${EVOLVE_BLOCK_START} / ${EVOLVE_BLOCK_END} markers`, lines: [] });
  }
  return { regions, problems };
}

/**
 * Find the EVOLVE-BLOCK regions of a file: a marker is any line containing
 * EVOLVE-BLOCK-START / EVOLVE-BLOCK-END, whatever the comment syntax. A file
 * may hold several regions. Reports a missing region and unbalanced or
 * nested markers, with line numbers (for the CodeLens and for refusing to
 * evolve a broken file).
 */
export function locateEvolveBlocks(text: string): EvolveBlockLocation {
  return locateInLines(splitLines(text));
}

/** Thrown when a text lacks well-formed EVOLVE-BLOCK regions; the message says what is wrong. */
export class EvolveBlockError extends ThetaEvolveError {
  override readonly name = 'EvolveBlockError';
}

/** The regions of a text (one or more), or an EvolveBlockError naming the problem. */
export function evolveRegions(text: string, what = 'the program'): EvolveRegion[] {
  const { regions, problems } = locateEvolveBlocks(text);
  const first = problems[0];
  if (first) throw new EvolveBlockError(`${what}: ${first.message}`);
  return regions;
}

function describeRegions(regions: readonly EvolveRegion[]): string {
  return regions.map((r) => `${r.startLine + 1}-${r.endLine + 1}`).join(', ');
}

/** The lines strictly between the markers of each region. */
export function evolveRegionLines(text: string): string[][] {
  const lines = splitLines(text);
  return evolveRegions(text).map((region) => lines.slice(region.startLine + 1, region.endLine));
}

/** The lines strictly between the markers of each region, each region's joined with LF. */
export function evolveRegionContents(text: string): string[] {
  return evolveRegionLines(text).map((lines) => lines.join('\n'));
}

/** The content of every region, one after another, joined with LF (for one region: exactly its lines). */
export function evolveBlockContent(text: string): string {
  return evolveRegionContents(text).join('\n');
}

/**
 * "Apply to File": the file's text with the content of each EVOLVE-BLOCK
 * region replaced by the program's region of the same rank, everything else
 * (markers, code around, every line's own ending) kept. Throws
 * EvolveBlockError when a text has no usable region or the two hold
 * different numbers of regions.
 */
export function replaceEvolveBlock(fileText: string, programText: string): string {
  const targets = evolveRegions(fileText, 'the file');
  const sources = evolveRegions(programText, 'the program');
  if (targets.length !== sources.length) {
    throw new EvolveBlockError(
      `the file has ${targets.length} EVOLVE-BLOCK region${targets.length === 1 ? '' : 's'} (lines ${describeRegions(targets)}), the program ${sources.length}`,
    );
  }
  const programLines = splitLines(programText);
  let file = splitKeepingEnds(fileText);
  const fallbackEnd = dominantEnd(file.ends);
  // Last region first, so the earlier regions' line numbers stay valid.
  for (let r = targets.length - 1; r >= 0; r--) {
    const target = targets[r] as EvolveRegion;
    const source = sources[r] as EvolveRegion;
    const content = programLines.slice(source.startLine + 1, source.endLine);
    const interior = target.endLine - target.startLine - 1;
    // New lines take the ending of the marker line before them when the region was empty.
    const at = target.startLine + 1;
    file =
      interior > 0
        ? spliceLines(file, at, interior, content, fallbackEnd)
        : insertLines(file, at, content, (file.ends[target.startLine] as string) || fallbackEnd);
  }
  return joinKeepingEnds(file);
}

function insertLines(text: EndedLines, at: number, inserted: readonly string[], end: string): EndedLines {
  return {
    lines: [...text.lines.slice(0, at), ...inserted, ...text.lines.slice(at)],
    ends: [...text.ends.slice(0, at), ...inserted.map(() => end), ...text.ends.slice(at)],
  };
}

// ---------------------------------------------------------------------------
// Parsing responses

export interface DiffBlock {
  /** 0-based position among the response's complete blocks. */
  index: number;
  /** The SEARCH and REPLACE lines exactly as written (fences, trailing blank lines and all). */
  search: string[];
  replace: string[];
}

export interface ParsedResponse {
  blocks: DiffBlock[];
  /** A block was opened and never finished (a truncated response, a missing divider or REPLACE line): it is not applied. */
  unterminated: boolean;
  /** The answer with reasoning removed, LF line ends. */
  answer: string;
}

const SEARCH_LINE = /^\s*<{5,}\s*SEARCH\s*$/;
const DIVIDER_LINE = /^\s*={5,}\s*$/;
const REPLACE_LINE = /^\s*>{5,}\s*REPLACE\s*$/;
const FENCE_LINE = /^\s*(```|~~~)/;

type BlockState = 'outside' | 'search' | 'replace';

/**
 * What one line does to the block being read: opens, divides, finishes, or
 * is content. A SEARCH line inside a block, a REPLACE line before the
 * divider or a second divider means the block so far was never finished
 * ('abandon'), so no marker line ever becomes content of a child.
 */
function blockStep(
  state: BlockState,
  line: string,
): { next: BlockState; event: 'open' | 'divide' | 'finish' | 'abandon_and_open' | 'abandon' | 'content' | 'none' } {
  if (state === 'outside') return SEARCH_LINE.test(line) ? { next: 'search', event: 'open' } : { next: 'outside', event: 'none' };
  if (SEARCH_LINE.test(line)) return { next: 'search', event: 'abandon_and_open' };
  if (state === 'search') {
    if (DIVIDER_LINE.test(line)) return { next: 'replace', event: 'divide' };
    if (REPLACE_LINE.test(line)) return { next: 'outside', event: 'abandon' };
    return { next: 'search', event: 'content' };
  }
  if (REPLACE_LINE.test(line)) return { next: 'outside', event: 'finish' };
  // A second divider: which of the two was meant cannot be told, so neither section is trusted.
  if (DIVIDER_LINE.test(line)) return { next: 'outside', event: 'abandon' };
  return { next: 'replace', event: 'content' };
}

const THINK_OPEN = /^\s*<think>/i;
const THINK_CLOSE = '</think>';

/**
 * Where the leading reasoning ends: the first `</think>` from `from` on that
 * is outside any SEARCH/REPLACE section, or alone on its line (reasoning may
 * leave a draft block unfinished). A `</think>` inside a section is code.
 */
function reasoningCloseAt(text: string, from: number): number {
  let state: BlockState = 'outside';
  let lineStart = from;
  while (lineStart <= text.length) {
    const newline = text.indexOf('\n', lineStart);
    const lineEnd = newline === -1 ? text.length : newline;
    const line = text.slice(lineStart, lineEnd);
    const tag = line.toLowerCase().indexOf(THINK_CLOSE);
    if (tag !== -1 && (state === 'outside' || line.trim().toLowerCase() === THINK_CLOSE)) return lineStart + tag;
    state = blockStep(state, line.replace(/\r$/, '')).next;
    if (newline === -1) break;
    lineStart = newline + 1;
  }
  return -1;
}

/**
 * Split a model's text into leading reasoning and the answer. Reasoning is
 * only a leading `<think>...</think>` (closed by the first `</think>` outside
 * a SEARCH/REPLACE section, else by the first one; an unclosed one runs to
 * the end: a truncated reply), or the text before a `</think>` with no `<think>` before
 * it (servers whose chat template holds the opening tag). Any other
 * `<think>` or `</think>` is text of the answer: inside a SEARCH or REPLACE
 * section it is code (a program that parses model output, a string).
 */
export function splitLeadingReasoning(text: string): { reasoning: string | null; answer: string } {
  const open = THINK_OPEN.exec(text);
  if (open) {
    let close = reasoningCloseAt(text, open[0].length);
    // Reasoning whose draft block swallows its own closing tag: the first tag closes it after all.
    if (close === -1) close = text.toLowerCase().indexOf(THINK_CLOSE, open[0].length);
    if (close === -1) return { reasoning: text.slice(open[0].length), answer: '' };
    return { reasoning: text.slice(open[0].length, close), answer: text.slice(close + THINK_CLOSE.length) };
  }
  const close = reasoningCloseAt(text, 0);
  if (close === -1 || /<think>/i.test(text.slice(0, close))) return { reasoning: null, answer: text };
  return { reasoning: text.slice(0, close), answer: text.slice(close + THINK_CLOSE.length) };
}

/** The answer without its leading reasoning (see splitLeadingReasoning). */
export function stripReasoning(text: string): string {
  return splitLeadingReasoning(text).answer;
}

/** Parse the SEARCH/REPLACE blocks of a model's answer (leading reasoning ignored, CRLF tolerated); sections are kept as written. */
export function parseDiffBlocks(response: string): ParsedResponse {
  const answer = stripReasoning(response).replace(/\r\n?/g, '\n');
  const blocks: DiffBlock[] = [];
  let state: BlockState = 'outside';
  let unterminated = false;
  let search: string[] = [];
  let replace: string[] = [];
  for (const line of answer.split('\n')) {
    const { next, event } = blockStep(state, line);
    if (event === 'open' || event === 'abandon_and_open') {
      if (event === 'abandon_and_open') unterminated = true;
      search = [];
      replace = [];
    } else if (event === 'abandon') unterminated = true;
    else if (event === 'finish') blocks.push({ index: blocks.length, search, replace });
    else if (event === 'content') (state === 'search' ? search : replace).push(line);
    state = next;
  }
  return { blocks, unterminated: unterminated || state !== 'outside', answer };
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
  /** The child when at least one block applied (also for no_valid_change and too_long), else null. Untouched lines keep their own line ends. */
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

function indexOfLines(haystack: readonly string[], needle: readonly string[], from: number): number {
  const last = haystack.length - needle.length;
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

/** A markdown fence pair wrapped around a SEARCH or REPLACE section by the model, stripped; null when there is none. */
function unfenced(lines: readonly string[]): string[] | null {
  if (lines.length >= 2 && FENCE_LINE.test(lines[0] as string) && FENCE_LINE.test(lines[lines.length - 1] as string))
    return lines.slice(1, -1);
  return null;
}

function withoutTrailingBlankLines(lines: readonly string[]): string[] {
  let end = lines.length;
  while (end > 0 && (lines[end - 1] as string).trim() === '') end--;
  return lines.slice(0, end);
}

/**
 * The readings of a block, tried in order until one applies: as written
 * (a literal match comes before any fence is stripped, so a Markdown
 * program's own fence lines can be SEARCH text); with a fence pair the
 * model wrapped around the sections stripped; and each of those again
 * without trailing blank lines (the release strips them: a blank line
 * before `=======` must not make the SEARCH fail).
 */
function readingsOf(block: DiffBlock, parentHasFences: boolean): { search: string[]; replace: string[] }[] {
  // A fenced REPLACE for a program without fence lines can only be a wrapper.
  const literalReplace = parentHasFences ? block.replace : (unfenced(block.replace) ?? block.replace);
  const readings = [{ search: block.search, replace: literalReplace }];
  const search = unfenced(block.search);
  if (search) readings.push({ search, replace: unfenced(block.replace) ?? block.replace });
  for (const reading of [...readings]) {
    const search = withoutTrailingBlankLines(reading.search);
    if (search.length < reading.search.length && search.length > 0)
      readings.push({ search, replace: withoutTrailingBlankLines(reading.replace) });
  }
  return readings;
}

/** The lines outside every region's interior, an interior standing as one null: what a child must keep from its parent. */
function frameOf(lines: readonly string[]): (string | null)[] | null {
  const { regions, problems } = locateInLines(lines);
  if (problems.length > 0) return null;
  const frame: (string | null)[] = [];
  let next = 0;
  for (const region of regions) {
    for (let i = next; i <= region.startLine; i++) frame.push(lines[i] as string);
    frame.push(null);
    next = region.endLine;
  }
  for (let i = next; i < lines.length; i++) frame.push(lines[i] as string);
  return frame;
}

function sameFrame(a: readonly (string | null)[], b: readonly (string | null)[] | null): boolean {
  return b !== null && a.length === b.length && a.every((line, i) => line === b[i]);
}

function markerLines(lines: readonly string[]): string[] {
  return lines.filter((line) => markerOf(line) !== null);
}

/**
 * Apply one block: the first match (of the first reading that has one) whose
 * replacement leaves everything outside the EVOLVE-BLOCK regions as it was.
 * A marker line may be SEARCH context when REPLACE keeps it unchanged; a
 * replacement that adds, drops or alters a marker line is rejected, as is a
 * match whose replacement would change a line outside the regions.
 */
function applyBlock(
  text: EndedLines,
  frame: readonly (string | null)[],
  block: DiffBlock,
  parentHasFences: boolean,
  fallbackEnd: string,
): { text: EndedLines } | { reason: SkipReason; detail: string } {
  if (block.search.every((l) => l.trim() === '')) return { reason: 'empty_search', detail: 'the SEARCH section is empty' };
  let outside: { at: number; length: number } | null = null;
  let markerChange = false;
  for (const reading of readingsOf(block, parentHasFences)) {
    const markersKept = markerLines(reading.search).join('\n') === markerLines(reading.replace).join('\n');
    for (let at = indexOfLines(text.lines, reading.search, 0); at !== -1; at = indexOfLines(text.lines, reading.search, at + 1)) {
      if (!markersKept) {
        markerChange = true;
        break;
      }
      const child = spliceLines(text, at, reading.search.length, reading.replace, fallbackEnd);
      if (sameFrame(frame, frameOf(child.lines))) return { text: child };
      outside ??= { at, length: reading.search.length };
    }
  }
  if (markerChange && outside === null)
    return { reason: 'marker_in_replace', detail: 'the replacement adds, drops or alters an EVOLVE-BLOCK marker line' };
  if (outside !== null) {
    const regions = locateInLines(text.lines).regions;
    return {
      reason: 'outside_evolve_block',
      detail: `the SEARCH text matches lines ${outside.at + 1}-${outside.at + outside.length}, and replacing them changes code outside the EVOLVE-BLOCK (lines ${describeRegions(regions)})`,
    };
  }
  return { reason: 'no_match', detail: 'the SEARCH text matches no lines of the program exactly' };
}

/**
 * Turn a parent and a model's answer into a child (docs/algorithm.md section 3):
 * blocks apply in order, each to the result of the ones before it, and may
 * edit any EVOLVE-BLOCK region of the parent. Every line the blocks do not
 * replace keeps its own line ending.
 */
export function applyResponse(parent: string, response: string, options: ApplyOptions = {}): ApplyResult {
  const maxLength = options.maxLength ?? DEFAULT_MAX_CODE_LENGTH;
  const language = options.language ?? '';
  const parsed = parseDiffBlocks(response);
  const location = locateEvolveBlocks(parent);
  const result = (status: ApplyStatus, child: string | null, applied: number, skipped: SkippedBlock[], message: string): ApplyResult => ({
    status,
    child,
    applied,
    skipped,
    blocks: parsed.blocks.length,
    message,
  });
  const brokenRegion = location.problems[0];
  if (brokenRegion) return result('no_evolve_block', null, 0, [], `the parent has no usable EVOLVE-BLOCK: ${brokenRegion.message}`);
  if (parsed.blocks.length === 0) {
    return result(
      'no_diff_blocks',
      null,
      0,
      [],
      parsed.unterminated ? 'the answer has an unterminated SEARCH/REPLACE block only' : 'the answer has no SEARCH/REPLACE block',
    );
  }

  let text = splitKeepingEnds(parent);
  const frame = frameOf(text.lines) as (string | null)[];
  const parentHasFences = text.lines.some((line) => FENCE_LINE.test(line));
  const fallbackEnd = dominantEnd(text.ends);
  let applied = 0;
  const skipped: SkippedBlock[] = [];
  for (const block of parsed.blocks) {
    const outcome = applyBlock(text, frame, block, parentHasFences, fallbackEnd);
    if ('reason' in outcome) {
      skipped.push({ index: block.index, reason: outcome.reason, search: excerpt(block.search), detail: outcome.detail });
      continue;
    }
    text = outcome.text;
    applied++;
  }

  const notes = [
    ...(skipped.length > 0 ? [`skipped ${skipped.length} (${skipped.map((s) => `block ${s.index + 1}: ${s.reason}`).join(', ')})`] : []),
    ...(parsed.unterminated ? ['an unterminated block was ignored'] : []),
  ];
  const note = notes.length > 0 ? `; ${notes.join('; ')}` : '';
  if (applied === 0) {
    if (skipped.some((s) => s.reason === 'outside_evolve_block' || s.reason === 'marker_in_replace')) {
      return result('outside_evolve_block', null, 0, skipped, `no block applied inside the EVOLVE-BLOCK${note}`);
    }
    return result('no_valid_change', null, 0, skipped, `no block applied${note}`);
  }
  const child = joinKeepingEnds(text);
  if (sameCodeIgnoringComments(child, parent, language)) {
    return result('no_valid_change', child, applied, skipped, `the child equals the parent up to comments and blank space${note}`);
  }
  if (child.length > maxLength) {
    return result('too_long', child, applied, skipped, `the child has ${child.length} characters, over the limit of ${maxLength}${note}`);
  }
  return result('applied', child, applied, skipped, `applied ${applied} of ${parsed.blocks.length} blocks${note}`);
}
