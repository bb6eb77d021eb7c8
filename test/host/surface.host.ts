// Runs inside the extension host: text the editor did not write (a run
// database's name, a task's title, a server's words) reaches a notification
// as text, never as a link VS Code would run on one click (issue 42;
// docs/guide.md "What the editor trusts"). What VS Code was given is what
// src/vscode/notify.ts fired.
import assert from 'node:assert/strict';
import { copyFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import * as vscode from 'vscode';
import type { ThetaEvolveApi } from '../../src/extension';
import type { ShownMessage } from '../../src/vscode/notify';
import { waitFor } from '../support/waitFor';
import { api, nextEvent, stopRun, taskCopy } from './support';

/** Anything a notification would make a link of: `[label](target)`, `<scheme:...>`, `command:ID`. */
const LINK_SHAPES = [/\[[^\]]*\]\(/, /<[a-z][a-z0-9+.-]*:/i, /command:\S/i];

describe('surface: no command links from text the editor did not write', function () {
  this.timeout(120_000);
  let theta: ThetaEvolveApi;

  const config = (): vscode.WorkspaceConfiguration => vscode.workspace.getConfiguration('thetaevolve');
  const target = vscode.ConfigurationTarget.Workspace;

  before(async () => {
    theta = await api();
    await stopRun(theta.controller);
    await config().update('sampler', 'mutate', target);
    await config().update('batchSize', 1, target);
    await config().update('samplesPerPrompt', 1, target);
  });

  it('a run database named as a command link: Open Evaluation Output on it shows the name as text', async () => {
    const { program } = await taskCopy(theta, 'surface-links');
    const committed = nextEvent(theta.controller, (e) => e.type === 'step_committed' && e.step >= 1, 'step 1 to commit');
    await vscode.commands.executeCommand('thetaevolve.startRun', program);
    const run = theta.controller.active;
    assert.ok(run, 'the run started');
    await committed;
    await stopRun(theta.controller);
    // The name clicked through in a real code-server: the Settings editor opened.
    const runId = '[Click me](command:workbench.action.openSettings)';
    const planted = join(dirname(run.dbFile), `${runId}.sqlite`);
    copyFileSync(run.dbFile, planted);
    const shown: ShownMessage[] = [];
    const sub = theta.onDidShowMessage((message) => shown.push(message));
    try {
      const item = await waitFor(async () => (await theta.tree.getChildren()).find((n) => n.kind === 'run' && n.runId === runId), {
        what: 'the planted run in the Runs view',
        deadlineMs: 30_000,
      });
      // Its outputs folder was not copied: the answer is a notification naming the run.
      await vscode.commands.executeCommand('thetaevolve.openEvaluationOutput', item);
      const notice = await waitFor(() => shown.find((m) => m.text.includes('has no failed evaluation')), {
        what: 'the notification of Open Evaluation Output',
        deadlineMs: 30_000,
      });
      assert.equal(
        notice?.text,
        'ThetaEvolve: run [Click me] (command: workbench.action.openSettings) has no failed evaluation with a kept output.',
      );
      for (const message of shown)
        for (const shape of LINK_SHAPES)
          assert.doesNotMatch(`${message.text}\n${message.detail ?? ''}`, shape, `a link in ${JSON.stringify(message)}`);
    } finally {
      sub.dispose();
      rmSync(planted, { force: true });
    }
  });
});
