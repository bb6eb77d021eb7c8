// Runs inside the extension host: Compare Runs (issue 33) on a stopped run
// and the run this window runs, picked as the Runs view's multi-select passes
// them: the page gets both runs from their databases, and again after each
// step the live one commits.
import assert from 'node:assert/strict';
import * as vscode from 'vscode';
import type { ThetaEvolveApi } from '../../src/extension';
import type { CompareHostMessage } from '../../src/protocol/compareMessages';
import type { RunComparison } from '../../src/engine/common/runComparison';
import { nextEvent, offlineRuns, stopRun, taskCopy } from './support';

describe('Compare Runs (a stopped run and the live one)', function () {
  this.timeout(120_000);
  let theta: ThetaEvolveApi;
  const posted: CompareHostMessage[] = [];
  let subscription: vscode.Disposable | undefined;

  before(async () => {
    theta = await offlineRuns({ batchSize: 2, samplesPerPrompt: 2, evaluationConcurrency: 2 });
    subscription = theta.onDidPostComparison((message) => posted.push(message));
  });

  after(async () => {
    subscription?.dispose();
    await stopRun(theta.controller);
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
  });

  /** The first comparison posted from now on that satisfies `until`. */
  function nextComparison(until: (c: RunComparison) => boolean, what: string): Promise<RunComparison> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        sub.dispose();
        reject(new Error(`timed out waiting for ${what}`));
      }, 60_000);
      const sub = theta.onDidPostComparison((message) => {
        if (message.type === 'error') {
          clearTimeout(timer);
          sub.dispose();
          reject(new Error(message.message));
        } else if (until(message.comparison)) {
          clearTimeout(timer);
          sub.dispose();
          resolve(message.comparison);
        }
      });
    });
  }

  it('compares the selected runs and follows the live one step by step', async () => {
    const stored = await taskCopy(theta, 'compare-stored');
    const firstStep = nextEvent(theta.controller, (e) => e.type === 'step_committed' && e.step >= 2, 'step 2 of the first run');
    await vscode.commands.executeCommand('thetaevolve.startRun', stored.program);
    await firstStep;
    const storedRun = (await stopRun(theta.controller)) ?? assert.fail('the first run was live');

    const live = await taskCopy(theta, 'compare-live');
    const liveStep = nextEvent(theta.controller, (e) => e.type === 'step_committed' && e.step >= 1, 'step 1 of the live run');
    await vscode.commands.executeCommand('thetaevolve.startRun', live.program);
    await liveStep;
    const liveRun = theta.controller.active ?? assert.fail('the second run is live');

    const nodes = [storedRun, liveRun].map((run) => ({ kind: 'run', runId: run.runId, dbFile: run.dbFile }));
    const shown = nextComparison((c) => c.runs.length === 2, 'the comparison of both runs');
    await vscode.commands.executeCommand('thetaevolve.compareRuns', nodes[1], nodes);
    const first = await shown;
    assert.deepEqual(
      first.runs.map((r) => r.file),
      [storedRun.dbFile, liveRun.dbFile],
    );
    assert.deepEqual(first.differing, ['task'], 'two copies of the task under their own names');
    assert.equal(first.runs[0]?.settings.rl, 'off');
    assert.equal(first.runs[0]?.settings.batch, '2 x 2');
    const liveSteps = first.runs[1]?.steps.length ?? 0;
    const later = await nextComparison((c) => (c.runs[1]?.steps.length ?? 0) > liveSteps, 'the live run read again after a new step');
    assert.equal(later.runs[0]?.steps.length, first.runs[0]?.steps.length, 'the stopped run did not change');
    assert.ok(posted.every((m) => m.type === 'comparison'));
    await stopRun(theta.controller);
  });
});
