// db-step-commit-10k: one step of 512 children committed into a full
// 10,000-program database, against a naive baseline that does per insert
// what OpenEvolve's ProgramDatabase design does (rescan every program for the
// feature ranges, scan the archive for its worst, sort the population to
// evict), fed exactly the same children in the same run.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { NewProgram } from '../src/engine/database/programDatabase';
import { Rng } from '../src/engine/common/rng';
import { percentile } from '../src/engine/common/stats';
import { largeConfig, openFull, stepChildren } from '../test/unit/fixtures/database/fill';
import { REALISTIC_SHAPE, syntheticProgram } from '../test/unit/fixtures/database/programs';

const MEASURED_STEPS = 7;
const NAIVE_MEASURED_STEPS = 3;
const ANCHOR_MS = 5200;

interface NaiveProgram {
  id: string;
  code: string;
  metrics: Record<string, number | string | boolean | null>;
  island: number;
  migrant: boolean;
  /** Python's dict lookup of combined_score, as a plain field (a JS property read through a metrics object is far slower). */
  fitness: number;
}

function fitness(p: NaiveProgram): number {
  return p.fitness;
}

/** OpenEvolve-style: combined_score when there is one, else the average of the numeric metrics. */
function fitnessOfMetrics(metrics: NaiveProgram['metrics']): number {
  const combined = metrics.combined_score;
  if (typeof combined === 'number') return combined;
  let total = 0;
  let count = 0;
  for (const value of Object.values(metrics)) {
    if (typeof value === 'number') {
      total += value;
      count++;
    }
  }
  return count === 0 ? 0 : total / count;
}

/** What OpenEvolve's ProgramDatabase.add() does, naively, per program. */
class NaiveOpenEvolveDatabase {
  readonly programs = new Map<string, NaiveProgram>();
  private readonly islands: Set<string>[];
  private readonly featureMaps: Map<string, string>[];
  private readonly archive = new Set<string>();
  private readonly islandBest: (string | null)[];
  private bestId: string | null = null;
  private readonly generations: number[];
  private lastMigration = 0;
  private counter = 0;
  private readonly bins: number;

  constructor(private readonly config: ReturnType<typeof largeConfig>) {
    this.islands = Array.from({ length: config.numIslands }, () => new Set<string>());
    this.featureMaps = Array.from({ length: config.numIslands }, () => new Map<string, string>());
    this.islandBest = new Array<string | null>(config.numIslands).fill(null);
    this.generations = new Array<number>(config.numIslands).fill(0);
    this.bins = Math.max(10, Math.ceil(Math.sqrt(config.archiveSize)));
  }

  add(program: NewProgram, island: number, migrant = false): void {
    const metrics = { ...program.metrics, combined_score: program.score };
    const p: NaiveProgram = { id: `p${this.counter++}`, code: program.code, metrics, island, migrant, fitness: fitnessOfMetrics(metrics) };
    this.programs.set(p.id, p);
    const key = this.featureCoords(p).join('-');
    const map = this.featureMaps[island] as Map<string, string>;
    const occupant = map.get(key);
    if (occupant === undefined || !this.programs.has(occupant) || fitness(p) > fitness(this.programs.get(occupant) as NaiveProgram))
      map.set(key, p.id);
    (this.islands[island] as Set<string>).add(p.id);
    if (!migrant) this.updateArchive(p);
    this.updateBest(p, island);
    this.enforcePopulationLimit(p.id);
  }

  /** Min-max scaling over every program, rescanned per insert. */
  private featureCoords(p: NaiveProgram): number[] {
    let minScore = Infinity;
    let maxScore = -Infinity;
    let minLength = Infinity;
    let maxLength = -Infinity;
    for (const q of this.programs.values()) {
      const s = fitness(q);
      const l = q.code.length;
      if (s < minScore) minScore = s;
      if (s > maxScore) maxScore = s;
      if (l < minLength) minLength = l;
      if (l > maxLength) maxLength = l;
    }
    const bin = (v: number, lo: number, hi: number) =>
      hi > lo ? Math.min(this.bins - 1, Math.floor(((v - lo) / (hi - lo)) * this.bins)) : 0;
    return [bin(fitness(p), minScore, maxScore), bin(p.code.length, minLength, maxLength)];
  }

