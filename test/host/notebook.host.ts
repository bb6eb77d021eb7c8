// Runs inside the extension host: a Jupyter notebook (.ipynb, opened with
// VS Code's built-in serializer; no kernel, no Jupyter extension) whose one
// code cell holds the EVOLVE-BLOCK, evolved on a copy of the quadratic fixture
// task with the offline sampler: the cell's CodeLens starts the run (the
// notebook's Python cells as one script, magics and shell lines left out),
// Apply writes the child into that cell (one Undo takes it back, the .ipynb on
// disk untouched), blame annotates the cell, Best so far diffs the cell,
// follow-best writes into the cell, and markers split across cells are
// refused, saying so.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as vscode from 'vscode';
import { locateEvolveBlocks, replaceEvolveBlock } from '../../src/engine/common/diff';
import type { ThetaEvolveApi } from '../../src/extension';
import type { BlameAnnotation } from '../../src/vscode/blameDecorations';
import type { FollowOutcome } from '../../src/vscode/followBest';
import { CELL_VIEW_SCHEME } from '../../src/vscode/notebookCells';
import type { StartFailureOffer } from '../../src/vscode/runCommands';
import type { ProgramNode, RunNode } from '../../src/vscode/runsTree';
import { notebookJson, QUADRATIC_NOTEBOOK, sourceLines } from '../support/notebook';
import { waitFor } from '../support/waitFor';
import { nextEvent, offlineRuns, stopRun, taskCopy, thetaSettings, WORKSPACE } from './support';

/** `promise`, or a failure naming `what` once `ms` have passed. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms)));
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

/** Lines of a cell outside its EVOLVE-BLOCK (markers included). */
function outsideOf(text: string): string[] {
  const region = locateEvolveBlocks(text).regions[0];
  assert.ok(region, 'the cell has its EVOLVE-BLOCK');
  const lines = text.split('\n');
  return [...lines.slice(0, region.startLine + 1), ...lines.slice(region.endLine)];
}

