// One meta round of a running loop (docs/algorithm.md section 12): after the
// k-th, 2k-th... committed step, one request of the run's own source for the
// model's recommendations (operators/metaRecommendations.ts), recorded in the
// steering log to apply from the first step not yet planned. A failed request
// is said and the run goes on with the recommendations it had. Never a
// rollout: the trainer bridge only ever sees committed steps' groups.
import type { Settings } from '../common/config';
import { errorMessage } from '../common/errors';
import type { EngineEvent } from '../common/events';
import type { GenerationJob, ResponseSource, Sample, SampleResponse } from '../common/types';
import type { ProgramDatabase } from '../database/programDatabase';
import { readStepOutputs } from '../evaluationOutputs';
import { metaRequestMessages, metaRoundDue, recommendationsOfReply } from './metaRecommendations';

export interface MetaRoundInput {
  db: ProgramDatabase;
  task: { title: string; direction: 'maximize' | 'minimize' };
  settings: Settings;
  source: ResponseSource;
  dbFile: string;
  /** Steps planned past the last commit (a pipelined loop): the recommendations apply after them. */
  plannedAhead: number;
  signal: AbortSignal;
  emit: (event: EngineEvent) => void;
  /** Called with the request and its answer: the run's spend counts the meta round's tokens too. */
  spent?: (job: GenerationJob, reply: SampleResponse) => void;
}

/** Does the meta round after the last committed step when due; resolves whether it recorded recommendations. */
export async function metaRound({
  db,
  task,
  settings,
  source,
  dbFile,
  plannedAhead,
  signal,
  emit,
  spent,
}: MetaRoundInput): Promise<boolean> {
  const everySteps = settings['meta.everySteps'];
  if (!metaRoundDue(db, everySteps)) return false;
  const afterStep = db.lastStep;
  const fail = (why: string): false => {
    if (!signal.aborted)
      emit({
        type: 'error',
        time: Date.now(),
        fatal: false,
        message: `meta-recommendations after step ${afterStep} failed: ${why}; the run goes on with the recommendations it had`,
      });
    return false;
  };
  if (source.kind !== 'llm') return fail('the offline mutate sampler has no model to write them (thetaevolve.sampler)');
  // The job's formal parent: the best program, or while none is valid the top-ranked invalid one.
  const best = db.best() ?? db.topPrograms(1)[0];
  if (!best) return false;
  const failureReasons: string[] = [];
  for (let step = Math.max(1, afterStep - everySteps + 1); step <= afterStep; step++)
    for (const output of await readStepOutputs(dbFile, step).catch(() => [])) failureReasons.push(output.reason);
  const job: GenerationJob = {
    key: `meta-${afterStep}`,
    messages: metaRequestMessages({ db, task, everySteps, failureReasons }),
    n: 1,
    seed: (settings.seed + afterStep) >>> 0,
    // The source asks these of every job; the meta request edits no program.
    parentId: best.id,
    parentCode: best.code,
  };
  let reply: Sample | null = null;
  try {
    await source.generate([job], signal, (sample) => (reply = sample));
  } catch (err) {
    return fail(errorMessage(err));
  }
  if (signal.aborted) return false;
  const sample = reply as Sample | null;
  if (sample === null) return fail('the server gave no reply');
  if (!sample.ok) return fail(sample.error);
  spent?.(job, sample);
  const text = recommendationsOfReply(sample.content);
  if (text === '') return fail('the reply held no recommendations');
  const step = afterStep + 1 + plannedAhead;
  await db.recordSteering({ kind: 'recommendations', step, text, afterStep });
  emit({
    type: 'steered',
    time: Date.now(),
    step,
    kind: 'recommendations',
    ok: true,
    message: `the model wrote recommendations after step ${afterStep}`,
    id: null,
  });
  return true;
}
