// Runs inside the extension host: the editor tells the truth about a run
// across resume and reload (issue 27), on copies of the quadratic fixture
// with the offline sampler: the objective everywhere (a minimise task),
// commands and menus by run state, the dashboard as a function of the run's
// database, and the RL state of a run.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as vscode from 'vscode';
import { formatScore } from '../../src/engine/common/format';
import type { ThetaEvolveApi } from '../../src/extension';
import { deleteRunFiles } from '../../src/vscode/deleteRun';
import type { ProgramNode } from '../../src/vscode/runsTree';
import { statusText } from '../../src/vscode/statusBar';
import { waitFor } from '../support/waitFor';
import { paletteCommands, rowMenuCommands } from './menus';
import { nextEvent, offlineRuns, plantedRun, runRow, stopRun, taskCopy, thetaSettings } from './support';

describe('run truth (objective, commands by state, dashboard from the database, RL state)', function () {
  this.timeout(120_000);
  let theta: ThetaEvolveApi;

  before(async () => {
    theta = await offlineRuns({ batchSize: 2, samplesPerPrompt: 2, evaluationConcurrency: 2, preset: 'small' });
  });

  after(async () => {
    await stopRun(theta.controller);
  });

  describe('a minimise task', () => {
    after(async () => {
      await stopRun(theta.controller);
    });

    it('the status bar and the Runs view show the objective (lower is better), not the internal score', async () => {
      // The quadratic task minimised, its objective 20 - (x - 3)^2 (11 at best, the target 0 never reached): x = 1 scores
      // objective 16, combined score 1/16; objective and score never coincide.
      const { dir, program } = await taskCopy(theta, 'flows-minimise', {
        direction: 'minimize',
        targetValue: 0,
        rewardShaping: { enabled: false },
      });
      const evaluator = join(dir, 'evaluate.py');
      writeFileSync(evaluator, readFileSync(evaluator, 'utf8').replace('"objective": 10 - (x - 3) ** 2', '"objective": 20 - (x - 3) ** 2'));
      await vscode.window.showTextDocument(program);
      const committed = nextEvent(theta.controller, (e) => e.type === 'step_committed' && e.step >= 1, 'step 1 to commit');
      await vscode.commands.executeCommand('thetaevolve.startRun', program);
      await committed;
      const run = await stopRun(theta.controller);
      assert.ok(run && run.bestScore !== null, 'the run has a best');
      const best = (await theta.controller.query({ kind: 'summary', dbFile: run.dbFile })).best;
      assert.ok(best);
      const record = await theta.controller.query({ kind: 'program', dbFile: run.dbFile, programId: best.id });
      assert.ok(record?.objective !== null && record?.objective !== undefined, 'the best program has an objective');
      assert.ok(Math.abs(record.objective * best.score - 1) < 1e-9, 'a minimise task scores 1/objective');
      const objective = formatScore(record.objective, 6);
      const internal = formatScore(best.score, 6);
      assert.notEqual(objective, internal);
      assert.equal(/ best (\S+)/.exec(statusText(run))?.[1], objective, statusText(run));

      await theta.tree.refresh();
      const node = theta.tree.runs.find((r) => r.runId === run.runId);
      assert.ok(node, 'the run is in the Runs view');
      assert.equal(String(theta.tree.getTreeItem(node).label).split(' · ')[0], objective);
      const rows = (await theta.tree.getChildren(node)) as ProgramNode[];
      const improvements = await theta.controller.query({ kind: 'improvements', dbFile: run.dbFile });
      for (const row of rows) {
        const program = improvements.find((p) => p.id === row.programId);
        assert.ok(program?.objective !== null && program?.objective !== undefined);
        assert.equal(String(theta.tree.getTreeItem(row).label), formatScore(program.objective, 6), 'a program row shows its objective');
      }
    });
  });

  describe('commands and menus follow the run state', () => {
    const RUN_COMMANDS = ['thetaevolve.stopRun', 'thetaevolve.pauseRun', 'thetaevolve.resumeRun'];
    const palette = (): string[] => paletteCommands(RUN_COMMANDS, { 'thetaevolve.runState': theta.controller.stateContext });
    /** The menu of the run's row in the Runs view, as read now. */
    const rowMenu = async (runId: string): Promise<{ contextValue: string; commands: string[] }> => {
      await theta.tree.refresh();
      const node = theta.tree.runs.find((r) => r.runId === runId);
      assert.ok(node, `${runId} is in the Runs view`);
      const contextValue = String(theta.tree.getTreeItem(node).contextValue);
      return { contextValue, commands: rowMenuCommands(contextValue, { 'thetaevolve.runState': theta.controller.stateContext }) };
    };

    after(async () => {
      await stopRun(theta.controller);
    });

    it('the palette and the Runs view offer Stop/Pause while running, Resume (not Pause) while paused, Resume/Open Dashboard/Delete once over', async () => {
      const { program } = await taskCopy(theta, 'flows-menus');
      assert.equal(theta.controller.stateContext, 'idle');
      assert.deepEqual(palette(), ['thetaevolve.resumeRun'], 'with no run, only Resume Run (of a run on disk)');

      await vscode.window.showTextDocument(program);
      const committed = nextEvent(theta.controller, (e) => e.type === 'step_committed', 'a step to commit');
      await vscode.commands.executeCommand('thetaevolve.startRun', program);
      await committed;
      const run = theta.controller.active;
      assert.ok(run);
      assert.equal(theta.controller.stateContext, 'running');
      assert.deepEqual(palette(), ['thetaevolve.stopRun', 'thetaevolve.pauseRun']);
      const running = await rowMenu(run.runId);
      assert.equal(running.contextValue, 'thetaevolve.run.running');
      assert.deepEqual(running.commands, [
        'thetaevolve.addFileToRun',
        'thetaevolve.compareRuns',
        'thetaevolve.editGuidance',
        'thetaevolve.openDashboard',
        'thetaevolve.openEvaluationOutput',
        'thetaevolve.pauseRun',
        'thetaevolve.stopRun',
      ]);

      const paused = nextEvent(theta.controller, (e) => e.type === 'paused', 'the run to pause');
      await vscode.commands.executeCommand('thetaevolve.pauseRun');
      await paused;
      assert.equal(theta.controller.stateContext, 'paused');
      assert.deepEqual(palette(), ['thetaevolve.stopRun', 'thetaevolve.resumeRun']);
      const pausedRow = await rowMenu(run.runId);
      assert.equal(pausedRow.contextValue, 'thetaevolve.run.paused');
      assert.deepEqual(pausedRow.commands, [
        'thetaevolve.addFileToRun',
        'thetaevolve.compareRuns',
        'thetaevolve.editGuidance',
        'thetaevolve.openDashboard',
        'thetaevolve.openEvaluationOutput',
        'thetaevolve.resumeRun',
        'thetaevolve.stopRun',
      ]);

      const finished = await stopRun(theta.controller);
      assert.ok(finished);
      assert.equal(theta.controller.stateContext, 'idle');
      assert.deepEqual(palette(), ['thetaevolve.resumeRun']);
      const stored = await rowMenu(run.runId);
      assert.equal(stored.contextValue, 'thetaevolve.run.stored');
      assert.deepEqual(stored.commands, [
        'thetaevolve.addFileToRun',
        'thetaevolve.compareRuns',
        'thetaevolve.deleteRun',
        'thetaevolve.editGuidance',
        'thetaevolve.openDashboard',
        'thetaevolve.openEvaluationOutput',
        'thetaevolve.resumeRun',
      ]);

      // The row's Open Dashboard shows that run, read from its database.
      const node = theta.tree.runs.find((r) => r.runId === run.runId);
      await vscode.commands.executeCommand('thetaevolve.openDashboard', node);
      const shown = theta.dashboard.model.snapshot();
      assert.equal(shown.run?.runId, run.runId);
      assert.equal(shown.summary.lastStep, finished.lastStep);
      await vscode.commands.executeCommand('workbench.action.closeActiveEditor');

      // The row's Resume Run goes on with that run from its last committed step.
      const resumedCommit = nextEvent(theta.controller, (e) => e.type === 'step_committed', 'a step of the resumed run');
      await vscode.commands.executeCommand('thetaevolve.resumeRun', node);
      assert.equal(theta.controller.active?.runId, run.runId);
      const next = await resumedCommit;
      assert.equal(next.type === 'step_committed' && next.step, finished.lastStep + 1);
      // While it runs, other runs' rows offer neither Resume nor Open Dashboard (the dashboard follows the active run).
      // None of these runs has meta-recommendations on: no row offers Edit Model Recommendations.
      assert.deepEqual(rowMenuCommands('thetaevolve.run.stored', { 'thetaevolve.runState': theta.controller.stateContext }), [
        'thetaevolve.addFileToRun',
        'thetaevolve.compareRuns',
        'thetaevolve.deleteRun',
        'thetaevolve.editGuidance',
        'thetaevolve.openEvaluationOutput',
      ]);
      // Pin as Parent and Ban are offered on live programs only: a row whose program left the population offers neither.
      const rowContext = { 'thetaevolve.runState': theta.controller.stateContext };
      for (const live of ['thetaevolve.program.child', 'thetaevolve.program.root'])
        assert.ok(
          ['thetaevolve.pinProgram', 'thetaevolve.banProgram'].every((c) => rowMenuCommands(live, rowContext).includes(c)),
          live,
        );
      for (const gone of ['thetaevolve.program.child.gone', 'thetaevolve.program.root.gone', 'thetaevolve.program.child.banned']) {
        const offered = rowMenuCommands(gone, rowContext);
        assert.ok(
          !offered.includes('thetaevolve.pinProgram') && !offered.includes('thetaevolve.banProgram'),
          `${gone}: ${offered.join(', ')}`,
        );
        assert.ok(offered.includes('thetaevolve.showLineage'), `${gone} still offers its lineage`);
      }
      // The run in progress is not deleted: nothing goes, and the error says why.
      const dbFile = theta.controller.active?.dbFile ?? '';
      await assert.rejects(deleteRunFiles(dbFile, theta.controller), /is running in this window: stop it/);
      assert.ok(existsSync(dbFile), 'the running run keeps its database');
      const again = await stopRun(theta.controller);
      assert.ok(again);

      // Delete Run removes the database and what is kept beside it; the row goes.
      await deleteRunFiles(again.dbFile, theta.controller);
      assert.equal(existsSync(again.dbFile), false);
      assert.equal(existsSync(`${again.dbFile}.best-solution.json`), false);
      await theta.tree.refresh();
      assert.equal(
        theta.tree.runs.some((r) => r.runId === run.runId),
        false,
      );
    });
  });

  it('Edit Model Recommendations is offered on the rows of runs with meta-recommendations on only', async () => {
    await stopRun(theta.controller);
    const off = `menus-meta-off-${Date.now()}`;
    const on = `menus-meta-on-${Date.now()}`;
    await plantedRun(off);
    // What a run started with thetaevolve.meta.everySteps 3 records in its run meta (operators/recorded.ts).
    await plantedRun(on, { operators: { 'meta.everySteps': 3 } });
    const rowMenu = async (runId: string): Promise<{ contextValue: string; commands: string[] }> => {
      await theta.tree.refresh();
      const node = await runRow(theta, runId);
      const contextValue = String(theta.tree.getTreeItem(node).contextValue);
      return { contextValue, commands: rowMenuCommands(contextValue, { 'thetaevolve.runState': theta.controller.stateContext }) };
    };
    const without = await rowMenu(off);
    assert.equal(without.contextValue, 'thetaevolve.run.stored');
    assert.ok(!without.commands.includes('thetaevolve.editRecommendations'), without.commands.join(', '));
    assert.ok(without.commands.includes('thetaevolve.editGuidance'));
    const withMeta = await rowMenu(on);
    assert.equal(withMeta.contextValue, 'thetaevolve.run.stored.recommending');
    // The row offers what any stored row offers, and Edit Model Recommendations.
    assert.deepEqual(withMeta.commands, [...without.commands, 'thetaevolve.editRecommendations'].sort());
    // Live, the same: a running row with the suffix offers Stop, Pause and Edit Model Recommendations.
    const running = rowMenuCommands('thetaevolve.run.running.recommending', { 'thetaevolve.runState': 'running' });
    for (const command of ['thetaevolve.stopRun', 'thetaevolve.pauseRun', 'thetaevolve.openDashboard', 'thetaevolve.editRecommendations'])
      assert.ok(running.includes(command), `${command}: ${running.join(', ')}`);
  });

  describe("the dashboard is a function of the run's database", () => {
    after(async () => {
      await stopRun(theta.controller);
    });

    type Snapshot = ReturnType<ThetaEvolveApi['dashboard']['model']['snapshot']>;
    const shown = (): Snapshot => theta.dashboard.model.snapshot();
    /** The dashboard once it holds step `step` and its database (the feed answers after the event). */
    const showingStep = (step: number): Promise<Snapshot> =>
      waitFor(shown, {
        what: `the dashboard to show step ${step}`,
        until: (s) => s.summary.lastStep === step && s.database !== null,
        deadlineMs: 60_000,
      });
    const numbers = (s: Snapshot): unknown => ({
      steps: s.series.points.map((p) => [p.step, p.best, p.bestSoFar, p.mean, p.samples, p.valid, p.completionTokens]),
      lastStep: s.summary.lastStep,
      bestEver: s.summary.bestEver,
      samples: s.summary.samples,
      completionTokens: s.summary.completionTokens,
      elapsedMs: s.summary.elapsedMs,
      histogram: s.database?.histogram,
      best: s.best?.id,
    });

    it('Resume keeps the earlier steps, best and totals; the stopped run read back from disk shows the same numbers', async () => {
      const { program } = await taskCopy(theta, 'flows-history');
      await vscode.window.showTextDocument(program);
      const second = nextEvent(theta.controller, (e) => e.type === 'step_committed' && e.step >= 2, 'step 2 to commit');
      await vscode.commands.executeCommand('thetaevolve.startRun', program);
      await second;
      const paused = nextEvent(theta.controller, (e) => e.type === 'paused', 'the run to pause');
      await vscode.commands.executeCommand('thetaevolve.pauseRun');
      await paused;
      const first = await stopRun(theta.controller);
      assert.ok(first);
      const before = await showingStep(first.lastStep);
      assert.ok(before.best, 'the first session has a best program');

      await theta.tree.refresh();
      const node = theta.tree.runs.find((r) => r.runId === first.runId);
      const resumedStep = first.lastStep + 1;
      const committed = nextEvent(theta.controller, (e) => e.type === 'step_committed' && e.step === resumedStep, 'the resumed step');
      // The status bar has the run's best before the first new step commits (read from the database).
      const beforeNewStep: string[] = [];
      const watching = theta.controller.onDidChangeRun((r) => {
        if (r && r.lastStep === first.lastStep && r.bestScore !== null) beforeNewStep.push(statusText(r));
      });
      try {
        await vscode.commands.executeCommand('thetaevolve.resumeRun', node);
        await committed;
      } finally {
        watching.dispose();
      }
      const bestObjective = formatScore(before.summary.bestEver, 6);
      assert.ok(
        beforeNewStep.some((text) => text.includes(`best ${bestObjective}`)),
        `the status bar showed best ${bestObjective} before the resumed step (saw ${JSON.stringify(beforeNewStep)})`,
      );
      // Paused, so the dashboard holds still: the resumed run goes on stepping otherwise.
      const pausedAgain = nextEvent(theta.controller, (e) => e.type === 'paused', 'the resumed run to pause');
      await vscode.commands.executeCommand('thetaevolve.pauseRun');
      await pausedAgain;
      const lastResumed = theta.controller.active?.lastStep ?? resumedStep;
      const resumed = await showingStep(lastResumed);
      const newSteps = Array.from({ length: lastResumed - resumedStep + 1 }, (_, i) => resumedStep + i);
      assert.deepEqual(
        resumed.series.points.map((p) => p.step),
        [...before.series.points.map((p) => p.step), ...newSteps],
        'the steps before the resume stay on the charts',
      );
      assert.ok(resumed.best, 'the best card keeps its program');
      const newSamples = resumed.series.points.filter((p) => p.step >= resumedStep).reduce((sum, p) => sum + p.samples, 0);
      assert.equal(resumed.summary.samples, before.summary.samples + newSamples);
      assert.ok(resumed.summary.elapsedMs > before.summary.elapsedMs, 'elapsed time goes on from the first session');
      assert.equal(resumed.summary.session?.count, 2, "the elapsed tile says the run has two sessions and this one's time");
      assert.match(resumed.database?.histogram?.label ?? '', /valid programs in the database/);

      const second2 = await stopRun(theta.controller);
      assert.ok(second2);
      const live = await showingStep(second2.lastStep);
      // Read back from the database alone (as after a reload): the same numbers, and not running (not "finished").
      await vscode.commands.executeCommand('thetaevolve.openDashboard', node);
      const again = shown();
      assert.deepEqual(numbers(again), numbers(live));
      assert.equal(again.runState.state, 'finished');
      assert.equal(again.runState.resumable, true);
      assert.match(again.runState.message, /^not running/);
      await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
    });
  });

  describe('RL state of a run', () => {
    after(async () => {
      await stopRun(theta.controller);
      await thetaSettings().update('trainer.url', undefined, vscode.ConfigurationTarget.Global);
    });

    it('a run started without a trainer URL, the URL set since: ticking RL says it needs a resume, and the pill and the text agree', async () => {
      const { program } = await taskCopy(theta, 'flows-rl');
      await vscode.window.showTextDocument(program);
      const committed = nextEvent(theta.controller, (e) => e.type === 'step_committed', 'a step to commit');
      await vscode.commands.executeCommand('thetaevolve.startRun', program);
      await committed;
      const run = theta.controller.active;
      assert.ok(run && run.settings['trainer.url'] === '' && !run.settings['trainer.enabled']);
      await thetaSettings().update('trainer.url', 'http://127.0.0.1:9', vscode.ConfigurationTarget.Global);
      await vscode.commands.executeCommand('thetaevolve.toggleTrainer');
      // The worker handles messages in order: once it answers this, whatever the toggle sent it has been answered and shown.
      await theta.controller.query({ kind: 'summary', dbFile: run.dbFile });
      const trainer = theta.dashboard.model.snapshot().trainer;
      assert.equal(trainer.enabled, false);
      assert.equal(trainer.state, 'off');
      assert.doesNotMatch(trainer.message, /is on/, trainer.message);
      assert.match(trainer.message, /resume/);
      assert.equal(run.settings['trainer.enabled'], false, 'the run keeps RL off');
      assert.equal(
        thetaSettings().inspect<boolean>('trainer.enabled')?.workspaceValue,
        undefined,
        'nothing written to the workspace settings',
      );
    });
  });
});
