// What a program handed to the population becomes: the checks it must pass to
// enter the database, the fields its node takes, its record, and the copy
// migration (or island seeding) makes of it.
import type { ProgramOrigin } from '../common/steering';
import { EVALUATED_OUTCOMES, type Outcome } from '../common/types';
import type { PopulationNode } from './populationNode';
import { type NewProgram, NOT_GENERATED, type ProgramRecord } from './records';

/** Outcomes whose programs enter the database (their code is new and was evaluated). */
const STORED_OUTCOMES: ReadonlySet<Outcome> = new Set<Outcome>(EVALUATED_OUTCOMES);

/** The fields of a new node that come from what is inserted. */
export interface NodeEntry {
  parentId: string | null;
  step: number;
  score: number;
  codeHash: string;
  codeLength: number;
  /** A migration copy's: its source's feature values. */
  features?: number[];
}

export function entryOf(program: NewProgram): NodeEntry {
  return {
    parentId: program.parentId,
    step: program.step,
    score: program.score,
    codeHash: program.codeHash,
    codeLength: program.code.length,
  };
}

/** The copy migration (or island seeding) makes: same code and score, no generation cost. */
export function copyOf(program: NewProgram, sourceId: string, step: number): NewProgram {
  // The same fields as recordOf's list, kept apart: sharing them would cost recordOf's hot path a spread or a reshaping assignment.
  return {
    parentId: sourceId,
    step,
    code: program.code,
    codeHash: program.codeHash,
    score: program.score,
    objective: program.objective,
    outcome: program.outcome,
    metrics: program.metrics,
    ...NOT_GENERATED,
  };
}

/** The record of a program just added, from what was handed in. */
export function recordOf(
  node: PopulationNode,
  program: NewProgram,
  content: { createdAt: number; origin: ProgramOrigin; note: string | null },
): ProgramRecord {
  // Field by field: an object spread is several times slower on this hot path.
  return {
    id: node.id,
    parentId: program.parentId,
    island: node.island,
    step: program.step,
    code: program.code,
    codeHash: program.codeHash,
    score: program.score,
    objective: program.objective,
    outcome: program.outcome,
    metrics: program.metrics,
    metaInfoId: program.metaInfoId,
    response: program.response,
    reasoning: program.reasoning,
    generationMs: program.generationMs,
    evaluationMs: program.evaluationMs,
    promptTokens: program.promptTokens,
    completionTokens: program.completionTokens,
    createdAt: content.createdAt,
    migrantOf: node.migrantOf,
    origin: content.origin,
    note: content.note,
  };
}

/** Throws, saying why, when `program` cannot enter the database at `step`. */
export function validateProgram(program: NewProgram, step: number): void {
  const fail = (why: string): never => {
    throw new Error(`Program for step ${step} cannot enter the database: ${why}`);
  };
  if (program.step !== step) fail(`its step is ${program.step}`);
  if (!STORED_OUTCOMES.has(program.outcome)) fail(`outcome '${program.outcome}' never enters the database (only evaluated new code does)`);
  if (!Number.isFinite(program.score)) fail(`score ${program.score} is not finite`);
  if (typeof program.codeHash !== 'string' || program.codeHash === '') fail('codeHash is empty');
  if (typeof program.code !== 'string') fail('code is not text');
  if (program.objective !== null && !Number.isFinite(program.objective)) fail('objective is not finite');
}
