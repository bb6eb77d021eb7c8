// The paper's longest runs as a database: 600 steps of 32 parents x 16
// children (307,200 programs ever added, 10,000 alive) into the large preset,
// each step committed as a run commits it (its statistics, the durable
// persist). Shared by db-paper-scale (the database's costs) and
// editor-paper-scale (what the editor shows of such a run).
import { ProgramDatabase } from '../../src/engine/database/programDatabase';
import { Rng } from '../../src/engine/common/rng';
import { stepStatistics } from '../../src/engine/common/scoring';
import type { StepStatistics } from '../../src/engine/common/events';
import type { RunMeta } from '../../src/engine/common/runMeta';
import type { NewProgram } from '../../src/engine/database/records';
import { largeConfig, stepChildren } from '../../test/unit/fixtures/database/fill';
import { REALISTIC_SHAPE, syntheticProgram } from '../../test/unit/fixtures/database/programs';

export const PAPER_SCALE_STEPS = 600;

/** One committed step: what the bench measures of it. */
export interface PaperScaleStep {
  step: number;
  /** Programs ever added so far (the initial one included). */
  added: number;
  stats: StepStatistics;
  timings: { applyMs: number; rowsMs: number; fileMs: number };
}

/** The statistics the run would have committed with the step: scores, outcomes, tokens and times of its children. */
export function statisticsOf(step: number, children: readonly NewProgram[]): StepStatistics {
  const generationMs = Math.max(...children.map((c) => c.generationMs));
  const evaluationMs = Math.max(...children.map((c) => c.evaluationMs));
  return stepStatistics({
    step,
    samples: children.map((c) => ({
      outcome: c.outcome,
      score: c.score,
      promptTokens: c.promptTokens,
      completionTokens: c.completionTokens,
      latencyMs: c.generationMs,
    })),
    generationMs,
    evaluationMs,
    totalMs: generationMs + evaluationMs,
  });
}

/** A run meta of the kind a run writes (the dashboard and Compare Runs read it). */
export function paperScaleMeta(runId: string, taskDir: string): RunMeta {
  return {
    runId,
    task: 'circle-packing',
    taskDir,
    direction: 'maximize',
    language: 'py',
    programPath: `${taskDir}/initial_program.py`,
    startCode: '# start\n',
    source: 'bench model @ http://127.0.0.1:0/v1',
    createdAt: Date.UTC(2026, 0, 1),
  };
}

/**
 * Commit `steps` paper-scale steps into a new database at `file` (seeded:
 * the same file each time); `onStep` sees each, the database still open.
 * Returns the open database.
 */
export async function generatePaperScaleRun(
  file: string,
  options: { seed: number; steps?: number; meta?: RunMeta; onStep?: (step: PaperScaleStep, db: ProgramDatabase) => void | Promise<void> },
): Promise<ProgramDatabase> {
  const rng = Rng.fromSeed(options.seed);
  const db = await ProgramDatabase.open(file, { config: largeConfig(), ...(options.meta ? { meta: { ...options.meta } } : {}) });
  await db.addInitial(syntheticProgram(rng, 0, null, REALISTIC_SHAPE));
  let added = 1;
  const steps = options.steps ?? PAPER_SCALE_STEPS;
  for (let step = 1; step <= steps; step++) {
    const children = stepChildren(db, rng);
    added += children.length;
    const stats = statisticsOf(step, children);
    const { timings } = await db.commitStep({ step, children, stats, engineState: { step } });
    await options.onStep?.({ step, added, stats, timings }, db);
  }
  return db;
}
