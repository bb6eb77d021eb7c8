// The offline sampler (`--sampler mutate`): no model. Each response is an
// explanation plus 1-3 SEARCH/REPLACE blocks that nudge numeric literals
// inside the parent's EVOLVE-BLOCK, written in exactly the format a model
// must use, so it goes through the same parser and checks as a model's
// answer. It lets anyone run the whole pipeline, and validate a task,
// without a GPU.
import { segmentCode } from '../common/codeText';
import { locateEvolveBlocks } from '../common/diff';
import { Rng } from '../common/rng';
import { percentile } from '../common/stats';
import type { GenerationJob, GenerationStats, ResponseSource, Sample } from '../common/types';

export const MUTATE_SAMPLER_LABEL = 'offline mutate sampler (no model)';

export interface MutateSamplerOptions {
  /** Mixed into every sample's seed (job.seed + index). */
  seed: number;
  /** Comment syntax of the programs (file extension); default: guessed from the EVOLVE-BLOCK-START line. */
  language?: string;
}

interface Literal {
  line: number;
  /** Column range within the line. */
  start: number;
  end: number;
  text: string;
  isFloat: boolean;
}

// A decimal literal not glued to an identifier, a dot or a suffix (skips x1, 0x1F, 1.0f, 1_000, 2j).
const NUMBER = /(?<![\w.])(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?(?![\w.])/g;

/** The comment syntax a program's start-marker line is written in. */
export function guessLanguageFromMarker(code: string): string {
  const line =
    code
      .split(/\r?\n/)
      .find((l) => l.includes('EVOLVE-BLOCK-START'))
      ?.trim() ?? '';
  if (line.startsWith('#')) return 'py';
  if (line.startsWith('//') || line.startsWith('/*')) return 'c';
  if (line.startsWith('--')) return 'sql';
  if (line.startsWith('%')) return 'm';
  if (line.startsWith(';')) return 'lisp';
  return 'py';
}

/** Numeric literals in code (not comments or strings) strictly inside the single EVOLVE-BLOCK. */
export function numericLiteralsInEvolveBlock(code: string, language: string): { lines: string[]; literals: Literal[] } {
  const text = code.replace(/\r\n?/g, '\n');
  const lines = text.split('\n');
  const { regions, problems } = locateEvolveBlocks(text);
  const region = regions[0];
  if (problems.length > 0 || !region) return { lines, literals: [] };
  const lineStarts: number[] = [];
  let offset = 0;
  for (const line of lines) {
    lineStarts.push(offset);
    offset += line.length + 1;
  }
  const from = lineStarts[region.startLine + 1] ?? text.length;
  const to = lineStarts[region.endLine] ?? text.length;
  const literals: Literal[] = [];
  for (const segment of segmentCode(text, language)) {
    if (segment.kind !== 'code' || segment.end <= from || segment.start >= to) continue;
    const start = Math.max(segment.start, from);
    const end = Math.min(segment.end, to);
    for (const match of text.slice(start, end).matchAll(NUMBER)) {
      const at = start + (match.index ?? 0);
      // Lookbehind across the slice edge: the character before the slice is a quote, comment end or newline, never \w.
      let line = region.startLine + 1;
      while (line + 1 < lines.length && (lineStarts[line + 1] as number) <= at) line++;
      const column = at - (lineStarts[line] as number);
      literals.push({ line, start: column, end: column + match[0].length, text: match[0], isFloat: /[.eE]/.test(match[0]) });
    }
  }
  return { lines, literals };
}

function significantDigits(literal: string): number {
  const mantissa = literal.split(/[eE]/)[0] ?? literal;
  return mantissa.replace('.', '').replace(/^0+/, '').length;
}

function formatFloat(value: number, digits: number): string {
  let text = String(Number(value.toPrecision(Math.min(12, Math.max(4, digits)))));
  if (!/[.eE]/.test(text) && /^-?\d+$/.test(text)) text += '.0';
  return text;
}

interface Mutation {
  replacement: string;
  kind: 'multiplicative' | 'additive' | 'large' | 'step';
}

/** A changed literal (never negative where it was not), or null when no visible change came out. */
function mutateLiteral(literal: Literal, rng: Rng): Mutation | null {
  const value = Number(literal.text);
  for (let attempt = 0; attempt < 4; attempt++) {
    const r = rng.next();
    const u = rng.next() * 2 - 1;
    if (!literal.isFloat) {
      const large = r >= 0.9;
      let next = large ? (rng.next() < 0.5 ? value * 2 : Math.floor(value / 2)) : value + (u < 0 ? -1 : 1);
      if (next < 0 || !Number.isSafeInteger(next)) next = value + 1;
      if (next !== value) return { replacement: String(next), kind: large ? 'large' : 'step' };
      continue;
    }
    let next: number;
    let kind: Mutation['kind'];
    if (r < 0.45 && value !== 0) {
      next = value * (1 + 0.05 * u);
      kind = 'multiplicative';
    } else if (r < 0.9) {
      next = value + 0.02 * u;
      kind = 'additive';
    } else {
      next = value === 0 ? u : value * (0.5 + 1.5 * rng.next());
      kind = 'large';
    }
    if (next < 0) next = -next;
    const replacement = formatFloat(next, significantDigits(literal.text) + 2);
    if (Number(replacement) !== value && Number.isFinite(Number(replacement))) return { replacement, kind };
  }
  return null;
}

/** One response for a parent, fully determined by the seed. */
export function proposeMutation(parentCode: string, seed: number, language: string = guessLanguageFromMarker(parentCode)): string {
  const rng = Rng.fromSeed(seed >>> 0);
  const { lines, literals } = numericLiteralsInEvolveBlock(parentCode, language);
  if (literals.length === 0) {
    return 'Offline mutate sampler: the EVOLVE-BLOCK holds no numeric literal to perturb, so there is nothing to propose.';
  }
  const byLine = new Map<number, Literal[]>();
  for (const literal of literals) byLine.set(literal.line, [...(byLine.get(literal.line) ?? []), literal]);
  // Floats are the tunable constants; integers are often sizes and indices, so they are picked less.
  const candidates = [...byLine.entries()].map(([line, lits]) => ({
    line,
    lits,
    weight: lits.reduce((w, l) => w + (l.isFloat ? 4 : 1), 0),
  }));
  const wanted = Math.min(candidates.length, 1 + rng.int(3));
  const notes: string[] = [];
  const blocks: string[] = [];
  const usedTexts = new Set<string>();
  while (blocks.length < wanted && candidates.length > 0) {
    const pickedAt = rng.weightedIndex(candidates.map((c) => c.weight));
    const [picked] = candidates.splice(pickedAt, 1);
    if (!picked) break;
    const original = lines[picked.line] as string;
    if (usedTexts.has(original)) continue; // a repeated line: its first copy is the one a SEARCH would hit
    const howMany = picked.lits.length > 1 && rng.next() < 0.25 ? 2 : 1;
    const pool = [...picked.lits];
    const chosen: Literal[] = [];
    while (chosen.length < howMany && pool.length > 0) {
      const [lit] = pool.splice(rng.weightedIndex(pool.map((l) => (l.isFloat ? 4 : 1))), 1);
      if (lit) chosen.push(lit);
    }
    let changed = original;
    // Right to left, so earlier columns stay valid.
    for (const lit of chosen.sort((a, b) => b.start - a.start)) {
      const mutation = mutateLiteral(lit, rng);
      if (!mutation) continue;
      changed = changed.slice(0, lit.start) + mutation.replacement + changed.slice(lit.end);
      notes.push(`- line ${picked.line + 1}: ${lit.text} -> ${mutation.replacement} (${mutation.kind} change)`);
    }
    if (changed === original) continue;
    usedTexts.add(original);
    blocks.push(['<<<<<<< SEARCH', original, '=======', changed, '>>>>>>> REPLACE'].join('\n'));
  }
  if (blocks.length === 0) return 'Offline mutate sampler: no literal could be changed visibly this time.';
  return [
    `Offline mutate sampler (no model): I perturb ${notes.length} numeric literal${notes.length === 1 ? '' : 's'} inside the EVOLVE-BLOCK to probe nearby settings.`,
    ...notes,
    '',
    blocks.join('\n\n'),
    '',
  ].join('\n');
}

/** Seed of one sample: the job's seed plus its index, mixed with the sampler's own seed. */
function sampleSeed(samplerSeed: number, jobSeed: number, index: number): number {
  return (Math.imul(samplerSeed >>> 0, 0x9e3779b1) ^ ((jobSeed + index) >>> 0)) >>> 0;
}

export class MutateSampler implements ResponseSource {
  readonly kind = 'mutate' as const;
  readonly label = MUTATE_SAMPLER_LABEL;
  private readonly seed: number;
  private readonly language: string | undefined;

  constructor(options: MutateSamplerOptions) {
    this.seed = options.seed;
    this.language = options.language;
  }

  async check(_signal?: AbortSignal): Promise<void> {
    // Nothing to reach: the sampler always serves.
  }

  /** The response for sample `index` of a job (what generate delivers). */
  propose(job: Pick<GenerationJob, 'parentCode' | 'seed'>, index: number): string {
    return proposeMutation(
      job.parentCode,
      sampleSeed(this.seed, job.seed, index),
      this.language ?? guessLanguageFromMarker(job.parentCode),
    );
  }

  async generate(jobs: GenerationJob[], signal: AbortSignal, onSample: (sample: Sample) => void): Promise<GenerationStats> {
    const started = performance.now();
    const latencies: number[] = [];
    let requests = 0;
    outer: for (const job of jobs) {
      for (let index = 0; index < job.n; index++) {
        // One sample per macrotask, so evaluations can start while the rest are proposed.
        await new Promise<void>((resolve) => setImmediate(resolve));
        if (signal.aborted) break outer;
        const t0 = performance.now();
        const content = this.propose(job, index);
        const latencyMs = performance.now() - t0;
        latencies.push(latencyMs);
        requests++;
        onSample({
          ok: true,
          jobKey: job.key,
          index,
          latencyMs,
          retries: 0,
          content,
          reasoning: null,
          finishReason: 'stop',
          truncated: false,
          promptTokens: 0,
          completionTokens: 0,
          tokens: null,
          policyVersion: null,
        });
      }
    }
    return {
      requests,
      retries: 0,
      failures: 0,
      promptTokens: 0,
      completionTokens: 0,
      latencyMsP50: latencies.length > 0 ? percentile(latencies, 50) : 0,
      latencyMsP95: latencies.length > 0 ? percentile(latencies, 95) : 0,
      wallMs: performance.now() - started,
    };
  }
}
