// The step's ledger: one slot per requested response (B jobs x n), saying what
// became of it, and the requests that failed after retries. With the RL
// trainer on, those are asked for again so that each group stays whole
// (docs/algorithm.md section 5); each slot is announced once (one
// evaluation_finished per response), a failed request only once it stays failed.
import type { Settings } from '../common/config';
import type { EarlyOutcome } from '../classifyChild';
import type { NewProgram } from '../database/programDatabase';
import { type GenerationJob, type Outcome, OUTCOME_PENALTY, type SampleResponse } from '../common/types';

/** What became of one requested response. */
export type SlotOutcome = ScoredSlot | RejectedEarlySlot | RequestFailedSlot | EvaluationFailedSlot;

/** Evaluated and scored: the child goes to the database (unless a sibling already brought the same code). */
export interface ScoredSlot {
  kind: 'scored';
  /** The child with its outcome, score and objective. */
  child: NewProgram;
  reason: string;
  response: SampleResponse;
  durationMs: number;
  /** Whether the evaluation's whole output was kept beside the database (every outcome but valid). */
  outputKept: boolean;
  /** The solution file's text of a valid child (kept for the best), when the evaluator returned it. */
  solution: string | null;
}

/** Rejected before any evaluation (no diff, no change, over-long, duplicate, not novel): a penalty, no database row. */
export interface RejectedEarlySlot {
  kind: 'rejected_early';
  outcome: EarlyOutcome | 'not_novel';
  score: number;
  reason: string;
  response: SampleResponse;
}

/** The endpoint never answered (after retries), or no response was delivered: no score. */
export interface RequestFailedSlot {
  kind: 'request_failed';
  error: string;
}

/** Our evaluation machinery failed, not the model: no score, no database row, no rollout. */
export interface EvaluationFailedSlot {
  kind: 'evaluation_failed';
  reason: string;
  response: SampleResponse;
  durationMs: number;
  outputKept: boolean;
}

/** A slot as the events, the statistics and the trainer see it. */
export interface SlotView {
  outcome: Outcome;
  /** Combined score with penalties; null for request_failed and evaluation_failed. */
  score: number | null;
  objective: number | null;
  reason: string;
  response: SampleResponse | null;
  error: string | null;
  /** How long the evaluation took (0 when there was none). */
  durationMs: number;
}

export function viewOfSlot(slot: SlotOutcome): SlotView {
  switch (slot.kind) {
    case 'scored':
      return {
        outcome: slot.child.outcome,
        score: slot.child.score,
        objective: slot.child.objective,
        reason: slot.reason,
        response: slot.response,
        error: null,
        durationMs: slot.durationMs,
      };
    case 'rejected_early':
      return {
        outcome: slot.outcome,
        score: slot.score,
        objective: null,
        reason: slot.reason,
        response: slot.response,
        error: null,
        durationMs: 0,
      };
    case 'request_failed':
      return {
        outcome: 'request_failed',
        score: null,
        objective: null,
        reason: slot.error,
        response: null,
        error: slot.error,
        durationMs: 0,
      };
    case 'evaluation_failed':
      return {
        outcome: 'evaluation_failed',
        score: null,
        objective: null,
        reason: slot.reason,
        response: slot.response,
        error: slot.reason,
        durationMs: slot.durationMs,
      };
  }
}

/** Whether the slot's evaluation output was kept beside the database. */
export function outputKeptOf(slot: SlotOutcome): boolean {
  return slot.kind === 'scored' || slot.kind === 'evaluation_failed' ? slot.outputKept : false;
}

/** A response that arrived: whatever became of it, it was no failed request. */
export type ArrivedOutcome = Exclude<SlotOutcome, RequestFailedSlot>;

/**
 * With the RL trainer on, ask the source again (trainer.resampleRounds
 * rounds) for the responses whose requests failed after retries: GRPO
 * trains on whole groups of n, and a short group is not sent.
 */
export function resampleRoundsOf(settings: Settings): number {
  return settings['trainer.enabled'] ? settings['trainer.resampleRounds'] : 0;
}

/** A job asking again for some responses of a group: which of the group's indices its responses 0..k-1 stand for. */
export interface ResampleJob {
  job: GenerationJob;
  groupKey: string;
  indices: number[];
}

export type Announce = (jobKey: string, index: number, slot: SlotOutcome) => void;

