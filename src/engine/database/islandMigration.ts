// Ring migration between islands (docs/algorithm.md section 6): when it is
// due, and which programs go where. The population makes the copies.
import type { DatabaseState } from './schema';
import { betterFirst, type PopulationNode } from './populationNode';
import type { DatabaseConfig } from './records';

export function migrationDue(config: DatabaseConfig, state: DatabaseState): boolean {
  const { numIslands, migrationRate, migrationInterval } = config;
  if (numIslands < 2 || migrationRate <= 0) return false;
  return Math.max(...state.islandGenerations) - state.lastMigrationGeneration >= migrationInterval;
}

/**
 * Each island's top migrationRate (at least one) of its own live programs
 * (migration copies and banned programs left out), each paired with both
 * neighbours on the ring; copies are not migrated again.
 */
export function ringMigrationMoves(
  config: DatabaseConfig,
  islandMembers: readonly PopulationNode[][],
  islandSizes: readonly number[],
  isBanned: (node: PopulationNode) => boolean,
): { source: PopulationNode; target: number }[] {
  const n = config.numIslands;
  const moves: { source: PopulationNode; target: number }[] = [];
  for (let island = 0; island < n; island++) {
    const own = (islandMembers[island] as PopulationNode[])
      .filter((node) => node.alive && node.migrantOf === null && !isBanned(node))
      .sort(betterFirst);
    if (own.length === 0) continue;
    const k = Math.max(1, Math.floor((islandSizes[island] as number) * config.migrationRate));
    const targets = [...new Set([(island + 1) % n, (island - 1 + n) % n])].filter((t) => t !== island);
    for (const source of own.slice(0, k)) for (const target of targets) moves.push({ source, target });
  }
  return moves;
}
