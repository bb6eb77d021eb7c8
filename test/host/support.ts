// What the in-host suites share: the extension, its API, the test workspace,
// and waiting for engine events and run ends.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import * as vscode from 'vscode';
import type { EngineEvent } from '../../src/engine/common/events';
import { loadSqlJs } from '../../src/engine/database/sqlite';
import type { ThetaEvolveApi } from '../../src/extension';
import type { ShownMessage, ShownPick } from '../../src/vscode/notify';
import type { TrackedRun } from '../../src/vscode/runController';
import type { RunNode } from '../../src/vscode/runsTree';
import { waitFor } from '../support/waitFor';

export const EXTENSION_ID = 'thetaevolve.thetaevolve';
// out/test/host.js -> the repository root.
export const REPO_ROOT = resolve(__dirname, '..', '..');

export type Controller = ThetaEvolveApi['controller'];

export function workspaceDir(): string {
  const dir = process.env.THETAEVOLVE_TEST_WORKSPACE ?? vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  assert.ok(dir, 'no test workspace');
  return dir;
}

export async function api(): Promise<ThetaEvolveApi> {
  const ext = vscode.extensions.getExtension<ThetaEvolveApi>(EXTENSION_ID);
  assert.ok(ext, `${EXTENSION_ID} is not installed`);
  return ext.isActive ? ext.exports : ext.activate();
}

/** Resolves with the first event of the run that satisfies `predicate`. */
export function nextEvent(
  controller: Controller,
  predicate: (event: EngineEvent) => boolean,
  what = 'an engine event',
  timeoutMs = 60_000,
): Promise<EngineEvent> {
  return new Promise((resolvePromise, reject) => {
    const timer = setTimeout(() => {
      sub.dispose();
      reject(new Error(`timed out waiting for ${what}`));
    }, timeoutMs);
    const sub = controller.onDidEngineEvent(({ event }) => {
      if (!predicate(event)) return;
      clearTimeout(timer);
      sub.dispose();
      resolvePromise(event);
    });
  });
}

/** Resolves with the run once it closed. */
export function closed(controller: Controller, timeoutMs = 60_000): Promise<TrackedRun> {
  return new Promise((resolvePromise, reject) => {
    const timer = setTimeout(() => reject(new Error('the run did not close')), timeoutMs);
    const sub = controller.onDidCloseRun((run) => {
      clearTimeout(timer);
      sub.dispose();
      resolvePromise(run);
    });
  });
}

/** Why suites were skipped (this.skip() carries no reason): the runner reports it with each skipped test. */
export const skipReasons = new WeakMap<Mocha.Suite, string>();

/** Skip the suite of this hook or test visibly, with the reason in the in-host report. */
export function skipBecause(context: Mocha.Context, reason: string): never {
  const suite = context.test?.parent;
  if (suite) skipReasons.set(suite, reason);
  context.skip();
}

/** Stop the active run (if any) and wait until it closed. */
export async function stopRun(controller: Controller): Promise<TrackedRun | undefined> {
  if (!controller.active) return undefined;
  const done = closed(controller);
  await vscode.commands.executeCommand('thetaevolve.stopRun');
  return done;
}

/**
 * A copy of the quadratic fixture named `name` (its own task name, so run ids
 * of this suite never collide with each other's or with run.host.ts's), with
 * its task remembered for its program so Start Run does not ask.
 */
export async function taskCopy(
  theta: ThetaEvolveApi,
  name: string,
  overrides: Record<string, unknown> = {},
): Promise<{ dir: string; program: vscode.Uri }> {
  const dir = join(workspaceDir(), name);
  cpSync(join(REPO_ROOT, 'test', 'fixtures', 'tasks', 'quadratic'), dir, { recursive: true });
  const taskFile = join(dir, 'task.json');
  const task = JSON.parse(readFileSync(taskFile, 'utf8')) as Record<string, unknown>;
  writeFileSync(taskFile, JSON.stringify({ ...task, ...overrides, name }, null, 2));
  const program = vscode.Uri.file(join(dir, 'initial.py'));
  await theta.rememberTaskFor(program, taskFile);
  return { dir, program };
}

