// The population rules of docs/algorithm.md section 6 (OpenEvolve's design, scaled
// up): islands taking turns, per-island MAP-Elites grids, an elite archive,
// ring migration, capacity eviction, parent sampling and a code-hash index
// over every program ever added (the lazy penalty). The coordinator: the
// grids (eliteGrid.ts), the archive (eliteArchive.ts), migration
// (islandMigration.ts), sampling (parentSampling.ts) and what a program
// handed in becomes (programEntry.ts) each have their own file.
//
// Pure: no SQLite, no files. Every rule runs on in-memory structures (arrays
// in insertion order, heaps, maps) and a step's decisions come back as a
// change set (rows to insert, update, delete; new code hashes; the state to
// store) that the run store writes. Everything here is rebuilt from the rows
// on open, in the same order, so a resumed run makes exactly the choices the
// uninterrupted one would have.
import { Rng, type RngState } from '../common/rng';
import type { ProgramOrigin } from '../common/steering';
import type { DatabaseState } from './schema';
import { Ancestry, type EvictionPlan } from './ancestry';
import { CodeHashIndex } from './codeHashIndex';
import { EliteArchive } from './eliteArchive';
import { EliteGrids } from './eliteGrid';
import { migrationDue, ringMigrationMoves } from './islandMigration';
import { MinHeap } from './minHeap';
import { betterFirst, type PopulationNode, type StoredNode, worseFirst } from './populationNode';
import { copyOf, entryOf, type NodeEntry, recordOf, validateProgram } from './programEntry';
import { ancestorsOf, type DatabaseConfig, type NewProgram, type ProgramRecord } from './records';
import { drawParents } from './parentSampling';
import { descendantsIn, pinnedCount, SteeringState } from './steeringRules';
import { secondParentOf } from '../operators/crossover';
import { featureValuesOf } from '../operators/features';

/** Where a draw of parents left the sampling generator and the island turn: the next draw starts there. */
export interface ParentDraw {
  rng: RngState;
  turn: number;
}

/** The state of a run before its initial program. */
export function initialState(config: DatabaseConfig): DatabaseState {
  return {
    lastStep: -1,
    nextSeq: 0,
    rng: Rng.fromSeed(config.seed).state(),
    turn: 0,
    bestId: null,
    ranges: { score: null, codeLength: null },
    islandGenerations: new Array<number>(config.numIslands).fill(0),
    lastMigrationGeneration: 0,
    migrations: 0,
    lastMigrationStep: null,
  };
}

/**
 * What a new row holds besides its node: a program's own fields, or (a
 * migration copy of a program from an earlier step) the code, objective,
 * outcome and metrics of the stored row `sourceSeq`, as stored.
 */
export type RowContent =
  | { kind: 'program'; program: NewProgram; createdAt: number; origin: ProgramOrigin; note: string | null }
  | { kind: 'storedCopy'; sourceSeq: number; createdAt: number };

/**
 * One row a step changes; a node changed in several ways appears once, as it
 * ended up (but a program added and evicted in the same step that is kept as
 * an ancestor: its insert, then its keep).
 */
export type RowChange =
  | { kind: 'insert'; node: Readonly<PopulationNode>; content: RowContent }
  | { kind: 'update'; node: Readonly<PopulationNode> }
  | { kind: 'delete'; seq: number }
  /** Evicted, still an ancestor of a kept program: its row moves to the lineage table (ancestry.ts). */
  | { kind: 'keep'; seq: number }
  /** A lineage row whose last kept descendant went. */
  | { kind: 'prune'; seq: number };

/** The code hashes of a database opened read-only, asked of its file (RunStore). */
export interface StoredHashes {
  count: number;
  has: (hash: string) => boolean;
}

/** Everything a step decided, for the store to write in one transaction. */
export interface ChangeSet {
  /** In sequence order. */
  rows: RowChange[];
  /** Code hashes never seen before. */
  newHashes: readonly string[];
  state: Readonly<DatabaseState>;
}

