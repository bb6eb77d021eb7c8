// What the task picker lists and may read: bundled tasks always; workspace
// task folders (found, or beside the file) only in a trusted workspace, and
// an untrusted workspace's folders are not read at all.
import assert from 'node:assert/strict';
import { cpSync } from 'node:fs';
import { join } from 'node:path';
import { listTaskChoicesFrom, taskFileReadable } from '../../src/vscode/taskChoices';
import { tempDir } from '../support/tempDirs';

const FIXTURE = join(__dirname, '../fixtures/hostile');

describe('task picker: what it lists', () => {
  let extensionPath: string;
  let workspace: string;
  let forFile: string;
  let foundTask: string;
  before(() => {
    extensionPath = tempDir('te-choices-extension-');
    workspace = tempDir('te-choices-workspace-');
    cpSync(FIXTURE, join(extensionPath, 'tasks', 'bundled-one'), { recursive: true });
    cpSync(FIXTURE, join(workspace, 'found'), { recursive: true });
    cpSync(FIXTURE, join(workspace, 'beside'), { recursive: true });
    forFile = join(workspace, 'beside', 'initial.py');
    foundTask = join(workspace, 'found', 'task.json');
  });

  it('an untrusted workspace: only the bundled tasks, and its folders are not even searched', async () => {
    let searched = false;
    const choices = await listTaskChoicesFrom({
      extensionPath,
      trusted: false,
      findWorkspaceFiles: () => {
        searched = true;
        return Promise.resolve({ taskFiles: [foundTask], evaluators: [] });
      },
      forFile,
    });
    assert.equal(searched, false, 'the workspace was searched');
    assert.deepEqual(
      choices.map((c) => [c.source, c.taskFile]),
      [['bundled', join(extensionPath, 'tasks', 'bundled-one', 'task.json')]],
    );
    // A task remembered in the workspace is not loaded either; a bundled one is.
    assert.equal(taskFileReadable(foundTask, extensionPath, false), false);
    assert.equal(taskFileReadable(join(extensionPath, 'tasks', 'bundled-one', 'task.json'), extensionPath, false), true);
  });

  it('a trusted workspace: bundled tasks, then those found and those beside the file, each folder once', async () => {
    const choices = await listTaskChoicesFrom({
      extensionPath,
      trusted: true,
      findWorkspaceFiles: () => Promise.resolve({ taskFiles: [foundTask, join(workspace, 'beside', 'task.json')], evaluators: [] }),
      forFile,
    });
    assert.deepEqual(
      choices.map((c) => [c.source, c.taskFile]),
      [
        ['bundled', join(extensionPath, 'tasks', 'bundled-one', 'task.json')],
        ['workspace', join(workspace, 'beside', 'task.json')],
        ['workspace', foundTask],
      ],
    );
    assert.ok(choices.every((c) => c.summary !== undefined && c.error === undefined));
    assert.equal(taskFileReadable(foundTask, extensionPath, true), true);
  });
});
