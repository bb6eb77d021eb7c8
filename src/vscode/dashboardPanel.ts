// The dashboard webview panel: hosts dist/webview/dashboard.js under a strict
// CSP (fresh nonce per render), talks the protocol of src/protocol/dashboardMessages.ts
// (every incoming message validated), waits for the page's `ready` before its
// first post and answers it with a full snapshot, takes the panel VS Code
// restores after a window reload (dashboardRestore.ts), and forwards the page's buttons to
// a DashboardController. The data lives in a DashboardModel that is fed
// whether or not the panel is open.
import * as vscode from 'vscode';
import { WebviewLoadWatch } from './webviewLoadWatch';
import {
  DASHBOARD_TITLE,
  DASHBOARD_VIEW_TYPE,
  type DashboardRestore,
  dashboardWebviewOptions,
  loadDashboardPage,
  type RestoredDashboard,
} from './dashboardRestore';
import { DashboardModel } from '../dashboard/dashboardModel';
import {
  type BackendView,
  type DashboardBestInput,
  type DashboardDatabaseInput,
  type DashboardRunInput,
  type DashboardStepInput,
  type HostMessage,
  type PageMessage,
  parsePageMessage,
  type RunStateView,
  type TrainerView,
} from '../protocol/dashboardMessages';
import { log } from './log';
import { errorMessage } from '../engine/common/errors';
import { markStartup, startupTimeline } from './startupTimeline';

export { DASHBOARD_VIEW_TYPE };

/** What the dashboard's buttons do; the extension's run manager implements it. Errors thrown are shown on the page. */
export interface DashboardController {
  start(): void | Promise<void>;
  stop(): void | Promise<void>;
  pause(): void | Promise<void>;
  resume(): void | Promise<void>;
  /** The RL toggle: send (or stop sending) each step's rollouts to the configured trainer. */
  setRlEnabled(enabled: boolean): void | Promise<void>;
  /** Open the parent <-> child diff of a program (the best one, from the card). */
  showDiff(programId: string): void | Promise<void>;
  /** Replace the file's EVOLVE-BLOCK with the program's (undoable). */
  applyToFile(programId: string): void | Promise<void>;
  /** Its lineage as a quick pick, each entry opening the diff to its parent. */
  showLineage(programId: string): void | Promise<void>;
  /** A page opened (or came back after a reload) while the dashboard has no run: show the latest run on disk, if any. */
  showLatestRun(): void | Promise<void>;
}

