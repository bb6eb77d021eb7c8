// Comparing runs (docs/architecture.md "Comparing runs"): the shape of a
// comparison of two or more runs, as the editor's Compare Runs page and the
// `thetaevolve report` HTML file get it, and the pure rules that make it from
// what each run's database holds. Browser-safe: the page checks the data it
// is given with the same schema.
import { type ModelUsage, ModelUsageSchema } from './models';
import { z } from 'zod';
import { DirectionSchema, OutcomeCountsSchema, type StepStatistics } from './events';
import { type PythonEnvironment, PythonEnvironmentSchema } from './pythonEnvironment';
import { RunElapsed } from './runElapsed';
import { displayObjective } from './scoring';
import type { StepRank } from './format';
import { PROGRAM_ORIGINS, type ProgramOrigin } from './steering';
import { emptyOutcomeCounts, type Direction, OUTCOMES, type OutcomeCounts } from './types';

/** The id of the `<script type="application/json">` element a report embeds its comparison in. */
export const EMBEDDED_COMPARISON_ID = 'thetaevolve-comparison';

const finite = z.number().finite();
const count = z.number().int().min(0);

/** One committed step of a compared run; values in the task's own objective. */
export const ComparedStepSchema = z.object({
  step: count,
  /** The run's elapsed time at this step, across its sessions. */
  elapsedMs: finite.min(0),
  /** Best valid objective of the step, of the run so far, and the step's mean valid objective (null: none valid yet). */
  stepBest: finite.nullable(),
  bestSoFar: finite.nullable(),
  mean: finite.nullable(),
  samples: count,
  valid: count,
  samplesPerSecond: finite.min(0),
  /** The policy version that wrote the step's samples (RL on), else null. */
  policyVersion: z.string().nullable(),
});
export type ComparedStep = z.infer<typeof ComparedStepSchema>;

/** The steps one policy version wrote: whether the model is learning, read per version. */
export const PolicyVersionRowSchema = z.object({
  version: z.string(),
  firstStep: count,
  steps: count,
  samples: count,
  /** Mean reward of its scored samples (the combined score, penalties included; null when none was scored). */
  meanReward: finite.nullable(),
  /** Valid children among its evaluated samples (0..1; null when none was evaluated). */
  validShare: finite.min(0).max(1).nullable(),
});
export type PolicyVersionRow = z.infer<typeof PolicyVersionRowSchema>;

export const ComparedProgramSchema = z.object({
  id: z.string(),
  step: count,
  objective: finite.nullable(),
  origin: z.enum(PROGRAM_ORIGINS),
  /** Its rank by score among its step's children (format.ts programName: "step 11 #1"); absent or null: not known. */
  stepRank: z.object({ rank: count, of: count }).nullable().optional(),
});

/** The settings a run is told apart by; each a short text ("on", "4 x 8", "small"). */
export const COMPARED_SETTINGS = ['task', 'model', 'rl', 'batch', 'database', 'seed', 'python'] as const;
export type ComparedSetting = (typeof COMPARED_SETTINGS)[number];
export const COMPARED_SETTING_NAMES: Readonly<Record<ComparedSetting, string>> = {
  task: 'task',
  model: 'model',
  rl: 'RL',
  batch: 'B x n',
  database: 'database',
  seed: 'seed',
  python: 'Python',
};

