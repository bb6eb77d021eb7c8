// Steer requests checked and applied to an open run database
// (docs/algorithm.md section 11): by the running loop at the start of a step,
// or by `thetaevolve steer` on a stopped run. Each request is checked in full
// before anything changes, so a refused one leaves the database as it was.
import { codeHash } from '../codeHash';
import { evolveRegions } from '../common/diff';
import { errorMessage, ThetaEvolveError } from '../common/errors';
import { type SteeringEntry, type SteerRequest, type SteerResult, steerAuthorOf } from '../common/steering';
import { type EvaluationResult, outcomeOfEvaluation } from '../common/types';
import type { ProgramDatabase } from '../database/programDatabase';
import { NOT_GENERATED } from '../database/records';
import { keepBestSolution } from '../step/bestSolution';

/** A request that cannot apply to this run (an unknown id, a program without EVOLVE-BLOCK...): nothing changed. */
export class SteerInputError extends ThetaEvolveError {
  override readonly name = 'SteerInputError';
}

/** What evaluates a researcher's program: the run's own evaluator (live) or one made for the task (stopped). */
export interface SteerEvaluator {
  evaluate(code: string, options: { signal?: AbortSignal }): Promise<EvaluationResult>;
}

export interface SteerTarget {
  db: ProgramDatabase;
  /** The task's language (the code hash depends on it). */
  language: string;
}

/** Throws SteerInputError when `request` cannot apply to the database as it is now. */
export function checkSteer(request: SteerRequest, { db, language }: SteerTarget): void {
  const refuse = (why: string): never => {
    throw new SteerInputError(why);
  };
  const known = (id: string): void => {
    if (!db.get(id)) refuse(`no program ${id} in ${db.file} (thetaevolve db --lineage best lists ids)`);
  };
  if (db.lastStep < 0) refuse(`${db.file} has no initial program yet: start the run first`);
  switch (request.kind) {
    case 'add': {
      try {
        evolveRegions(request.code, 'the program');
      } catch (err) {
        refuse(errorMessage(err));
      }
      if (request.parentId !== undefined) known(request.parentId);
      if (request.island !== undefined && request.island >= db.config.numIslands)
        refuse(`island ${request.island} is outside 0..${db.config.numIslands - 1}`);
      if (db.hasCodeHash(codeHash(request.code, language))) refuse('the run already has this program (the same code up to comments)');
      return;
    }
    case 'ban': {
      known(request.id);
      if (db.isBanned(request.id)) refuse(`program ${request.id} is already banned`);
      const banned = new Set([...db.bannedIds(), ...banIds(db, request.id, request.descendants)]);
      if (db.usableCount - [...banned].filter((id) => db.isLive(id) && !db.isBanned(id)).length <= 0)
        refuse(`banning ${request.id} would leave no program to be a parent`);
      return;
    }
    case 'unban':
      if (!db.isBanned(request.id)) refuse(`program ${request.id} is not banned`);
      return;
    case 'pin':
      known(request.id);
      if (!db.isLive(request.id)) refuse(`program ${request.id} is no longer in the population (only a live program can be a parent)`);
      if (db.isBanned(request.id)) refuse(`program ${request.id} is banned: unban it first`);
      return;
    case 'guidance':
    case 'clearGuidance':
    case 'recommendations':
      return;
  }
}

/**
 * Check and apply one request; persists. `evaluator` is needed for `add`
 * only; a program whose evaluation could not run (our side failed) is refused.
 * `requestId` (an inbox request's) is recorded with the entry, in the same write.
 */
