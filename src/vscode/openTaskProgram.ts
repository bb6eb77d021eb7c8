// Select Task without a program open: the task's starting program is what
// there is to evolve, so it opens, with the task remembered for it. A bundled
// task's program lives in the extension's own folder, which a run must not
// write to (Apply writes the file): the workspace gets a copy to work on.
import { lstat, mkdir } from 'node:fs/promises';
import { basename, dirname, join, relative } from 'node:path';
import * as vscode from 'vscode';
import { showInfo } from './notify';
import { assertFolderInside, copyToNewFile, NewFileError } from '../engine/newFiles';
import type { Task } from '../engine/task/task';
import { rememberTaskFile, type TaskPickerContext } from './taskPicker';

/** Where the program to evolve is: the task's own file in the workspace, else a copy in the first folder (kept if there). */
async function workingProgram(task: Task): Promise<{ file: string; copied: boolean } | { file: string; noFolder: true }> {
  if (vscode.workspace.getWorkspaceFolder(vscode.Uri.file(task.initialProgramPath)))
    return { file: task.initialProgramPath, copied: false };
  const folder = vscode.workspace.workspaceFolders?.find((f) => f.uri.scheme === 'file');
  if (!folder) return { file: task.initialProgramPath, noFolder: true };
  const copy = join(folder.uri.fsPath, task.name, basename(task.initialProgramPath));
  await mkdir(dirname(copy), { recursive: true });
  // The workspace is anyone's clone: a link planted at the folder or the file is refused, never written through.
  await assertFolderInside(dirname(copy), folder.uri.fsPath);
  const existing = await lstat(copy).catch(() => null);
  if (existing?.isSymbolicLink())
    throw new NewFileError(
      `${copy} is a symbolic link: refused (the copy is never written or opened through a link); remove it and try again`,
    );
  // An earlier copy is the researcher's working file: opened as it is, never overwritten.
  if (existing) return { file: copy, copied: false };
  await copyToNewFile(task.initialProgramPath, copy);
  return { file: copy, copied: true };
}

/** Open the program `task` evolves and remember the task for it; says in one line what was opened. */
export async function openTaskProgram(context: TaskPickerContext, task: Task): Promise<vscode.Uri> {
  const place = await workingProgram(task);
  const uri = vscode.Uri.file(place.file);
  // loadTask takes the folder in every layout.
  await rememberTaskFile(context, uri, task.dir);
  await vscode.window.showTextDocument(uri, { preview: false });
  const folder = vscode.workspace.getWorkspaceFolder(uri);
  const shown = folder ? relative(folder.uri.fsPath, place.file) : place.file;
  if ('noFolder' in place) {
    void showInfo(
      `ThetaEvolve: opened ${task.title}'s starting program. Open a folder to evolve it: runs are kept there, and the program is copied into it.`,
    );
  } else {
    void showInfo(
      `ThetaEvolve: opened ${shown}${place.copied ? ", a copy of the task's starting program" : ''}; Start Run evolves it against ${task.title}.`,
    );
  }
  return uri;
}