export const ComparedRunSchema = z.object({
  runId: z.string(),
  /** The database file it was read from. */
  file: z.string(),
  /** What tells it apart from the others (the settings that differ), or its run id when nothing does. */
  label: z.string(),
  direction: DirectionSchema,
  settings: z.object(Object.fromEntries(COMPARED_SETTINGS.map((k) => [k, z.string()])) as Record<ComparedSetting, z.ZodString>),
  /** The interpreter the run recorded (null: older runs, tasks without Python); its version and packages are the setting 'python'. */
  python: PythonEnvironmentSchema.nullable(),
  steps: z.array(ComparedStepSchema),
  outcomes: OutcomeCountsSchema,
  policyVersions: z.array(PolicyVersionRowSchema),
  /** The steps at which the policy version changed (the first version's first step included). */
  policyChanges: z.array(z.object({ step: count, version: z.string() })),
  best: ComparedProgramSchema.extend({ code: z.string() }).nullable(),
  /** The best program's lineage, the program first; `complete` false where an evicted ancestor's row is gone. */
  lineage: z.object({ programs: z.array(ComparedProgramSchema), complete: z.boolean() }),
  /** Several models and cost (docs/algorithm.md section 12): the run's spend and per-model table. Absent: not read. */
  modelUsage: ModelUsageSchema.optional(),
});
export type ComparedRun = z.infer<typeof ComparedRunSchema>;

export const RunComparisonSchema = z.object({
  runs: z.array(ComparedRunSchema).min(1),
  /** The settings whose values differ between the runs, in COMPARED_SETTINGS order. */
  differing: z.array(z.enum(COMPARED_SETTINGS)),
  generatedAt: finite,
});
export type RunComparison = z.infer<typeof RunComparisonSchema>;

/** A program as its database keeps it (combined score). */
interface StoredProgram {
  id: string;
  step: number;
  score: number;
  origin: ProgramOrigin;
  stepRank?: StepRank | null;
}

/** What a run's database holds that a comparison reads (the database layer gathers it). */
export interface RunRecordForComparison {
  runId: string;
  file: string;
  task: string;
  direction: Direction;
  /** The response source's label: the model and its server, or the offline sampler. */
  source: string;
  database: { populationSize: number; archiveSize: number; numIslands: number; seed: number };
  steps: readonly { step: number; stats: StepStatistics }[];
  /** Each program that was the run's new best when added, oldest first: the starting program (step 0) among them, whose score no step's statistics hold. */
  improvements?: readonly { step: number; score: number }[];
  best: (StoredProgram & { code: string }) | null;
  lineage: { programs: readonly StoredProgram[]; complete: boolean };
  python: PythonEnvironment | null;
  modelUsage?: ModelUsage;
}

/** The database presets by name (config.ts DATABASE_PRESETS), to name a run's sizes. */
export type DatabasePresets = Readonly<Record<string, { populationSize: number; archiveSize: number; numIslands: number }>>;

/** The model part of a source label ("Qwen3-8B at http://..." → "Qwen3-8B"). */
function modelOf(source: string): string {
  const at = source.indexOf(' at ');
  return at > 0 ? source.slice(0, at) : source;
}

/** A text for a setting that may change over a run's steps: the one value, or each in order of appearance. */
function valuesText(values: readonly string[], none: string): string {
  const distinct = [...new Set(values)];
  return distinct.length === 0 ? none : distinct.join(' then ');
}

function databaseText(db: RunRecordForComparison['database'], presets: DatabasePresets): string {
  for (const [name, preset] of Object.entries(presets)) {
    if (preset.populationSize === db.populationSize && preset.archiveSize === db.archiveSize && preset.numIslands === db.numIslands)
      return name;
  }
  return `${db.populationSize} programs, ${db.numIslands} islands, archive ${db.archiveSize}`;
}

function mean(values: readonly number[]): number | null {
  return values.length === 0 ? null : values.reduce((a, b) => a + b, 0) / values.length;
}

