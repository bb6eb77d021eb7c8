// Runs inside the extension host: text the editor did not write (a run
// database's name, a task's title, a server's words) reaches a notification
// or a quick pick as text, never as a link VS Code would run on one click;
// and a run database is data, not instructions: the task folder or file it
// names outside the workspace is used only once a modal naming it is
// confirmed (issue 42; docs/guide.md "What the editor trusts"). What VS Code
// was given is what src/vscode/notify.ts fired; what the workbench showed is
// what the runner (test/support/runHostTests.ts) saw, declining every modal
// of ours that is not a Yes/Cancel confirmation.
// The same inputs in an untrusted workspace: surfaceUntrusted.host.ts.
import assert from 'node:assert/strict';
import { copyFileSync, cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import * as vscode from 'vscode';
import { languageModelToolName } from '../../src/engine/agentTools/definitions';
import type { ThetaEvolveApi } from '../../src/extension';
import type { FollowOutcome } from '../../src/vscode/followBest';
import { startTestServer, type TestServer } from '../server/openaiTestServer';
import { waitFor } from '../support/waitFor';
import {
  acceptingPicks,
  answeredDialogs,
  COMMAND_LINK,
  liveRun,
  needDialogRunner,
  nextEvent,
  offlineRuns,
  plantedRun,
  REPO_ROOT,
  runRow,
  shownAsText,
  stopRun,
  thetaSettings,
  watchShown,
  WORKSPACE,
  workspaceDir,
} from './support';

/** ESC sequences a terminal would act on (a colour, an OSC 8 link) and a bell. */
const ESCAPES = '\u001b[31m\u001b]8;;https://example.invalid\u0007here\u001b]8;;\u0007\u001b[0m';

describe('surface: no command links from text the editor did not write', function () {
  this.timeout(120_000);
  let theta: ThetaEvolveApi;

  before(async () => {
    theta = await offlineRuns({ batchSize: 1, samplesPerPrompt: 1 });
  });

  it('a run database named as a command link: Open Evaluation Output on it shows the name as text', async () => {
    const { run } = await liveRun(theta, 'surface-links');
    await stopRun(theta.controller);
    const planted = join(dirname(run.dbFile), `${COMMAND_LINK}.sqlite`);
    copyFileSync(run.dbFile, planted);
    try {
      const item = await runRow(theta, COMMAND_LINK);
      // Its outputs folder was not copied: the answer is a notification naming the run.
      const { text } = await shownAsText(theta, 'has no failed evaluation', () =>
        vscode.commands.executeCommand('thetaevolve.openEvaluationOutput', item),
      );
      assert.equal(
        text,
        'ThetaEvolve: run [Click me] (command: workbench.action.openSettings) has no failed evaluation with a kept output.',
      );
    } finally {
      rmSync(planted, { force: true });
    }
  });

  it("a workspace task.json whose title holds a link and ESC sequences: Select Task's quick pick and notification show it as text", async () => {
    const dir = join(workspaceDir(), 'surface-title');
    cpSync(join(REPO_ROOT, 'test', 'fixtures', 'tasks', 'quadratic'), dir, { recursive: true });
    const taskFile = join(dir, 'task.json');
    const task = JSON.parse(readFileSync(taskFile, 'utf8')) as Record<string, unknown>;
    writeFileSync(taskFile, JSON.stringify({ ...task, name: 'surface-title', title: `${COMMAND_LINK} ${ESCAPES}` }, null, 2));
    const program = vscode.Uri.file(join(dir, 'initial.py'));
    await vscode.window.showTextDocument(program);
    try {
      // The task beside the program heads the list: accepted as it comes.
      const { text, picks } = await shownAsText(theta, 'is evolved against', () =>
        acceptingPicks(() => vscode.commands.executeCommand('thetaevolve.selectTask', program), 'a task was picked'),
      );
      assert.match(text, /is evolved against \[Click me\] \(command: workbench\.action\.openSettings\)/);
      const picked = picks.flatMap((p) => p.items).find((i) => i.label.includes('Click me'));
      assert.ok(picked, `the task is listed: ${JSON.stringify(picks)}`);
      assert.match(picked.label, /\[Click me\] \(command: workbench\.action\.openSettings\)/);
    } finally {
      await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    }
  });

  describe('a start failure quoting a server or an evaluator', () => {
    let server: TestServer | undefined;

    after(async () => {
      await stopRun(theta.controller);
      await server?.close();
      await thetaSettings().update('sampler', 'mutate', WORKSPACE);
      await thetaSettings().update('model', undefined, WORKSPACE);
      await thetaSettings().update('serverRetrySeconds', undefined, WORKSPACE);
      await thetaSettings().update('endpoint', undefined, vscode.ConfigurationTarget.Global);
    });

    it('a server whose /v1/models id holds a link: the start failure names the id as text', async () => {
      server = await startTestServer({ models: [COMMAND_LINK] });
      const dir = join(workspaceDir(), 'surface-model');
      cpSync(join(REPO_ROOT, 'test', 'fixtures', 'tasks', 'quadratic'), dir, { recursive: true });
      const program = vscode.Uri.file(join(dir, 'initial.py'));
      await theta.rememberTaskFor(program, join(dir, 'task.json'));
      await thetaSettings().update('endpoint', server.baseURL, vscode.ConfigurationTarget.Global);
      await thetaSettings().update('serverRetrySeconds', 0, WORKSPACE);
      await thetaSettings().update('model', 'absent-model', WORKSPACE);
      await thetaSettings().update('sampler', 'llm', WORKSPACE);
      const { text } = await shownAsText(theta, 'could not start', () => vscode.commands.executeCommand('thetaevolve.startRun', program));
      assert.match(text, /it serves: \[Click me\] \(command: workbench\.action\.openSettings\)/);
      assert.equal(theta.controller.active, undefined, 'nothing runs');
    });

    it('an OpenEvolve evaluator whose stderr and error hold a link and ESC sequences: the invalid start is said as text', async () => {
      await thetaSettings().update('sampler', 'mutate', WORKSPACE);
      const dir = join(workspaceDir(), 'surface-evaluator');
      cpSync(join(REPO_ROOT, 'test', 'fixtures', 'openevolve', 'binary_code'), dir, { recursive: true });
      const words = JSON.stringify(`${COMMAND_LINK} ${ESCAPES}`);
      writeFileSync(
        join(dir, 'evaluator.py'),
        `import sys\n\ndef evaluate(program_path):\n    sys.stderr.write(${words} + "\\n")\n    raise RuntimeError(${words})\n`,
      );
      const program = vscode.Uri.file(join(dir, 'initial_program.py'));
      await theta.rememberTaskFor(program, join(dir, 'evaluator.py'));
      // The folder's evaluator runs with the candidate: its failure is the program's, and the run says so as it starts.
      const { text } = await shownAsText(theta, 'is not valid', () => vscode.commands.executeCommand('thetaevolve.startRun', program));
      assert.match(text, /\[Click me\] \(command: workbench\.action\.openSettings\)/);
      await stopRun(theta.controller);
    });
  });
});

describe('surface: a run database naming a task folder or a file outside the workspace', function () {
  this.timeout(180_000);
  let theta: ThetaEvolveApi;
  /** Outside the workspace: a copy of the quadratic task and a program file. */
  let outside: string;
  let outsideTask: string;
  let outsideProgram: string;

  before(async function () {
    needDialogRunner(this);
    theta = await offlineRuns({ batchSize: 1, samplesPerPrompt: 1 });
    outside = mkdtempSync(join(tmpdir(), 'thetaevolve-outside-'));
    outsideTask = join(outside, 'handed-over-task');
    cpSync(join(REPO_ROOT, 'test', 'fixtures', 'tasks', 'quadratic'), outsideTask, { recursive: true });
    outsideProgram = join(outside, 'program.py');
    copyFileSync(join(outsideTask, 'initial.py'), outsideProgram);
  });

  after(async () => {
    await stopRun(theta.controller);
    await thetaSettings().update('followBest', undefined, WORKSPACE);
    rmSync(outside, { recursive: true, force: true });
  });

  /** The modal shown (its text as VS Code got it) and as the runner saw and declined it. */
  async function declinedModal(shown: ReturnType<typeof watchShown>, before: number): Promise<{ text: string; detail: string }> {
    const modal = await waitFor(() => shown.messages.find((m) => m.modal), { what: 'the modal', deadlineMs: 60_000 });
    assert.ok(modal);
    const dialog = await waitFor(() => answeredDialogs()[before], { what: 'the runner to decline the modal', deadlineMs: 60_000 });
    assert.equal(dialog?.answer, 'Cancel');
    assert.equal(dialog?.message, modal.text, 'the workbench showed the text VS Code was given');
    return { text: modal.text, detail: modal.detail ?? '' };
  }

  const evaluatorCommand = (detail: string): void => {
    assert.ok(detail.includes(outsideTask), `the modal names the folder: ${detail}`);
    // The fixture's evaluator command, as its task.json writes it.
    assert.ok(
      detail.includes('its evaluator runs outside the sandbox: /usr/bin/python3 {taskDir}/evaluate.py {solution}'),
      `the modal names the evaluator command: ${detail}`,
    );
  };

  it('Resume Run on it: a modal names the folder and its evaluator command; declined, nothing runs', async () => {
    const dbFile = await plantedRun('surface-resume', { taskDir: outsideTask, programPath: outsideProgram });
    const shown = watchShown(theta);
    const started: string[] = [];
    const watching = theta.controller.onDidEngineEvent(({ event }) => event.type === 'run_started' && started.push(event.runId));
    try {
      const before = answeredDialogs().length;
      await vscode.commands.executeCommand('thetaevolve.resumeRun', dbFile);
      const modal = await declinedModal(shown, before);
      assert.match(modal.text, /Resume run surface-resume runs the evaluator of a task folder outside this workspace/);
      evaluatorCommand(modal.detail);
      assert.equal(theta.controller.active, undefined, 'nothing runs');
      assert.deepEqual(started, []);
    } finally {
      watching.dispose();
      shown.dispose();
    }
  });

  it('Add This File to the Run on it: the same modal; declined, nothing is evaluated or added', async () => {
    const dbFile = await plantedRun('surface-add', { taskDir: outsideTask, programPath: outsideProgram });
    const row = await runRow(theta, 'surface-add');
    const before = answeredDialogs().length;
    const shown = watchShown(theta);
    const answers: string[] = [];
    const watching = theta.onDidAnswerSteer((a) => a.dbFile === dbFile && answers.push(a.message));
    try {
      const program = vscode.Uri.file(join(workspaceDir(), 'surface-add.py'));
      writeFileSync(program.fsPath, readFileSync(outsideProgram, 'utf8'));
      await vscode.window.showTextDocument(program);
      const added = await vscode.commands.executeCommand('thetaevolve.addFileToRun', row);
      const modal = await declinedModal(shown, before);
      assert.match(modal.text, /Add This File to run surface-add runs the evaluator of a task folder outside this workspace/);
      evaluatorCommand(modal.detail);
      assert.equal(added, undefined);
      assert.deepEqual(answers, [], 'no request reached the run');
    } finally {
      watching.dispose();
      shown.dispose();
      await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    }
  });

  it('Apply to File with the program file outside the workspace: a modal names the file; declined, it is not written', async () => {
    await plantedRun('surface-apply', { taskDir: outsideTask, programPath: outsideProgram });
    const before = answeredDialogs().length;
    const original = readFileSync(outsideProgram, 'utf8');
    const row = await runRow(theta, 'surface-apply');
    const programs = await theta.tree.getChildren(row);
    const node = programs.find((n) => n.kind === 'program');
    assert.ok(node, `a program row: ${JSON.stringify(programs)}`);
    const shown = watchShown(theta);
    try {
      await vscode.commands.executeCommand('thetaevolve.applyProgramToFile', node);
      const modal = await declinedModal(shown, before);
      assert.match(modal.text, /Apply to program\.py writes a file outside this workspace/);
      assert.ok(modal.detail.includes(outsideProgram), modal.detail);
      assert.equal(readFileSync(outsideProgram, 'utf8'), original, 'the file is as it was');
    } finally {
      shown.dispose();
    }
  });

  it('follow-best of a resumed run whose file is outside the workspace asks the same; declined, the file is not written', async () => {
    // The task folder in the workspace (asked nothing); the file it evolves outside it.
    const dir = join(workspaceDir(), 'surface-follow');
    cpSync(join(REPO_ROOT, 'test', 'fixtures', 'tasks', 'quadratic'), dir, { recursive: true });
    const dbFile = await plantedRun('surface-follow', { taskDir: dir, programPath: outsideProgram });
    await thetaSettings().update('followBest', true, WORKSPACE);
    const original = readFileSync(outsideProgram, 'utf8');
    const before = answeredDialogs().length;
    const shown = watchShown(theta);
    const outcomes: FollowOutcome[] = [];
    const watching = theta.onDidHandleBest(({ outcome }) => outcomes.push(outcome));
    try {
      const started = nextEvent(theta.controller, (e) => e.type === 'run_started', 'the resumed run to start');
      await vscode.commands.executeCommand('thetaevolve.resumeRun', dbFile);
      await started;
      await waitFor(() => outcomes.find((o) => o !== 'off' && o !== 'superseded'), {
        what: 'follow-best to handle a new best',
        deadlineMs: 120_000,
      });
      const modal = await declinedModal(shown, before);
      assert.match(modal.text, /writes a file outside this workspace/);
      assert.ok(modal.detail.includes(outsideProgram), modal.detail);
      assert.ok(outcomes.includes('cancelled'), JSON.stringify(outcomes));
      assert.ok(!outcomes.includes('applied'), JSON.stringify(outcomes));
      await stopRun(theta.controller);
      assert.equal(readFileSync(outsideProgram, 'utf8'), original, 'the file is as it was');
    } finally {
      watching.dispose();
      shown.dispose();
      await stopRun(theta.controller);
      await thetaSettings().update('followBest', undefined, WORKSPACE);
    }
  });

  it('add_program, a language-model tool, on it: refused naming the folder (no one can be asked there); nothing is evaluated or added', async () => {
    const dbFile = await plantedRun('surface-agent-add', { taskDir: outsideTask, programPath: outsideProgram });
    const before = readFileSync(dbFile);
    const code = readFileSync(outsideProgram, 'utf8').replace('    return 1', '    return 2.875  # the agent');
    // The tool's own confirmation is answered Yes by the runner: the refusal is the worker's.
    await assert.rejects(
      Promise.resolve(
        vscode.lm.invokeTool(languageModelToolName('add_program'), {
          input: { run: 'surface-agent-add', code },
          toolInvocationToken: undefined,
        }),
      ),
      (err: unknown) => {
        const text = err instanceof Error ? err.message : String(err);
        assert.match(text, /add_program refused: the run's database names the task folder /);
        assert.ok(text.includes(outsideTask), `the refusal names the folder: ${text}`);
        assert.match(text, /a database is data anyone can hand over/);
        return true;
      },
    );
    assert.deepEqual(readFileSync(dbFile), before, 'the database is as it was');
  });
});
