// The read side of a run database: programs by id, the best ones, lineages,
// places within a step, the improvement history, and the summaries the
// dashboard and the CLI show. Reads only; the population and the store are
// changed by ProgramDatabase's commits.
import type { DatabaseSnapshot, RecommendationsInForce } from '../common/snapshot';
import type { GuidanceVersion, RecommendationsVersion } from '../common/steering';
import type { Population } from './population';
import { betterFirst, type PopulationNode } from './populationNode';
import { ancestorsOf, type ProgramRecord, seqOfId } from './records';
import { DatabaseFileError, PROGRAM_COLUMNS } from './schema';
import type { RunStore } from './runStore';
import { binsOfCell } from '../operators/features';
import { isValidScore } from '../common/scoring';

export class RunQueries {
  constructor(
    private readonly store: RunStore,
    private readonly population: Population,
  ) {}

  /**
   * The run's best program as people read it everywhere (status bar, dashboard, Runs view, CLI): the
   * population's head when it is valid, else none. Penalties rank invalid programs for sampling but are
   * no program's objective; a valid score (> 0) is above every penalty, so a penalised head means
   * nothing is valid (docs/algorithm.md section 8).
   */
  bestValid(): Readonly<PopulationNode> | null {
    const best = this.population.best;
    return best && isValidScore(best.score) ? best : null;
  }

  /** A live program, or an evicted one kept because it once was the best or is an ancestor of a kept one. */
  get(id: string): ProgramRecord | null {
    const seq = seqOfId(id);
    return seq === null ? null : this.store.readProgram(seq);
  }

  /** The rows of `nodes`, each read once, in the same order. */
  records(nodes: readonly Readonly<PopulationNode>[], what: string): ProgramRecord[] {
    const cache = new Map<number, ProgramRecord>();
    return nodes.map((node) => {
      let record: ProgramRecord | null | undefined = cache.get(node.seq);
      if (!record) {
        record = this.store.readProgram(node.seq);
        if (!record) throw new Error(`${what}: program ${node.id} has no row`);
        cache.set(node.seq, record);
      }
      return record;
    });
  }

  /** The k best live programs, distinct by code (migration copies left out). */
  topPrograms(k: number): ProgramRecord[] {
    if (k <= 0) return [];
    const seen = new Set<string>();
    const out: ProgramRecord[] = [];
    for (const node of this.population.ranked()) {
      if (seen.has(node.codeHash)) continue;
      seen.add(node.codeHash);
      const record = this.store.readProgram(node.seq);
      if (record) out.push(record);
      if (out.length >= k) break;
    }
    return out;
  }

  /** Parent, grandparent, ... up to the root, as far as the programs are still stored. */
  ancestors(id: string): ProgramRecord[] {
    return ancestorsOf(id, (other) => this.get(other));
  }

  /** How many ancestors a program has: as recorded when it became a best (stable), else those whose rows are still here. */
  lineageDepth(id: string): number {
    return this.population.state.lineageDepths?.[id] ?? this.ancestors(id).length;
  }

  /**
   * Programs' places among their steps' children by score (1: the step's
   * best; ties: the earlier first), among those the database holds; unknown
   * ids, migration copies and researchers' (or agents') programs are left out. Eviction takes the worst first, so
   * a rank stays what it was when its step committed (`of` shrinks). One
   * pass over the steps asked about, however many ids (the Runs view asks
   * for every improvement at once).
   */
  stepRanks(ids: readonly string[]): Map<string, { rank: number; of: number }> {
    const wanted = new Map<number, string>();
    const steps = new Set<number>();
    for (const id of ids) {
      const program = this.get(id);
      const seq = seqOfId(id);
      if (!program || seq === null || program.migrantOf || program.origin === 'researcher' || program.origin === 'agent') continue;
      wanted.set(seq, id);
      steps.add(program.step);
    }
    const ranks = new Map<string, { rank: number; of: number }>();
    if (steps.size === 0) return ranks;
    const placed: { id: string; step: number; rank: number }[] = [];
    const children = new Map<number, number>();
    const sql = `SELECT seq, step FROM programs WHERE migrant_of IS NULL AND origin NOT IN ('researcher', 'agent') AND step IN (${[...steps].map(() => '?').join(', ')}) ORDER BY step, score DESC, seq`;
    this.store.eachRow(sql, [...steps], (row) => {
      const [seq, step] = row as [number, number];
      const rank = (children.get(step) ?? 0) + 1;
      children.set(step, rank);
      const id = wanted.get(seq);
      if (id !== undefined) placed.push({ id, step, rank });
    });
    for (const { id, step, rank } of placed) ranks.set(id, { rank, of: children.get(step) ?? rank });
    return ranks;
  }

  /**
   * Every valid program that was the new global best when it was added, oldest first (kept even when evicted);
   * `includeInvalid`: the penalised heads before the first valid program too (patience counts them).
   */
  improvements(includeInvalid = false): ProgramRecord[] {
    const valid = includeInvalid ? '' : ` AND outcome = 'valid'`;
    return this.store.readPrograms(`SELECT ${PROGRAM_COLUMNS} FROM programs WHERE improvement = 1${valid} ORDER BY seq`);
  }

