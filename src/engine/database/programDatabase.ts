// The program database of docs/algorithm.md section 6: one SQLite file per run.
// A facade over three parts: the population rules (population.ts: islands,
// MAP-Elites, archive, eviction, migration, parent sampling), which decide
// each step as a change set; the run store (runStore.ts), which writes that
// change set in one transaction and replaces the file atomically; and the
// read queries (queries.ts).
import { type ModelUsage, modelUsageOf } from './modelUsage';
import { ThetaEvolveError } from '../common/errors';
import type { DatabaseSnapshot } from '../common/snapshot';
import {
  type GuidanceVersion,
  type RecommendationsVersion,
  PROGRAM_ORIGINS,
  type ProgramOrigin,
  type SteeringEntry,
} from '../common/steering';
import type { ParentDraw, Population } from './population';
import { RunQueries } from './queries';
import { isValidScore } from '../common/scoring';
import type { DatabaseConfig, NewProgram, ProgramRecord } from './records';
import { RunStore } from './runStore';
import type { ActivePin } from './steeringRules';

export { featureBins } from './eliteGrid';
export type { ParentDraw } from './population';
export { type DatabaseConfig, databaseConfigFromSettings, type NewProgram, type ProgramRecord } from './records';
export { DatabaseFileError } from './schema';
export type { ActivePin } from './steeringRules';
export type { DatabaseSnapshot };

export interface CommitResult {
  inserted: ProgramRecord[];
  newBest: ProgramRecord | null;
  /**
   * Where the time went: applyMs, the rules on the in-memory structures;
   * rowsMs, compressing texts and writing the changed rows into SQLite;
   * fileMs, exporting the database and replacing the file durably.
   */
  timings: { applyMs: number; rowsMs: number; fileMs: number };
  /** Size of the file written. */
  fileBytes: number;
}

function describe(err: unknown): string {
  return err instanceof Error ? (err.message.split('\n')[0] ?? err.message) : String(err);
}

/** A step could not be saved: the file still holds every step before it. */
export class DatabaseWriteError extends ThetaEvolveError {
  override readonly name = 'DatabaseWriteError';
}

/** A failure of the file system while saving, said for people (a full disk as such); anything else as it is. */
function writeFailure(file: string, step: number, err: unknown): unknown {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  if (typeof code !== 'string') return err;
  const why = code === 'ENOSPC' || code === 'EDQUOT' ? `the disk is full (${code})` : describe(err);
  return new DatabaseWriteError(`step ${step} could not be saved to ${file}: ${why}; the file keeps every step before it`, {
    cause: err,
  });
}

export class ProgramDatabase {
  readonly file: string;
  readonly readOnly: boolean;
  readonly config: DatabaseConfig;
  private readonly queries: RunQueries;
  private broken: string | null = null;
  private busy = false;

  private constructor(
    private readonly store: RunStore,
    private readonly population: Population,
  ) {
    this.file = store.file;
    this.readOnly = store.readOnly;
    this.config = store.config;
    this.queries = new RunQueries(store, population);
  }

  // ---------------------------------------------------------------- opening

  /**
   * Create the run database at `file`, or resume it when it exists. A resumed
   * run keeps the configuration it was created with (`config` is then only
   * used for new files); `meta` is stored with a new file, and on reopen
   * only adds keys the stored run meta lacks (what the run was created with,
   * such as createdAt and startCode, is never rewritten); `sessionMeta`
   * describes the session that opens it (its sandbox) and is rewritten.
   */
  static async open(
    file: string,
    options: { config: DatabaseConfig; meta?: Record<string, unknown>; sessionMeta?: Record<string, unknown> },
  ): Promise<ProgramDatabase> {
    const { store, population } = await RunStore.open(file, options);
    return new ProgramDatabase(store, population);
  }

  /** Open an existing run database to write it (steering a stopped run); a missing file is refused. */
  static async openExisting(file: string): Promise<ProgramDatabase> {
    const { store, population } = await RunStore.openExisting(file);
    return new ProgramDatabase(store, population);
  }

  /** Open an existing run database for reading only; nothing is ever written. */
  static async openReadOnly(file: string): Promise<ProgramDatabase> {
    const { store, population } = await RunStore.openReadOnly(file);
    return new ProgramDatabase(store, population);
  }

  // ---------------------------------------------------------------- reading

