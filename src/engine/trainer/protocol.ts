// What the bridge needs of a trainer protocol (atropos, slime), and the two
// kinds of failure it tells apart: what retrying fixes and what it cannot.
import { ThetaEvolveError } from '../common/errors';
import type { TrainerSpool, SpooledGroup } from './spool';

export type TrainerProtocol = 'atropos' | 'slime';

/** Retrying cannot fix it (wrong URL, not that kind of server, no token ids): the run should not start. */
export class TrainerConfigError extends ThetaEvolveError {
  override readonly name = 'TrainerConfigError';
}

/** Worth another attempt after a backoff (outage, 5xx, reset, trainer not started yet). */
export class RetryableTrainerError extends ThetaEvolveError {
  override readonly name = 'RetryableTrainerError';
  /** The request may have reached the trainer: check before sending it again. */
  readonly ambiguous: boolean;
  constructor(message: string, ambiguous = false, options?: { cause?: unknown }) {
    super(message, options);
    this.ambiguous = ambiguous;
  }
}

export type DeliveryResult = { kind: 'delivered' } | { kind: 'rejected'; reason: string };

/** What became of groups a trainer server holds in memory until its trainer pulls them. */
export interface Settlement {
  /** Pulled by the trainer (released from the server's queue or buffer): acknowledged in the spool, done. */
  pulled: number;
  /** Lost by a restarted (or rebuilt) server, surely never pulled: to be sent again. */
  resent: number;
  /** Gone from a restarted (or rebuilt) server when the trainer may have pulled them first: not sent again (no duplicate), counted as lost. */
  lost: number;
}

/** The trainer's step and what its server's queue holds for its next batch. */
export interface TrainerQueue {
  step: number;
  /** Sequences waiting in the server's queue (ours and other environments'). */
  queuedSequences: number;
  /** Groups of ours among them. */
  ownGroups: number;
  /** Sequences the trainer takes per step. */
  batchSize: number;
}

export interface TrainerProtocolClient {
  readonly protocol: TrainerProtocol;
  /** Registration / health at start. Throws TrainerConfigError or RetryableTrainerError. */
  connect(spool: TrainerSpool, signal: AbortSignal): Promise<void>;
  /**
   * Send what of the group the trainer has not taken yet, recording it in the
   * spool: the group's own id once it is safe for good, or (atropos) the env
   * id it waits under in the server's queue until settle() sees it pulled.
   * Throws RetryableTrainerError; resolves `rejected` when the trainer
   * refuses the payload itself (4xx), which no retry can change.
   */
  deliver(group: SpooledGroup, spool: TrainerSpool, signal: AbortSignal): Promise<DeliveryResult>;
  /** After an ambiguous failure: true when the trainer surely holds the group already (recorded in the spool as deliver would). */
  reconcile(group: SpooledGroup, spool: TrainerSpool, signal: AbortSignal): Promise<boolean>;
  /** Groups posted and waiting in the server's queue: nothing to send now. */
  awaitsTrainer(group: SpooledGroup, spool: TrainerSpool): boolean;
  /** Ask the server what became of the waiting groups: acknowledge the pulled ones, mark the lost ones for sending again. */
  settle(spool: TrainerSpool, signal: AbortSignal): Promise<Settlement>;
  /** The step the trainer started from, once known (atropos: starting_step at registration); null otherwise. */
  readonly startingStep: number | null;
  /** Whether readStep can tell the trainer's progress at all. */
  readonly hasStepSource: boolean;
  /** The trainer's step (policy version) now; null when unknown. Throws RetryableTrainerError. */
  readStep(signal: AbortSignal): Promise<number | null>;
  /**
   * What the trainer's queue holds against the batch it steps on, read in one
   * look with its step (atropos: /status-env queue_size x n, /info
   * batch_size); null when the protocol cannot tell. Throws RetryableTrainerError.
   */
  readQueue(signal: AbortSignal): Promise<TrainerQueue | null>;
  /** Tell the trainer this environment is done (the run ended); best effort. */
  disconnect(signal: AbortSignal): Promise<void>;
  close(): void;
}