export class Population {
  private readonly nodes = new Map<string, PopulationNode>();
  /** Evicted programs whose rows stay (past bests, ancestors): what parent placement and lineage need of them. */
  private readonly ancestry = new Ancestry();
  private plan: EvictionPlan | null = null;
  private all: PopulationNode[] = [];
  private islandMembers: PopulationNode[][];
  private readonly eliteArchive: EliteArchive;
  private readonly evictionHeap = new MinHeap<PopulationNode>(worseFirst);
  private readonly eliteGrids: EliteGrids;
  private readonly islandSizeList: number[];
  private readonly islandHashes: Map<string, number>[];
  private readonly hashes = new CodeHashIndex();
  /** Set for a read-only database: its hashes are asked of its file, not held here. */
  private storedHashes: StoredHashes | null = null;
  private aliveCount = 0;
  private bestNode: PopulationNode | null = null;
  private pendingSample: ParentDraw | null = null;
  private readonly touched = new Set<PopulationNode>();
  private readonly contents = new Map<number, RowContent>();
  private newHashes: string[] = [];
  /** Guidance, bans and pins (docs/algorithm.md section 11), replayed from the steering log on open. */
  readonly steering = new SteeringState();

  /** `state` is kept and changed in place: it is what the store writes with each step. */
  constructor(
    readonly config: DatabaseConfig,
    readonly state: DatabaseState,
    private readonly now: () => number = Date.now,
  ) {
    const n = config.numIslands;
    this.islandMembers = Array.from({ length: n }, () => []);
    this.eliteArchive = new EliteArchive(config.archiveSize, n);
    this.eliteGrids = new EliteGrids(config);
    this.islandSizeList = new Array<number>(n).fill(0);
    this.islandHashes = Array.from({ length: n }, () => new Map<string, number>());
  }

  // ---------------------------------------------------------------- restoring

  /** A restored program's values on the behaviour dimensions, from its metrics (only with dimensions configured). */
  restoreFeatures(id: string, metrics: Readonly<Record<string, unknown>>): void {
    const node = this.nodes.get(id);
    if (node && this.config.features) node.features = featureValuesOf(metrics, this.config.features, node);
  }

  /** A live program read back on open; call in sequence order. */
  restoreNode(stored: StoredNode): void {
    // Field by field: an object spread is several times slower, and a reopen restores every live program.
    const node: PopulationNode = {
      seq: stored.seq,
      id: stored.id,
      parentId: stored.parentId,
      island: stored.island,
      step: stored.step,
      score: stored.score,
      codeLength: stored.codeLength,
      codeHash: stored.codeHash,
      migrantOf: stored.migrantOf,
      alive: true,
      inArchive: stored.inArchive,
      eliteCell: stored.eliteCell,
      improvement: stored.improvement,
      isNew: false,
    };
    this.nodes.set(node.id, node);
    this.ancestry.refer(node.parentId);
    this.all.push(node);
    (this.islandMembers[node.island] as PopulationNode[]).push(node);
    this.islandSizeList[node.island] = (this.islandSizeList[node.island] as number) + 1;
    this.countHash(node.island, node.codeHash, 1);
    this.evictionHeap.push(node);
    this.aliveCount++;
    if (node.inArchive) this.eliteArchive.restore(node);
    this.eliteGrids.restore(node);
  }

  /** An evicted program whose row stays: a past best (in `programs`) or an ancestor (in `lineage`). */
  restoreKept(seq: number, id: string, parentId: string | null, island: number, formerBest: boolean): void {
    this.ancestry.keep(id, { seq, parentId, island, formerBest });
    this.ancestry.refer(parentId);
  }

  /** A crossover child read back (live or kept) names its second parent: that one is kept while the child is (call after every row). */
  restoreSecondParent(id: string, secondParentId: string): void {
    const node = this.nodes.get(id);
    if (node) {
      if (secondParentId === node.parentId) return;
      node.secondParentId = secondParentId;
    } else if (!this.ancestry.setSecondParent(id, secondParentId)) return;
    this.ancestry.refer(secondParentId);
  }

  restoreHash(hash: string): void {
    this.hashes.add(hash);
  }

  /** A read-only database's hashes, left in its file: how many, and whether one is there. */
  restoreStoredHashes(stored: StoredHashes): void {
    this.storedHashes = stored;
  }

  /** After every row: find the best the state names. The reason the rows and the state disagree, or null. */
  finishRestore(): string | null {
    if (this.state.bestId !== null) {
      this.bestNode = this.nodes.get(this.state.bestId) ?? null;
      if (!this.bestNode) return `the best program ${this.state.bestId} is missing`;
    } else if (this.aliveCount > 0) {
      return 'programs without a best program';
    }
    return null;
  }

  // ---------------------------------------------------------------- reading

  get size(): number {
    return this.aliveCount;
  }

  /** Bins per feature dimension of the score and code length grid. */
  get bins(): number {
    return this.eliteGrids.bins;
  }