  /** Combined scores of the valid programs alive in the database (the dashboard's histogram). */
  validScores(): number[] {
    const out: number[] = [];
    this.store.eachRow("SELECT score FROM programs WHERE alive = 1 AND outcome = 'valid'", [], ([score]) => {
      if (typeof score === 'number') out.push(score);
    });
    return out;
  }

  steps(): { step: number; stats: unknown }[] {
    const out: { step: number; stats: unknown }[] = [];
    this.store.eachRow('SELECT step, stats FROM steps ORDER BY step', [], ([step, stats]) => {
      if (typeof step !== 'number' || typeof stats !== 'string')
        throw new DatabaseFileError(`${this.store.file}: a steps row is malformed`);
      out.push({ step, stats: JSON.parse(stats) as unknown });
    });
    return out;
  }

  summary(): { programs: number; steps: number; best: { score: number; id: string } | null; islands: number[]; archive: number } {
    const best = this.bestValid();
    return {
      programs: this.population.size,
      steps: this.store.stepCount,
      best: best ? { score: best.score, id: best.id } : null,
      islands: [...this.population.islandSizes],
      archive: this.population.archiveCount,
    };
  }

  stateSnapshot(): DatabaseSnapshot {
    const population = this.population;
    const { config, state } = population;
    const bestOf = (nodes: readonly Readonly<PopulationNode>[]): { id: string; score: number } | null => {
      let best: Readonly<PopulationNode> | null = null;
      for (const n of nodes) if (n.alive && (best === null || betterFirst(n, best) < 0)) best = n;
      return best && isValidScore(best.score) ? { id: best.id, score: best.score } : null;
    };
    let minScore: number | null = null;
    let maxScore: number | null = null;
    for (const n of population.archive) {
      if (!n.inArchive) continue;
      minScore = minScore === null ? n.score : Math.min(minScore, n.score);
      maxScore = maxScore === null ? n.score : Math.max(maxScore, n.score);
    }
    const best = this.bestValid();
    return {
      lastStep: state.lastStep,
      programs: population.size,
      populationSize: config.populationSize,
      hashIndexSize: population.hashCount,
      currentIsland: state.turn,
      best: best ? { id: best.id, score: best.score } : null,
      islands: population.islands.map((nodes, island) => ({
        island,
        size: population.islandSizes[island] as number,
        generation: state.islandGenerations[island] as number,
        best: bestOf(nodes),
      })),
      mapElites: mapElitesSnapshot(population),
      archive: { size: population.archiveCount, capacity: config.archiveSize, minScore, maxScore },
      migrations: {
        count: state.migrations,
        lastStep: state.lastMigrationStep,
        interval: config.migrationInterval,
        rate: config.migrationRate,
      },
      guidance: guidanceInForce(population.steering.guidanceHistory),
      recommendations: recommendationsInForce(population.steering.recommendationsHistory),
    };
  }
}

/** The last guidance version, unless it cleared the guidance. */
function guidanceInForce(history: readonly GuidanceVersion[]): { text: string; step: number } | null {
  const last = history[history.length - 1];
  return last && last.text !== null ? { text: last.text, step: last.step } : null;
}

/** The last meta-recommendations version, unless it removed them. */
function recommendationsInForce(history: readonly RecommendationsVersion[]): RecommendationsInForce | null {
  const last = history.at(-1);
  return last && last.text !== null ? { text: last.text, step: last.step, afterStep: last.afterStep, editedBy: last.editedBy } : null;
}

/** The MAP-Elites grids: by score and code length, or by a task's behaviour dimensions (operators/features.ts). */
function mapElitesSnapshot(population: Population): DatabaseSnapshot['mapElites'] {
  const { config, state, bins } = population;
  const dimensions = config.features;
  const cells = (grid: ReadonlyMap<number, Readonly<PopulationNode>>) =>
    [...grid.entries()]
      .sort((a, b) => a[0] - b[0])
      .map(([cell, n]) => {
        const [row, column] = dimensions ? binsOfCell(cell, dimensions) : [Math.floor(cell / bins), cell % bins];
        return { cell, scoreBin: row ?? 0, lengthBin: column ?? 0, id: n.id, score: n.score };
      });
  const islands = population.grids.map((grid, island) => ({ island, occupied: grid.size, cells: cells(grid) }));
  const ranges = { score: state.ranges.score, codeLength: state.ranges.codeLength };
  if (!dimensions) return { features: ['score', 'codeLength'], bins, ranges, islands };
  return {
    features: dimensions.map((d) => d.metric),
    axes: dimensions.map((d, i) => ({ metric: d.metric, bins: d.bins, range: state.ranges.features?.[i] ?? null })),
    bins: Math.max(...dimensions.slice(0, 2).map((d) => d.bins)),
    ranges,
    islands,
  };
}