/** One thetaevolve.* setting to write: its key, value and where (User settings for URLs: a workspace's need consent). */
export type SettingWrite = [key: string, value: unknown, target: vscode.ConfigurationTarget];

/**
 * Write settings and wait until each reads back at `scope` (the program a run
 * is of: folder settings apply there); resolves with what puts the earlier
 * values back. In the full suite a write was seen lost after it read back once.
 */
export async function applySettings(writes: readonly SettingWrite[], scope: vscode.Uri): Promise<() => Promise<void>> {
  const config = (): vscode.WorkspaceConfiguration => vscode.workspace.getConfiguration('thetaevolve');
  const earlier = writes.map(([key, , target]): SettingWrite => {
    const inspected = config().inspect(key);
    const value = target === vscode.ConfigurationTarget.Global ? inspected?.globalValue : inspected?.workspaceValue;
    return [key, value, target];
  });
  for (const [key, value, target] of writes) {
    await waitFor(
      async () => {
        const read = vscode.workspace.getConfiguration('thetaevolve', scope).get(key);
        if (JSON.stringify(read) === JSON.stringify(value)) return true;
        await config().update(key, value, target);
        return false;
      },
      { what: `thetaevolve.${key} to read back as written`, deadlineMs: 60_000 },
    );
  }
  return async () => {
    for (const [key, value, target] of earlier) await config().update(key, value, target);
  };
}

/** The extension's settings, as a suite reads and writes them (to WORKSPACE, the test workspace's). */
export const thetaSettings = (scope?: vscode.Uri): vscode.WorkspaceConfiguration => vscode.workspace.getConfiguration('thetaevolve', scope);
export const WORKSPACE = vscode.ConfigurationTarget.Workspace;

/**
 * A suite's start: the extension's API with no run active, and the workspace settings of its offline runs
 * (the mutate sampler, `batchSize` parents x `samplesPerPrompt` children a step).
 */
export async function offlineRuns(size: {
  batchSize: number;
  samplesPerPrompt: number;
  evaluationConcurrency?: number;
  preset?: 'small';
}): Promise<ThetaEvolveApi> {
  const theta = await api();
  await stopRun(theta.controller);
  await thetaSettings().update('sampler', 'mutate', WORKSPACE);
  await thetaSettings().update('batchSize', size.batchSize, WORKSPACE);
  await thetaSettings().update('samplesPerPrompt', size.samplesPerPrompt, WORKSPACE);
  if (size.evaluationConcurrency !== undefined)
    await thetaSettings().update('evaluationConcurrency', size.evaluationConcurrency, WORKSPACE);
  if (size.preset !== undefined) await thetaSettings().update('database.preset', size.preset, WORKSPACE);
  return theta;
}

/** Start Run on a fresh taskCopy named `name` (its program shown first when `show`), once step 1 committed: the live run. */
export async function liveRun(
  theta: ThetaEvolveApi,
  name: string,
  options: { show?: boolean } = {},
): Promise<{ dir: string; program: vscode.Uri; run: TrackedRun }> {
  const { dir, program } = await taskCopy(theta, name);
  if (options.show) await vscode.window.showTextDocument(program);
  const committed = nextEvent(theta.controller, (e) => e.type === 'step_committed' && e.step >= 1, 'step 1 to commit');
  await vscode.commands.executeCommand('thetaevolve.startRun', program);
  await committed;
  const run = theta.controller.active;
  assert.ok(run, 'the run is live');
  return { dir, program, run };
}

/** Runs `command`, accepting the selected item of each quick pick it shows until it settles; resolves with its result. */
export async function acceptingPicks<T>(command: () => Thenable<T>, what: string): Promise<T> {
  let done = false;
  const running = Promise.resolve(command()).finally(() => (done = true));
  await waitFor(
    async () => {
      if (done) return true;
      await vscode.commands.executeCommand('workbench.action.acceptSelectedQuickOpenItem');
      return false;
    },
    { what, deadlineMs: 60_000 },
  );
  return running;
}