  get archiveCount(): number {
    return this.eliteArchive.count;
  }

  get hashCount(): number {
    return this.storedHashes?.count ?? this.hashes.size;
  }

  get best(): Readonly<PopulationNode> | null {
    return this.bestNode;
  }

  get islandSizes(): readonly number[] {
    return this.islandSizeList;
  }

  get islands(): readonly (readonly Readonly<PopulationNode>[])[] {
    return this.islandMembers;
  }

  get grids(): readonly ReadonlyMap<number, Readonly<PopulationNode>>[] {
    return this.eliteGrids.grids;
  }

  get archive(): readonly Readonly<PopulationNode>[] {
    return this.eliteArchive.members;
  }

  hasCodeHash(hash: string): boolean {
    return this.storedHashes ? this.storedHashes.has(hash) : this.hashes.has(hash);
  }

  /** Live programs, migration copies and banned programs left out, best first. */
  ranked(): Readonly<PopulationNode>[] {
    return this.all.filter((n) => n.alive && n.migrantOf === null && !this.steering.isBanned(n)).sort(betterFirst);
  }

  /** A live program by id. */
  node(id: string): Readonly<PopulationNode> | null {
    return this.nodes.get(id) ?? null;
  }

  /** Whether a live program can still be a parent or an inspiration: not banned. */
  usable(node: Readonly<PopulationNode>): boolean {
    return !this.steering.isBanned(node);
  }

  /** Live programs whose lineage (through live programs and past bests) reaches `id`, `id` excluded. */
  descendantsOf(id: string): string[] {
    return descendantsIn(this.all, id, (other) => this.nodes.get(other) ?? this.ancestry.get(other));
  }

  /** Live migration copies of `id`. */
  copiesOf(id: string): string[] {
    return this.all.filter((n) => n.alive && n.migrantOf === id).map((n) => n.id);
  }

  // ---------------------------------------------------------------- sampling

  /**
   * `count` parents (parentSampling.ts): pinned programs first, then islands
   * taking turns. Drawn from the state of the last commit, so calling it
   * again before the next step (or after a resume) gives the same parents;
   * the next step adopts where this draw left the generator.
   */
  sampleParents(count: number): Readonly<PopulationNode>[] {
    const { parents, draw } = this.drawParents(count, { rng: this.state.rng, turn: this.state.turn }, this.state.lastStep + 1);
    this.pendingSample = draw;
    return parents;
  }

  /**
   * Parents for a step planned while the ones before it are still in flight
   * (docs/algorithm.md section 1, "Pipelined steps"): drawn from where the
   * previous step's draw left the generator and island turn, with the pins of
   * `step`, from the programs committed so far. Nothing changes here: the
   * step's commit adopts `draw` (addStep).
   */
  sampleParentsAfter(count: number, previous: ParentDraw, step: number): { parents: Readonly<PopulationNode>[]; draw: ParentDraw } {
    return this.drawParents(count, previous, step);
  }

  private drawParents(count: number, from: ParentDraw, step: number): { parents: Readonly<PopulationNode>[]; draw: ParentDraw } {
    if (this.aliveCount === 0) throw new Error('sampleParents: the database is empty (add the initial program first)');
    const rng = Rng.fromState(from.rng);
    const { parents, turn } = drawParents({
      count,
      rng,
      turn: from.turn,
      config: this.config,
      pools: {
        all: this.all,
        islands: this.islandMembers,
        islandArchives: this.eliteArchive.islandMembers,
        archive: this.eliteArchive.members,
      },
      pinned: this.pinnedParents(count, step),
      isBanned: this.steering.banned.size === 0 ? null : (node) => this.steering.isBanned(node),
    });
    return { parents, draw: { rng: rng.state(), turn } };
  }

  /** Where the last sampleParents() left the generator (null after a commit or a researcher's program). */
  get pendingDraw(): ParentDraw | null {
    return this.pendingSample;
  }

  /** The parents the pins in force at `step` give, oldest pin first (docs/algorithm.md section 11). */
  private pinnedParents(count: number, step: number): PopulationNode[] {
    const out: PopulationNode[] = [];
    for (const pin of this.steering.pinsAt(step)) {
      const node = this.nodes.get(pin.id);
      // A pinned program evicted or banned since gives its share back to sampling.
      if (!node || !node.alive || this.steering.isBanned(node)) continue;
      for (let k = pinnedCount(pin.share, count); k > 0 && out.length < count; k--) out.push(node);
    }
    return out;
  }

