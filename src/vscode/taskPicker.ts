// Which task (evaluator) a file is evolved against: a bundled task
// (<extension>/tasks/*), any task folder in the workspace (task.json, or an
// OpenEvolve / ShinkaEvolve folder as it is) or one beside the file,
// remembered per file in workspaceState. The file's own task comes first. A
// malformed task file is listed with its TaskError (which names the field)
// instead of breaking the list. The list holds summaries (taskSummary.ts);
// the task picked is loaded again. What is listed, and that an untrusted
// workspace's folders are not read at all, is decided in taskChoices.ts.
import { relative, resolve } from 'node:path';
import * as vscode from 'vscode';
import { pickOne, showError, showWarning, withProgress } from './notify';
import { loadTask, type Task } from '../engine/task/task';
import { errorMessage } from '../engine/common/errors';
import { listTaskChoicesFrom, type TaskChoice, taskFileReadable } from './taskChoices';

export { listBundledTaskChoices, type TaskChoice } from './taskChoices';

/** The parts of the extension context the picker uses. */
export type TaskPickerContext = Pick<vscode.ExtensionContext, 'extensionPath' | 'workspaceState'>;

const TASK_FILE_GLOB = '**/task.json';
/** The evaluators of OpenEvolve (evaluator.py) and ShinkaEvolve (evaluate.py) folders; the folder decides whether it is one. */
const FOREIGN_EVALUATOR_GLOB = '**/{evaluator.py,evaluate.py}';
/** The configs of ThetaEvolve release folders (configs/*.yaml beside evaluators/ and initial_programs/); each is one task. */
const RELEASE_CONFIG_GLOB = '**/configs/*.{yaml,yml}';
const TASK_FILE_EXCLUDE = '{**/node_modules/**,**/.thetaevolve/**,**/.git/**}';
const MAX_WORKSPACE_TASK_FILES = 200;

/** Bundled tasks first, then the workspace's and those beside `forFile` (taskChoices.ts: none in an untrusted workspace). */
export async function listTaskChoices(
  extensionPath: string,
  token?: vscode.CancellationToken,
  forFile?: vscode.Uri,
): Promise<TaskChoice[]> {
  const localPaths = (uris: readonly vscode.Uri[]): string[] => uris.filter((u) => u.scheme === 'file').map((u) => u.fsPath);
  return listTaskChoicesFrom({
    extensionPath,
    trusted: vscode.workspace.isTrusted,
    findWorkspaceFiles: async () => {
      const [taskFiles, evaluators, configs] = await Promise.all([
        vscode.workspace.findFiles(TASK_FILE_GLOB, TASK_FILE_EXCLUDE, MAX_WORKSPACE_TASK_FILES, token),
        vscode.workspace.findFiles(FOREIGN_EVALUATOR_GLOB, TASK_FILE_EXCLUDE, MAX_WORKSPACE_TASK_FILES, token),
        vscode.workspace.findFiles(RELEASE_CONFIG_GLOB, TASK_FILE_EXCLUDE, MAX_WORKSPACE_TASK_FILES, token),
      ]);
      return { taskFiles: localPaths(taskFiles), evaluators: localPaths(evaluators), configs: localPaths(configs) };
    },
    ...(forFile?.scheme === 'file' ? { forFile: forFile.fsPath } : {}),
  });
}

const LAYOUT_NAMES = { openevolve: 'OpenEvolve', shinka: 'ShinkaEvolve', release: 'ThetaEvolve release' } as const;

function memoryKey(forFile: vscode.Uri | undefined): string {
  return `thetaevolve.task:${forFile ? forFile.toString() : '(no file)'}`;
}