/** Text shaped as a link VS Code would run on one click: the one clicked through in a real code-server (the Settings editor opened). */
export const COMMAND_LINK = '[Click me](command:workbench.action.openSettings)';

/** Anything a notification or a quick pick would make a link of: `[label](target)`, `<scheme:...>`, `command:ID`. */
const LINK_SHAPES = [/\[[^\]]*\]\(/, /<[a-z][a-z0-9+.-]*:/i, /command:\S/i];
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const CONTROL_CHARACTERS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

/** Fails naming the text when any of `texts` holds a link shape or a control character. */
export function assertNoLink(texts: ReadonlyArray<string | undefined>, where: string): void {
  for (const text of texts) {
    if (text === undefined) continue;
    for (const shape of LINK_SHAPES) assert.doesNotMatch(text, shape, `a link in ${where}: ${JSON.stringify(text)}`);
    assert.doesNotMatch(text, CONTROL_CHARACTERS, `a control character in ${where}: ${JSON.stringify(text)}`);
  }
}

/** Every message and quick pick the extension shows from now until dispose (src/vscode/notify.ts fires what VS Code was given). */
export function watchShown(theta: ThetaEvolveApi): { messages: ShownMessage[]; picks: ShownPick[]; dispose: () => void } {
  const messages: ShownMessage[] = [];
  const picks: ShownPick[] = [];
  const subs = [theta.onDidShowMessage((m) => messages.push(m)), theta.onDidShowPick((p) => picks.push(p))];
  return { messages, picks, dispose: () => subs.forEach((sub) => sub.dispose()) };
}

/** Fails when any message or quick pick text in `shown` holds a link shape or a control character. */
export function assertShownWithoutLinks(shown: { messages: ShownMessage[]; picks: ShownPick[] }): void {
  for (const m of shown.messages) assertNoLink([m.text, m.detail, ...m.buttons], 'a message');
  for (const p of shown.picks)
    assertNoLink([p.title, p.placeHolder, ...p.items.flatMap((i) => [i.label, i.description, i.detail])], 'a quick pick');
}

/** What the in-host runner (test/support/runHostTests.ts) saw in the workbench: dialogs it answered, notifications with the links it clicked. */
type RunnerLine = { message: string; detail: string; answer: 'Yes' | 'Cancel' } | { notification: string; links: string[] };

function runnerLog(): RunnerLine[] {
  const log = process.env.THETAEVOLVE_HOST_DIALOGS;
  if (!log || !existsSync(log)) return [];
  return readFileSync(log, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as RunnerLine);
}

/** Skips the suite unless a runner answers the workbench's dialogs (npm run test:host does; a desktop VS Code does not). */
export function needDialogRunner(context: Mocha.Context): void {
  if (!process.env.THETAEVOLVE_HOST_DIALOGS) skipBecause(context, 'no runner answers dialogs here (npm run test:host does)');
}

/** The dialogs the runner answered (Yes to a confirmation, Cancel to any other modal of ours), oldest first. */
export function answeredDialogs(): { message: string; detail: string; answer: 'Yes' | 'Cancel' }[] {
  return runnerLog().flatMap((line) => ('message' in line ? [line] : []));
}

/** The ThetaEvolve notification the runner saw on screen whose text includes `part`, with the links it clicked in it. */
export async function renderedNotification(part: string): Promise<{ notification: string; links: string[] }> {
  const shown = await waitFor(
    () =>
      runnerLog().find(
        (line): line is { notification: string; links: string[] } => 'notification' in line && line.notification.includes(part),
      ),
    { what: `the notification with "${part}" on screen`, deadlineMs: 60_000 },
  );
  assert.ok(shown);
  return shown;
}

