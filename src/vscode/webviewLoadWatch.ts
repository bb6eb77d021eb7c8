// A webview page that never loads is replaced (docs/architecture.md
// "Webview pages"). VS Code starts each webview behind a service worker; in a
// browser (code-server, vscode.dev) every webview registers its worker at the
// same scope, and one that registers while another's is starting can wait
// forever for a worker change that already happened (microsoft/vscode#125993
// is the desktop form): the tab stays blank and the page's script never runs.
// A page that has not said `ready` after READY_WAIT_MS visible is therefore
// replaced by a new panel in the same column, twice at most; then its blank
// tab is closed and the user told, with Reload Window offered. The last try
// waits longer: a fetch of another webview that closed mid-load holds the
// shared worker for VS Code's 30 s resource timeout, and no new webview
// starts before (our own pages fetch nothing: webviewPage.ts).
import * as vscode from 'vscode';
import { showWarning } from './notify';
import { log } from './log';

/** How long a visible page may take to say `ready` (a page on a busy 2-core machine says it within 2 s). */
export const READY_WAIT_MS = 10_000;
/** Replacements before giving up (each a new webview, so a new worker registration). */
export const MAX_REPLACEMENTS = 2;
/** The last replacement's wait: the tries together outlast the 30 s a held fetch keeps new webviews waiting. */
export const LAST_TRY_WAIT_MS = 20_000;

export interface WebviewLoadWatchOptions {
  /** The page as the user calls it, for the log and the warning ("the dashboard"). */
  what: string;
  /** The page reloads each time its hidden panel is shown again (retainContextWhenHidden off), saying `ready` again. */
  reloadsWhenShown: boolean;
  /** Open a new panel in `column`; the old one is disposed already (its owner's onDidDispose ran within dispose()). */
  reopen(column: vscode.ViewColumn | undefined): void;
}

export class WebviewLoadWatch implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;
  private ready = false;
  private timer: NodeJS.Timeout | undefined;
  /** Replacements since the page last said `ready`. */
  private replacements = 0;
  private panelListeners: vscode.Disposable[] = [];

  constructor(private readonly options: WebviewLoadWatchOptions) {}

  /** A page is being loaded into `panel` (a new panel, a restored one, or new html). */
  loading(panel: vscode.WebviewPanel): void {
    if (this.panel !== panel) {
      this.release();
      this.panel = panel;
      this.panelListeners.push(
        panel.onDidChangeViewState(() => {
          if (!panel.visible && this.options.reloadsWhenShown) this.ready = false;
          this.arm();
        }),
        // Closed by the user (a replacement is released before its panel goes): a later open starts afresh.
        panel.onDidDispose(() => {
          if (this.panel !== panel) return;
          this.replacements = 0;
          this.release();
        }),
      );
    }
    this.ready = false;
    this.arm();
  }

  /** The page said `ready`. */
  readied(): void {
    this.ready = true;
    this.replacements = 0;
    this.arm();
  }

  dispose(): void {
    this.release();
  }

  /** The clock runs while the page is visible and has not said `ready`. */
  private arm(): void {
    const panel = this.panel;
    const waiting = panel !== undefined && panel.visible && !this.ready;
    if (!waiting) {
      clearTimeout(this.timer);
      this.timer = undefined;
      return;
    }
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      if (this.panel === panel && panel.visible && !this.ready) this.expired(panel);
    }, this.waitMs());
  }

  private waitMs(): number {
    return this.replacements < MAX_REPLACEMENTS ? READY_WAIT_MS : LAST_TRY_WAIT_MS;
  }

  private expired(panel: vscode.WebviewPanel): void {
    const seconds = this.waitMs() / 1000;
    if (this.replacements < MAX_REPLACEMENTS) {
      this.replacements++;
      log().warn(
        `${this.options.what}: the page did not load within ${seconds} s (VS Code's webview never started it); opening it again (${this.replacements} of ${MAX_REPLACEMENTS})`,
      );
      const column = panel.viewColumn;
      this.release();
      panel.dispose();
      this.options.reopen(column);
      return;
    }
    log().error(`${this.options.what}: the page did not load after ${MAX_REPLACEMENTS + 1} tries; closed its blank tab`);
    // A blank tab helps no one; opening the page again starts afresh.
    this.replacements = 0;
    this.release();
    panel.dispose();
    const reload = 'Reload Window';
    void showWarning(
      `ThetaEvolve: ${this.options.what} did not load: VS Code opened its tab ${MAX_REPLACEMENTS + 1} times and never started the page ` +
        '(its webview service worker did not answer, a known VS Code problem: microsoft/vscode#125993). Reload the window, or open it again.',
      reload,
    ).then((choice) => {
      if (choice === reload) void vscode.commands.executeCommand('workbench.action.reloadWindow');
    });
  }

  private release(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    for (const d of this.panelListeners.splice(0)) d.dispose();
    this.panel = undefined;
    this.ready = false;
  }
}
