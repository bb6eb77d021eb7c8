// Runs inside the extension host: interactive evolution from the editor
// (issue 29): Add This File to the Run on the run this window runs (queued,
// then applied at its next step) and on a stopped run (evaluated and added
// at once), refusals said, and the Runs view's Ban, Pin as Parent and Show
// Lineage on a program, all recorded in the run's database.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as vscode from 'vscode';
import type { ThetaEvolveApi } from '../../src/extension';
import type { BlameAnnotation } from '../../src/vscode/blameDecorations';
import { steeredLine } from '../../src/vscode/evaluationTask';
import { queuedLine, recommendationsLine } from '../../src/vscode/guidanceDocuments';
import type { SteerAnswer } from '../../src/vscode/steerCommands';
import type { ProgramNode, RunNode } from '../../src/vscode/runsTree';
import { waitFor } from '../support/waitFor';
import { liveRun, nextEvent, offlineRuns, stopRun, taskCopy } from './support';

/** Replace the file's choose() body in its open document, unsaved: the command takes the file as edited. */
async function editChoose(program: vscode.Uri, body: string): Promise<vscode.TextDocument> {
  const document = await vscode.workspace.openTextDocument(program);
  await vscode.window.showTextDocument(document);
  const text = document.getText();
  const start = text.indexOf('    return ');
  const end = text.indexOf('\n', start);
  const edit = new vscode.WorkspaceEdit();
  edit.replace(program, new vscode.Range(document.positionAt(start), document.positionAt(end)), `    return ${body}`);
  assert.ok(await vscode.workspace.applyEdit(edit));
  assert.ok(document.isDirty, 'the edit is unsaved');
  return document;
}

/** `promise`, or a failure naming `what` once it takes longer than `ms`: a bound that says where a test got stuck. */
function bounded<T>(promise: Thenable<T>, what: string, ms = 30_000): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([Promise.resolve(promise), late]).finally(() => clearTimeout(timer));
}

/** Run a command that shows a quick pick or input boxes, accepting what each offers first, until it returns. */
async function acceptingPicks(command: string, ...args: unknown[]): Promise<unknown> {
  let done = false;
  const result = Promise.resolve(vscode.commands.executeCommand(command, ...args)).finally(() => (done = true));
  await waitFor(
    async () => {
      if (done) return true;
      await vscode.commands.executeCommand('workbench.action.acceptSelectedQuickOpenItem');
      return false;
    },
    { what: `${command} returned`, deadlineMs: 60_000 },
  );
  return result;
}

