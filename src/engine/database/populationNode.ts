// A live program as the population rules see it (population.ts), and the
// orders the rules rank programs by. The text fields stay in the store.

/** A live program as the rules see it; the text fields stay in the store. */
export interface PopulationNode {
  seq: number;
  id: string;
  parentId: string | null;
  island: number;
  step: number;
  score: number;
  codeLength: number;
  codeHash: string;
  migrantOf: string | null;
  alive: boolean;
  inArchive: boolean;
  eliteCell: number | null;
  improvement: boolean;
  /** Its values on the task's behaviour dimensions (set only when the configuration has them). */
  features?: number[];
  /** A crossover child's second parent (operators/crossover.ts): kept, like the parent, while the child is. */
  secondParentId?: string;
  /** Added in the step being decided: it has no row yet. */
  isNew: boolean;
}

/** A live program's row as read back on open. */
export type StoredNode = Pick<
  PopulationNode,
  | 'seq'
  | 'id'
  | 'parentId'
  | 'island'
  | 'step'
  | 'score'
  | 'codeLength'
  | 'codeHash'
  | 'migrantOf'
  | 'inArchive'
  | 'eliteCell'
  | 'improvement'
>;

/** Total order for "worst first": lower score, then older. */
export function worseFirst(a: PopulationNode, b: PopulationNode): boolean {
  return a.score < b.score || (a.score === b.score && a.seq < b.seq);
}

export function betterFirst(a: PopulationNode, b: PopulationNode): number {
  return b.score - a.score || a.seq - b.seq;
}
