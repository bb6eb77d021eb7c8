// Every thetaevolve.* setting, read from VS Code and validated with the zod
// schema of the settings table (src/engine/common/config.ts). A bad value is
// reported by name, value and where it was set, never silently replaced.
import * as vscode from 'vscode';
import { showError } from './notify';
import { parseSettings, SETTINGS, type Settings } from '../engine/common/config';
import { errorMessage, ThetaEvolveError } from '../engine/common/errors';
import { taskSettingsUnderPerson } from '../engine/task/taskModelChoice';

const SECTION = 'thetaevolve';

/** A setting holds a value the schema rejects; the message names the setting, the value and where it is set. */
export class SettingsError extends ThetaEvolveError {
  override readonly name = 'SettingsError';
  constructor(
    message: string,
    /** Full key, e.g. `thetaevolve.batchSize` (for "Open Settings"). */
    readonly settingKey: string | undefined,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Which settings level wins for `key`, for the error message ("Workspace Settings"). */
function whereSet(config: vscode.WorkspaceConfiguration, key: string): string | undefined {
  const inspected = config.inspect(key);
  if (!inspected) return undefined;
  if (inspected.workspaceFolderLanguageValue !== undefined || inspected.workspaceFolderValue !== undefined) return 'Folder Settings';
  if (inspected.workspaceLanguageValue !== undefined || inspected.workspaceValue !== undefined) return 'Workspace Settings';
  if (inspected.globalLanguageValue !== undefined || inspected.globalValue !== undefined) return 'User Settings';
  return undefined;
}

/** Whether a workspace's or a folder's settings give `key` (then its value is the workspace's, not the user's). */
export function setByWorkspace(key: string, scope?: vscode.Uri): boolean {
  const where = whereSet(vscode.workspace.getConfiguration(SECTION, scope ?? null), key);
  return where === 'Folder Settings' || where === 'Workspace Settings';
}

/**
 * Read and validate every setting (defaults filled in). `scope`: the file the
 * run is about, so folder settings of a multi-root workspace apply.
 * Throws SettingsError naming the first bad setting.
 */
export function readSettings(
  scope?: vscode.Uri,
  taskSettings: Partial<Settings> = {},
  onNotice: (line: string) => void = () => undefined,
): Settings {
  const config = vscode.workspace.getConfiguration(SECTION, scope ?? null);
  const raw: Record<string, unknown> = {};
  // A model or models the user set drops the config's llm.models whole.
  const task = taskSettingsUnderPerson(
    taskSettings,
    (key) => whereSet(config, key) !== undefined,
    (key) => `${SECTION}.${key} (${whereSet(config, key) ?? ''})`,
  );
  if (task.notice) onNotice(task.notice);
  for (const spec of SETTINGS) {
    const value = config.get<unknown>(spec.key);
    // null is what a user gets by clearing a value in settings.json: treat it as unset.
    if (value !== undefined && value !== null) raw[spec.key] = value;
    // The task's own config (a release config) wins over the defaults only: whatever the user set stays.
    const fromTask = (task.settings as Record<string, unknown>)[spec.key];
    if (fromTask !== undefined && whereSet(config, spec.key) === undefined) raw[spec.key] = fromTask;
  }
  try {
    return parseSettings(raw);
  } catch (err) {
    const message = errorMessage(err);
    const key = SETTINGS.map((s) => s.key).find((k) => message.includes(`${SECTION}.${k} `));
    const where = key ? whereSet(config, key) : undefined;
    throw new SettingsError(where ? `${message.replace(/\.$/, '')}, set in ${where}.` : message, key ? `${SECTION}.${key}` : undefined, {
      cause: err,
    });
  }
}

/**
 * readSettings, or undefined after showing the error with an "Open Settings"
 * button that opens the Settings editor at the bad setting.
 */
export function readSettingsOrShowError(
  scope?: vscode.Uri,
  taskSettings?: Partial<Settings>,
  onNotice?: (line: string) => void,
): Settings | undefined {
  try {
    return readSettings(scope, taskSettings, onNotice);
  } catch (err) {
    if (!(err instanceof SettingsError)) throw err;
    const openSettings = 'Open Settings';
    void showError(`ThetaEvolve: ${err.message}`, openSettings).then((choice) => {
      if (choice === openSettings) void vscode.commands.executeCommand('workbench.action.openSettings', err.settingKey ?? SECTION);
    });
    return undefined;
  }
}