/** The task file remembered for `forFile`, if any. */
export function rememberedTaskFile(context: TaskPickerContext, forFile: vscode.Uri | undefined): string | undefined {
  const value = context.workspaceState.get<unknown>(memoryKey(forFile));
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** Remember (or with undefined, forget) the task file of `forFile`. */
export async function rememberTaskFile(
  context: TaskPickerContext,
  forFile: vscode.Uri | undefined,
  taskFile: string | undefined,
): Promise<void> {
  await context.workspaceState.update(memoryKey(forFile), taskFile);
}

function sameFile(a: string, b: string): boolean {
  return resolve(a) === resolve(b);
}

interface TaskPickItem extends vscode.QuickPickItem {
  choice?: TaskChoice;
  /** The item that asks to trust the workspace, in an untrusted one. */
  manageTrust?: true;
}

function displayPath(taskFile: string): string {
  const folder = vscode.workspace.getWorkspaceFolder(vscode.Uri.file(taskFile));
  return folder ? relative(folder.uri.fsPath, taskFile) : taskFile;
}

function pickItems(choices: readonly TaskChoice[], forFile: vscode.Uri | undefined, remembered: string | undefined): TaskPickItem[] {
  const forPath = forFile?.scheme === 'file' ? forFile.fsPath : undefined;
  // The task whose initial program is this very file, then the remembered one, go first.
  const rank = (c: TaskChoice): number =>
    c.summary && forPath && sameFile(c.summary.initialProgramPath, forPath) ? 0 : remembered && sameFile(c.taskFile, remembered) ? 1 : 2;
  const items: TaskPickItem[] = [];
  // The file's own task heads the list, so Enter runs it.
  const groups = [
    { label: "This file's task", members: choices.filter((c) => rank(c) === 0) },
    { label: 'Bundled tasks', members: choices.filter((c) => c.source === 'bundled' && rank(c) !== 0) },
    { label: 'Workspace task folders', members: choices.filter((c) => c.source === 'workspace' && rank(c) !== 0) },
  ];
  for (const { label, members } of groups) {
    const group = [...members].sort((a, b) => rank(a) - rank(b));
    if (group.length === 0) continue;
    items.push({ label, kind: vscode.QuickPickItemKind.Separator });
    for (const choice of group) {
      const source = choice.source;
      const summary = choice.summary;
      if (summary) {
        const notes = [
          summary.direction,
          ...(summary.layout !== 'task.json' ? [`${LAYOUT_NAMES[summary.layout]} folder, score not protected`] : []),
          ...(rank(choice) === 0 ? ["this file's task"] : rank(choice) === 1 ? ['last used'] : []),
        ];
        items.push({
          label: summary.title,
          description: `${notes.join(' · ')} · ${source === 'bundled' ? summary.name : displayPath(choice.taskFile)}`,
          detail: summary.description,
          choice,
        });
      } else {
        items.push({ label: `$(error) ${displayPath(choice.taskFile)}`, description: 'cannot be used', detail: choice.error, choice });
      }
    }
  }
  if (!vscode.workspace.isTrusted) {
    items.push({ label: 'Workspace task folders', kind: vscode.QuickPickItemKind.Separator });
    items.push({
      label: '$(shield) Trust this workspace to list its task folders',
      detail: 'Restricted mode: ThetaEvolve reads no task folder of an untrusted workspace.',
      manageTrust: true,
    });
  }
  return items;
}

/**
 * The task to evolve `forFile` against: the one remembered for the file
 * (unless `forcePick`), else the user's pick among bundled and workspace
 * tasks, which is then remembered. Undefined when cancelled or when the
 * picked task file is malformed (its error is shown).
 */
export async function pickTask(
  context: TaskPickerContext,
  forFile: vscode.Uri | undefined,
  options?: { forcePick?: boolean },
): Promise<Task | undefined> {
  const remembered = rememberedTaskFile(context, forFile);
  // An untrusted workspace's folders are not read, even the one remembered.
  if (remembered && taskFileReadable(remembered, context.extensionPath, vscode.workspace.isTrusted) && !options?.forcePick) {
    try {
      return await loadTask(remembered);
    } catch (err) {
      // Edited since, or removed: say why and let the user pick again.
      void showWarning(`ThetaEvolve: the task remembered for this file cannot be used: ${errorMessage(err)}`);
    }
  }
  const choices = await withProgress(
    { location: vscode.ProgressLocation.Window, title: 'ThetaEvolve: finding tasks' },
    (_progress, token) => listTaskChoices(context.extensionPath, token, forFile),
  );
  if (choices.length === 0) {
    void showError(
      'ThetaEvolve: no task found: neither bundled tasks nor a task folder in the workspace (run "ThetaEvolve: New Task for This File").',
    );
    return undefined;
  }
  const fileName = forFile ? forFile.path.split('/').pop() : undefined;
  const picked = await pickOne(pickItems(choices, forFile, remembered), {
    title: fileName ? `ThetaEvolve: task for ${fileName}` : 'ThetaEvolve: select a task',
    placeHolder: 'Which task (evaluator) scores the programs?',
    matchOnDescription: true,
    matchOnDetail: true,
    ignoreFocusOut: true,
  });
  if (picked?.manageTrust) {
    await vscode.commands.executeCommand('workbench.trust.manage');
    return undefined;
  }
  const choice = picked?.choice;
  if (!choice) return undefined;
  if (choice.error !== undefined) {
    void showError(`ThetaEvolve: ${choice.error}`);
    return undefined;
  }
  // Loaded again: the list kept only a summary, and the folder may have changed since.
  let task: Task;
  try {
    task = await loadTask(choice.taskFile);
  } catch (err) {
    void showError(`ThetaEvolve: ${errorMessage(err)}`);
    return undefined;
  }
  await rememberTaskFile(context, forFile, choice.taskFile);
  return task;
}
