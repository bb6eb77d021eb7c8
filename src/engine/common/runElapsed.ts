// A run's elapsed time across its sessions, read from its steps' statistics:
// the dashboard and run comparison add a resumed run's sessions the same way.
import type { StepStatistics } from './events';

/** A step's elapsed time: the run's (all its sessions) and its own session's. */
export interface RunElapsedAt {
  elapsedMs: number;
  session: { count: number; elapsedMs: number };
}

/**
 * A run's elapsed time across its sessions (a resume starts a new one, its
 * steps' elapsedMs counted from its own start): the sum of each session's
 * latest elapsed time. Steps of one session share `sessionStartedAt`; older
 * databases without it start a new session where elapsedMs goes down.
 */
export class RunElapsed {
  /** Each session's latest elapsed time. */
  private readonly elapsedBySession = new Map<string, number>();
  private legacySession = 0;
  private lastLegacyElapsed = -1;

  /** The step's elapsed time as the dashboard gets it: the run's (all its sessions) and its own session's. */
  step(stats: Pick<StepStatistics, 'elapsedMs' | 'sessionStartedAt' | 'timings'>): RunElapsedAt {
    const [key, elapsed] = this.sessionOf(stats);
    const sessionMs = Math.max(elapsed, this.elapsedBySession.get(key) ?? 0);
    this.elapsedBySession.set(key, sessionMs);
    let total = 0;
    for (const ms of this.elapsedBySession.values()) total += ms;
    return { elapsedMs: total, session: { count: this.elapsedBySession.size, elapsedMs: sessionMs } };
  }

  /** The step's session and its elapsed time in it. */
  private sessionOf(stats: Pick<StepStatistics, 'elapsedMs' | 'sessionStartedAt' | 'timings'>): [string, number] {
    if (stats.sessionStartedAt !== undefined && stats.elapsedMs !== undefined)
      return [`session ${stats.sessionStartedAt}`, stats.elapsedMs];
    if (stats.elapsedMs !== undefined) {
      if (stats.elapsedMs < this.lastLegacyElapsed) this.legacySession++;
      this.lastLegacyElapsed = stats.elapsedMs;
      return [`legacy ${this.legacySession}`, stats.elapsedMs];
    }
    // Databases written before steps recorded their elapsed time: the sum of step times.
    return ['step times', (this.elapsedBySession.get('step times') ?? 0) + stats.timings.totalMs];
  }
}