describe('steering a run from the editor (Add This File, Edit Guidance, Ban, Unban, Pin as Parent, Show Lineage, Blame)', function () {
  this.timeout(120_000);
  let theta: ThetaEvolveApi;
  const answers: SteerAnswer[] = [];
  let subscription: vscode.Disposable | undefined;

  before(async () => {
    theta = await offlineRuns({ batchSize: 2, samplesPerPrompt: 2, evaluationConcurrency: 2, preset: 'small' });
    subscription = theta.onDidAnswerSteer((answer) => answers.push(answer));
  });

  after(async () => {
    subscription?.dispose();
    await stopRun(theta.controller);
    await vscode.commands.executeCommand('workbench.action.revertAndCloseActiveEditor');
  });

  it('adds the open file, as edited, to the live run at its next step, then to the stopped run at once', async () => {
    const { program, run } = await liveRun(theta, 'steer-add', { show: true });

    // Live: queued, then the run's next step applies it and says so.
    const edited = await editChoose(program, '3 + 0 * 7919');
    const steered = nextEvent(theta.controller, (e) => e.type === 'steered' && e.kind === 'add', 'the add to be applied');
    const queued = await vscode.commands.executeCommand('thetaevolve.addFileToRun', program);
    assert.deepEqual(queued, { kind: 'add', queued: true });
    const event = await steered;
    assert.ok(event.type === 'steered' && event.ok && event.id !== null, `applied: ${JSON.stringify(event)}`);
    // The evaluations terminal's line for it.
    assert.match(steeredLine(event), /^step \d+: added program \w+ \(valid, score [\d.]+\) on island \d+$/);
    const added = await theta.controller.query({ kind: 'program', dbFile: run.dbFile, programId: event.id });
    assert.ok(added);
    assert.equal(added.code, edited.getText());
    assert.equal(added.origin, 'researcher');
    assert.equal(added.outcome, 'valid');
    assert.ok(
      answers.some((a) => a.dbFile === run.dbFile && a.kind === 'add' && a.ok && a.id === event.id),
      'the answer names the program added',
    );
    await stopRun(theta.controller);

    // Stopped, from the Runs view's row: evaluated in the sandbox and added now.
    const again = await editChoose(program, '2 + 0 * 7919');
    const row = (await theta.tree.getChildren()).find((n): n is RunNode => n.kind === 'run' && n.runId === run.runId);
    assert.ok(row, 'the run is in the Runs view');
    const result = await vscode.commands.executeCommand('thetaevolve.addFileToRun', row);
    assert.ok(result && typeof result === 'object' && 'id' in result && typeof result.id === 'string', `added: ${JSON.stringify(result)}`);
    const stored = await theta.controller.query({ kind: 'program', dbFile: run.dbFile, programId: result.id });
    assert.equal(stored?.code, again.getText());
    assert.equal(stored?.origin, 'researcher');
    const lineage = await theta.controller.query({ kind: 'lineage', dbFile: run.dbFile, programId: result.id });
    assert.equal(lineage.programs[0]?.origin, 'researcher');

    // The same program again is refused, said, and changes nothing.
    const before = (await theta.controller.query({ kind: 'summary', dbFile: run.dbFile })).programs;
    const refused = await vscode.commands.executeCommand('thetaevolve.addFileToRun', row);
    assert.equal(refused, undefined);
    assert.match(answers[answers.length - 1]?.message ?? '', /already has this program/);
    assert.equal((await theta.controller.query({ kind: 'summary', dbFile: run.dbFile })).programs, before);
    await vscode.commands.executeCommand('workbench.action.revertAndCloseActiveEditor');
  });

  it("the Runs view shows a program's lineage and blame, pins it as parent, bans and unbans it, recorded in the database", async () => {
    const { program, dir } = await taskCopy(theta, 'steer-rows');
    // Its evaluator gives feedback on valid programs too (as OpenEvolve's artifacts do): the program document shows it.
    const evaluator = join(dir, 'evaluate.py');
    writeFileSync(evaluator, readFileSync(evaluator, 'utf8').replace('"reason": ""}', '"reason": "x = %r\\nsecond line" % x}'));
    await vscode.window.showTextDocument(program);
    const committed = nextEvent(theta.controller, (e) => e.type === 'step_committed' && e.step >= 2, 'step 2 to commit');
    await vscode.commands.executeCommand('thetaevolve.startRun', program);
    await committed;
    const run = await stopRun(theta.controller);
    assert.ok(run);
    const row = (await theta.tree.getChildren()).find((n): n is RunNode => n.kind === 'run' && n.runId === run.runId);
    assert.ok(row);
    const programs = (await theta.tree.getChildren(row)) as ProgramNode[];
    const child = programs.find((p) => p.parentId !== null);
    assert.ok(child, 'an improvement with a parent');

    // Show Lineage: the program first; picking it opens the diff to its parent.
    const picked = (await acceptingPicks('thetaevolve.showLineage', child)) as { id: string; parentId: string | null } | undefined;
    assert.equal(picked?.id, child.programId);
    assert.equal(picked?.parentId, child.parentId);
    await waitFor(() => vscode.window.tabGroups.activeTabGroup.activeTab?.input instanceof vscode.TabInputTextDiff, {
      what: 'the diff to its parent',
    });

    // Blame: the program document says, per block of lines, the step, author and objective of its origin; the hover opens that step's diff.
    const blamed = new Promise<BlameAnnotation[]>((resolve) => {
      const sub = theta.onDidAnnotateBlame(({ uri, annotations }) => {
        if (!uri.path.includes(`/${child.programId}/`)) return;
        sub.dispose();
        resolve(annotations);
      });
    });
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    await vscode.commands.executeCommand('thetaevolve.openProgram', child);
    const annotations = await blamed;
    // The evaluator's feedback: a CodeLens over the program document's first line opens it whole, beside the code.
    const documentUri = vscode.window.activeTextEditor?.document.uri;
    assert.ok(documentUri?.scheme === 'thetaevolve', String(documentUri));
    const lenses = (await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', documentUri)) ?? [];
    const feedbackLens = lenses.find((lens) => lens.command?.command === 'thetaevolve.showProgramFeedback');
    assert.ok(feedbackLens?.command, JSON.stringify(lenses.map((lens) => lens.command?.title)));
    assert.match(feedbackLens.command.title, /Evaluator feedback: x = .* \(2 lines\)$/);
    const feedbackDoc = (await vscode.commands.executeCommand(
      feedbackLens.command.command,
      ...(feedbackLens.command.arguments ?? []),
    )) as vscode.Uri;
    assert.match((await vscode.workspace.openTextDocument(feedbackDoc)).getText(), /^x = [^\n]+\nsecond line\n$/);
    assert.equal(vscode.window.activeTextEditor?.document.getText().includes('second line'), true);
    assert.equal(annotations[0]?.line, 0);
    // Named as the Runs view names them: "initial", "step 3 #1 · model" (never "step 0 · migration").
    assert.match(annotations[0]?.text ?? '', /^initial · [^·]+$/);
    assert.ok(
      annotations.every((a) => !/migration|step 0/.test(a.text)),
      annotations.map((a) => a.text).join(' | '),
    );
    const own = annotations.find((a) => new RegExp(`^step ${child.step} #\\d+ · model · `).test(a.text));
    assert.ok(own, `a line of step ${child.step}: ${annotations.map((a) => a.text).join(' | ')}`);
    const link = /\(command:thetaevolve\.showBlameDiff\?([^)]+)\)/.exec(own.hover.value);
    assert.ok(link, own.hover.value);
    const args = JSON.parse(decodeURIComponent(link[1] as string)) as unknown[];
    assert.deepEqual(args.slice(0, 3), [run.runId, child.parentId, child.programId]);
    // In the diff the blame is not drawn (its narrow sides have no room after the lines); the hovers stay.
    const inDiff = new Promise<{ annotations: BlameAnnotation[]; drawn: boolean }>((resolve) => {
      const sub = theta.onDidAnnotateBlame((event) => {
        if (!event.uri.path.includes(`/${child.programId}/`) || event.drawn) return;
        sub.dispose();
        resolve(event);
      });
    });
    await vscode.commands.executeCommand('thetaevolve.showBlameDiff', ...args);
    const diffSide = await inDiff;
    assert.ok(diffSide.annotations.length > 0, 'the hovers stay on the diff side');
    // No annotation sits on a blank line.
    const childText = (await vscode.workspace.openTextDocument(documentUri)).getText().split('\n');
    assert.ok(
      annotations.every((a) => (childText[a.line] ?? '').trim() !== ''),
      annotations.map((a) => `${a.line}: ${JSON.stringify(childText[a.line])}`).join(' | '),
    );
    await waitFor(
      () => {
        const input = vscode.window.tabGroups.activeTabGroup.activeTab?.input;
        return input instanceof vscode.TabInputTextDiff && input.modified.path.includes(`/${child.programId}/`);
      },
      { what: "the diff of the line's step" },
    );

    // Pin as Parent with the offered share and steps, then Ban (this program alone): applied to the stopped run.
    const pinned = await acceptingPicks('thetaevolve.pinProgram', child);
    assert.ok(pinned && typeof pinned === 'object' && 'step' in pinned, `pinned: ${JSON.stringify(pinned)}`);
    const banned = await acceptingPicks('thetaevolve.banProgram', child);
    assert.ok(banned && typeof banned === 'object' && 'ids' in banned, `banned: ${JSON.stringify(banned)}`);
    assert.deepEqual((banned as { ids: string[] }).ids.includes(child.programId), true);
    // The database holds the ban: a second one is refused, naming why.
    assert.equal(await acceptingPicks('thetaevolve.banProgram', child), undefined);
    assert.match(answers[answers.length - 1]?.message ?? '', /already banned/);

    // The Runs view marks it banned and offers Unban on its row; the palette's Unban picks among the run's banned programs.
    const rowOf = async (): Promise<ProgramNode | undefined> => {
      // The run's row as the view reads it now (its info says which programs are banned).
      const runRow = (await theta.tree.getChildren()).find((n): n is RunNode => n.kind === 'run' && n.runId === run.runId);
      return ((await theta.tree.getChildren(runRow)) as ProgramNode[]).find((p) => p.programId === child.programId);
    };
    const bannedRow = await rowOf();
    assert.ok(bannedRow?.banned, 'marked banned');
    assert.match(String((await theta.tree.getTreeItem(bannedRow)).contextValue), /^thetaevolve\.program\.child\.banned$/);
    const unbanned = await vscode.commands.executeCommand('thetaevolve.unbanProgram', bannedRow);
    assert.ok(unbanned && typeof unbanned === 'object' && 'ids' in unbanned, `unbanned: ${JSON.stringify(unbanned)}`);
    assert.ok((unbanned as { ids: string[] }).ids.includes(child.programId));
    assert.equal((await rowOf())?.banned, false);
    assert.ok(await acceptingPicks('thetaevolve.banProgram', child));
    const fromPalette = await acceptingPicks('thetaevolve.unbanProgram');
    assert.ok(fromPalette && typeof fromPalette === 'object' && 'ids' in fromPalette, `unbanned: ${JSON.stringify(fromPalette)}`);
    assert.ok((fromPalette as { ids: string[] }).ids.includes(child.programId));

    // After Apply to File, the file's EVOLVE-BLOCK lines carry the program's blame, until the file is edited away from it.
    const annotationsOf = (predicate: (annotations: BlameAnnotation[]) => boolean): Promise<BlameAnnotation[]> =>
      new Promise((resolve) => {
        const sub = theta.onDidAnnotateBlame(({ uri, annotations }) => {
          if (uri.toString() !== program.toString() || !predicate(annotations)) return;
          sub.dispose();
          resolve(annotations);
        });
      });
    const onFile = annotationsOf((annotations) => annotations.length > 0);
    await vscode.commands.executeCommand('thetaevolve.applyProgramToFile', child);
    const fileAnnotations = await onFile;
    const document = await vscode.workspace.openTextDocument(program);
    const blockStart = document
      .getText()
      .split('\n')
      .findIndex((line) => line.includes('EVOLVE-BLOCK-START'));
    assert.equal(fileAnnotations[0]?.line, blockStart + 1, 'the first line inside the EVOLVE-BLOCK');
    assert.ok(
      fileAnnotations.some((a) => new RegExp(`^step ${child.step}( #\\d+)? · `).test(a.text)),
      fileAnnotations.map((a) => `${a.line}: ${a.text}`).join(' | '),
    );
    const cleared = annotationsOf((annotations) => annotations.length === 0);
    await editChoose(program, '7 + 0 * 7919');
    await cleared;
    await vscode.commands.executeCommand('workbench.action.revertAndCloseActiveEditor');
  });

  it("Edit Guidance opens the run's guidance as a document; saving applies it from the next step (shown queued until then), empty clears it; Edit Model Recommendations likewise, marked edited", async () => {
    const { program } = await taskCopy(theta, 'steer-guidance');
    await vscode.window.showTextDocument(program);
    const committed = nextEvent(theta.controller, (e) => e.type === 'step_committed' && e.step >= 1, 'step 1 to commit');
    await vscode.commands.executeCommand('thetaevolve.startRun', program);
    await committed;
    const run = theta.controller.active;
    assert.ok(run);

    // Live (paused between steps): the save is queued; until the run's next step takes it, the document reads the queued
    // text under a line saying so; then the database says since which step.
    const paused = nextEvent(theta.controller, (e) => e.type === 'paused', 'the run to pause');
    await bounded(vscode.commands.executeCommand('thetaevolve.pauseRun'), 'Pause Run');
    const pausedAt = await paused;
    assert.ok(pausedAt.type === 'paused');
    const uri = (await bounded(vscode.commands.executeCommand('thetaevolve.editGuidance'), 'Edit Guidance')) as vscode.Uri;
    assert.equal(uri.scheme, 'thetaevolve-guidance');
    const document = await bounded(vscode.workspace.openTextDocument(uri), 'opening the guidance document');
    assert.equal(document.getText(), '', 'no guidance yet');
    const edit = new vscode.WorkspaceEdit();
    edit.insert(uri, new vscode.Position(0, 0), 'Prefer x close to 3.');
    assert.ok(await bounded(vscode.workspace.applyEdit(edit), 'editing the guidance'));
    assert.ok(await bounded(document.save(), 'saving the guidance'), 'saved');
    assert.ok(
      answers.some((a) => a.dbFile === run.dbFile && a.kind === 'guidance' && a.queued),
      JSON.stringify(answers.slice(-3)),
    );
    const read = async (): Promise<string> =>
      new TextDecoder().decode(await bounded(vscode.workspace.fs.readFile(uri), 'reading the guidance document'));
    assert.equal(await read(), `${queuedLine(pausedAt.step + 1, false)}\nPrefer x close to 3.`);
    assert.match(await read(), /^<!-- ThetaEvolve: queued, applies at step \d+ -->/);
    const steered = nextEvent(theta.controller, (e) => e.type === 'steered' && e.kind === 'guidance', 'the guidance to be applied');
    await bounded(vscode.commands.executeCommand('thetaevolve.resumeRun'), 'Resume Run');
    const event = await steered;
    assert.ok(event.type === 'steered' && event.ok, JSON.stringify(event));
    assert.equal(event.step, pausedAt.step + 1);
    assert.equal(await read(), 'Prefer x close to 3.', 'applied: the guidance in force, no queued line');
    const live = await theta.controller.query({ kind: 'snapshot', dbFile: run.dbFile });
    assert.deepEqual(live.guidance, { text: 'Prefer x close to 3.', step: event.step });
    const stopped = await stopRun(theta.controller);
    assert.ok(stopped);
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');

    // Stopped, from the Runs view: the document reads the guidance back from the database; saving it empty clears it now.
    const row = (await theta.tree.getChildren()).find((n): n is RunNode => n.kind === 'run' && n.runId === run.runId);
    assert.ok(row);
    await vscode.commands.executeCommand('thetaevolve.editGuidance', row);
    const reopened = await vscode.workspace.openTextDocument(uri);
    assert.equal(reopened.getText(), 'Prefer x close to 3.');
    const clear = new vscode.WorkspaceEdit();
    clear.delete(uri, new vscode.Range(new vscode.Position(0, 0), reopened.lineAt(reopened.lineCount - 1).range.end));
    assert.ok(await vscode.workspace.applyEdit(clear));
    assert.ok(await reopened.save());
    assert.equal((await theta.controller.query({ kind: 'snapshot', dbFile: run.dbFile })).guidance, null);
    assert.ok(answers.some((a) => a.dbFile === run.dbFile && a.kind === 'clearGuidance' && a.ok && !a.queued));
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');

    // Edit Model Recommendations on the stopped run: a first line says whose they are; saving records them, marked edited.
    const recUri = (await bounded(
      vscode.commands.executeCommand('thetaevolve.editRecommendations', row),
      'Edit Model Recommendations',
    )) as vscode.Uri;
    const recDocument = await bounded(vscode.workspace.openTextDocument(recUri), 'opening the recommendations document');
    assert.equal(recDocument.getText(), `${recommendationsLine(null)}\n`);
    const recEdit = new vscode.WorkspaceEdit();
    recEdit.insert(recUri, new vscode.Position(1, 0), '- Keep x near 3.');
    assert.ok(await bounded(vscode.workspace.applyEdit(recEdit), 'editing the recommendations'));
    assert.ok(await bounded(recDocument.save(), 'saving the recommendations'));
    const recommendations = (await theta.controller.query({ kind: 'snapshot', dbFile: run.dbFile })).recommendations;
    assert.ok(recommendations);
    assert.deepEqual(
      { text: recommendations.text, afterStep: recommendations.afterStep, editedBy: recommendations.editedBy },
      { text: '- Keep x near 3.', afterStep: null, editedBy: 'researcher' },
    );
    assert.equal(
      new TextDecoder().decode(await vscode.workspace.fs.readFile(recUri)),
      `${recommendationsLine(recommendations)}\n- Keep x near 3.`,
    );
    assert.match(recommendationsLine(recommendations), /by the researcher, in force from step \d+/);
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
  });
});
