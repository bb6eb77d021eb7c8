// Runs inside the extension host: Start Run on a copy of the quadratic
// fixture with the offline sampler, steps committed through the engine
// worker, Stop, resume, the Runs view, diffs and Apply to File.
import assert from 'node:assert/strict';
import { cpSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as vscode from 'vscode';
import type { ThetaEvolveApi } from '../../src/extension';
import { programName } from '../../src/engine/common/format';
import { untrustedReason } from '../../src/vscode/runController';
import type { ProgramNode, RunNode } from '../../src/vscode/runsTree';
import { statusText } from '../../src/vscode/statusBar';
import { api, closed, nextEvent, REPO_ROOT, workspaceDir } from './support';

describe('runs (engine worker, commands, Runs view)', function () {
  this.timeout(120_000);
  let theta: ThetaEvolveApi;
  let program: vscode.Uri;
  let runId = '';

  before(async () => {
    theta = await api();
    const taskDir = join(workspaceDir(), 'quadratic');
    cpSync(join(REPO_ROOT, 'test', 'fixtures', 'tasks', 'quadratic'), taskDir, { recursive: true });
    program = vscode.Uri.file(join(taskDir, 'initial.py'));
    const config = vscode.workspace.getConfiguration('thetaevolve');
    const target = vscode.ConfigurationTarget.Workspace;
    await config.update('sampler', 'mutate', target);
    await config.update('batchSize', 2, target);
    await config.update('samplesPerPrompt', 2, target);
    await config.update('evaluationConcurrency', 2, target);
    await config.update('database.preset', 'small', target);
    await theta.rememberTaskFor(program, join(taskDir, 'task.json'));
  });

  it('registers the run commands and the Runs view item commands', async () => {
    const registered = new Set(await vscode.commands.getCommands(true));
    for (const id of [
      'thetaevolve.startRun',
      'thetaevolve.stopRun',
      'thetaevolve.pauseRun',
      'thetaevolve.resumeRun',
      'thetaevolve.showProgramDiff',
      'thetaevolve.compareProgramWithFile',
      'thetaevolve.applyProgramToFile',
      'thetaevolve.openProgram',
      'thetaevolve.refreshRuns',
    ]) {
      assert.ok(registered.has(id), `${id} is not registered`);
    }
  });

  it('refuses to evaluate in an untrusted workspace, and says why', () => {
    assert.match(untrustedReason(false) ?? '', /untrusted workspace/);
    assert.equal(untrustedReason(true), undefined);
  });

  it('Start Run evolves the file: steps commit through the worker, Stop ends the run', async () => {
    await vscode.window.showTextDocument(program);
    const firstCommit = nextEvent(theta.controller, (e) => e.type === 'step_committed' && e.step === 2);
    await vscode.commands.executeCommand('thetaevolve.startRun', program);
    const active = theta.controller.active;
    assert.ok(active, 'a run is active after Start Run');
    runId = active.runId;
    assert.match(runId, /^quadratic-/);
    assert.equal(active.settings.sampler, 'mutate');
    const committed = await firstCommit;
    assert.equal(committed.type === 'step_committed' && committed.samples, 4);
    assert.match(statusText(theta.controller.active ?? active), /step 2/);
    // The run knows its sandbox (bwrap here, the full one) and the status bar says nothing alarming about it.
    assert.equal(active.isolation?.weak, false, JSON.stringify(active.isolation));
    assert.match(active.isolation?.summary ?? '', /bwrap/);
    assert.doesNotMatch(statusText(active), /weak sandbox/);
    assert.match(
      statusText({
        ...active,
        isolation: { ...(active.isolation ?? { kind: 'fallback', summary: '', missing: [], warning: null }), weak: true },
      }),
      /weak sandbox/,
    );
    const done = closed(theta.controller);
    await vscode.commands.executeCommand('thetaevolve.stopRun');
    const run = await done;
    assert.equal(run.state, 'finished');
    assert.match(statusText(run), /stopped/, 'the status bar says the run was stopped');
    assert.doesNotMatch(statusText(run), /samples\/s/, 'no throughput once the run is over');
    assert.ok(run.lastStep >= 2);
    assert.equal(theta.controller.active, undefined);
    assert.ok(existsSync(run.dbFile), `${run.dbFile} exists`);
    assert.ok(run.dbFile.startsWith(join(workspaceDir(), '.thetaevolve', 'runs')), run.dbFile);
  });

  it('the Runs view lists the run with its improving programs', async () => {
    const roots = (await theta.tree.getChildren()) as RunNode[];
    const node = roots.find((r) => r.runId === runId);
    assert.ok(node, `run ${runId} is in the tree (saw ${roots.map((r) => r.runId).join(', ')})`);
    assert.ok(node.info && node.info.lastStep >= 2);
    const item = theta.tree.getTreeItem(node);
    assert.match(String(item.description), /step \d+ · best/);
    // The best score comes first in the row (narrow sidebars cut the rest); the run id is still there.
    assert.match(String(item.label), /^[\d.]+ · /);
    assert.ok(String(item.description).includes(runId));
    const programs = (await theta.tree.getChildren(node)) as ProgramNode[];
    assert.ok(programs.length >= 1);
    assert.ok(programs.every((p) => p.kind === 'program'));
    // The best is pinned on top under one row id, the earlier improvements follow oldest first (the starting program first).
    const [best, ...earlier] = programs;
    assert.ok(best?.pinnedBest && programs.filter((p) => p.pinnedBest).length === 1);
    assert.equal(theta.tree.getTreeItem(best).id, `best:${node.dbFile}`);
    assert.match(String(theta.tree.getTreeItem(best).description), /^best · /);
    assert.equal((earlier[0] ?? best).parentId, null, 'the starting program is the oldest row');
    assert.deepEqual(
      earlier.map((p) => p.step),
      earlier.map((p) => p.step).sort((a, b) => a - b),
    );
    assert.equal(theta.tree.getTreeItem(best).contextValue?.startsWith('thetaevolve.program.'), true);
    // Rows name programs by step and rank in it ("step 2 #1"), not by their opaque ids, which the tooltip keeps.
    for (const p of programs) {
      const row = theta.tree.getTreeItem(p);
      const tooltip = String(row.tooltip);
      if (p.parentId === null) {
        assert.match(String(row.description), /^(best · )?initial · start$/);
      } else {
        assert.ok(p.stepRank, `program ${p.programId} has a rank in its step`);
        assert.equal(
          String(row.description)
            .replace(/^best · /, '')
            .split(' · ')[0],
          `step ${p.step} #${p.stepRank.rank}`,
        );
        assert.match(tooltip, new RegExp(`rank ${p.stepRank.rank} by score of the ${p.stepRank.of} children of step ${p.step}`));
        // The gain says what it is measured from, and the click what it opens (the parent's diff, whose gain differs).
        assert.match(String(row.description), / · [+-][\d.e+-]+ vs previous best$/);
        assert.match(tooltip, /: the gain over the previous best \((initial|step \d+( #\d+)?)\)/);
        // The parent named as the rows are (one naming everywhere), as the database has it.
        const parent = await theta.controller.query({ kind: 'program', dbFile: p.dbFile, programId: p.parentId });
        assert.ok(parent, `the parent ${p.parentId} is in the database`);
        const parentName = programName(parent);
        assert.equal(p.parentName, parentName);
        assert.ok(tooltip.includes(`Click: the diff against its parent (${parentName}, which it was made from)`), tooltip);
        assert.ok(tooltip.includes(`, child of ${parentName}`), tooltip);
      }
      assert.ok(tooltip.includes(`program ${p.programId}`), tooltip);
    }
    // A refresh reads the rows before VS Code asks for them, and a run that did
    // not change keeps the rows it had: VS Code gets its answers from memory.
    await theta.tree.refresh();
    const refreshed = theta.tree.runs.find((r) => r.runId === runId);
    assert.ok(refreshed);
    assert.equal(await theta.tree.getChildren(refreshed), programs);
  });

  it('Show Diff opens parent <-> child, Apply to File replaces the EVOLVE-BLOCK', async () => {
    const roots = (await theta.tree.getChildren()) as RunNode[];
    const node = roots.find((r) => r.runId === runId) as RunNode;
    const programs = (await theta.tree.getChildren(node)) as ProgramNode[];
    const child = programs.find((p) => p.parentId !== null);
    assert.ok(child, 'the offline sampler improved on x = 1 within two steps (seed 0)');
    await vscode.commands.executeCommand('thetaevolve.showProgramDiff', child);
    const tab = vscode.window.tabGroups.activeTabGroup.activeTab;
    assert.ok(tab?.input instanceof vscode.TabInputTextDiff, 'a diff editor is active');
    assert.equal(tab.input.modified.scheme, 'thetaevolve');
    const before = readFileSync(program.fsPath, 'utf8');
    await vscode.commands.executeCommand('thetaevolve.applyProgramToFile', child);
    const document = await vscode.workspace.openTextDocument(program);
    assert.notEqual(document.getText(), before, 'the EVOLVE-BLOCK changed');
    assert.match(document.getText(), /EVOLVE-BLOCK-START/);
    await vscode.commands.executeCommand('undo');
  });

  it('resumes the run after its last committed step', async () => {
    const roots = (await theta.tree.getChildren()) as RunNode[];
    const node = roots.find((r) => r.runId === runId) as RunNode;
    const lastStep = node.info?.lastStep ?? -1;
    const started = nextEvent(theta.controller, (e) => e.type === 'run_started');
    const committed = nextEvent(theta.controller, (e) => e.type === 'step_committed');
    const settings = theta.controller.latest?.settings;
    assert.ok(settings);
    await theta.controller.start({
      runId,
      dbFile: node.dbFile,
      taskDir: join(workspaceDir(), 'quadratic'),
      taskName: 'quadratic',
      taskTitle: 'quadratic',
      direction: 'maximize',
      fileUri: program,
      extension: 'py',
      startCode: null,
      textAtRunStart: undefined,
      settings,
      apiKey: undefined,
      resume: true,
    });
    const event = await started;
    assert.equal(event.type === 'run_started' && event.resumedFromStep, lastStep);
    const first = await committed;
    assert.equal(first.type === 'step_committed' && first.step, lastStep + 1);
    const done = closed(theta.controller);
    theta.controller.stop();
    await done;
  });

  it('Toggle RL Trainer switches RL for the next run when none is in progress, without writing any settings file', async () => {
    assert.equal(theta.controller.active, undefined);
    const config = (): vscode.WorkspaceConfiguration => vscode.workspace.getConfiguration('thetaevolve');
    const enabled = (): boolean => theta.dashboard.model.snapshot().trainer.enabled;
    await config().update('trainer.url', 'http://127.0.0.1:9', vscode.ConfigurationTarget.Global);
    try {
      const before = enabled();
      await vscode.commands.executeCommand('thetaevolve.toggleTrainer');
      assert.equal(enabled(), !before, 'the RL card shows the next run with RL switched');
      assert.equal(theta.dashboard.model.snapshot().trainer.state, before ? 'off' : 'next_run');
      // Switched on: the trainer URL is asked at once, and the card says nothing answers there (port 9: nothing listens).
      if (!before)
        assert.match(
          theta.dashboard.model.snapshot().trainer.message,
          /Nothing answers at http:\/\/127\.0\.0\.1:9 \(connection refused\): start the trainer there/,
        );
      // The choice belongs to the run, not to .vscode/settings.json (a file people commit) nor the user's settings.
      const setting = config().inspect<boolean>('trainer.enabled');
      assert.equal(setting?.workspaceValue, undefined, 'nothing written to the workspace settings');
      assert.equal(setting?.globalValue, undefined, "nothing written to the user's settings");
      const workspaceSettings = join(workspaceDir(), '.vscode', 'settings.json');
      if (existsSync(workspaceSettings)) assert.doesNotMatch(readFileSync(workspaceSettings, 'utf8'), /trainer\.enabled/);
      await vscode.commands.executeCommand('thetaevolve.toggleTrainer');
      assert.equal(enabled(), before);
    } finally {
      await config().update('trainer.url', undefined, vscode.ConfigurationTarget.Global);
    }
  });

  it('Toggle RL Trainer without a trainer URL asks for one; cancelled, the trainer stays off and nothing is stuck', async () => {
    const config = (): vscode.WorkspaceConfiguration => vscode.workspace.getConfiguration('thetaevolve');
    assert.equal(config().get<string>('trainer.url'), '');
    assert.equal(config().get<boolean>('trainer.enabled'), false);
    let settled = false;
    const toggled = Promise.resolve(vscode.commands.executeCommand('thetaevolve.toggleTrainer')).finally(() => (settled = true));
    // The URL prompt is open until it is dismissed (Escape): dismiss it as a user would, until the command is done.
    for (let tries = 0; !settled && tries < 200; tries++) await vscode.commands.executeCommand('workbench.action.closeQuickOpen');
    await toggled;
    assert.equal(config().get<boolean>('trainer.enabled'), false, 'the setting did not turn on without a URL');
    // A second toggle asks again (it is not stuck on): cancelled the same way.
    settled = false;
    const again = Promise.resolve(vscode.commands.executeCommand('thetaevolve.toggleTrainer')).finally(() => (settled = true));
    for (let tries = 0; !settled && tries < 200; tries++) await vscode.commands.executeCommand('workbench.action.closeQuickOpen');
    await again;
    assert.equal(config().get<boolean>('trainer.enabled'), false);
  });
});
