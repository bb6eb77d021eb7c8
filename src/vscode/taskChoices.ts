// Which task folders the task picker (taskPicker.ts) lists and may read,
// without VS Code, so that unit tests check it: the bundled tasks always;
// the workspace's task folders and those beside the file only in a trusted
// workspace. An untrusted workspace's folders are never read: its finders
// are not even called, and a task remembered there is not loaded.
import { readdir, stat } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { detectForeignLayout, taskFilesBeside } from '../engine/task/foreignTasks';
import { releaseTaskOf } from '../engine/task/releaseTasks';
import { summarizeTaskFiles, type TaskFileSummary } from '../engine/task/taskSummary';

export type TaskSource = 'bundled' | 'workspace';

/** One task file found: summarised, or the reason it cannot be used. */
export type TaskChoice = TaskFileSummary & { source: TaskSource };

/** Where the picker looks. */
export interface TaskSources {
  extensionPath: string;
  /** Whether the workspace is trusted (vscode.workspace.isTrusted). */
  trusted: boolean;
  /** The workspace's task.json files, foreign evaluators (evaluator.py, evaluate.py) and configs/*.yaml files; called only when trusted. */
  findWorkspaceFiles: () => Promise<{ taskFiles: string[]; evaluators: string[]; configs?: string[] }>;
  /** The local file a task is picked for, if any: task folders beside it are listed too (when trusted). */
  forFile?: string;
}

async function summarizeChoices(source: TaskSource, taskFiles: readonly string[]): Promise<TaskChoice[]> {
  return (await summarizeTaskFiles(taskFiles)).map((s) => ({ ...s, source }));
}

/** Every task folder directly under `<extensionPath>/tasks`, sorted by folder name. */
export async function listBundledTaskChoices(extensionPath: string): Promise<TaskChoice[]> {
  const root = join(extensionPath, 'tasks');
  let folders: string[];
  try {
    folders = (await readdir(root, { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => e.name);
  } catch {
    return [];
  }
  const files: string[] = [];
  for (const folder of folders.sort()) {
    const file = join(root, folder, 'task.json');
    try {
      if ((await stat(file)).isFile()) files.push(file);
    } catch {
      // A folder without task.json is not a task.
    }
  }
  return summarizeChoices('bundled', files);
}

/** Whether a YAML file is a config of a ThetaEvolve release folder (each is one task). */
async function isReleaseConfig(file: string): Promise<boolean> {
  return releaseTaskOf(file).then(
    (found) => found !== null,
    () => false,
  );
}

/**
 * The workspace's task folders in the four layouts: task.json files,
 * evaluators whose folder is an OpenEvolve / ShinkaEvolve one, and the
 * configs of release folders; sorted.
 */
async function workspaceTaskFiles(found: { taskFiles: string[]; evaluators: string[]; configs?: string[] }): Promise<string[]> {
  const foreign = await Promise.all(
    found.evaluators.map(async (file) => ((await detectForeignLayout(dirname(file))) !== null ? file : null)),
  );
  const configs = await Promise.all((found.configs ?? []).map(async (file) => ((await isReleaseConfig(file)) ? file : null)));
  return [...found.taskFiles, ...[...foreign, ...configs].filter((f): f is string => f !== null)].sort();
}

/**
 * Bundled tasks first, then (trusted only) the workspace's and those beside
 * the file; a task found twice is listed once (one folder and task name: an
 * OpenEvolve folder's evaluators are each their own task).
 */
export async function listTaskChoicesFrom(sources: TaskSources): Promise<TaskChoice[]> {
  const [bundled, workspace, beside] = await Promise.all([
    listBundledTaskChoices(sources.extensionPath),
    sources.trusted ? sources.findWorkspaceFiles().then(workspaceTaskFiles) : [],
    sources.trusted && sources.forFile !== undefined ? taskFilesBeside(sources.forFile) : [],
  ]);
  const choices = [...bundled, ...(await summarizeChoices('workspace', workspace)), ...(await summarizeChoices('workspace', beside))];
  const seen = new Set<string>();
  const keyOf = (c: TaskChoice): string => `${resolve(c.summary?.dir ?? dirname(c.taskFile))}\0${c.summary?.name ?? c.taskFile}`;
  return choices.filter((c) => {
    const key = keyOf(c);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** Whether a remembered task file may be loaded: a bundled one always, any other only in a trusted workspace. */
export function taskFileReadable(taskFile: string, extensionPath: string, trusted: boolean): boolean {
  return trusted || !relative(extensionPath, taskFile).startsWith('..');
}
