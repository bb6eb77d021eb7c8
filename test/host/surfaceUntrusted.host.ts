// Runs inside the extension host of a workspace opened untrusted (Restricted
// Mode; the in-host runner's second pass, test/support/runHostTests.ts):
// Workspace Trust does not stop VS Code from running a `command:` link in a
// notification, so text a handed-over folder holds (a run database's name,
// the file it names, a workspace setting) must reach the user as text
// (issue 42; docs/guide.md "What the editor trusts"). Each test checks what
// VS Code was given (src/vscode/notify.ts), what the workbench drew (the
// runner logs each ThetaEvolve notification with the links it found and
// clicks them) and that the Settings editor the link would open did not open.
// A task.json title, a server's model id and an evaluator's stderr are read
// only in a trusted workspace (nothing is listed or started here): surface.host.ts.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import * as vscode from 'vscode';
import type { ThetaEvolveApi } from '../../src/extension';
import { acceptingPicks, api, COMMAND_LINK, plantedRun, runRow, shownAsText, thetaSettings, WORKSPACE, workspaceDir } from './support';

describe('surface (untrusted workspace): text a handed-over folder holds is shown without a link', function () {
  this.timeout(180_000);
  let theta: ThetaEvolveApi;

  before(async () => {
    assert.equal(vscode.workspace.isTrusted, false, 'this pass opens its workspace untrusted');
    theta = await api();
  });

  it('a run database named as a command link: Open Evaluation Output names it as text', async () => {
    await plantedRun(COMMAND_LINK);
    const row = await runRow(theta, COMMAND_LINK);
    const { text } = await shownAsText(theta, 'has no failed evaluation', () =>
      vscode.commands.executeCommand('thetaevolve.openEvaluationOutput', row),
    );
    assert.match(text, /run \[Click me\] \(command: workbench\.action\.openSettings\) has no failed evaluation/);
  });

  it('the same database: Add This File to the Run says the workspace is not trusted, and shows nothing as a link', async () => {
    const row = await runRow(theta, COMMAND_LINK);
    const program = join(workspaceDir(), 'my-program.py');
    await vscode.workspace.fs.writeFile(vscode.Uri.file(program), Buffer.from('# EVOLVE-BLOCK-START\nx = 1\n# EVOLVE-BLOCK-END\n'));
    await vscode.window.showTextDocument(vscode.Uri.file(program));
    try {
      const { text } = await shownAsText(theta, 'trust', () => vscode.commands.executeCommand('thetaevolve.addFileToRun', row));
      assert.match(text, /not trusted|Restricted Mode|trust/i);
    } finally {
      await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    }
  });

  it("a database whose program file's name holds a command link: Apply to File names it as text", async () => {
    // In the workspace (no modal), and missing: the answer names the file.
    await plantedRun('untrusted-apply', { programPath: join(workspaceDir(), `${COMMAND_LINK}.py`) });
    const row = await runRow(theta, 'untrusted-apply');
    const node = (await theta.tree.getChildren(row)).find((n) => n.kind === 'program');
    assert.ok(node, 'a program row');
    const { text } = await shownAsText(theta, 'cannot', () => vscode.commands.executeCommand('thetaevolve.applyProgramToFile', node));
    assert.match(text, /\[Click me\] \(command: workbench\.action\.openSettings\)\.py/);
  });

  it('a workspace setting holding a command link: Ban as Parent names the value as text', async () => {
    await plantedRun('untrusted-ban');
    const row = await runRow(theta, 'untrusted-ban');
    const node = (await theta.tree.getChildren(row)).find((n) => n.kind === 'program');
    assert.ok(node, 'a program row');
    // Not a restricted setting: a workspace's value applies in Restricted Mode too.
    await thetaSettings().update('sampler', COMMAND_LINK, WORKSPACE);
    try {
      const { text } = await shownAsText(theta, 'sampler', () =>
        acceptingPicks(() => vscode.commands.executeCommand('thetaevolve.banProgram', node), 'Ban as Parent to ask which programs'),
      );
      assert.match(text, /\[Click me\] \(command: workbench\.action\.openSettings\)/);
    } finally {
      await thetaSettings().update('sampler', undefined, WORKSPACE);
    }
  });
});