/** Per policy version: its steps, mean reward and share of valid children (docs/architecture.md "Comparing runs"). */
export function policyVersionRows(steps: readonly { step: number; stats: StepStatistics }[]): PolicyVersionRow[] {
  const rows = new Map<
    string,
    { firstStep: number; steps: number; samples: number; rewards: number[]; valid: number; evaluated: number }
  >();
  for (const { step, stats } of steps) {
    const version = stats.sampling?.policyVersion;
    if (version === undefined || version === null) continue;
    const row = rows.get(version) ?? { firstStep: step, steps: 0, samples: 0, rewards: [], valid: 0, evaluated: 0 };
    row.steps++;
    row.samples += stats.samples;
    // meanAll is the mean over the step's scored samples: weighted back by how many there were.
    const scored = OUTCOMES.reduce((n, o) => (o === 'request_failed' || o === 'evaluation_failed' ? n : n + stats.counts[o]), 0);
    if (stats.meanAll !== null) for (let i = 0; i < scored; i++) row.rewards.push(stats.meanAll);
    row.valid += stats.counts.valid;
    row.evaluated += scored;
    rows.set(version, row);
  }
  return [...rows].map(([version, r]) => ({
    version,
    firstStep: r.firstStep,
    steps: r.steps,
    samples: r.samples,
    meanReward: mean(r.rewards),
    validShare: r.evaluated > 0 ? r.valid / r.evaluated : null,
  }));
}

/** The steps where the policy version changed, in step order (the first version counts as a change). */
export function policyChanges(steps: readonly ComparedStep[]): { step: number; version: string }[] {
  const out: { step: number; version: string }[] = [];
  let last: string | null = null;
  for (const s of steps) {
    if (s.policyVersion === null || s.policyVersion === last) continue;
    out.push({ step: s.step, version: s.policyVersion });
    last = s.policyVersion;
  }
  return out;
}

function comparedSteps(record: RunRecordForComparison): ComparedStep[] {
  const elapsed = new RunElapsed();
  let bestScore: number | null = null;
  const improvements = record.improvements ?? [];
  let next = 0;
  const consider = (score: number | null): void => {
    if (score !== null && (bestScore === null || score > bestScore)) bestScore = score;
  };
  return record.steps.map(({ step, stats }) => {
    // The best so far counts the starting program too: a minimised run whose children are all worse than it stays at its value.
    for (; next < improvements.length && (improvements[next]?.step ?? Infinity) <= step; next++)
      consider(improvements[next]?.score ?? null);
    consider(stats.best);
    return {
      step,
      elapsedMs: elapsed.step(stats).elapsedMs,
      stepBest: displayObjective(stats.best, record.direction),
      bestSoFar: displayObjective(bestScore, record.direction),
      mean: displayObjective(stats.mean, record.direction),
      samples: stats.samples,
      valid: stats.counts.valid,
      samplesPerSecond: stats.samplesPerSecond,
      policyVersion: stats.sampling?.policyVersion ?? null,
    };
  });
}

/** A run's environment as a setting: its version and package versions (where the interpreter lives is no difference by itself). */
function pythonSettingText(python: PythonEnvironment | null): string {
  if (!python) return 'not recorded';
  const packages = Object.entries(python.packages)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, version]) => `${name} ${version}`);
  return packages.length > 0 ? `${python.version} (${packages.join(', ')})` : python.version;
}

function settingsOf(record: RunRecordForComparison, presets: DatabasePresets): Record<ComparedSetting, string> {
  const sampled = record.steps.flatMap(({ stats }) => (stats.sampling ? [stats.sampling] : []));
  return {
    task: record.task,
    model: modelOf(record.source),
    rl: valuesText(
      sampled.map((s) => (s.rl ? 'on' : 'off')),
      'not recorded',
    ),
    batch: valuesText(
      sampled.map((s) => `${s.batchSize} x ${s.samplesPerPrompt}`),
      'not recorded',
    ),
    database: databaseText(record.database, presets),
    seed: String(record.database.seed),
    python: pythonSettingText(record.python),
  };
}

