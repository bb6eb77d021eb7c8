// db-population-10k: the population rules alone (no SQLite, no file): one
// step of 512 children decided against a full 10,000-program population,
// the same shape as db-step-commit-10k's applyMs, which also includes its
// facade's work. What a change to the rules costs, measured without the store.
import { Rng } from '../src/engine/common/rng';
import { percentile } from '../src/engine/common/stats';
import { initialState, Population } from '../src/engine/database/population';
import type { NewProgram } from '../src/engine/database/records';
import { CHILDREN_PER_PARENT, largeConfig, PARENTS_PER_STEP } from '../test/unit/fixtures/database/fill';
import { REALISTIC_SHAPE, syntheticProgram } from '../test/unit/fixtures/database/programs';

const MEASURED_STEPS = 9;

function children(population: Population, rng: Rng): NewProgram[] {
  const step = population.state.lastStep + 1;
  return population
    .sampleParents(PARENTS_PER_STEP)
    .flatMap((parent) => Array.from({ length: CHILDREN_PER_PARENT }, () => syntheticProgram(rng, step, parent.id, REALISTIC_SHAPE)));
}

function main(): void {
  // Migration every 22 island generations, as in db-step-commit-10k: a measured step migrates.
  const config = largeConfig({ migrationInterval: 22 });
  const population = new Population(config, initialState(config));
  const rng = Rng.fromSeed(2024);
  population.addInitial(syntheticProgram(rng, 0, null, REALISTIC_SHAPE));
  population.settle();
  while (population.size < config.populationSize) {
    population.addStep(population.state.lastStep + 1, children(population, rng));
    population.settle();
  }
  const decided: number[] = [];
  let migrationMs: number | null = null;
  for (let i = 0; i < MEASURED_STEPS; i++) {
    const batch = children(population, rng);
    const migrationsBefore = population.state.migrations;
    const started = performance.now();
    population.addStep(population.state.lastStep + 1, batch);
    population.changes();
    const ms = performance.now() - started;
    population.settle();
    decided.push(ms);
    if (population.state.migrations > migrationsBefore) migrationMs = ms;
  }
  const context = `median of ${MEASURED_STEPS} steps of 512 children into a full ${population.size}-program population, 10 islands, archive 1000; rules only: eviction, MAP-Elites, archive, migration, hash index, and the change set a store writes; settling after the write unmeasured`;
  console.log(`bench db-population-10k: ${percentile(decided, 50).toFixed(2)} ms (${context})`);
  if (migrationMs !== null)
    console.log(
      `bench db-population-10k-migration-step: ${migrationMs.toFixed(2)} ms (the measured step that also migrated 10% of each island to both neighbours)`,
    );
}

main();