export class DashboardHost implements vscode.Disposable {
  /** The data shown; feed it through the methods below so an open page updates. */
  readonly model = new DashboardModel();
  private panel: vscode.WebviewPanel | undefined;
  private panelDisposables: vscode.Disposable[] = [];
  /** The page has said `ready` since it was (re)loaded; nothing is posted before. */
  private pageReady = false;
  /** When the page's html was last set: how long the page took to say `ready` is logged. */
  private renderedAt = 0;
  /** A run being read from its database for the page (whileLoading). */
  private loading: Promise<void> | undefined;
  /** A restored page's `ready` logs the start-up timeline (once). */
  logStartupOnReady = false;
  private readonly loadWatch = new WebviewLoadWatch({
    what: 'the dashboard',
    reloadsWhenShown: true,
    reopen: (column) => this.show(column),
  });

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly controller: DashboardController,
  ) {}

  get isOpen(): boolean {
    return this.panel !== undefined;
  }

  /** Open the panel, or reveal it where it is. */
  show(column: vscode.ViewColumn = vscode.ViewColumn.Active): void {
    if (this.panel) {
      this.panel.reveal(column);
      return;
    }
    const panel = vscode.window.createWebviewPanel(
      DASHBOARD_VIEW_TYPE,
      DASHBOARD_TITLE,
      column,
      dashboardWebviewOptions(this.extensionUri),
    );
    this.attach(panel);
  }

  /**
   * Take over a panel: a new one, or one VS Code restored after a reload.
   * `restored`: its page was given before the extension loaded; what it said
   * meanwhile is taken as if said now (its `ready` among it).
   */
  attach(panel: vscode.WebviewPanel, restored?: RestoredDashboard): void {
    if (this.panel && this.panel !== panel) this.panel.dispose();
    this.detach();
    this.panel = panel;
    this.panelDisposables.push(
      panel.webview.onDidReceiveMessage((raw: unknown) => void this.receive(raw)),
      panel.onDidChangeViewState(() => {
        // A hidden webview is torn down and reloads when shown; it says `ready` again.
        if (!panel.visible) this.pageReady = false;
      }),
      panel.onDidDispose(() => {
        if (this.panel === panel) {
          this.panel = undefined;
          this.detach();
        }
      }),
    );
    if (restored) {
      this.renderedAt = restored.loadedAt;
      this.loadWatch.loading(panel);
    } else this.render();
    if (!this.model.hasRun) this.whileLoading(Promise.resolve(this.controller.showLatestRun()));
    for (const raw of restored?.messages ?? []) void this.receive(raw);
  }

  /**
   * A run is being read from its database (after a reload): a page that says
   * `ready` meanwhile keeps showing what it saved, and gets its first snapshot
   * once the read is done, not an empty one that blanks it until then.
   */
  whileLoading(loading: Promise<unknown>): void {
    const settled = loading.then(
      () => undefined,
      (err: unknown) => log().warn(`dashboard: the latest run: ${errorMessage(err)}`),
    );
    this.loading = settled;
    void settled.finally(() => {
      if (this.loading === settled) this.loading = undefined;
    });
  }

  // ----- feeding the model (each posts its incremental message to a ready page)

  setRun(input: DashboardRunInput): void {
    this.post(this.model.setRun(input));
  }

  /** Feed the model a whole history at once (a run loaded from disk), then send the page one snapshot. */
  load(feed: (model: DashboardModel) => void): void {
    feed(this.model);
    this.post(this.model.snapshotMessage());
  }

  addStep(input: DashboardStepInput): void {
    this.post(this.model.addStep(input));
  }

  setDatabase(input: DashboardDatabaseInput, scores: readonly number[]): void {
    this.post(this.model.setDatabase(input, scores));
  }

  setBest(input: DashboardBestInput | null): void {
    this.post(this.model.setBest(input));
  }

  setTrainer(trainer: TrainerView): void {
    this.post(this.model.setTrainer(trainer));
  }

  setBackend(part: Partial<BackendView>): void {
    this.post(this.model.setBackend(part));
  }

  setSourceLabel(label: string): void {
    const message = this.model.setSourceLabel(label);
    if (message) this.post(message);
  }

  setRunState(runState: RunStateView): void {
    this.post(this.model.setRunState(runState));
  }

  notify(level: 'info' | 'warning' | 'error', text: string): void {
    this.post({ type: 'notice', level, text });
  }

  dispose(): void {
    const panel = this.panel;
    this.panel = undefined;
    this.detach();
    this.loadWatch.dispose();
    panel?.dispose();
  }

  // ----- internals

  private detach(): void {
    for (const d of this.panelDisposables) d.dispose();
    this.panelDisposables = [];
    this.pageReady = false;
  }

  private render(): void {
    if (!this.panel) return;
    this.pageReady = false;
    this.renderedAt = Date.now();
    this.loadWatch.loading(this.panel);
    loadDashboardPage(this.panel, this.extensionUri);
  }

  private post(message: HostMessage): void {
    if (!this.panel || !this.pageReady) return;
    void this.panel.webview.postMessage(message).then(
      (delivered) => {
        if (!delivered) this.pageReady = false;
      },
      (err: unknown) => log().warn(`dashboard: post failed: ${String(err)}`),
    );
  }

  private async receive(raw: unknown): Promise<void> {
    let message: PageMessage;
    try {
      message = parsePageMessage(raw);
    } catch (err) {
      log().warn(`dashboard: ignored a message from the page: ${errorMessage(err)}`);
      return;
    }
    if (message.type === 'ready') {
      log().info(`dashboard: the page is ready ${Date.now() - this.renderedAt} ms after its html was set`);
      this.loadWatch.readied();
      if (this.logStartupOnReady) {
        this.logStartupOnReady = false;
        markStartup('page ready');
        log().info(`dashboard restored: ${startupTimeline()}`);
      }
      const panel = this.panel;
      if (this.loading) await this.loading;
      // The page may have been closed or reloaded meanwhile (it says `ready` again then).
      if (this.panel !== panel) return;
      this.pageReady = true;
      this.post(this.model.snapshotMessage());
      return;
    }
    try {
      await this.act(message);
    } catch (err) {
      const text = errorMessage(err);
      log().error(`dashboard: ${message.type} failed: ${text}`);
      this.notify('error', text);
    }
  }

  private async act(message: Exclude<PageMessage, { type: 'ready' }>): Promise<void> {
    switch (message.type) {
      case 'action':
        switch (message.action) {
          case 'start':
            return this.controller.start();
          case 'stop':
            return this.controller.stop();
          case 'pause':
            return this.controller.pause();
          case 'resume':
            return this.controller.resume();
        }
        return;
      case 'setRl':
        return this.controller.setRlEnabled(message.enabled);
      case 'showDiff':
      case 'applyToFile':
      case 'showLineage': {
        // Only the program the page was shown may be acted on.
        const best = this.model.snapshot().best;
        if (!best || best.id !== message.programId) {
          this.notify('warning', 'The best program changed meanwhile; look at the card again.');
          return;
        }
        if (message.type === 'showLineage') return this.controller.showLineage(best.id);
        return message.type === 'showDiff' ? this.controller.showDiff(best.id) : this.controller.applyToFile(best.id);
      }
    }
  }
}

/** Create the dashboard host. Call once from activate(); open it with `host.show()`. */
export function registerDashboard(context: vscode.ExtensionContext, controller: DashboardController): DashboardHost {
  const host = new DashboardHost(context.extensionUri, controller);
  context.subscriptions.push(host);
  return host;
}

/**
 * From now on `host` takes the panels VS Code restores after a window reload
 * (through the serializer the entry registered first), the one restored
 * before first. Call once the host's controller is ready to be asked.
 */
export function takeRestoredDashboards(restore: DashboardRestore, host: DashboardHost): void {
  restore.handOver((panel, restored) => {
    log().info('dashboard: restoring the page VS Code kept (a window reload)');
    markStartup(restored ? 'dashboard host took the page' : 'restore asked');
    host.logStartupOnReady = true;
    host.attach(panel, restored);
  });
}