export async function applySteer(
  request: SteerRequest,
  target: SteerTarget & {
    dbFile: string;
    evaluator?: SteerEvaluator;
    signal?: AbortSignal;
    /** The inbox request it comes from (recorded with it, so a crash never applies it twice). */
    requestId?: string;
    /** The step it takes effect at: the one a running loop plans next (ahead of the last commit when steps overlap); default the one after the last commit. */
    step?: number;
  },
): Promise<SteerResult> {
  checkSteer(request, target);
  const { db } = target;
  const step = target.step ?? db.lastStep + 1;
  // Who asked is recorded for an agent only: an entry without `by` is the researcher's, as every entry before agents.
  const from = {
    ...(target.requestId !== undefined ? { request: target.requestId } : {}),
    ...(request.by === 'agent' ? { by: 'agent' as const } : {}),
  };
  switch (request.kind) {
    case 'add': {
      if (!target.evaluator) throw new SteerInputError('no evaluator to run the program with');
      const result = await target.evaluator.evaluate(request.code, { signal: target.signal });
      if (result.status === 'evaluation_failed')
        throw new SteerInputError(`the program could not be evaluated (not its fault): ${result.reason.split('\n')[0] ?? ''}`);
      // Checked again: the evaluation took time, and a live run may have committed meanwhile.
      checkSteer(request, target);
      const record = await db.addResearcher(
        {
          parentId: request.parentId ?? null,
          step: db.lastStep + 1,
          code: request.code,
          codeHash: codeHash(request.code, target.language),
          score: result.score,
          objective: result.objective,
          outcome: outcomeOfEvaluation(result.status),
          metrics: result.metrics,
          // Not written by a model: no prompt, response or cost of its own.
          ...NOT_GENERATED,
          evaluationMs: result.durationMs,
        },
        {
          island: request.island,
          note: request.note ?? null,
          origin: steerAuthorOf(request),
          ...(target.requestId !== undefined ? { request: target.requestId } : {}),
        },
      );
      if (db.best()?.id === record.id && result.status === 'ok' && result.solution !== undefined)
        await keepBestSolution(target.dbFile, record.id, result.solution, () => undefined);
      return { kind: 'add', id: record.id, outcome: record.outcome, score: record.score, island: record.island, step: record.step };
    }
    case 'guidance':
    case 'clearGuidance':
      await db.recordSteering({ kind: 'guidance', step, text: request.kind === 'guidance' ? request.text.trim() : null, ...from });
      return { kind: request.kind, step };
    case 'recommendations':
      // Edited, they stay the model's recommendations (their own prompt section), marked as edited by whoever asked.
      await db.recordSteering({
        kind: 'recommendations',
        step,
        text: request.text === '' ? null : request.text,
        editedBy: steerAuthorOf(request),
        ...(target.requestId !== undefined ? { request: target.requestId } : {}),
      });
      return { kind: 'recommendations', step };
    case 'ban': {
      const ids = banIds(db, request.id, request.descendants);
      await db.recordSteering({ kind: 'ban', step, id: request.id, descendants: request.descendants, ids, ...from });
      return { kind: 'ban', step, ids };
    }
    case 'unban': {
      const ids = unbanIds(db, request.id);
      await db.recordSteering({ kind: 'unban', step, id: request.id, ids, ...from });
      return { kind: 'unban', step, ids };
    }
    case 'pin':
      await db.recordSteering({ kind: 'pin', step, id: request.id, share: request.share, steps: request.steps, ...from });
      return { kind: 'pin', step };
  }
}

/** What a ban of `id` covers: it, its live migration copies, and with `descendants` every live descendant. */
function banIds(db: ProgramDatabase, id: string, descendants: boolean): string[] {
  const ids = new Set<string>([id, ...db.copiesOf(id)]);
  if (descendants) for (const descendant of db.descendantsOf(id)) ids.add(descendant);
  return [...ids];
}

/** What an unban of `id` lifts: everything its own bans covered that is still banned, else the id alone. */
function unbanIds(db: ProgramDatabase, id: string): string[] {
  const banned = new Set(db.bannedIds());
  const covered = db
    .steeringLog()
    .filter((entry): entry is Extract<SteeringEntry, { kind: 'ban' }> => entry.kind === 'ban' && entry.id === id)
    .flatMap((entry) => entry.ids);
  const ids = new Set<string>([id, ...covered].filter((other) => banned.has(other)));
  return [...ids];
}
