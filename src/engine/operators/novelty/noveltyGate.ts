// Novelty rejection (docs/algorithm.md section 12; ShinkaEvolve's novelty
// judge): before a child is evaluated, its EVOLVE-BLOCK is embedded and
// compared (cosine) with the programs of its island as the step's plan saw
// them; above the threshold it is `not_novel` unless the judge (the
// run's model, asked yes/no) says it is different. The embedding server is
// infrastructure: when it fails, children are evaluated as without the
// check, and the run says so once (again after it recovered and failed anew).
import { evolveBlockContent } from '../../common/diff';
import { errorMessage } from '../../common/errors';
import type { ChatMessage, GenerationJob, SampleResponse } from '../../common/types';
import type { ProgramDatabase } from '../../database/programDatabase';
import type { EmbeddingClient } from './embeddingClient';
import { judgedDifferent, judgeMessages } from './judge';
import { blockTailNorms, bytesOf, int8Of, IslandMatrix, quantise } from './vectors';

/**
 * Texts per embedding request: children arriving together share one, up to this many. Small enough that the first
 * children of a step reach their evaluations after a short request, and that no reply (a float list per text) takes
 * long to read in one go.
 */
const MAX_BATCH = 128;

/** Comparisons run this long at most before the event loop gets a turn (evaluations ending, responses arriving). */
const COMPARE_SLICE_MS = 3;

export type NoveltyVerdict =
  | { kind: 'novel' }
  | { kind: 'not_novel'; reason: string }
  /** The check could not be made (the embedding server or the judge failed): the child is evaluated as without it. */
  | { kind: 'unchecked' };

export interface NoveltyGateOptions {
  embedder: EmbeddingClient;
  threshold: number;
  /** The run's model asked one yes/no question (the question sent and its answer), or null without the judge. */
  judge: NoveltyJudge | null;
  /** Said once per failure of the embedding server or the judge (a non-fatal error event). */
  warn: (message: string) => void;
  /** The run's stop. */
  signal: AbortSignal;
}

/** Asks the run's model whether a child is meaningfully different (the question sent and its answer). */
export type NoveltyJudge = (messages: ChatMessage[], asked: { job: GenerationJob; sampleIndex: number }) => Promise<JudgeAnswer>;

/** The judge's question as sent (its model) and the reply (its tokens). */
export interface JudgeAnswer {
  question: GenerationJob;
  reply: SampleResponse;
}

/** Counts a request's tokens and dollars toward the run's limits (maxTotalTokens, maxCostUsd), as a step's are. */
export type SpendCounter = (job: GenerationJob, reply: SampleResponse) => void;

interface Queued {
  text: string;
  resolve: (vector: Float32Array) => void;
  reject: (err: unknown) => void;
}

/** The mutable code a program is judged by: its EVOLVE-BLOCK content, or the whole text when it has none. */
function mutableCode(code: string): string {
  try {
    return evolveBlockContent(code);
  } catch {
    return code;
  }
}

export class NoveltyGate {
  /** Vectors by code hash: the database's and the new ones (a child that passed, a program embedded late). */
  private readonly vectors = new Map<string, Int8Array>();
  /** Each vector's block tail norms (IslandMatrix's bound), computed once rather than at every step's matrices. */
  private readonly tails = new WeakMap<Int8Array, Float64Array>();
  /** Of those, the ones the database holds. */
  private readonly stored = new Set<string>();
  /** The step that brought each vector the database does not hold yet (dropped once that step is committed without it). */
  private readonly stepOf = new Map<string, number>();
  private queue: Queued[] = [];
  private flushing = false;
  /** Comparisons waiting their turn, in arrival order, from `compareHead` on. */
  private comparisons: (() => void)[] = [];
  private compareHead = 0;
  private comparing = false;
  private failing = false;
  private judgeFailing = false;

  constructor(
    private readonly options: NoveltyGateOptions,
    db: ProgramDatabase,
  ) {
    for (const [hash, bytes] of db.storedEmbeddings()) {
      this.vectors.set(hash, int8Of(bytes));
      this.stored.add(hash);
    }
  }

  /** How many vectors are held (stored and new). */
  get size(): number {
    return this.vectors.size;
  }