/** The comparison of runs read from their databases, each labelled by what differs. */
export function compareRuns(records: readonly RunRecordForComparison[], presets: DatabasePresets, now: number): RunComparison {
  const settings = records.map((r) => settingsOf(r, presets));
  const differing = COMPARED_SETTINGS.filter((key) => new Set(settings.map((s) => s[key])).size > 1);
  const runs = records.map((record, i): ComparedRun => {
    const own = settings[i] as Record<ComparedSetting, string>;
    const steps = comparedSteps(record);
    const outcomes: OutcomeCounts = emptyOutcomeCounts();
    for (const { stats } of record.steps) for (const o of OUTCOMES) outcomes[o] += stats.counts[o];
    const label = differing.map((key) => `${COMPARED_SETTING_NAMES[key]} ${own[key]}`).join(' · ');
    const program = (p: StoredProgram) => ({
      id: p.id,
      step: p.step,
      objective: displayObjective(p.score, record.direction),
      origin: p.origin,
      ...(p.stepRank !== undefined ? { stepRank: p.stepRank } : {}),
    });
    return {
      runId: record.runId,
      file: record.file,
      label: label === '' ? record.runId : label,
      direction: record.direction,
      settings: own,
      python: record.python,
      steps,
      outcomes,
      policyVersions: policyVersionRows(record.steps),
      policyChanges: policyChanges(steps),
      best: record.best ? { ...program(record.best), code: record.best.code } : null,
      lineage: { programs: record.lineage.programs.map(program), complete: record.lineage.complete },
      ...(record.modelUsage ? { modelUsage: record.modelUsage } : {}),
    };
  });
  // Two runs told apart by nothing: their ids do it.
  const labels = runs.map((r) => r.label);
  for (const run of runs) if (labels.filter((l) => l === run.label).length > 1) run.label = `${run.label} (${run.runId})`;
  return { runs, differing, generatedAt: now };
}

/**
 * One progress chart of a comparison: the runs of one task and direction,
 * which alone share an axis (docs/architecture.md "Comparing runs").
 */
export interface ProgressPanel {
  task: string;
  direction: Direction;
  /** Indexes into `RunComparison.runs`, in their order (each keeps its colour). */
  runIndexes: number[];
  /** "objective (lower is better)". */
  axisTitle: string;
  /** "first-autocorrelation: minimise (lower is better)"; null when the comparison has one panel (the section says it). */
  heading: string | null;
}

/** The progress charts of a comparison and, when there are several, why: runs of different tasks or directions never share an axis. */
export interface ProgressLayout {
  panels: ProgressPanel[];
  /** What a reader must know before reading the panels side by side; null when the runs share one task and direction. */
  note: string | null;
}

function directionWords(direction: Direction): string {
  return direction === 'minimize' ? 'minimise (lower is better)' : 'maximise (higher is better)';
}

/** Groups the runs by task and direction, in the order each first appears. */
export function progressLayout(runs: readonly Pick<ComparedRun, 'settings' | 'direction'>[]): ProgressLayout {
  const groups = new Map<string, { task: string; direction: Direction; runIndexes: number[] }>();
  runs.forEach((run, i) => {
    const key = JSON.stringify([run.settings.task, run.direction]);
    const group = groups.get(key) ?? { task: run.settings.task, direction: run.direction, runIndexes: [] };
    group.runIndexes.push(i);
    groups.set(key, group);
  });
  const several = groups.size > 1;
  const panels = [...groups.values()].map((g): ProgressPanel => ({
    ...g,
    axisTitle: `objective (${g.direction === 'minimize' ? 'lower' : 'higher'} is better)`,
    heading: several ? `${g.task}: ${directionWords(g.direction)}` : null,
  }));
  if (!several) return { panels, note: null };
  const tasks = new Set(panels.map((p) => p.task));
  const directions = new Set(panels.map((p) => p.direction));
  const differ =
    tasks.size > 1 && directions.size > 1
      ? 'tasks and directions'
      : tasks.size > 1
        ? 'tasks'
        : 'directions (one task, minimised in one run and maximised in another)';
  return {
    panels,
    note:
      `These runs are of different ${differ}: their objectives are not on one scale, so each ` +
      `${tasks.size > 1 ? 'task' : 'direction'} has its own progress chart (${panels.length}), with its direction on its axis.`,
  };
}
