// What the bridge needs of a trainer protocol (atropos, slime), and the two
// kinds of failure it tells apart: what retrying fixes and what it cannot.
import type { TrainerSpool, SpooledGroup } from './spool';

export type TrainerProtocol = 'atropos' | 'slime';

/** Retrying cannot fix it (wrong URL, not that kind of server, no token ids): the run should not start. */
export class TrainerConfigError extends Error {}

/** Worth another attempt after a backoff (outage, 5xx, reset, trainer not started yet). */
export class RetryableTrainerError extends Error {
  /** The request may have reached the trainer: check before sending it again. */
  readonly ambiguous: boolean;
  constructor(message: string, ambiguous = false) {
    super(message);
    this.ambiguous = ambiguous;
  }
}

export type DeliveryResult = { kind: 'delivered' } | { kind: 'rejected'; reason: string };

export interface TrainerProtocolClient {
  readonly protocol: TrainerProtocol;
  /** Registration / health at start. Throws TrainerConfigError or RetryableTrainerError. */
  connect(signal: AbortSignal): Promise<void>;
  /**
   * Send what of the group the trainer has not acknowledged yet, recording
   * each acknowledgement in the spool, the group's own id last. Throws
   * RetryableTrainerError; resolves `rejected` when the trainer refuses the
   * payload itself (4xx), which no retry can change.
   */
  deliver(group: SpooledGroup, spool: TrainerSpool, signal: AbortSignal): Promise<DeliveryResult>;
  /** After an ambiguous failure: true when the trainer surely holds the group already. */
  reconcile(group: SpooledGroup, signal: AbortSignal): Promise<boolean>;
  /** Whether readStep can tell the trainer's progress at all. */
  readonly hasStepSource: boolean;
  /** The trainer's step (policy version) now; null when unknown. Throws RetryableTrainerError. */
  readStep(signal: AbortSignal): Promise<number | null>;
  close(): void;
}
