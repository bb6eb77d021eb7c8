// What the dashboard model is fed (src/protocol/dashboardMessages.ts), for
// the unit tests and the page tests alike: a plain run and a small database;
// each test overrides the fields it looks at.
import type { DashboardDatabaseInput, DashboardRunInput } from '../../src/protocol/dashboardMessages';

/** A live run's card input. */
export function dashboardRunInput(overrides: Partial<DashboardRunInput> = {}): DashboardRunInput {
  return {
    runId: 'r',
    taskName: 't',
    taskTitle: 'T',
    direction: 'maximize',
    targetValue: null,
    source: { kind: 'llm', label: 'm at s' },
    batchSize: 2,
    samplesPerPrompt: 2,
    resumedFromStep: null,
    ...overrides,
  };
}

/** A one-island database after step 1: two programs, the best 'a' scoring 1, an empty grid and archive, no migration yet. */
export function dashboardDatabaseInput(overrides: Partial<DashboardDatabaseInput> = {}): DashboardDatabaseInput {
  return {
    lastStep: 1,
    programs: 2,
    populationSize: 70,
    hashIndexSize: 2,
    currentIsland: 0,
    best: { id: 'a', score: 1 },
    islands: [{ island: 0, size: 2, generation: 1, best: { id: 'a', score: 1 } }],
    mapElites: { features: ['score', 'codeLength'], bins: 10, ranges: { score: null, codeLength: null }, islands: [] },
    archive: { size: 0, capacity: 25, minScore: null, maxScore: null },
    migrations: { count: 0, lastStep: null, interval: 50, rate: 0.1 },
    ...overrides,
  };
}