/**
 * Runs `act` watching what is shown, until a message holding `part` is shown; then no link or control character in
 * any text shown meanwhile (notify.ts), none drawn in that notification where a runner reads the workbench (it
 * clicks any it finds), and no Settings editor opened. Resolves with the message's text and the quick picks shown.
 */
export async function shownAsText(
  theta: ThetaEvolveApi,
  part: string,
  act: () => Thenable<unknown>,
): Promise<{ text: string; picks: ShownPick[] }> {
  // Toasts left by earlier suites can fill the screen (VS Code queues the rest): the message looked for must show.
  if (process.env.THETAEVOLVE_HOST_DIALOGS) await vscode.commands.executeCommand('notifications.clearAll');
  const shown = watchShown(theta);
  try {
    await act();
    const message = await waitFor(() => shown.messages.find((m) => m.text.includes(part)), {
      what: `a message with "${part}"`,
      deadlineMs: 60_000,
      detail: () => `shown meanwhile: ${JSON.stringify(shown.messages.map((m) => m.text))}`,
    });
    assert.ok(message);
    if (process.env.THETAEVOLVE_HOST_DIALOGS) {
      const rendered = await renderedNotification(part);
      assert.deepEqual(rendered.links, [], `links drawn in ${rendered.notification}`);
    }
    assert.equal(settingsEditorOpen(), false, 'the Settings editor did not open');
    assertShownWithoutLinks(shown);
    return { text: message.text, picks: shown.picks };
  } finally {
    shown.dispose();
  }
}

/** Whether a Settings editor is open: what the planted link's command opens. */
export function settingsEditorOpen(): boolean {
  return vscode.window.tabGroups.all.some((group) => group.tabs.some((tab) => /^(User |Workspace )?Settings$/.test(tab.label)));
}

/**
 * A run database in the workspace's runs folder, as someone could hand it over: a one-step offline run of the
 * quadratic fixture made by the CLI (dist/cli.js, as a user runs it), named `runId`, its run meta then rewritten
 * with `meta` (a task folder or program file anywhere, any text). The workspace need not be trusted.
 */
export async function plantedRun(runId: string, meta: Record<string, unknown> = {}): Promise<string> {
  const runs = join(workspaceDir(), '.thetaevolve', 'runs');
  mkdirSync(runs, { recursive: true });
  const dbFile = join(runs, `${runId}.sqlite`);
  const task = join(REPO_ROOT, 'test', 'fixtures', 'tasks', 'quadratic');
  // One step of one child: the smallest run there is.
  const smallest = '--sampler mutate --steps 1 --batch 1 --samples 1'.split(' ');
  const args = [join(REPO_ROOT, 'dist', 'cli.js'), 'run', task, ...smallest, '--db', dbFile];
  await promisify(execFile)(process.execPath, args, { env: { ...process.env, ELECTRON_RUN_AS_NODE: '1' }, timeout: 120_000 });
  if (Object.keys(meta).length > 0) {
    const SQL = await loadSqlJs();
    const db = new SQL.Database(readFileSync(dbFile));
    try {
      const [row] = db.exec("SELECT value FROM meta WHERE key = 'run_meta'");
      const stored = JSON.parse(String(row?.values[0]?.[0])) as Record<string, unknown>;
      db.run("UPDATE meta SET value = ? WHERE key = 'run_meta'", [JSON.stringify({ ...stored, ...meta })]);
      writeFileSync(dbFile, db.export());
    } finally {
      db.close();
    }
  }
  return dbFile;
}

/** The Runs view's row of run `runId`, once it lists it. */
export async function runRow(theta: ThetaEvolveApi, runId: string): Promise<RunNode> {
  const row = await waitFor(async () => (await theta.tree.getChildren()).find((n) => n.kind === 'run' && n.runId === runId), {
    what: `run ${runId} in the Runs view`,
    deadlineMs: 60_000,
  });
  assert.ok(row?.kind === 'run');
  return row;
}
