// Where the RL trainer bridge stands, as plain JSON (for the dashboard, the
// CLI and the trainer_state event), and the lines people read about it.
import type { TrainerStateEvent } from '../common/events';
import type { TrainerProtocol } from './protocol';

/** Plain JSON, for the dashboard, the CLI and the trainer_state event. */
export interface TrainerState {
  enabled: boolean;
  protocol: TrainerProtocol;
  url: string;
  mode: 'sync' | 'async';
  /** The last exchange with the trainer succeeded. */
  connected: boolean;
  /** The trainer's step (policy version) as last read; null when unknown. */
  trainerStep: number | null;
  lastAckedPolicyVersion: string | null;
  /** Groups of committed steps in the spool not yet handed to the trainer. */
  pendingGroups: number;
  /** Groups handed over that wait in the trainer server's queue (atropos) or buffer (slime) until its trainer pulls them; kept spooled, sent again if the server loses them. */
  queuedGroups: number;
  /** Groups the trainer server acknowledged since this bridge started (written, not yet released). */
  sentGroups: number;
  /** Groups the trainer refused as malformed (kept in the spool's rejected.jsonl). */
  rejectedGroups: number;
  /** Groups not sent because failed requests left them short of n responses. */
  droppedGroups: number;
  /** Groups that left the trainer server's queue or buffer to its trainer (what "released" means: pulled, not just written). */
  releasedGroups: number;
  /** Groups a restarted or rebuilt trainer server lost before its trainer pulled them, sent again. */
  resentGroups: number;
  /** Groups a restarted or rebuilt trainer server lost that may have reached its trainer first: not sent again, counted here. */
  lostGroups: number;
  /** The run is waiting for the trainer (synchronous step or staleness bound). */
  waiting: boolean;
  /** A request to the trainer unanswered for a few seconds (what and where), null when none is. */
  awaiting?: string | null;
  lastError: string | null;
}

/** A line for people when something they should know about changed, else null. */
export function trainerStateLine(previous: TrainerState | null, next: TrainerState): string | null {
  const where = `${next.protocol} trainer at ${next.url}`;
  if (previous === null || previous.enabled !== next.enabled) {
    if (!next.enabled) return `${where}: off; spooled groups are kept`;
    return `${where}: on (${next.mode})${next.connected || next.lastError !== null ? '' : ', connecting'}`;
  }
  // A trainer that took the request and stays silent is named within seconds, not when the request times out.
  if ((next.awaiting ?? null) !== null && next.awaiting !== previous.awaiting) return `${where}: awaiting its answer to ${next.awaiting}`;
  if (!previous.waiting && next.waiting) {
    const why = next.mode === 'sync' ? 'synchronous mode: the next step starts once it has taken this one' : 'the staleness bound';
    return `${where}: waiting for the trainer (${why}); ${next.pendingGroups} group(s) spooled, ${next.queuedGroups} queued for it`;
  }
  if (previous.connected !== next.connected) {
    return next.connected
      ? `${where}: connected${next.trainerStep !== null ? `, trainer step ${next.trainerStep}` : ''}`
      : `${where}: failing (${next.lastError ?? 'no reply'}); retrying with backoff, ${next.pendingGroups} group(s) spooled`;
  }
  if (next.lastError !== null && next.lastError !== previous.lastError && !next.connected) return `${where}: ${next.lastError}; retrying`;
  return null;
}

/** One line after a step: where the trainer stands. */
export function trainerSummary(state: TrainerState): string {
  return (
    `trainer: ${state.protocol} ${state.connected ? 'connected' : 'failing'}, step ${state.trainerStep ?? 'n/a'}, ` +
    `${state.sentGroups} group(s) sent, ${state.releasedGroups} released (pulled by the trainer), ${state.pendingGroups} pending` +
    (state.queuedGroups > 0 ? `, ${state.queuedGroups} ${state.protocol === 'slime' ? 'in the buffer' : 'queued for the trainer'}` : '') +
    (state.rejectedGroups > 0 ? `, ${state.rejectedGroups} rejected` : '') +
    (state.resentGroups > 0 ? `, ${state.resentGroups} sent again after a trainer restart` : '') +
    (state.lostGroups > 0 ? `, ${state.lostGroups} lost` : '') +
    (state.droppedGroups > 0 ? `, ${state.droppedGroups} dropped (short of n)` : '')
  );
}

/** The engine event that carries a bridge state across the worker boundary. */
export function trainerStateEvent(state: TrainerState, time = Date.now()): TrainerStateEvent {
  return { type: 'trainer_state', time, state: { ...state } };
}