  // ---------------------------------------------------------------- deciding

  /** Throws when the initial program cannot be added (before anything changes). */
  checkInitial(program: NewProgram): void {
    if (this.state.lastStep !== -1) throw new Error(`addInitial: the database already holds step ${this.state.lastStep}`);
    validateProgram(program, 0);
  }

  /** The initial program (step 0) on island 0, and a copy (an archive member) seeding every other island. */
  addInitial(program: NewProgram): ProgramRecord {
    const content = this.programContent(program, 'initial');
    const node = this.insert(entryOf(program), 0, null, content);
    for (let island = 1; island < this.config.numIslands; island++) {
      // Each seed copy is its island's first archive member, so exploitation on that island's turn draws it
      // rather than falling back to island 0's members (which would make island 0 swallow the first steps).
      const copy = copyOf(program, node.id, 0);
      const seed = this.insert(entryOf(copy), island, node.id, this.programContent(copy, 'migration'));
      if (seed.alive) this.offerToArchive(seed);
    }
    this.state.lastStep = 0;
    return recordOf(node, program, content);
  }

  /** Throws when a step cannot be added (before anything changes). */
  checkStep(step: number, children: readonly NewProgram[]): void {
    if (this.state.lastStep < 0) throw new Error('commitStep: add the initial program first');
    if (step !== this.state.lastStep + 1) {
      throw new Error(`commitStep: expected step ${this.state.lastStep + 1} after step ${this.state.lastStep}, got ${step}`);
    }
    for (const child of children) validateProgram(child, step);
  }

  /**
   * A step's children one by one (each joins its parent's island; MAP-Elites,
   * archive and capacity rules per insert), then a migration when due.
   */
  addStep(
    step: number,
    children: readonly NewProgram[],
    parentDraw: ParentDraw | null = null,
  ): { inserted: ProgramRecord[]; newBest: Readonly<PopulationNode> | null } {
    // The step's own draw when the loop says which it was (a pipelined step), else the last sampleParents().
    const draw = parentDraw ?? this.pendingSample;
    if (draw) {
      this.state.rng = draw.rng;
      this.state.turn = draw.turn;
    }
    this.pendingSample = null;
    const bestBefore = this.bestNode;
    // Parents can be evicted by their siblings during the step: place every child first.
    const targetIslands = children.map((child) => this.islandOfParent(child.parentId));
    const inserted: ProgramRecord[] = [];
    const grown = new Set<number>();
    for (let i = 0; i < children.length; i++) {
      const child = children[i] as NewProgram;
      const island = targetIslands[i] as number;
      const content = this.programContent(child, 'model');
      inserted.push(recordOf(this.insert(entryOf(child), island, null, content), child, content));
      grown.add(island);
    }
    for (const island of grown) this.state.islandGenerations[island] = (this.state.islandGenerations[island] as number) + 1;
    if (migrationDue(this.config, this.state)) this.migrate(step);
    this.state.lastStep = step;
    return { inserted, newBest: this.bestNode !== bestBefore ? this.bestNode : null };
  }

  /** After the store wrote the change set: forget the dead and the step's contents; keep every list in insertion order. */
  settle(): void {
    const plan = this.evictionPlan();
    for (const node of this.touched) {
      node.isNew = false;
      if (!node.alive) {
        this.nodes.delete(node.id);
        if (node.improvement || plan.kept.has(node.seq))
          this.ancestry.keep(node.id, {
            seq: node.seq,
            parentId: node.parentId,
            island: node.island,
            formerBest: node.improvement,
            ...(node.secondParentId !== undefined ? { secondParentId: node.secondParentId } : {}),
          });
      }
    }
    this.plan = null;
    this.touched.clear();
    this.contents.clear();
    this.newHashes = [];
    this.all = this.all.filter((n) => n.alive);
    this.islandMembers = this.islandMembers.map((nodes) => nodes.filter((n) => n.alive));
    this.eliteArchive.settle();
  }

