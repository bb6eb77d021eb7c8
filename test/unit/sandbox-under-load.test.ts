// No evaluation lost under load (docs/architecture.md "Sandbox"): on a
// loaded host this process's event loop lags, and a child it reaped may
// have written its output after the loop last polled its pipes; that output
// is still read. 64 evaluations at once of the same program all score, the
// same, while the loop is held for longer than runProcess waits for pipes
// after an exit.
import assert from 'node:assert/strict';
import { stat } from 'node:fs';
import { join } from 'node:path';
import { Evaluator } from '../../src/engine/sandbox/evaluator';
import { loadTask } from '../../src/engine/task/task';

const TASK = join(__dirname, '../../tasks/circle-packing');
const EVALUATIONS = 64;
/** Longer than runProcess's wait for the pipes after an exit (PIPE_DRAIN_MS). */
const HOLD_MS = 300;

/** Busy for `ms`: this process's event loop is held as a loaded host's is. */
function holdLoop(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

/**
 * Holds the event loop as a loaded host does, until stopped: in an I/O
 * callback (children exit meanwhile; the loop reaps them before it polls
 * their pipes again), then after that poll phase (setImmediate) for longer
 * than runProcess's wait for pipes after an exit (PIPE_DRAIN_MS).
 */
function laggingLoop(): { stop: () => void; holds: () => number } {
  let stopped = false;
  let holds = 0;
  const cycle = (): void => {
    if (stopped) return;
    holdLoop(HOLD_MS / 3);
    setImmediate(() => {
      holdLoop(HOLD_MS);
      holds++;
      setTimeout(() => stat('/', cycle), HOLD_MS);
    });
  };
  stat('/', cycle);
  return { stop: () => (stopped = true), holds: () => holds };
}

describe('sandbox: no evaluation lost under load', function () {
  this.timeout(600000);

  it(`${EVALUATIONS} evaluations at once while the event loop lags: every one scored, all the same`, async () => {
    const task = await loadTask(TASK);
    const evaluator = new Evaluator(task, {
      concurrency: 16,
      memoryLimitMb: 2048,
      outputLimitBytes: 64 * 1024,
      warmInterpreters: 'auto',
      allowWeakIsolation: true,
    });
    try {
      const reference = await evaluator.evaluate(task.initialProgram);
      assert.equal(reference.status, 'ok', reference.reason);
      const lag = laggingLoop();
      let results;
      try {
        results = await Promise.all(Array.from({ length: EVALUATIONS }, () => evaluator.evaluate(task.initialProgram)));
      } finally {
        lag.stop();
      }
      assert.ok(lag.holds() > 0);
      const lost = results.filter((r) => r.status !== 'ok' || r.score !== reference.score);
      assert.deepEqual(
        lost.map((r) => `${r.status}: ${r.reason}`),
        [],
      );
    } finally {
      await evaluator.close();
    }
  });
});
