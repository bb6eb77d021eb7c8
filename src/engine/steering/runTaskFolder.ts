// Where a run's task folder may be for a program added to the stopped run to
// be evaluated with it (docs/guide.md "What the editor trusts"). A run
// database is data anyone can hand over, and the task folder it names holds
// an evaluator that runs on the host: `steer --add`, `add_program` (MCP and
// the editor's language-model tools) use it only where the person's own
// tasks are: the workspace (the CLI's working folder), the runs folder's own
// tree, or the bundled tasks. Anything else is refused, saying why and what
// to do; the editor's commands ask instead (src/vscode/runTrust.ts).
import { existsSync } from 'node:fs';
import { realpath } from 'node:fs/promises';
import { isAbsolute, join, relative } from 'node:path';
import { SteerInputError } from './applySteer';

/** Folders whose task folders a handed-over database may name. */
export interface TaskFolderRoots {
  /** The workspace folders (the CLI: its working folder). */
  workspace: readonly string[];
  /** The runs folders the database was found in (their own tree). */
  runs: readonly string[];
  /** The bundled tasks' folder, where there is one. */
  bundled: string | null;
}

/** The bundled tasks: tasks/ beside dist/ (the bundles), or the repository's when run from source; null when neither is there. */
export function bundledTasksDir(): string | null {
  for (const dir of [join(__dirname, '..', 'tasks'), join(__dirname, '..', '..', '..', 'tasks')]) if (existsSync(dir)) return dir;
  return null;
}

async function real(path: string): Promise<string> {
  return realpath(path).catch(() => path);
}

/** Whether `path` (links followed) is one of `roots` or inside one. */
export async function insideAnyFolder(path: string, roots: readonly string[]): Promise<boolean> {
  const target = await real(path);
  for (const root of roots) {
    const rel = relative(await real(root), target);
    if (!rel.startsWith('..') && !isAbsolute(rel)) return true;
  }
  return false;
}

/** Throws SteerInputError unless the run's task folder `taskDir` lies in one of `roots`. */
export async function assertRunTaskFolderAllowed(taskDir: string, roots: TaskFolderRoots): Promise<void> {
  const all = [...roots.workspace, ...roots.runs, ...(roots.bundled !== null ? [roots.bundled] : [])];
  if (await insideAnyFolder(taskDir, all)) return;
  throw new SteerInputError(
    `the run's database names the task folder ${taskDir}, outside ${[...roots.workspace, ...roots.runs].join(', ') || 'the workspace'} and the bundled tasks: ` +
      "a database is data anyone can hand over, and that folder's evaluator would run on this machine, so nothing is evaluated with it. " +
      'If you trust the folder, copy it into the workspace, or work from a folder that holds it (thetaevolve steer from there, or the editor\'s "Add This File to the Run", which asks first)',
  );
}
