// thetaevolve.followBest: each new best of the active run goes into its file
// (non-interactive, undoable).
import * as vscode from 'vscode';
import { errorMessage } from '../engine/common/errors';
import { formatScore } from '../engine/common/format';
import { type ApplyOutcome, applyProgramToFile } from './applyProgram';
import { fileName } from './commandRegistry';
import { log } from './log';
import { programTextOf } from './notebookCells';
import type { RunController } from './runController';

/** What became of one new best: applied (or not) to the file, the setting off, a newer best came first, its program gone, or the apply failed. */
export type FollowOutcome = ApplyOutcome | 'off' | 'superseded' | 'gone' | 'failed';

const handled = new vscode.EventEmitter<{ programId: string; outcome: FollowOutcome }>();
/** Fires once for each new best of the active run's file, when following is done with it (tests wait on it rather than on time). */
export const onDidHandleBest = handled.event;

export function followBest(controller: RunController): vscode.Disposable {
  // One apply at a time, in order, each skipped once a newer best exists: bests of
  // consecutive steps must not race (an older one landing last, or a newer one
  // refused because the file changed under it).
  let queue: Promise<void> = Promise.resolve();
  let newest: string | null = null;
  return controller.onDidEngineEvent(({ runId, event }) => {
    if (event.type !== 'new_best' || event.step === 0) return;
    const run = controller.active;
    if (!run || run.runId !== runId || !run.fileUri) return;
    if (!vscode.workspace.getConfiguration('thetaevolve', run.fileUri).get<boolean>('followBest', false)) {
      handled.fire({ programId: event.id, outcome: 'off' });
      return;
    }
    const fileUri = run.fileUri;
    newest = event.id;
    queue = queue
      .then(async () => {
        if (newest !== event.id) return handled.fire({ programId: event.id, outcome: 'superseded' });
        const program = await controller.query({ kind: 'program', dbFile: run.dbFile, programId: event.id });
        if (!program) return handled.fire({ programId: event.id, outcome: 'gone' });
        const outcome = await applyProgramToFile(fileUri, program.code, {
          textAtRunStart: run.textAtRunStart,
          interactive: false,
          program: { runId: run.runId, dbFile: run.dbFile, programId: event.id },
        });
        log().info(`follow best: ${event.id} (score ${formatScore(event.score)}) -> ${fileName(fileUri)}: ${outcome}`);
        // The file now holds the new best: later bests may replace it again.
        if (outcome === 'applied') run.textAtRunStart = await programTextOf(fileUri);
        handled.fire({ programId: event.id, outcome });
      })
      .catch((err: unknown) => {
        log().warn(`follow best: ${errorMessage(err)}`);
        handled.fire({ programId: event.id, outcome: 'failed' });
      });
  });
}
