// The evicted programs a run keeps (docs/algorithm.md section 6, "Lineage
// rows"): past bests (their whole row stays in `programs`, for good) and
// ancestors of kept programs (a light row in `lineage`, while a program that
// is kept names it in its lineage). Counting, for each program, the kept
// programs that name it as their parent tells which evicted program is still
// an ancestor: one map lookup per eviction, so a step costs what it did.
//
// Pure, like population.ts: the decisions come back as row changes.

/** An evicted program whose row stays. */
export interface KeptProgram {
  seq: number;
  parentId: string | null;
  island: number;
  /** A past best: kept for good. Otherwise an ancestor, let go with its last kept descendant. */
  formerBest: boolean;
  /** A crossover child's second parent: an ancestor too (operators/crossover.ts). */
  secondParentId?: string;
}

/** What evicting a step's programs decided: which of them keep a lineage row, which lineage rows are let go. */
export interface EvictionPlan {
  /** Seqs of the step's evicted programs that are still ancestors of a kept program. */
  kept: ReadonlySet<number>;
  /** Seqs of lineage rows whose last kept descendant went. */
  pruned: number[];
}

export class Ancestry {
  private readonly keptPrograms = new Map<string, KeptProgram>();
  /** For each program, how many kept programs (live, past best or ancestor) name it as parent. */
  private readonly childCounts = new Map<string, number>();

  /** A program just added or read back names `parentId` as its parent. */
  refer(parentId: string | null): void {
    if (parentId !== null) this.childCounts.set(parentId, (this.childCounts.get(parentId) ?? 0) + 1);
  }

  /** An evicted program whose row stays: read back on open, or evicted now. */
  keep(id: string, program: KeptProgram): void {
    this.keptPrograms.set(id, program);
  }

  /** A kept program read back names its second parent; false when `id` is not kept (or it is its parent). */
  setSecondParent(id: string, secondParentId: string): boolean {
    const program = this.keptPrograms.get(id);
    if (!program || program.parentId === secondParentId) return false;
    program.secondParentId = secondParentId;
    return true;
  }

  /** An evicted program whose row stays, or undefined. */
  get(id: string): KeptProgram | undefined {
    return this.keptPrograms.get(id);
  }

  get keptCount(): number {
    return this.keptPrograms.size;
  }

  /**
   * Decide for the programs a step evicted (past bests left out), newest
   * first, so that a program's descendants are decided before it: one that
   * a kept program names as parent keeps a lineage row; any other goes, and
   * no longer counts for its parent, which may then go too (a lineage row
   * whose last kept descendant went is pruned, and so on up the lineage).
   */
  decide(evictedNewestFirst: readonly { seq: number; id: string; parentId: string | null; secondParentId?: string }[]): EvictionPlan {
    const kept = new Set<number>();
    const pruned: number[] = [];
    for (const program of evictedNewestFirst) {
      if ((this.childCounts.get(program.id) ?? 0) > 0) kept.add(program.seq);
      else this.release(program, pruned);
    }
    return { kept, pruned };
  }

  /** A program that goes no longer counts for its parents (a crossover child: both), each of which may go in turn. */
  private release(program: { parentId: string | null; secondParentId?: string }, pruned: number[]): void {
    const parents: string[] = [];
    const push = (p: { parentId: string | null; secondParentId?: string }): void => {
      if (p.parentId !== null) parents.push(p.parentId);
      if (p.secondParentId !== undefined) parents.push(p.secondParentId);
    };
    push(program);
    for (let id = parents.pop(); id !== undefined; id = parents.pop()) {
      const left = (this.childCounts.get(id) ?? 0) - 1;
      if (left > 0) {
        this.childCounts.set(id, left);
        continue;
      }
      this.childCounts.delete(id);
      const parent = this.keptPrograms.get(id);
      if (!parent || parent.formerBest) continue;
      this.keptPrograms.delete(id);
      pruned.push(parent.seq);
      push(parent);
    }
  }
}
