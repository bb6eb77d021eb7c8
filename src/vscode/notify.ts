// The one way the extension shows text in VS Code's own UI: notifications,
// modals, progress, quick picks, input boxes and status bar text. Every text
// goes through forMessage (src/engine/common/displayText.ts), since VS Code
// renders `[label](command:ID)` in a message as a link that runs the command
// on one click, in an untrusted workspace too, and a run id, task title,
// program path or server's words may hold one (docs/guide.md "What the
// editor trusts"). eslint.config.mjs forbids the raw calls elsewhere.
import * as vscode from 'vscode';
import { forMessage } from '../engine/common/displayText';

/** A message as VS Code was given it: what the user sees, after forMessage. */
export interface ShownMessage {
  severity: 'info' | 'warning' | 'error';
  text: string;
  detail: string | undefined;
  modal: boolean;
  buttons: string[];
}

const shownMessages = new vscode.EventEmitter<ShownMessage>();
/** Fires with each message shown (the in-host tests read what the user saw). */
export const onDidShowMessage = shownMessages.event;

type Button = string | vscode.MessageItem;
type Shown<T extends Button> = vscode.MessageItem & { original: T };

function isOptions(value: unknown): value is vscode.MessageOptions {
  return typeof value === 'object' && value !== null && !('title' in value);
}

const SHOW = {
  info: vscode.window.showInformationMessage,
  warning: vscode.window.showWarningMessage,
  error: vscode.window.showErrorMessage,
} as const;

async function show<T extends Button>(
  severity: ShownMessage['severity'],
  message: string,
  args: ReadonlyArray<T | vscode.MessageOptions>,
): Promise<T | undefined> {
  const [first] = args;
  const options = isOptions(first) ? first : undefined;
  const items = (options ? args.slice(1) : args) as readonly T[];
  const buttons: Array<Shown<T>> = items.map((item) =>
    typeof item === 'string'
      ? { title: forMessage(item), original: item }
      : { ...(item as vscode.MessageItem), title: forMessage((item as vscode.MessageItem).title), original: item },
  );
  const text = forMessage(message);
  const detail = options?.detail === undefined ? undefined : forMessage(options.detail);
  shownMessages.fire({ severity, text, detail, modal: options?.modal === true, buttons: buttons.map((b) => b.title) });
  const shownOptions: vscode.MessageOptions = { ...options, ...(detail === undefined ? {} : { detail }) };
  const choice = await SHOW[severity]<Shown<T>>(text, shownOptions, ...buttons);
  return choice?.original;
}

/** vscode.window.showInformationMessage, its text (and buttons, and a modal's detail) through forMessage. */
export function showInfo<T extends Button>(message: string, ...items: T[]): Promise<T | undefined>;
export function showInfo<T extends Button>(message: string, options: vscode.MessageOptions, ...items: T[]): Promise<T | undefined>;
export function showInfo<T extends Button>(message: string, ...args: Array<T | vscode.MessageOptions>): Promise<T | undefined> {
  return show('info', message, args);
}

/** vscode.window.showWarningMessage, its text through forMessage. */
export function showWarning<T extends Button>(message: string, ...items: T[]): Promise<T | undefined>;
export function showWarning<T extends Button>(message: string, options: vscode.MessageOptions, ...items: T[]): Promise<T | undefined>;
export function showWarning<T extends Button>(message: string, ...args: Array<T | vscode.MessageOptions>): Promise<T | undefined> {
  return show('warning', message, args);
}

/** vscode.window.showErrorMessage, its text through forMessage. */
export function showError<T extends Button>(message: string, ...items: T[]): Promise<T | undefined>;
export function showError<T extends Button>(message: string, options: vscode.MessageOptions, ...items: T[]): Promise<T | undefined>;
export function showError<T extends Button>(message: string, ...args: Array<T | vscode.MessageOptions>): Promise<T | undefined> {
  return show('error', message, args);
}

/** vscode.window.withProgress, its title and every reported message through forMessage. */
export function withProgress<R>(
  options: vscode.ProgressOptions,
  task: (progress: vscode.Progress<{ message?: string; increment?: number }>, token: vscode.CancellationToken) => Thenable<R>,
): Thenable<R> {
  const title = options.title === undefined ? undefined : forMessage(options.title);
  return vscode.window.withProgress({ ...options, title }, (progress, token) =>
    task(
      {
        report: (value) => progress.report(value.message === undefined ? value : { ...value, message: forMessage(value.message) }),
      },
      token,
    ),
  );
}

