// What the in-host suites share: the extension, its API, the test workspace,
// and waiting for engine events and run ends.
import assert from 'node:assert/strict';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import * as vscode from 'vscode';
import type { EngineEvent } from '../../src/engine/common/events';
import type { ThetaEvolveApi } from '../../src/extension';
import type { TrackedRun } from '../../src/vscode/runController';
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
export function closed(controller: Controller, timeoutMs = 30_000): Promise<TrackedRun> {
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
      { what: `thetaevolve.${key} to read back as written`, deadlineMs: 30_000 },
    );
  }
  return async () => {
    for (const [key, value, target] of earlier) await config().update(key, value, target);
  };
}
