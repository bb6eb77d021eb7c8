// Delete Run (the Runs view's menu on a run no process runs): its database
// and what is kept beside it, after asking. The run this window runs is
// refused (its engine worker is in this process, so its lock cannot tell);
// then the run's lock is taken, so a run that a CLI or another window is
// running is refused, naming it.
import { rm } from 'node:fs/promises';
import { resolve } from 'node:path';
import * as vscode from 'vscode';
import { showError, showInfo, showWarning } from './notify';
import { errorMessage } from '../engine/common/errors';
import { bestSolutionFile, evaluationOutputsDir } from '../engine/runFiles';
import { acquireRunLock, RunLockedError } from '../engine/runLock';
import { spoolDirOf } from '../engine/trainer/spool';
import { registerCommand } from './commandRegistry';
import { COMMAND_IDS } from './commandIds';
import type { RunController } from './runController';
import { isRunNode, type RunsTreeProvider } from './runsTree';

/** Deletes a run's database and the files kept beside it; throws (deleting nothing) while this window or another process runs it. */
export async function deleteRunFiles(dbFile: string, controller: Pick<RunController, 'active'>): Promise<void> {
  const active = controller.active;
  if (active && resolve(active.dbFile) === resolve(dbFile))
    throw new RunLockedError(`run ${active.runId} is running in this window: stop it before deleting it`);
  const lock = await acquireRunLock(dbFile);
  try {
    for (const path of [dbFile, bestSolutionFile(dbFile), evaluationOutputsDir(dbFile), spoolDirOf(dbFile)])
      await rm(path, { recursive: true, force: true });
  } finally {
    await lock.release();
  }
}

export function registerDeleteRun(context: vscode.ExtensionContext, controller: RunController, tree: RunsTreeProvider): void {
  registerCommand(context, COMMAND_IDS.deleteRun, async (arg?: unknown) => {
    if (!isRunNode(arg)) return void showInfo('ThetaEvolve: pick the run to delete in the Runs view.');
    const remove = 'Delete Run';
    const choice = await showWarning(
      `Delete run ${arg.runId}?`,
      { modal: true, detail: `Its database ${arg.dbFile} and the files kept beside it are deleted; this cannot be undone.` },
      remove,
    );
    if (choice !== remove) return;
    try {
      await deleteRunFiles(arg.dbFile, controller);
    } catch (err) {
      return void showError(`ThetaEvolve: run ${arg.runId} was not deleted: ${errorMessage(err)}`);
    }
    tree.scheduleRefresh(0);
  });
}