  get lastStep(): number {
    return this.population.state.lastStep;
  }

  get size(): number {
    return this.population.size;
  }

  /** Size in bytes of the file as last read or written. */
  get fileBytes(): number {
    return this.store.fileBytes;
  }

  meta(): Record<string, unknown> {
    return this.store.meta();
  }

  engineState(): unknown | null {
    return this.store.engineState();
  }

  /** The live programs of an island (id and code hash), in the population's order. */
  islandMembers(island: number): { id: string; codeHash: string }[] {
    return (this.population.islands[island] ?? []).map((n) => ({ id: n.id, codeHash: n.codeHash }));
  }

  /** The code hashes of every live program. */
  liveCodeHashes(): Set<string> {
    const out = new Set<string>();
    for (const island of this.population.islands) for (const node of island) out.add(node.codeHash);
    return out;
  }

  /** Novelty rejection's stored vectors by code hash (operators/novelty). */
  storedEmbeddings(): Map<string, Uint8Array> {
    this.assertOpen();
    return this.store.embeddings();
  }

  hasCodeHash(hash: string): boolean {
    return this.population.hasCodeHash(hash);
  }

  /** The best valid program; null while none is (RunQueries.bestValid). */
  best(): ProgramRecord | null {
    const best = this.queries.bestValid();
    return best ? this.get(best.id) : null;
  }

  /** A live program, or an evicted one kept because it once was the best. */
  get(id: string): ProgramRecord | null {
    this.assertOpen();
    return this.queries.get(id);
  }

  /** The k best live programs, distinct by code (migration copies left out). */
  topPrograms(k: number): ProgramRecord[] {
    this.assertOpen();
    return this.queries.topPrograms(k);
  }

  /** Parent, grandparent, ... up to the root, as far as the programs are still stored. */
  ancestors(id: string): ProgramRecord[] {
    this.assertOpen();
    return this.queries.ancestors(id);
  }

  /** How many ancestors a program has: as recorded when it became a best (stable), else those whose rows are still here. */
  lineageDepth(id: string): number {
    this.assertOpen();
    return this.queries.lineageDepth(id);
  }

  /** Programs' places among their steps' children by score (RunQueries.stepRanks). */
  stepRanks(ids: readonly string[]): Map<string, { rank: number; of: number }> {
    this.assertOpen();
    return this.queries.stepRanks(ids);
  }

  /** One program's place among its step's children (stepRanks), or null for an unknown id or a migration copy. */
  stepRank(id: string): { rank: number; of: number } | null {
    return this.stepRanks([id]).get(id) ?? null;
  }

  /** Every valid program that was the new global best when it was added, oldest first (RunQueries.improvements). */
  improvements(includeInvalid = false): ProgramRecord[] {
    this.assertOpen();
    return this.queries.improvements(includeInvalid);
  }

  /** Combined scores of the valid programs alive in the database (the dashboard's histogram). */
  validScores(): number[] {
    this.assertOpen();
    return this.queries.validScores();
  }

  steps(): { step: number; stats: unknown }[] {
    this.assertOpen();
    return this.queries.steps();
  }

  summary(): { programs: number; steps: number; best: { score: number; id: string } | null; islands: number[]; archive: number } {
    return this.queries.summary();
  }

  /** The run's spend and per-model table (several models: docs/algorithm.md section 12). */
  modelUsage(): ModelUsage {
    return modelUsageOf(this.steps(), this.engineState());
  }

  stateSnapshot(): DatabaseSnapshot {
    return this.queries.stateSnapshot();
  }

  // ---------------------------------------------------------------- steering (docs/algorithm.md section 11)

  /** Live programs counted by who wrote them. */
  origins(): Record<ProgramOrigin, number> {
    this.assertOpen();
    const counts = Object.fromEntries(PROGRAM_ORIGINS.map((o) => [o, 0])) as Record<ProgramOrigin, number>;
    this.store.eachRow('SELECT origin, count(*) FROM programs WHERE alive = 1 GROUP BY origin', [], ([origin, n]) => {
      if ((PROGRAM_ORIGINS as readonly unknown[]).includes(origin) && typeof n === 'number') counts[origin as ProgramOrigin] = n;
    });
    return counts;
  }

  /** Every guidance version, oldest first (text null: cleared). */
  guidanceHistory(): GuidanceVersion[] {
    return [...this.population.steering.guidanceHistory];
  }

