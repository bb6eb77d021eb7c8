// The window's view of a run (src/vscode/trackedRun.ts) fed by the real engine
// worker: a run is over for the window, and Start Run may go on, only once the
// worker closed it and released its lock, not at its run_finished event.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { defaultSettings, type Settings } from '../../src/engine/common/config';
import { runLockFile } from '../../src/engine/runFiles';
import { EngineHost } from '../../src/worker/engineHost';
import { applyRunEvent, closeTrackedRun, isClosing, startingRun, type TrackedRun } from '../../src/vscode/trackedRun';
import { tempDir } from '../support/tempDirs';

const WORKER = resolve(__dirname, '../../src/worker/engineWorker.ts');
const TASK_DIR = resolve(__dirname, '../fixtures/tasks/quadratic');
// tsx's CommonJS hook: `--import tsx` does not reach a worker's entry file on Node 20.
const EXEC_ARGV = ['--require', 'tsx/cjs'];
const quiet = { warn: () => undefined, info: () => undefined };

function settings(): Settings {
  return { ...defaultSettings(), sampler: 'mutate', batchSize: 2, samplesPerPrompt: 2, 'database.preset': 'small', maxSteps: 0 };
}

describe('the window view of a run: over only once the worker closed it', function () {
  this.timeout(120_000);
  let host: EngineHost;

  before(() => {
    host = new EngineHost({ workerFile: WORKER, execArgv: EXEC_ARGV });
  });

  after(async () => {
    await host.dispose();
  });

  it('Stop: stopping until the run closed, its lock gone then, and a start on the same database right after it starts', async () => {
    const dbFile = join(tempDir('thetaevolve-tracked-'), 'again.sqlite');
    const tracked: TrackedRun = startingRun(
      {
        runId: 'again',
        dbFile,
        fileUri: undefined,
        extension: 'py',
        textAtRunStart: undefined,
        taskName: 'quadratic',
        taskTitle: 'Quadratic',
        direction: 'maximize',
        settings: settings(),
      },
      false,
    );
    // What the window saw at each event that changed its state, and whether the run's lock was held when it closed.
    const seen: string[] = [];
    const closedRun = new Promise<{ lockLeft: boolean }>((resolveClosed) => {
      const offs = [
        host.on('event', (runId, event) => {
          if (runId !== 'again') return;
          const before = tracked.state;
          applyRunEvent(tracked, event, quiet);
          if (tracked.state !== before) seen.push(`${event.type}: ${tracked.state}`);
          // Stopped once a step is committed (no limit would end it).
          if (event.type === 'step_committed' && event.step === 1) host.stop();
        }),
        host.on('runClosed', (runId) => {
          if (runId !== 'again') return;
          offs.forEach((off) => off());
          closeTrackedRun(tracked, undefined);
          seen.push(`runClosed: ${tracked.state}`);
          resolveClosed({ lockLeft: existsSync(runLockFile(dbFile)) });
        }),
      ];
    });
    host.start({
      runId: 'again',
      dbFile,
      taskDir: TASK_DIR,
      startCode: null,
      startPath: null,
      settings: settings(),
      apiKey: null,
      resume: false,
    });
    const { lockLeft } = await closedRun;
    assert.deepEqual(seen, ['run_started: running', 'run_finished: stopping', 'runClosed: finished']);
    assert.equal(tracked.finishReason, 'stopped');
    assert.equal(lockLeft, false, 'the run closed with its lock released');
    assert.equal(isClosing(tracked), false);

    // Started at once on the same database (Resume Run): it starts, never "still active".
    const second = new Promise<string>((resolveSecond) => {
      const offs = [
        host.on('event', (runId, event) => {
          if (runId !== 'again-resumed' || event.type !== 'run_started') return;
          offs.forEach((off) => off());
          host.stop();
          resolveSecond('started');
        }),
        host.on('startFailed', (runId, message) => {
          if (runId !== 'again-resumed') return;
          offs.forEach((off) => off());
          resolveSecond(`start failed: ${message}`);
        }),
      ];
    });
    const closedAgain = new Promise<void>((r) => {
      const off = host.on('runClosed', (runId) => {
        if (runId !== 'again-resumed') return;
        off();
        r();
      });
    });
    host.start({
      runId: 'again-resumed',
      dbFile,
      taskDir: TASK_DIR,
      startCode: null,
      startPath: null,
      settings: settings(),
      apiKey: null,
      resume: true,
    });
    assert.equal(await second, 'started');
    await closedAgain;
  });

  it('a run that ends by itself, or with an error, is over only at its close too', () => {
    const run = startingRun(
      {
        runId: 'r',
        dbFile: '/nowhere/r.sqlite',
        fileUri: undefined,
        extension: 'py',
        textAtRunStart: undefined,
        taskName: 't',
        taskTitle: 'T',
        direction: 'maximize',
        settings: settings(),
      },
      false,
    );
    const finished = { type: 'run_finished', time: 0, lastStep: 3, best: null } as const;
    applyRunEvent(run, { ...finished, reason: 'error', message: 'the evaluator broke' }, quiet);
    assert.equal(run.state, 'stopping');
    assert.ok(isClosing(run));
    closeTrackedRun(run, undefined);
    assert.equal(run.state, 'error');
    assert.equal(run.message, 'the evaluator broke');
  });
});
