// Crossover (docs/algorithm.md section 12; ShinkaEvolve's `cross` patch type):
// a share of a step's prompts shows a second parent, from another island
// (or, with one island, another strong program), and asks for a child
// combining the two. The child records that second parent (a metric the
// prompts never show), so lineage and blame follow both.
import type { Rng } from '../common/rng';
import type { ProgramRecord } from '../database/records';

/** The metric naming a crossover child's second parent. */
export const CROSSOVER_PARENT_METRIC = 'crossover_parent';

/** How many strong programs a step's second parents are drawn from. */
export const CROSSOVER_POOL = 20;

/**
 * With probability `share`, a second parent for `parent`: a uniform draw among
 * `pool` programs of another island (else any other), never the parent
 * or a copy of its code. Draws from `rng` only when share > 0.
 */
export function drawSecondParent(rng: Rng, share: number, parent: ProgramRecord, pool: readonly ProgramRecord[]): ProgramRecord | null {
  if (share <= 0) return null;
  if (rng.next() >= share) return null;
  const others = pool.filter((p) => p.id !== parent.id && p.codeHash !== parent.codeHash);
  const otherIslands = others.filter((p) => p.island !== parent.island);
  const candidates = otherIslands.length > 0 ? otherIslands : others;
  if (candidates.length === 0) return null;
  return candidates[Math.floor(rng.next() * candidates.length)] ?? null;
}

/** The second parent a stored child names, or null. */
export function secondParentOf(metrics: Readonly<Record<string, unknown>>): string | null {
  const id = metrics[CROSSOVER_PARENT_METRIC];
  return typeof id === 'string' ? id : null;
}