  /**
   * What was decided since the last settle, for the store to write: the rows
   * changed, in sequence order (a program evicted in the step that added it
   * gets a row only when it was a best or is an ancestor), then the lineage
   * rows let go; new code hashes; the state.
   */
  changes(): ChangeSet {
    const plan = this.evictionPlan();
    const rows: RowChange[] = [];
    for (const node of [...this.touched].sort((a, b) => a.seq - b.seq)) {
      const evicted = !node.alive && !node.improvement;
      const kept = evicted && plan.kept.has(node.seq);
      if (node.isNew) {
        if (evicted && !kept) continue;
        rows.push({ kind: 'insert', node, content: this.contents.get(node.seq) as RowContent });
        if (kept) rows.push({ kind: 'keep', seq: node.seq });
      } else if (evicted) {
        rows.push({ kind: kept ? 'keep' : 'delete', seq: node.seq });
      } else {
        rows.push({ kind: 'update', node });
      }
    }
    for (const seq of plan.pruned) rows.push({ kind: 'prune', seq });
    return { rows, newHashes: this.newHashes, state: this.state };
  }

  /** The step's evictions decided once (ancestry.ts), for changes() and settle() alike. */
  private evictionPlan(): EvictionPlan {
    this.plan ??= this.ancestry.decide([...this.touched].filter((node) => !node.alive && !node.improvement).sort((a, b) => b.seq - a.seq));
    return this.plan;
  }

  private programContent(program: NewProgram, origin: ProgramOrigin, note: string | null = null): RowContent & { kind: 'program' } {
    return { kind: 'program', program, createdAt: this.now(), origin, note };
  }

  /** Throws when a researcher's program cannot be added (before anything changes). */
  checkResearcher(program: NewProgram, island: number | undefined): void {
    if (this.state.lastStep < 0) throw new Error('a program can be added once the run has its initial program');
    validateProgram(program, this.state.lastStep + 1);
    if (island !== undefined && !(Number.isInteger(island) && island >= 0 && island < this.config.numIslands))
      throw new Error(`island ${island} is outside 0..${this.config.numIslands - 1}`);
  }

  /**
   * A researcher's program (docs/algorithm.md section 11), entering at the
   * next step: on `island`, or the smallest. The same MAP-Elites, archive and
   * capacity rules as any program; the draw of the next parents starts over.
   */
  addResearcher(
    program: NewProgram,
    island: number | undefined,
    note: string | null,
    origin: 'researcher' | 'agent' = 'researcher',
  ): ProgramRecord {
    this.pendingSample = null;
    const content = this.programContent(program, origin, note);
    const node = this.insert(entryOf(program), island ?? this.smallestIsland(), null, content);
    return recordOf(node, program, content);
  }

  private insert(entry: NodeEntry, island: number, migrantOf: string | null, content: RowContent): PopulationNode {
    const seq = this.state.nextSeq++;
    const node: PopulationNode = {
      seq,
      id: seq.toString(36),
      parentId: entry.parentId,
      island,
      step: entry.step,
      score: entry.score,
      codeLength: entry.codeLength,
      codeHash: entry.codeHash,
      migrantOf,
      alive: true,
      inArchive: false,
      eliteCell: null,
      improvement: false,
      isNew: true,
    };
    const dimensions = this.config.features;
    if (dimensions)
      node.features =
        entry.features ?? (content.kind === 'program' ? featureValuesOf(content.program.metrics, dimensions, node) : undefined);
    this.nodes.set(node.id, node);
    this.ancestry.refer(node.parentId);
    const secondParentId = content.kind === 'program' ? secondParentOf(content.program.metrics) : null;
    if (secondParentId !== null && secondParentId !== node.parentId) {
      node.secondParentId = secondParentId;
      this.ancestry.refer(secondParentId);
    }
    this.contents.set(seq, content);
    this.touched.add(node);
    this.all.push(node);
    (this.islandMembers[island] as PopulationNode[]).push(node);
    this.islandSizeList[island] = (this.islandSizeList[island] as number) + 1;
    this.countHash(island, node.codeHash, 1);
    this.aliveCount++;
    this.evictionHeap.push(node);
    if (this.hashes.add(node.codeHash)) this.newHashes.push(node.codeHash);
    if (migrantOf === null && (this.bestNode === null || node.score > this.bestNode.score)) {
      this.bestNode = node;
      node.improvement = true;
      this.state.bestId = node.id;
      // Its lineage now, before later evictions delete ancestors' rows (parents are from earlier steps: they have rows).
      (this.state.lineageDepths ??= {})[node.id] =
        node.parentId !== null && this.storedParentOf(node.parentId)
          ? 1 + ancestorsOf(node.parentId, (id) => this.storedParentOf(id)).length
          : 0;
    }
    this.placeInGrid(node);
    if (migrantOf === null) this.offerToArchive(node);
    this.enforceCapacity(node);
    return node;
  }