  /**
   * The step's view of its islands, taken now (at its plan) so that what a
   * child is compared with does not depend on when it arrives: island
   * programs without a vector are embedded first, in one request.
   */
  forStep(step: number, db: ProgramDatabase, islands: Iterable<number>, spent: SpendCounter): StepNovelty {
    const members = new Map<number, { id: string; codeHash: string }[]>();
    const missing = new Map<string, string>();
    for (const island of new Set(islands)) {
      const list = db.islandMembers(island);
      members.set(island, list);
      for (const m of list) {
        if (this.vectors.has(m.codeHash) || missing.has(m.codeHash)) continue;
        const code = db.get(m.id)?.code;
        if (code !== undefined) missing.set(m.codeHash, mutableCode(code));
      }
    }
    const ready = this.embedAll([...missing.values()]).then(
      (vectors) => {
        [...missing.keys()].forEach((hash, i) => this.remember(hash, vectors[i] as Float32Array, step));
        const matrices = new Map<number, IslandMatrix>();
        for (const [island, list] of members)
          matrices.set(
            island,
            new IslandMatrix(
              // One row per code: a migration copy has its source's vector.
              [...new Map(list.map((m) => [m.codeHash, m.id])).entries()].flatMap(([hash, id]) => {
                const vector = this.vectors.get(hash);
                return vector ? [{ id, vector, tails: this.tailsOf(vector) }] : [];
              }),
            ),
          );
        return matrices;
      },
      (err: unknown) => {
        this.failed(err);
        return null;
      },
    );
    return new StepNovelty(this, step, db, ready, spent);
  }

  /** The vectors to store with a commit: the new ones of programs now live (asked once the step's children are in). */
  toStore(db: ProgramDatabase): Map<string, Uint8Array> {
    const live = db.liveCodeHashes();
    const out = new Map<string, Uint8Array>();
    for (const [hash, vector] of this.vectors) {
      if (this.stored.has(hash) || !live.has(hash)) continue;
      out.set(hash, bytesOf(vector));
      this.stored.add(hash);
      this.stepOf.delete(hash);
    }
    return out;
  }

  /** After step `step` committed: the vectors of programs that left the population go, as do new ones no commit up to it kept. */
  afterCommit(step: number, db: ProgramDatabase): void {
    const live = db.liveCodeHashes();
    for (const hash of [...this.vectors.keys()]) {
      if (live.has(hash)) continue;
      const from = this.stepOf.get(hash);
      if (this.stored.has(hash) || (from !== undefined && from <= step)) {
        this.vectors.delete(hash);
        this.stored.delete(hash);
        this.stepOf.delete(hash);
      }
    }
  }

  private tailsOf(vector: Int8Array): Float64Array {
    let tails = this.tails.get(vector);
    if (tails === undefined) {
      tails = blockTailNorms(vector);
      this.tails.set(vector, tails);
    }
    return tails;
  }

  /** @internal (StepNovelty) */
  remember(hash: string, vector: Float32Array, step: number): void {
    if (this.vectors.has(hash)) return;
    this.vectors.set(hash, quantise(vector));
    this.stepOf.set(hash, step);
  }

  /** @internal (StepNovelty) */
  get settings(): NoveltyGateOptions {
    return this.options;
  }

  /** @internal (StepNovelty) One vector per text; texts arriving together share a request. */
  embed(text: string): Promise<Float32Array> {
    return new Promise((resolve, reject) => {
      this.queue.push({ text, resolve, reject });
      this.scheduleFlush();
    });
  }

