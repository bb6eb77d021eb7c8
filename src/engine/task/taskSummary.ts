// What a task picker lists about a task folder: its names and direction, not
// its program. A workspace may hold hundreds of task folders (a cloned
// collection); keeping every loaded Task, program text included, for a list
// would hold them all in memory at once. So each folder is loaded, summarised
// and let go, a few at a time, and the one picked is loaded again.
import { Semaphore } from '../async/semaphore';
import { errorMessage } from '../common/errors';
import { loadTask, type Task, TaskError } from './task';

/** The parts of a Task a list shows and sorts by. */
export type TaskSummary = Pick<Task, 'dir' | 'name' | 'title' | 'description' | 'direction' | 'layout' | 'initialProgramPath'>;

/** One task file found: summarised, or the reason it cannot be used. */
export type TaskFileSummary =
  { taskFile: string; summary: TaskSummary; error?: undefined } | { taskFile: string; summary?: undefined; error: string };

/** Folders loaded at once while listing: each load reads a program of up to 4 MiB. */
export const TASK_SUMMARY_CONCURRENCY = 4;

export function summarizeTask(task: Task): TaskSummary {
  const { dir, name, title, description, direction, layout, initialProgramPath } = task;
  return { dir, name, title, description, direction, layout, initialProgramPath };
}

/** Load one task file and keep only its summary; a broken one gives its TaskError's message (which names the field). */
export async function summarizeTaskFile(taskFile: string): Promise<TaskFileSummary> {
  try {
    return { taskFile, summary: summarizeTask(await loadTask(taskFile)) };
  } catch (err) {
    // A TaskError names the file and the field; anything else is a bug worth seeing as is.
    return { taskFile, error: err instanceof TaskError ? err.message : `${taskFile}: ${errorMessage(err)}` };
  }
}

/** Summaries of `taskFiles`, in their order, at most `limit.capacity` loaded at once. */
export async function summarizeTaskFiles(
  taskFiles: readonly string[],
  limit: Semaphore = new Semaphore(TASK_SUMMARY_CONCURRENCY),
): Promise<TaskFileSummary[]> {
  return Promise.all(
    taskFiles.map(async (taskFile) => {
      const release = await limit.acquire();
      try {
        return await summarizeTaskFile(taskFile);
      } finally {
        release();
      }
    }),
  );
}
