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
import type { ThetaEvolveApi } from '../../src/extension';
import type { FollowOutcome } from '../../src/vscode/followBest';
import type { StartFailureOffer } from '../../src/vscode/runCommands';
import { startTestServer, type TestServer } from '../server/openaiTestServer';
import { waitFor } from '../support/waitFor';
import {
  acceptingPicks,
  answeredDialogs,
  api,
  assertShownWithoutLinks,
  COMMAND_LINK,
  liveRun,
  needDialogRunner,
  nextEvent,
  plantedRun,
  REPO_ROOT,
  renderedNotification,
  runRow,
  settingsEditorOpen,
  stopRun,
  useOfflineRuns,
  watchShown,
  workspaceDir,
} from './support';

/** ESC sequences a terminal would act on (a colour, an OSC 8 link) and a bell. */
const ESCAPES = '\u001b[31m\u001b]8;;https://example.invalid\u0007here\u001b]8;;\u0007\u001b[0m';

describe('surface: no command links from text the editor did not write', function () {
  this.timeout(120_000);
  let theta: ThetaEvolveApi;
  const config = (): vscode.WorkspaceConfiguration => vscode.workspace.getConfiguration('thetaevolve');
  const target = vscode.ConfigurationTarget.Workspace;

  before(async () => {
    theta = await api();
    await stopRun(theta.controller);
    await useOfflineRuns({ batchSize: 1, samplesPerPrompt: 1 });
  });

  it('a run database named as a command link: Open Evaluation Output on it shows the name as text', async () => {
    const { run } = await liveRun(theta, 'surface-links');
    await stopRun(theta.controller);
    const planted = join(dirname(run.dbFile), `${COMMAND_LINK}.sqlite`);
    copyFileSync(run.dbFile, planted);
    const shown = watchShown(theta);
    try {
      const item = await runRow(theta, COMMAND_LINK);
      // Its outputs folder was not copied: the answer is a notification naming the run.
      await vscode.commands.executeCommand('thetaevolve.openEvaluationOutput', item);
      const notice = await waitFor(() => shown.messages.find((m) => m.text.includes('has no failed evaluation')), {
        what: 'the notification of Open Evaluation Output',
        deadlineMs: 30_000,
      });
      assert.equal(
        notice?.text,
        'ThetaEvolve: run [Click me] (command: workbench.action.openSettings) has no failed evaluation with a kept output.',
      );
      assertShownWithoutLinks(shown);
    } finally {
      shown.dispose();
      rmSync(planted, { force: true });
    }
  });

  it("a workspace task.json whose title holds a link and ESC sequences: Select Task's quick pick and notification show it as text", async function () {
    const dir = join(workspaceDir(), 'surface-title');
    cpSync(join(REPO_ROOT, 'test', 'fixtures', 'tasks', 'quadratic'), dir, { recursive: true });
    const taskFile = join(dir, 'task.json');
    const task = JSON.parse(readFileSync(taskFile, 'utf8')) as Record<string, unknown>;
    writeFileSync(taskFile, JSON.stringify({ ...task, name: 'surface-title', title: `${COMMAND_LINK} ${ESCAPES}` }, null, 2));
    const program = vscode.Uri.file(join(dir, 'initial.py'));
    await vscode.window.showTextDocument(program);
    const shown = watchShown(theta);
    try {
      // The task beside the program heads the list: accepted as it comes.
      await acceptingPicks(() => vscode.commands.executeCommand('thetaevolve.selectTask', program), 'a task was picked');
      const picked = shown.picks.flatMap((p) => p.items).find((i) => i.label.includes('Click me'));
      assert.ok(picked, `the task is listed: ${JSON.stringify(shown.picks)}`);
      assert.match(picked.label, /\[Click me\] \(command: workbench\.action\.openSettings\)/);
      const notice = await waitFor(() => shown.messages.find((m) => m.text.includes('is evolved against')), {
        what: "Select Task's notification",
        deadlineMs: 30_000,
      });
      assert.match(notice?.text ?? '', /is evolved against \[Click me\] \(command: workbench\.action\.openSettings\)/);
      assertShownWithoutLinks(shown);
      if (process.env.THETAEVOLVE_HOST_DIALOGS) {
        // As the workbench drew it: no link in it (the runner clicks any it finds), and nothing opened.
        const rendered = await renderedNotification('is evolved against');
        assert.deepEqual(rendered.links, []);
      }
      assert.equal(settingsEditorOpen(), false, 'the Settings editor did not open');
    } finally {
      shown.dispose();
      await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    }
  });

  describe('a start failure quoting a server or an evaluator', () => {
    let server: TestServer | undefined;

    after(async () => {
      await stopRun(theta.controller);
      await server?.close();
      await config().update('sampler', 'mutate', target);
      await config().update('model', undefined, target);
      await config().update('serverRetrySeconds', undefined, target);
      await config().update('endpoint', undefined, vscode.ConfigurationTarget.Global);
    });

    /** Start Run on `program`; resolves with the start failure offered (nothing runs). */
    async function failedStart(program: vscode.Uri): Promise<{ offer: StartFailureOffer; shown: ReturnType<typeof watchShown> }> {
      const offers: StartFailureOffer[] = [];
      const watching = theta.onDidOfferStartFailure((offer) => offers.push(offer));
      const shown = watchShown(theta);
      try {
        await vscode.commands.executeCommand('thetaevolve.startRun', program);
        assert.equal(theta.controller.active, undefined, 'nothing runs');
        const offer = await waitFor(() => offers.at(-1), { what: 'the start failure', deadlineMs: 60_000 });
        assert.ok(offer);
        return { offer, shown };
      } finally {
        watching.dispose();
        shown.dispose();
      }
    }

    it('a server whose /v1/models id holds a link: the start failure names the id as text', async () => {
      server = await startTestServer({ models: [COMMAND_LINK] });
      const dir = join(workspaceDir(), 'surface-model');
      cpSync(join(REPO_ROOT, 'test', 'fixtures', 'tasks', 'quadratic'), dir, { recursive: true });
      const program = vscode.Uri.file(join(dir, 'initial.py'));
      await theta.rememberTaskFor(program, join(dir, 'task.json'));
      await config().update('endpoint', server.baseURL, vscode.ConfigurationTarget.Global);
      await config().update('serverRetrySeconds', 0, target);
      await config().update('model', 'absent-model', target);
      await config().update('sampler', 'llm', target);
      const { offer, shown } = await failedStart(program);
      assert.match(offer.message, /it serves: \[Click me\] \(command: workbench\.action\.openSettings\)/);
      assertShownWithoutLinks(shown);
      assert.equal(settingsEditorOpen(), false, 'the Settings editor did not open');
    });

    it('an OpenEvolve evaluator whose stderr holds a link: the start failure quotes it as text', async () => {
      await config().update('sampler', 'mutate', target);
      const dir = join(workspaceDir(), 'surface-evaluator');
      cpSync(join(REPO_ROOT, 'test', 'fixtures', 'openevolve', 'binary_code'), dir, { recursive: true });
      writeFileSync(
        join(dir, 'evaluator.py'),
        `import sys\n\ndef evaluate(program_path):\n    sys.stderr.write(${JSON.stringify(`${COMMAND_LINK} ${ESCAPES}\n`)})\n    raise RuntimeError("evaluator broke")\n`,
      );
      const program = vscode.Uri.file(join(dir, 'initial_program.py'));
      await theta.rememberTaskFor(program, join(dir, 'evaluator.py'));
      const { offer, shown } = await failedStart(program);
      assert.match(offer.message, /\[Click me\] \(command: workbench\.action\.openSettings\)/);
      assertShownWithoutLinks(shown);
      assert.equal(settingsEditorOpen(), false, 'the Settings editor did not open');
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
  const config = (): vscode.WorkspaceConfiguration => vscode.workspace.getConfiguration('thetaevolve');
  const target = vscode.ConfigurationTarget.Workspace;

  before(async function () {
    needDialogRunner(this);
    theta = await api();
    await stopRun(theta.controller);
    await useOfflineRuns({ batchSize: 1, samplesPerPrompt: 1 });
    outside = mkdtempSync(join(tmpdir(), 'thetaevolve-outside-'));
    outsideTask = join(outside, 'handed-over-task');
    cpSync(join(REPO_ROOT, 'test', 'fixtures', 'tasks', 'quadratic'), outsideTask, { recursive: true });
    outsideProgram = join(outside, 'program.py');
    copyFileSync(join(outsideTask, 'initial.py'), outsideProgram);
  });

  after(async () => {
    await stopRun(theta.controller);
    await config().update('followBest', undefined, target);
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
    assert.match(detail, /its evaluator runs .*(python|evaluate)/, `the modal names the evaluator command: ${detail}`);
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
    await config().update('followBest', true, target);
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
      await config().update('followBest', undefined, target);
    }
  });
});