describe('notebook cells (an EVOLVE-BLOCK in a Jupyter code cell)', function () {
  this.timeout(150_000);
  let theta: ThetaEvolveApi;
  let notebookUri: vscode.Uri;
  let taskFile: string;

  before(async () => {
    theta = await offlineRuns({ batchSize: 2, samplesPerPrompt: 2, evaluationConcurrency: 2, preset: 'small' });
    const { dir } = await taskCopy(theta, 'notebook-quadratic');
    taskFile = join(dir, 'task.json');
    notebookUri = vscode.Uri.file(join(dir, 'quadratic.ipynb'));
    writeFileSync(notebookUri.fsPath, notebookJson(QUADRATIC_NOTEBOOK));
    await theta.rememberTaskFor(notebookUri, taskFile);
  });

  after(async () => {
    await stopRun(theta.controller);
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
  });

  it("the cell's CodeLens starts a run of the notebook's cells; Apply writes the child into the cell, blame and Best so far show it there, Undo restores it", async () => {
    const onDisk = readFileSync(notebookUri.fsPath, 'utf8');
    const notebook = await vscode.workspace.openNotebookDocument(notebookUri);
    await vscode.window.showNotebookDocument(notebook);
    const cells = notebook.getCells();
    assert.equal(cells.length, 4);
    const cell = cells[2] as vscode.NotebookCell;
    assert.equal(cell.document.uri.scheme, 'vscode-notebook-cell');
    const cellBefore = cell.document.getText();
    const othersBefore = cells.map((c) => c.document.getText());

    // The CodeLens on the cell: Evolve runs Start Run on the notebook.
    const lenses = (await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', cell.document.uri)) ?? [];
    const evolve = lenses.find((l) => l.command?.command === 'thetaevolve.startRun');
    assert.ok(evolve?.command, `an Evolve lens on the cell (saw ${lenses.map((l) => l.command?.title).join(', ')})`);
    assert.equal(evolve.range.start.line, 0, 'over the EVOLVE-BLOCK of the cell');
    assert.equal(String(evolve.command.arguments?.[0]), notebookUri.toString(), 'the lens evolves the notebook');

    const committed = nextEvent(theta.controller, (e) => e.type === 'step_committed' && e.step === 2, 'step 2 committed', 90_000);
    await vscode.commands.executeCommand(evolve.command.command, ...(evolve.command.arguments ?? []));
    const run = theta.controller.active;
    assert.ok(run, 'a run is active after the lens');
    assert.match(run.runId, /^notebook-quadratic-/);
    assert.equal(run.fileUri?.toString(), notebookUri.toString());
    assert.equal(run.extension, 'py');
    // The program is the notebook's Python cells in order, IPython lines as comments; it ran as a plain script.
    const startScript = run.textAtRunStart ?? '';
    assert.match(startScript, /# %% \[cell 2\]\n# \[IPython, not run as a script\] %matplotlib inline\nimport json\n/);
    assert.match(startScript, /# \[IPython, not run as a script\] !echo writing the answer\nwith open/);
    assert.doesNotMatch(startScript, /The cell below is evolved/);
    const step = await committed;
    assert.ok(step.type === 'step_committed');
    const finished = await stopRun(theta.controller);
    assert.ok(finished);
    const summary = await theta.controller.query({ kind: 'summary', dbFile: finished.dbFile });
    assert.ok(summary.best && summary.best.score > 0, `the notebook's script was scored valid (best ${JSON.stringify(summary.best)})`);

    // A child of the run, from the Runs view.
    await theta.tree.refresh();
    const node = ((await theta.tree.getChildren()) as RunNode[]).find((r) => r.runId === finished.runId);
    assert.ok(node, 'the run is in the Runs view');
    const child = ((await theta.tree.getChildren(node)) as ProgramNode[]).find((p) => p.parentId !== null);
    assert.ok(child, 'the offline sampler improved on x = 1 within two steps');
    assert.equal(child.fileUri?.fsPath, notebookUri.fsPath, 'the run records the notebook as its file');
    const childProgram = await theta.controller.query({ kind: 'program', dbFile: finished.dbFile, programId: child.programId });
    assert.ok(childProgram);

    // Apply: the child's EVOLVE-BLOCK goes into the cell, nothing else changes, nothing is saved.
    const annotated = new Promise<BlameAnnotation[]>((resolve) => {
      const sub = theta.onDidAnnotateBlame(({ uri, annotations }) => {
        if (uri.toString() !== cell.document.uri.toString()) return;
        sub.dispose();
        resolve(annotations);
      });
    });
    await vscode.commands.executeCommand('thetaevolve.applyProgramToFile', child);
    const applied = cell.document.getText();
    assert.notEqual(applied, cellBefore, 'the EVOLVE-BLOCK of the cell changed');
    assert.equal(applied, replaceEvolveBlock(cellBefore, childProgram.code));
    assert.deepEqual(outsideOf(applied), outsideOf(cellBefore), 'only the EVOLVE-BLOCK changed');
    cells.forEach((c, i) => {
      if (i !== 2) assert.equal(c.document.getText(), othersBefore[i], `cell ${i + 1} is untouched`);
    });
    assert.equal(readFileSync(notebookUri.fsPath, 'utf8'), onDisk, 'the .ipynb on disk is untouched');

    // Blame on the cell: its block's lines are annotated with the programs they came from, at the cell's own lines.
    const annotations = await within(annotated, 60_000, 'blame annotations on the cell');
    const region = locateEvolveBlocks(applied).regions[0];
    assert.ok(region && annotations.length > 0);
    for (const a of annotations) assert.ok(a.line > region.startLine && a.line < region.endLine, `annotation at cell line ${a.line}`);
    assert.ok(
      annotations.some((a) => a.text.startsWith(`step ${child.step} `)),
      annotations.map((a) => a.text).join('; '),
    );

    // Compare with File: the cell as it is (left) against the cell with the program's block (right).
    await vscode.commands.executeCommand('thetaevolve.compareProgramWithFile', child);
    const tab = vscode.window.tabGroups.activeTabGroup.activeTab;
    assert.ok(tab?.input instanceof vscode.TabInputTextDiff, 'a diff editor is active');
    assert.equal(tab.input.original.toString(), cell.document.uri.toString());
    assert.equal(tab.input.modified.scheme, CELL_VIEW_SCHEME);
    assert.match(tab.label, /quadratic\.ipynb, cell 3 \(current\) \u2194 step \d+ #\d/);
    assert.equal((await vscode.workspace.openTextDocument(tab.input.modified)).getText(), applied);
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
    // The cell's Best so far lens: the same diff, against the run's best.
    const best = lenses.find((l) => l.command?.command === 'thetaevolve.showBestDiff');
    assert.ok(best?.command);
    await vscode.commands.executeCommand(best.command.command, ...(best.command.arguments ?? []));
    const bestTab = vscode.window.tabGroups.activeTabGroup.activeTab;
    assert.ok(bestTab?.input instanceof vscode.TabInputTextDiff, 'Best so far opened a diff');
    assert.equal(bestTab.input.original.toString(), cell.document.uri.toString());
    assert.equal(bestTab.input.modified.scheme, CELL_VIEW_SCHEME);
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');

    // One Undo in the cell restores it.
    await vscode.window.showNotebookDocument(notebook);
    await vscode.window.showTextDocument(cell.document);
    await vscode.commands.executeCommand('undo');
    await waitFor(() => cell.document.getText(), { what: 'the cell restored by Undo', until: (t) => t === cellBefore, deadlineMs: 60_000 });
  });

  it('Start Run with the notebook in front evolves it, and thetaevolve.followBest puts each new best into the cell', async () => {
    await thetaSettings().update('followBest', true, WORKSPACE);
    const outcomes: FollowOutcome[] = [];
    const following = theta.onDidHandleBest(({ outcome }) => outcomes.push(outcome));
    try {
      const notebook = await vscode.workspace.openNotebookDocument(notebookUri);
      await vscode.window.showNotebookDocument(notebook);
      const cell = notebook.cellAt(2);
      const before = cell.document.getText();
      await vscode.commands.executeCommand('thetaevolve.startRun');
      const run = theta.controller.active;
      assert.ok(run, 'a run is active after Start Run');
      assert.equal(run.fileUri?.toString(), notebookUri.toString(), 'the notebook in front is the program');
      await waitFor(() => outcomes.includes('applied'), { what: 'a new best followed into the cell', deadlineMs: 90_000 });
      await stopRun(theta.controller);
      assert.ok(!outcomes.includes('refused') && !outcomes.includes('failed'), outcomes.join(', '));
      const followed = cell.document.getText();
      assert.notEqual(followed, before);
      assert.deepEqual(outsideOf(followed), outsideOf(before), 'only the EVOLVE-BLOCK changed');
      assert.ok(notebook.isDirty, 'followed, not saved');
    } finally {
      following.dispose();
      await thetaSettings().update('followBest', undefined, WORKSPACE);
      await vscode.window.showNotebookDocument(await vscode.workspace.openNotebookDocument(notebookUri));
      await vscode.commands.executeCommand('workbench.action.files.revert');
    }
  });

  it('refuses a notebook whose EVOLVE-BLOCK markers are split across cells, naming them', async () => {
    const split = vscode.Uri.file(join(notebookUri.fsPath, '..', 'split.ipynb'));
    writeFileSync(
      split.fsPath,
      notebookJson([
        { cell_type: 'code', source: sourceLines('import json', '# EVOLVE-BLOCK-START', 'def choose():') },
        { cell_type: 'code', source: sourceLines('    return 1', '# EVOLVE-BLOCK-END') },
      ]),
    );
    await theta.rememberTaskFor(split, taskFile);
    const offers: StartFailureOffer[] = [];
    const watching = theta.onDidOfferStartFailure((offer) => offers.push(offer));
    try {
      await vscode.commands.executeCommand('thetaevolve.startRun', split);
      assert.equal(theta.controller.active, undefined, 'no run started');
      assert.equal(offers.length, 1);
      assert.match(
        offers[0]?.message ?? '',
        /^ThetaEvolve: cannot evolve split\.ipynb: the EVOLVE-BLOCK markers are split across cells 1 and 2: put both markers/,
      );
    } finally {
      watching.dispose();
    }
  });
});