  /** A program that has a row now (live from an earlier step, evicted this step, or a past best): its parent. */
  private storedParentOf(id: string): { parentId: string | null } | undefined {
    const node = this.nodes.get(id);
    if (node) return node.isNew ? undefined : node;
    return this.ancestry.get(id);
  }

  /** MAP-Elites (eliteGrid.ts): a displaced occupant's row changes too. */
  private placeInGrid(node: PopulationNode): void {
    const displaced = this.eliteGrids.place(node, this.state.ranges);
    if (displaced) this.touched.add(displaced);
  }

  /** Archive (eliteArchive.ts): a displaced member's row changes too. */
  private offerToArchive(node: PopulationNode): void {
    const displaced = this.eliteArchive.offer(node);
    if (displaced) this.touched.add(displaced);
  }

  /** Over capacity: evict the lowest scores, never the global best nor the newest program. */
  private enforceCapacity(newest: PopulationNode): void {
    const spared: PopulationNode[] = [];
    while (this.aliveCount > this.config.populationSize) {
      const victim = this.evictionHeap.pop();
      if (!victim) break;
      if (victim === this.bestNode || victim === newest) {
        spared.push(victim);
        continue;
      }
      this.evict(victim);
    }
    for (const node of spared) this.evictionHeap.push(node);
  }

  private evict(node: PopulationNode): void {
    node.alive = false;
    this.aliveCount--;
    this.islandSizeList[node.island] = (this.islandSizeList[node.island] as number) - 1;
    this.countHash(node.island, node.codeHash, -1);
    this.eliteArchive.remove(node);
    this.eliteGrids.remove(node);
    this.touched.add(node);
  }

  /**
   * Ring migration (islandMigration.ts): each chosen program is copied to a
   * neighbour unless the neighbour already holds that code.
   */
  private migrate(step: number): void {
    const moves = ringMigrationMoves(this.config, this.islandMembers, this.islandSizeList, (node) => this.steering.isBanned(node));
    const copies = new Map<number, { entry: NodeEntry; content: (createdAt: number) => RowContent }>();
    for (const { source, target } of moves) {
      if ((this.islandHashes[target] as Map<string, number>).has(source.codeHash)) continue;
      let copy = copies.get(source.seq);
      if (copy === undefined) {
        copy = this.copySource(source, step);
        copies.set(source.seq, copy);
      }
      this.insert(copy.entry, target, source.id, copy.content(this.now()));
    }
    this.state.lastMigrationGeneration = Math.max(...this.state.islandGenerations);
    this.state.migrations++;
    this.state.lastMigrationStep = step;
  }

  /** What a migration copy of `source` holds: this step's program, or (from an earlier step) its stored row's columns. */
  private copySource(source: PopulationNode, step: number): { entry: NodeEntry; content: (createdAt: number) => RowContent } {
    const entry: NodeEntry = { parentId: source.id, step, score: source.score, codeHash: source.codeHash, codeLength: source.codeLength };
    if (source.features) entry.features = source.features;
    const content = this.contents.get(source.seq);
    if (content?.kind === 'program') {
      const program = copyOf(content.program, source.id, step);
      return { entry, content: (createdAt) => ({ kind: 'program', program, createdAt, origin: 'migration', note: null }) };
    }
    const sourceSeq = content?.kind === 'storedCopy' ? content.sourceSeq : source.seq;
    return { entry, content: (createdAt) => ({ kind: 'storedCopy', sourceSeq, createdAt }) };
  }

  private islandOfParent(parentId: string | null): number {
    if (parentId !== null) {
      const parent = this.nodes.get(parentId);
      if (parent) return parent.island;
      const island = this.ancestry.get(parentId)?.island;
      if (island !== undefined && island >= 0 && island < this.config.numIslands) return island;
    }
    // Unknown parent: the smallest island, so islands stay balanced.
    return this.smallestIsland();
  }

  private smallestIsland(): number {
    let smallest = 0;
    for (let i = 1; i < this.islandSizeList.length; i++)
      if ((this.islandSizeList[i] as number) < (this.islandSizeList[smallest] as number)) smallest = i;
    return smallest;
  }

  private countHash(island: number, hash: string, delta: 1 | -1): void {
    const counts = this.islandHashes[island] as Map<string, number>;
    const next = (counts.get(hash) ?? 0) + delta;
    if (next > 0) counts.set(hash, next);
    else counts.delete(hash);
  }
}
