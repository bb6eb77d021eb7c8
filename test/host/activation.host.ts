import assert from 'node:assert/strict';
import * as vscode from 'vscode';
import { contributedSettings } from '../../src/engine/common/config';
import { api, EXTENSION_ID } from './support';

describe('activation', () => {
  it('the extension is installed and active', async () => {
    const ext = vscode.extensions.getExtension(EXTENSION_ID);
    assert.ok(ext, `${EXTENSION_ID} is not installed`);
    await ext.activate();
    assert.equal(ext.isActive, true);
  });

  it('registers every contributed command', async () => {
    const ext = vscode.extensions.getExtension(EXTENSION_ID);
    const contributed: { command: string }[] = ext?.packageJSON.contributes.commands ?? [];
    assert.ok(contributed.length >= 9);
    const registered = new Set(await vscode.commands.getCommands(true));
    const missing = contributed.map((c) => c.command).filter((c) => !registered.has(c));
    assert.deepEqual(missing, []);
  });

  it('reads every setting with the default of the settings table', () => {
    const config = vscode.workspace.getConfiguration('thetaevolve');
    for (const [key, spec] of Object.entries(contributedSettings())) {
      const short = key.slice('thetaevolve.'.length);
      assert.deepEqual(config.inspect(short)?.defaultValue, spec.default, key);
    }
  });

  it('contributes the thetaevolve task type, the runs view and a walkthrough', () => {
    const pkg = vscode.extensions.getExtension(EXTENSION_ID)?.packageJSON;
    assert.equal(pkg.contributes.taskDefinitions[0].type, 'thetaevolve');
    assert.equal(pkg.contributes.views.thetaevolve[0].id, 'thetaevolve.runs');
    assert.ok(pkg.contributes.walkthroughs[0].steps.length >= 3);
  });

  it('answers Show Best Diff without any run with a message, not an error; a failing command is reported', async () => {
    const failed: string[] = [];
    const watching = (await api()).onDidFailCommand(({ id, message }) => failed.push(`${id}: ${message}`));
    try {
      assert.equal(await vscode.commands.executeCommand('thetaevolve.showBestDiff'), undefined);
      assert.deepEqual(failed, [], 'Show Best Diff with no run is not an error');
      // The watch sees real failures: a Runs view command without its program.
      await vscode.commands.executeCommand('thetaevolve.showProgramDiff');
      assert.deepEqual(failed, ['thetaevolve.showProgramDiff: pick a program in the Runs view']);
    } finally {
      watching.dispose();
    }
  });
});