  private updateArchive(p: NaiveProgram): void {
    if (this.archive.size < this.config.archiveSize) {
      this.archive.add(p.id);
      return;
    }
    let worst: NaiveProgram | null = null;
    for (const id of this.archive) {
      const q = this.programs.get(id) as NaiveProgram;
      if (worst === null || fitness(q) < fitness(worst)) worst = q;
    }
    if (worst && fitness(p) > fitness(worst)) {
      this.archive.delete(worst.id);
      this.archive.add(p.id);
    }
  }

  private updateBest(p: NaiveProgram, island: number): void {
    const best = this.bestId === null ? undefined : this.programs.get(this.bestId);
    if (!p.migrant && (best === undefined || fitness(p) > fitness(best))) this.bestId = p.id;
    const islandBestId = this.islandBest[island];
    const islandBest = islandBestId ? this.programs.get(islandBestId) : undefined;
    if (islandBest === undefined || fitness(p) > fitness(islandBest)) this.islandBest[island] = p.id;
  }

  /** Sort the whole population, remove the lowest; scan the feature maps for references. */
  private enforcePopulationLimit(newestId: string): void {
    if (this.programs.size <= this.config.populationSize) return;
    const excess = this.programs.size - this.config.populationSize;
    // sorted(programs, key=fitness): one key per program, as Python computes it.
    const sorted = [...this.programs.values()]
      .map((p) => ({ p, key: fitness(p) }))
      .sort((a, b) => a.key - b.key)
      .map((e) => e.p);
    let removed = 0;
    for (const q of sorted) {
      if (removed >= excess) break;
      if (q.id === this.bestId || q.id === newestId) continue;
      this.programs.delete(q.id);
      this.archive.delete(q.id);
      (this.islands[q.island] as Set<string>).delete(q.id);
      for (const map of this.featureMaps) for (const [key, id] of map) if (id === q.id) map.delete(key);
      for (let i = 0; i < this.islandBest.length; i++) if (this.islandBest[i] === q.id) this.islandBest[i] = this.recomputeIslandBest(i);
      removed++;
    }
  }

  private recomputeIslandBest(island: number): string | null {
    let best: NaiveProgram | null = null;
    for (const id of this.islands[island] as Set<string>) {
      const q = this.programs.get(id) as NaiveProgram;
      if (best === null || fitness(q) > fitness(best)) best = q;
    }
    return best?.id ?? null;
  }