  /** Every meta-recommendations version, oldest first (docs/algorithm.md section 12). */
  recommendationsHistory(): RecommendationsVersion[] {
    return [...this.population.steering.recommendationsHistory];
  }

  /** The meta-recommendations the prompts of `step` carry, or null. */
  recommendationsAt(step: number): RecommendationsVersion | null {
    return this.population.steering.recommendationsAt(step);
  }

  /** Whether the meta round after step `afterStep` is recorded. */
  metaRoundDone(afterStep: number): boolean {
    return this.population.steering.metaRoundDone(afterStep);
  }

  /** The guidance the prompts of `step` carry, or null. */
  guidanceAt(step: number): string | null {
    return this.population.steering.guidanceAt(step);
  }

  /** Ids banned now (a migration copy of one is banned with it). */
  bannedIds(): string[] {
    return [...this.population.steering.banned];
  }

  /** Whether a program may no longer be a parent or an inspiration. */
  isBanned(id: string): boolean {
    const node = this.population.node(id);
    return this.population.steering.isBanned(node ?? { id, migrantOf: this.get(id)?.migrantOf ?? null });
  }

  /** Pins not yet over after the last committed step. */
  pins(): ActivePin[] {
    return this.population.steering.pinsAfter(this.lastStep);
  }

  /** Whether the steering inbox request `request` (its file name) was applied already. */
  appliedRequest(request: string): boolean {
    return this.population.steering.applied(request);
  }

  /** The steering log, in the order applied. */
  steeringLog(): SteeringEntry[] {
    return [...this.population.steering.log];
  }

  /** Whether `id` is a live program (one that can be a parent now). */
  isLive(id: string): boolean {
    return this.population.node(id) !== null;
  }

  /** Live programs whose lineage reaches `id` (through live programs and past bests). */
  descendantsOf(id: string): string[] {
    return this.population.descendantsOf(id);
  }

  /** Live migration copies of `id`. */
  copiesOf(id: string): string[] {
    return this.population.copiesOf(id);
  }

  /** Live programs that are not banned. */
  get usableCount(): number {
    let n = 0;
    for (const island of this.population.islands) for (const node of island) if (this.population.usable(node)) n++;
    return n;
  }

  /**
   * A researcher's program, already evaluated, entering at the next step (on
   * `island`, or the smallest), recorded with an `add` steering entry; persisted.
   */
  async addResearcher(
    program: NewProgram,
    options: { island?: number; note?: string | null; request?: string; origin?: 'researcher' | 'agent' },
  ): Promise<ProgramRecord> {
    this.assertWritable();
    this.population.checkResearcher(program, options.island);
    return this.write(program.step, () => {
      const origin = options.origin ?? 'researcher';
      const record = this.population.addResearcher(program, options.island, options.note ?? null, origin);
      const request = options.request !== undefined ? { request: options.request } : {};
      const by = origin === 'agent' ? { by: origin } : {};
      return { result: record, entries: [{ kind: 'add', step: program.step, id: record.id, ...request, ...by }] };
    });
  }

  /** Record one steering entry (guidance, ban, unban, pin) and persist; it applies from its step on. */
  async recordSteering(entry: Exclude<SteeringEntry, { kind: 'add' }>): Promise<void> {
    this.assertWritable();
    await this.write(entry.step, () => ({ result: undefined, entries: [entry] }));
  }

  /** One write outside a step: the change, its steering entries, in one transaction, then the file replaced. */
  private async write<T>(step: number, change: () => { result: T; entries: SteeringEntry[] }): Promise<T> {
    this.busy = true;
    try {
      const { result, entries } = change();
      this.store.apply(this.population.changes(), null, entries);
      this.population.settle();
      for (const entry of entries) this.population.steering.apply(entry);
      await this.store.persist();
      return result;
    } catch (err) {
      this.broken = describe(err);
      throw writeFailure(this.file, step, err);
    } finally {
      this.busy = false;
    }
  }

  // ---------------------------------------------------------------- sampling

  /**
   * `count` parents drawn by the population rules (Population.sampleParents)
   * from the state of the last commit, so calling it again before the next
   * commit (or after a resume) gives the same parents.
   */
  sampleParents(count: number): ProgramRecord[] {
    this.assertOpen();
    return this.queries.records(this.population.sampleParents(count), 'sampleParents');
  }