export class StepLedger {
  private readonly jobs: readonly GenerationJob[];
  private readonly slots: Map<string, (SlotOutcome | undefined)[]>;
  /** Responses whose requests failed after retries, by job, in the order they first failed. */
  private readonly failed = new Map<string, Set<number>>();
  private readonly resampling: boolean;
  private readonly announce: Announce;

  /** `resampling`: whether failed requests are asked for again (then announced only once they stay failed). */
  constructor(jobs: readonly GenerationJob[], options: { resampling: boolean; announce: Announce }) {
    this.jobs = jobs;
    this.slots = new Map(jobs.map((j) => [j.key, new Array<SlotOutcome | undefined>(j.n)]));
    this.resampling = options.resampling;
    this.announce = options.announce;
  }

  /** A request failed after retries. */
  requestFailed(jobKey: string, index: number, error: string): void {
    const slot: RequestFailedSlot = { kind: 'request_failed', error };
    this.put(jobKey, index, slot);
    if (!this.resampling) this.announce(jobKey, index, slot);
    this.failed.set(jobKey, (this.failed.get(jobKey) ?? new Set()).add(index));
  }

  /** A response arrived for this slot (its outcome follows, maybe after an evaluation): it is no failed request any more. */
  responseArrived(jobKey: string, index: number): void {
    this.failed.get(jobKey)?.delete(index);
  }

  /** What became of an arrived response: recorded and announced. */
  settle(jobKey: string, index: number, slot: ArrivedOutcome): void {
    this.put(jobKey, index, slot);
    this.announce(jobKey, index, slot);
  }

  /**
   * The jobs of resample round `round` (1-based), one per group with failed
   * requests, asking for those indices again. Seeds differ from the first
   * round's (job.seed + n x round + i); the step's random generator is not
   * touched, so a redone step still draws the same parents.
   */
  resampleJobs(round: number): ResampleJob[] {
    const again: ResampleJob[] = [];
    for (const job of this.jobs) {
      const indices = [...(this.failed.get(job.key) ?? [])].sort((a, b) => a - b);
      if (indices.length === 0) continue;
      again.push({
        job: { ...job, key: `${job.key}#resample${round}`, n: indices.length, seed: (job.seed + job.n * round) >>> 0 },
        groupKey: job.key,
        indices,
      });
    }
    return again;
  }

  /** After the last resample round: announce the requests that stayed failed (announced already when not resampling). */
  announceUnrecovered(): void {
    if (!this.resampling) return;
    for (const [jobKey, indices] of this.failed) {
      for (const index of indices) {
        const slot = this.slots.get(jobKey)?.[index];
        if (slot) this.announce(jobKey, index, slot);
      }
    }
  }

  /**
   * With steps overlapping, the children of the steps committed while this
   * one was in flight were not in the database its lazy check looked at:
   * at its commit, a child equal to one of them becomes the duplicate it
   * would have been in the synchronous loop (docs/algorithm.md section 1,
   * "Pipelined steps"). Says how many.
   */
  penaliseLateDuplicates(committedSincePlan: ReadonlySet<string>): number {
    let count = 0;
    for (const slots of this.slots.values()) {
      slots.forEach((slot, index) => {
        if (slot?.kind !== 'scored' || !committedSincePlan.has(slot.child.codeHash)) return;
        slots[index] = {
          kind: 'rejected_early',
          outcome: 'duplicate',
          score: OUTCOME_PENALTY.duplicate,
          reason: 'the child equals, up to comments, a program the step before committed while this one was evaluated',
          response: slot.response,
        };
        count++;
      });
    }
    return count;
  }

  /** Each job's n slots, a response never delivered counted as a failed request (not announced). */
  filledSlots(jobKey: string): SlotOutcome[] {
    const slots = this.slots.get(jobKey) ?? [];
    for (let i = 0; i < slots.length; i++) slots[i] ??= { kind: 'request_failed', error: 'no response delivered' };
    return slots as SlotOutcome[];
  }

  /** Every slot of the step, in job order then index order (filled as filledSlots does). */
  allSlots(): SlotOutcome[] {
    return this.jobs.flatMap((job) => this.filledSlots(job.key));
  }

  private put(jobKey: string, index: number, slot: SlotOutcome): void {
    const slots = this.slots.get(jobKey);
    if (slots) slots[index] = slot;
  }
}