  /**
   * @internal (StepNovelty) Runs `work` (a comparison with an island's matrix) in its turn. A step's children come back
   * from one request together: their comparisons run a few milliseconds' worth at a time, with the event loop's timers
   * and I/O in between, so that evaluations of those already judged start and end on time.
   */
  compare<T>(work: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.comparisons.push(() => {
        try {
          resolve(work());
        } catch (err) {
          reject(err);
        }
      });
      if (this.comparing) return;
      this.comparing = true;
      setImmediate(() => this.runComparisons());
    });
  }

  private runComparisons(): void {
    const until = performance.now() + COMPARE_SLICE_MS;
    while (this.compareHead < this.comparisons.length && performance.now() < until) (this.comparisons[this.compareHead++] as () => void)();
    if (this.compareHead < this.comparisons.length) {
      // An immediate set now runs in the next turn of the event loop, after its timers and I/O.
      setImmediate(() => this.runComparisons());
      return;
    }
    this.comparisons = [];
    this.compareHead = 0;
    this.comparing = false;
  }

  /** @internal (StepNovelty) */
  failed(err: unknown): void {
    if (this.options.signal.aborted || this.failing) return;
    this.failing = true;
    this.options.warn(`novelty rejection: ${errorMessage(err)}; children are evaluated without the novelty check until it answers`);
  }

  /** @internal (StepNovelty) Said once per run: each such child is evaluated. */
  judgeFailed(err: unknown): void {
    if (this.options.signal.aborted || this.judgeFailing) return;
    this.judgeFailing = true;
    this.options.warn(`novelty judge: ${errorMessage(err)}; children it cannot judge are evaluated`);
  }

  /** @internal (StepNovelty) */
  succeeded(): void {
    if (!this.failing) return;
    this.failing = false;
    this.options.warn('novelty rejection: the embedding server answers again; the novelty check is back on');
  }

  private embedAll(texts: readonly string[]): Promise<Float32Array[]> {
    return Promise.all(texts.map((t) => this.embed(t)));
  }

  private scheduleFlush(): void {
    if (this.flushing) return;
    this.flushing = true;
    // Whatever arrives in this turn of the event loop goes in the first request; what arrives while it runs, in the next.
    setImmediate(() => void this.flush());
  }

  private async flush(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, MAX_BATCH);
      try {
        const vectors = await this.options.embedder.embed(
          batch.map((q) => q.text),
          this.options.signal,
        );
        this.succeeded();
        batch.forEach((q, i) => q.resolve(vectors[i] as Float32Array));
      } catch (err) {
        for (const q of batch) q.reject(err);
      }
    }
    this.flushing = false;
  }
}

/** One step's novelty checks, against its islands as its plan saw them. */
export class StepNovelty {
  constructor(
    private readonly gate: NoveltyGate,
    private readonly step: number,
    private readonly db: ProgramDatabase,
    private readonly ready: Promise<Map<number, IslandMatrix> | null>,
    /** The judge's questions are the run's spend too. */
    private readonly spent: SpendCounter,
  ) {}

  /** Whether `child` (of a parent on `island`) is new enough to evaluate. */
  async check(child: { code: string; codeHash: string; island: number; job: GenerationJob; sampleIndex: number }): Promise<NoveltyVerdict> {
    const { threshold, judge } = this.gate.settings;
    const matrices = await this.ready;
    if (matrices === null) return { kind: 'unchecked' };
    const text = mutableCode(child.code);
    let vector: Float32Array;
    try {
      vector = await this.gate.embed(text);
    } catch (err) {
      this.gate.failed(err);
      return { kind: 'unchecked' };
    }
    const matrix = matrices.get(child.island);
    const closest = matrix ? await this.gate.compare(() => matrix.closest(vector, threshold)) : null;
    if (closest === null) {
      this.gate.remember(child.codeHash, vector, this.step);
      return { kind: 'novel' };
    }
    const why = `its code has cosine similarity ${closest.similarity.toFixed(4)} with program ${closest.id} of island ${child.island} (thetaevolve.novelty.threshold ${threshold})`;
    if (judge === null) return { kind: 'not_novel', reason: why };
    const existing = this.db.get(closest.id)?.code;
    if (existing === undefined) return { kind: 'not_novel', reason: why };
    let answer: JudgeAnswer;
    try {
      answer = await judge(judgeMessages(mutableCode(existing), text, closest.similarity), {
        job: child.job,
        sampleIndex: child.sampleIndex,
      });
    } catch (err) {
      this.gate.judgeFailed(err);
      return { kind: 'unchecked' };
    }
    this.spent(answer.question, answer.reply);
    if (!judgedDifferent(answer.reply.content))
      return { kind: 'not_novel', reason: `${why}, and the judge did not find it meaningfully different` };
    this.gate.remember(child.codeHash, vector, this.step);
    return { kind: 'novel' };
  }
}