  /**
   * `count` parents for `step` and where their draw left the generator: after
   * the last commit (`previous` null, as sampleParents), or after the draw of
   * a step still in flight (a pipelined loop: docs/algorithm.md section 1).
   * Hand `draw` to that step's commitStep.
   */
  sampleParentsFor(count: number, previous: ParentDraw | null, step: number): { parents: ProgramRecord[]; draw: ParentDraw } {
    this.assertOpen();
    if (previous === null) {
      if (step !== this.lastStep + 1)
        throw new Error(`sampleParentsFor: step ${step} is not the one after the last commit (${this.lastStep})`);
      const parents = this.sampleParents(count);
      return { parents, draw: this.population.pendingDraw as ParentDraw };
    }
    const { parents, draw } = this.population.sampleParentsAfter(count, previous, step);
    return { parents: this.queries.records(parents, 'sampleParents'), draw };
  }

  // ---------------------------------------------------------------- writing

  /** Add the initial program (step 0) to island 0, seed a copy (an archive member) on every other island, persist. */
  async addInitial(program: NewProgram): Promise<ProgramRecord> {
    this.assertWritable();
    this.population.checkInitial(program);
    this.busy = true;
    try {
      const record = this.population.addInitial(program);
      this.store.apply(this.population.changes(), null);
      this.population.settle();
      await this.store.persist();
      return record;
    } catch (err) {
      this.broken = describe(err);
      throw writeFailure(this.file, 0, err);
    } finally {
      this.busy = false;
    }
  }

  /**
   * Insert a step's children one by one (each joins its parent's island;
   * MAP-Elites, archive and capacity rules per insert), migrate when due,
   * write the changed rows in one transaction and replace the file atomically.
   */
  async commitStep(input: {
    step: number;
    children: NewProgram[];
    stats: unknown;
    engineState: unknown;
    /** The step's draw of parents (sampleParentsFor); without it, the last sampleParents(). */
    parentDraw?: ParentDraw;
    /** Called with the inserted rows (ids given) before the stats are written: stats naming children by id. */
    beforeWrite?: (inserted: readonly ProgramRecord[]) => void;
    /** Novelty rejection's vectors to store with the step, asked once the step's children are in (operators/novelty). */
    embeddings?: () => ReadonlyMap<string, Uint8Array>;
  }): Promise<CommitResult> {
    this.assertWritable();
    this.population.checkStep(input.step, input.children);
    this.busy = true;
    try {
      const started = performance.now();
      const { inserted, newBest: newBestNode } = this.population.addStep(input.step, input.children, input.parentDraw ?? null);
      const applied = performance.now();
      input.beforeWrite?.(inserted);
      this.store.apply(
        this.population.changes(),
        { step: input.step, stats: input.stats, engineState: input.engineState },
        [],
        input.embeddings?.() ?? null,
      );
      this.population.settle();
      const written = performance.now();
      await this.store.persist();
      const persisted = performance.now();
      // A new head that is not valid (a smaller penalty) is no new best to people.
      const newBest =
        newBestNode && isValidScore(newBestNode.score) ? (inserted.find((r) => r.id === newBestNode.id) ?? this.get(newBestNode.id)) : null;
      return {
        inserted,
        newBest,
        timings: { applyMs: applied - started, rowsMs: written - applied, fileMs: persisted - written },
        fileBytes: this.store.fileBytes,
      };
    } catch (err) {
      this.broken = describe(err);
      throw writeFailure(this.file, input.step, err);
    } finally {
      this.busy = false;
    }
  }

  /** Why a commit failed (a full disk, say), leaving this copy ahead of the file; null while every write landed. */
  get failedWrite(): string | null {
    return this.broken;
  }

  async close(): Promise<void> {
    this.store.close();
  }

  private assertOpen(): void {
    if (this.store.closed) throw new Error(`${this.file}: the database is closed`);
  }

  private assertWritable(): void {
    this.assertOpen();
    if (this.readOnly) throw new Error(`${this.file} was opened read-only`);
    if (this.busy) throw new Error(`${this.file}: another write is in progress (await each commit)`);
    if (this.broken !== null)
      throw new Error(`${this.file}: a write failed (${this.broken}); reopen the database to resume from the last committed step`);
  }
}