  endStep(islandsGrown: Set<number>): void {
    for (const island of islandsGrown) this.generations[island] = (this.generations[island] as number) + 1;
    const max = Math.max(...this.generations);
    if (max - this.lastMigration < this.config.migrationInterval) return;
    const n = this.config.numIslands;
    const moves: { p: NaiveProgram; target: number }[] = [];
    for (let island = 0; island < n; island++) {
      const own = [...(this.islands[island] as Set<string>)].map((id) => this.programs.get(id) as NaiveProgram).filter((p) => !p.migrant);
      const keyed = own.map((p) => ({ p, key: fitness(p) })).sort((a, b) => b.key - a.key);
      own.splice(0, own.length, ...keyed.map((e) => e.p));
      const k = Math.max(1, Math.floor((this.islands[island] as Set<string>).size * this.config.migrationRate));
      for (const p of own.slice(0, k)) for (const target of [(island + 1) % n, (island - 1 + n) % n]) moves.push({ p, target });
    }
    for (const { p, target } of moves) {
      let present = false;
      for (const id of this.islands[target] as Set<string>) if ((this.programs.get(id) as NaiveProgram).code === p.code) present = true;
      if (present) continue;
      const score = p.metrics.combined_score as number;
      this.add({ code: p.code, score, metrics: p.metrics } as unknown as NewProgram, target, true);
    }
    this.lastMigration = max;
  }
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'thetaevolve-bench-'));
  try {
    // Migration every 22 island generations: the second measured step migrates.
    const config = largeConfig({ migrationInterval: 22 });
    const seed = 2024;

    // Ours first, recording the island each child joined ...
    const islandsPerStep: number[][] = [];
    const db = await openFull(
      path.join(dir, 'run.sqlite'),
      config,
      Rng.fromSeed(seed),
      (_children, islands) => void islandsPerStep.push(islands),
    );
    const fillSteps = islandsPerStep.length;
    const rng = Rng.fromSeed(seed);
    for (let i = 0; i < fillSteps; i++) for (let j = 0; j < islandsPerStep[i]!.length; j++) syntheticProgram(rng, i, null, REALISTIC_SHAPE);
    const ours: number[] = [];
    const totals: number[] = [];
    const migrationFlags: boolean[] = [];
    for (let i = 0; i < MEASURED_STEPS; i++) {
      const children = stepChildren(db, rng);
      const migrationsBefore = db.stateSnapshot().migrations.count;
      const { inserted, timings } = await db.commitStep({ step: db.lastStep + 1, children, stats: null, engineState: null });
      islandsPerStep.push(inserted.map((r) => r.island));
      ours.push(timings.applyMs);
      totals.push(timings.applyMs + timings.rowsMs + timings.fileMs);
      migrationFlags.push(db.stateSnapshot().migrations.count > migrationsBefore);
    }
    const size = db.size;
    await db.close();

    // ... then the naive baseline, fed the identical children (regenerated from the same seed) on the same islands.
    const naive = new NaiveOpenEvolveDatabase(config);
    const replay = Rng.fromSeed(seed);
    const baseline: number[] = [];
    islandsPerStep.forEach((islands, stepIndex) => {
      if (stepIndex >= fillSteps + NAIVE_MEASURED_STEPS) return;
      const children = islands.map(() => syntheticProgram(replay, stepIndex, null, REALISTIC_SHAPE));
      const started = performance.now();
      children.forEach((child, i) => naive.add(child, islands[i] as number));
      naive.endStep(new Set(islands));
      if (stepIndex >= fillSteps) baseline.push(performance.now() - started);
    });

    const oursMs = percentile(ours, 50);
    const naiveMs = percentile(baseline, 50);
    const context = `median of ${MEASURED_STEPS} steps of 512 children into a full ${size}-program database, 10 islands, archive 1000`;
    console.log(
      `bench db-step-commit-10k: ${oursMs.toFixed(1)} ms (${context}; eviction, MAP-Elites, archive, migration, hash index; target <= 50)`,
    );
    console.log(
      `bench db-step-commit-10k-naive: ${naiveMs.toFixed(0)} ms (median of the first ${NAIVE_MEASURED_STEPS} of those steps, same run, same children: naive OpenEvolve-style baseline rescanning per insert)`,
    );
    console.log(
      `bench db-step-commit-10k-speedup: ${(naiveMs / percentile(ours.slice(0, NAIVE_MEASURED_STEPS), 50)).toFixed(0)} x (naive baseline / ours over the same ${NAIVE_MEASURED_STEPS} steps, measured side by side)`,
    );
    console.log(
      `bench db-step-commit-10k-vs-anchor: ${(ANCHOR_MS / oursMs).toFixed(0)} x (reference figure from the issue, not measured here: OpenEvolve's ProgramDatabase ~${ANCHOR_MS} ms per such step / ours)`,
    );
    const migrationIndex = migrationFlags.indexOf(true);
    if (migrationIndex >= 0) {
      const naiveNote = migrationIndex < baseline.length ? `; naive baseline ${baseline[migrationIndex]!.toFixed(0)} ms` : '';
      console.log(
        `bench db-step-commit-10k-migration-step: ${ours[migrationIndex]!.toFixed(1)} ms (the measured step that also migrated 10% of each island to both neighbours${naiveNote})`,
      );
    }
    console.log(
      `bench db-step-commit-10k-durable: ${percentile(totals, 50).toFixed(0)} ms (median whole commitStep: rules + compressed rows + atomic fsync'd file replacement; the last two are db-persist-10k)`,
    );
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

void main();
