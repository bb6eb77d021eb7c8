// A step's plan (docs/algorithm.md section 1): B parents sampled from one database
// snapshot, one prompt per parent, and the generation jobs asking n responses
// of each prompt. Every random choice of the prompts comes from the step's
// generator, in a fixed order, so a redone step plans the same jobs.
import type { Settings } from '../common/config';
import type { ParentDraw, ProgramDatabase, ProgramRecord } from '../database/programDatabase';
import { buildPrompt } from '../prompt';
import { CROSSOVER_POOL, drawSecondParent } from '../operators/crossover';
import type { Rng } from '../common/rng';
import type { GenerationJob } from '../common/types';
import type { Task } from '../task/task';
import type { ModelChoice } from '../llm/models/modelChoice';

export interface StepPlan {
  step: number;
  parents: ProgramRecord[];
  /** One job per parent, in the parents' order: its key is `s<step>-p<i>`. */
  jobs: GenerationJob[];
  /** The meta-info id each job's prompt was built with (recorded with its children), by job key. */
  metaInfoIds: Map<string, string | null>;
  /** Crossover (operators/crossover.ts): each crossover job's second parent, by job key; absent with crossover off. */
  secondParents?: Map<string, string>;
  /** Where the draw of parents left the sampling generator: the step's commit adopts it, a step planned after it starts there. */
  draw: ParentDraw;
}

export interface PlanInput {
  step: number;
  db: ProgramDatabase;
  task: Task;
  settings: Settings;
  /** The step's generator, restored from the engine state. */
  rng: Rng;
  /** The draw of the step before, while that step is in flight (a pipelined loop); null: draw after the last commit. */
  previousDraw: ParentDraw | null;
  /** Several models: how each prompt's model is drawn and the chances at this step (docs/algorithm.md section 12). */
  models?: { choice: ModelChoice; probabilities: Readonly<Record<string, number>> } | null;
}

export function planStep({ step, db, task, settings, rng, previousDraw, models }: PlanInput): StepPlan {
  const { parents, draw } = db.sampleParentsFor(settings.batchSize, previousDraw, step);
  const top = settings.topPrograms > 0 ? db.topPrograms(settings.topPrograms) : [];
  const n = settings.samplesPerPrompt;
  // A researcher's guidance in force at this step (docs/algorithm.md section 11).
  const guidance = db.guidanceAt(step);
  // The model's meta-recommendations in force (docs/algorithm.md section 12); none unless meta.everySteps wrote some.
  const recommendations = db.recommendationsAt(step)?.text ?? null;
  const jobs: GenerationJob[] = [];
  const metaInfoIds = new Map<string, string | null>();
  const share = settings['crossover.share'];
  const crossoverPool = share > 0 ? db.topPrograms(CROSSOVER_POOL) : [];
  const secondParents = new Map<string, string>();
  for (const [i, parent] of parents.entries()) {
    // The model first (its format shapes the prompt; nothing drawn with one model), then crossover (only when on),
    // then the prompt draws from the generator before the job's seed does.
    const model = models ? models.choice.draw(rng, models.probabilities) : null;
    const editFormat = model?.mode ?? settings.editFormat;
    const secondParent = drawSecondParent(rng, share, parent, crossoverPool);
    const prompt = buildPrompt({
      task,
      parent,
      rng,
      topPrograms: top.filter((p) => p.id !== parent.id),
      guidance,
      recommendations,
      feedbackChars: settings.feedbackChars,
      ...(secondParent ? { secondParent } : {}),
      editFormat,
    });
    const key = `s${step}-p${i}`;
    if (secondParent) secondParents.set(key, secondParent.id);
    metaInfoIds.set(key, prompt.metaInfoId);
    jobs.push({
      key,
      messages: prompt.messages,
      n,
      seed: rng.nextUint32(),
      parentId: parent.id,
      parentCode: parent.code,
      ...(model ? { model: model.name } : {}),
      ...(editFormat !== 'diff' ? { editFormat } : {}),
    });
  }
  return { step, parents, jobs, metaInfoIds, draw, ...(share > 0 ? { secondParents } : {}) };
}
