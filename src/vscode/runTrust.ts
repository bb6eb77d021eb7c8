// A run database is data, not instructions (docs/guide.md "What the editor
// trusts"): its taskDir names the evaluator a Resume or an Add File to Run
// runs, and its programPath the file Apply and follow-best write. Anyone can
// hand over a database (a cloned repository's runs folder), so a folder
// outside the workspace folders and the bundled tasks, or a file outside the
// workspace, is used only after a modal that names it, once per window.
import { join } from 'node:path';
import * as vscode from 'vscode';
import { errorMessage } from '../engine/common/errors';
import { insideAnyFolder } from '../engine/steering/runTaskFolder';
import { loadTask } from '../engine/task/task';
import { showWarning } from './notify';

/** What the person confirmed in this window: they are not asked twice. */
const confirmed = new Set<string>();

/** The workspace folders on disk (the engine's task-folder and interpreter-prefix checks take them). */
export function workspaceRoots(): string[] {
  return (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === 'file').map((f) => f.uri.fsPath);
}

/** What the task folder would run, in words for the modal: its evaluator command, or why it cannot be read. */
async function evaluatorWords(taskDir: string): Promise<string> {
  try {
    const task = await loadTask(taskDir);
    return task.evaluatorTrust === 'in-sandbox'
      ? `its evaluator runs in the sandbox with the candidate (${task.candidateCommand.join(' ')})`
      : `its evaluator runs outside the sandbox: ${task.evaluatorCommand.join(' ')}`;
  } catch (err) {
    return `its task cannot be read (${errorMessage(err)})`;
  }
}

/**
 * True when the run's task folder may be used: inside a workspace folder or the bundled tasks, or confirmed in a
 * modal naming the folder and its evaluator command. `action` says what it is for ("Resume run X").
 */
export async function confirmTaskFolder(extensionPath: string, taskDir: string, action: string): Promise<boolean> {
  if (confirmed.has(`task:${taskDir}`)) return true;
  if (await insideAnyFolder(taskDir, [...workspaceRoots(), join(extensionPath, 'tasks')])) return true;
  const use = 'Use This Task Folder';
  const choice = await showWarning(
    `ThetaEvolve: ${action} runs the evaluator of a task folder outside this workspace. Use it?`,
    {
      modal: true,
      detail: `The run's database names the task folder\n${taskDir}\n${await evaluatorWords(taskDir)}.\nA database is data anyone can hand over: use it only if you trust this folder.`,
    },
    use,
  );
  if (choice !== use) return false;
  confirmed.add(`task:${taskDir}`);
  return true;
}

/** True when `file` may be written by Apply or follow-best: inside a workspace folder, or confirmed in a modal naming it. */
export async function confirmProgramFile(file: vscode.Uri, action: string): Promise<boolean> {
  if (file.scheme !== 'file' || confirmed.has(`file:${file.fsPath}`)) return true;
  if (await insideAnyFolder(file.fsPath, workspaceRoots())) return true;
  const write = 'Write This File';
  const choice = await showWarning(
    `ThetaEvolve: ${action} writes a file outside this workspace. Write it?`,
    {
      modal: true,
      detail: `The run's database names the file\n${file.fsPath}\nA database is data anyone can hand over: write it only if you meant this file.`,
    },
    write,
  );
  if (choice !== write) return false;
  confirmed.add(`file:${file.fsPath}`);
  return true;
}