/** A quick pick as VS Code was given it: its title, placeholder and items' texts, after forMessage. */
export interface ShownPick {
  title: string | undefined;
  placeHolder: string | undefined;
  items: Array<{ label: string; description: string | undefined; detail: string | undefined }>;
}

const shownPicks = new vscode.EventEmitter<ShownPick>();
/** Fires with each quick pick shown (the in-host tests read what the user saw). */
export const onDidShowPick = shownPicks.event;

function firePick(options: vscode.QuickPickOptions, items: readonly vscode.QuickPickItem[]): void {
  shownPicks.fire({
    title: options.title,
    placeHolder: options.placeHolder,
    items: items.map((item) => ({ label: item.label, description: item.description, detail: item.detail })),
  });
}

type PickItem<T extends vscode.QuickPickItem> = vscode.QuickPickItem & { original: T };

/** A quick pick item as shown: label, description and detail through forMessage. */
function shownItem<T extends vscode.QuickPickItem>(item: T): PickItem<T> {
  return {
    ...item,
    label: forMessage(item.label),
    ...(item.description === undefined ? {} : { description: forMessage(item.description) }),
    ...(item.detail === undefined ? {} : { detail: forMessage(item.detail) }),
    original: item,
  };
}

function pickOptions(options: vscode.QuickPickOptions | undefined): vscode.QuickPickOptions {
  return {
    ...options,
    ...(options?.title === undefined ? {} : { title: forMessage(options.title) }),
    ...(options?.placeHolder === undefined ? {} : { placeHolder: forMessage(options.placeHolder) }),
  };
}

/** vscode.window.showQuickPick for one item, every text of it through forMessage; resolves with the item given. */
export async function pickOne<T extends vscode.QuickPickItem>(
  items: readonly T[] | Thenable<readonly T[]>,
  options?: vscode.QuickPickOptions,
  token?: vscode.CancellationToken,
): Promise<T | undefined> {
  const shownOptions = pickOptions(options);
  const shown = Promise.resolve(items).then((list) => {
    const listed = list.map(shownItem);
    firePick(shownOptions, listed);
    return listed;
  });
  const picked = await vscode.window.showQuickPick(shown, { ...shownOptions, canPickMany: false }, token);
  return picked?.original;
}

/** A quick pick of several items, those `selected` says checked at first; resolves with the items given, undefined if dismissed. */
export async function pickMany<T extends vscode.QuickPickItem>(
  items: readonly T[],
  options: { title: string; placeHolder: string; selected: (item: T) => boolean },
): Promise<T[] | undefined> {
  const shown = items.map(shownItem);
  const quickPick = vscode.window.createQuickPick<PickItem<T>>();
  quickPick.title = forMessage(options.title);
  quickPick.placeholder = forMessage(options.placeHolder);
  quickPick.canSelectMany = true;
  quickPick.items = shown;
  quickPick.selectedItems = shown.filter((item) => options.selected(item.original));
  firePick({ title: quickPick.title, placeHolder: quickPick.placeholder }, shown);
  const chosen = await new Promise<T[] | undefined>((resolve) => {
    quickPick.onDidAccept(() => resolve(quickPick.selectedItems.map((item) => item.original)));
    quickPick.onDidHide(() => resolve(undefined));
    quickPick.show();
  });
  quickPick.dispose();
  return chosen;
}

/** vscode.window.showInputBox, its title, prompt and placeholder through forMessage (the value is the user's to edit). */
export function askText(options: vscode.InputBoxOptions): Thenable<string | undefined> {
  return vscode.window.showInputBox({
    ...options,
    ...(options.title === undefined ? {} : { title: forMessage(options.title) }),
    ...(options.prompt === undefined ? {} : { prompt: forMessage(options.prompt) }),
    ...(options.placeHolder === undefined ? {} : { placeHolder: forMessage(options.placeHolder) }),
  });
}

/** A status bar item's text: forMessage, its `$(icon)` names kept. */
export function statusBarText(text: string): string {
  return forMessage(text);
}

/** vscode.window.setStatusBarMessage for `ms`, its text through forMessage. */
export function flashStatus(text: string, ms: number): vscode.Disposable {
  return vscode.window.setStatusBarMessage(forMessage(text), ms);
}
