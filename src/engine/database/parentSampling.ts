// Parent sampling of docs/algorithm.md section 6, with the bans and pins of
// section 11. Pure: the population hands in its pools and generator state.
import type { Rng } from '../common/rng';
import type { DatabaseConfig } from './records';

export interface SamplingPools<N> {
  all: N[];
  /** By island: its live programs, and its archive members. */
  islands: N[][];
  islandArchives: N[][];
  archive: N[];
}

export interface DrawInput<N> {
  count: number;
  rng: Rng;
  /** The island whose turn it is. */
  turn: number;
  config: Pick<DatabaseConfig, 'explorationRatio' | 'exploitationRatio' | 'numIslands'>;
  pools: SamplingPools<N>;
  /** Parents the pins in force give, taken first without a draw. */
  pinned: N[];
  /** Null when nothing is banned. */
  isBanned: ((node: N) => boolean) | null;
}

/**
 * `count` parents, islands taking turns: with probability explorationRatio
 * a uniform program of the island, exploitationRatio a uniform archive
 * member of the island (of the whole archive only when the island has
 * none: OpenEvolve's `_sample_exploitation_parent`; drawing from the whole
 * archive lets the first island swallow the run), else a uniform program
 * of the whole database. Banned programs are left out of every pool.
 */
export function drawParents<N>(input: DrawInput<N>): { parents: N[]; turn: number } {
  const { rng, config, pools, isBanned } = input;
  const { explorationRatio, exploitationRatio, numIslands } = config;
  const pool = isBanned === null ? (nodes: N[]): N[] => nodes : unbanned(isBanned);
  const all = pool(pools.all);
  if (all.length === 0) throw new Error('sampleParents: every program is banned (thetaevolve steer --unban ID)');
  const parents = input.pinned.slice(0, input.count);
  let turn = input.turn;
  for (let i = parents.length; i < input.count; i++) {
    const island = pool(pools.islands[turn] as N[]);
    const islandArchive = pool(pools.islandArchives[turn] as N[]);
    turn = (turn + 1) % numIslands;
    const r = rng.next();
    const archive = pool(pools.archive);
    let from: N[];
    if (r < explorationRatio && island.length > 0) from = island;
    else if (r < explorationRatio + exploitationRatio && archive.length > 0) from = islandArchive.length > 0 ? islandArchive : archive;
    else from = all;
    parents.push(rng.pick(from));
  }
  return { parents, turn };
}

/** The pools without banned programs, each filtered once per draw. */
function unbanned<N>(isBanned: (node: N) => boolean): (nodes: N[]) => N[] {
  const filtered = new Map<N[], N[]>();
  return (nodes) => {
    let kept = filtered.get(nodes);
    if (!kept) {
      kept = nodes.filter((n) => !isBanned(n));
      filtered.set(nodes, kept);
    }
    return kept;
  };
}
