// The database's state as plain JSON (island sizes, MAP-Elites occupancy,
// archive, migrations): defined once here, produced by
// ProgramDatabase.stateSnapshot(), validated where it crosses the worker
// boundary and drawn by the dashboard.
import { z } from 'zod';
import { STEER_AUTHORS } from './steering';

const finite = z.number().finite();
const count = z.number().int().min(0);
const IdScoreSchema = z.object({ id: z.string(), score: finite });
const RangeSchema = z.object({ min: finite, max: finite }).nullable();

/** Meta-recommendations in force: their text, the first step they apply to, the step after which the model wrote them, who edited them (null: nobody). */
export const RecommendationsInForceSchema = z.object({
  text: z.string(),
  step: count,
  afterStep: z.number().int().nullable(),
  editedBy: z.enum(STEER_AUTHORS).nullable(),
});
export type RecommendationsInForce = z.infer<typeof RecommendationsInForceSchema>;

export const DatabaseSnapshotSchema = z.object({
  lastStep: z.number().int().min(-1),
  programs: count,
  populationSize: count,
  hashIndexSize: count,
  currentIsland: count,
  best: IdScoreSchema.nullable(),
  islands: z.array(z.object({ island: count, size: count, generation: count, best: IdScoreSchema.nullable() })),
  mapElites: z.object({
    /** The grid's axes: the paper's score and code length, or a task's metrics (behaviour dimensions, docs/algorithm.md section 12). */
    features: z.union([z.tuple([z.literal('score'), z.literal('codeLength')]), z.array(z.string()).min(1)]),
    /** A task's behaviour dimensions, each with its bins and the values seen; cells then give the first axis as scoreBin (rows) and the second as lengthBin (columns, 0 for one axis). */
    axes: z.array(z.object({ metric: z.string(), bins: z.number().int().min(1), range: RangeSchema })).optional(),
    bins: z.number().int().min(1),
    ranges: z.object({ score: RangeSchema, codeLength: RangeSchema }),
    islands: z.array(
      z.object({
        island: count,
        occupied: count,
        cells: z.array(z.object({ cell: count, scoreBin: count, lengthBin: count, id: z.string(), score: finite })),
      }),
    ),
  }),
  archive: z.object({ size: count, capacity: count, minScore: finite.nullable(), maxScore: finite.nullable() }),
  migrations: z.object({ count, lastStep: z.number().int().nullable(), interval: count, rate: finite }),
  /** The researcher's guidance in force (docs/algorithm.md section 11) and the first step it applies to; null: none. */
  guidance: z.object({ text: z.string(), step: count }).nullable().optional(),
  /** The model's meta-recommendations in force (docs/algorithm.md section 12); null or absent: none. */
  recommendations: RecommendationsInForceSchema.nullable().optional(),
});
export type DatabaseSnapshot = z.infer<typeof DatabaseSnapshotSchema>;
