// The dashboard's panel as VS Code keeps it across Reload Window, taken
// before the rest of the extension has loaded (docs/architecture.md
// "Start-up"). VS Code makes a restored webview only once the extension has
// registered its serializer, and the page shows its run from the state it
// saved itself (validated there) as soon as it has its html: so the entry
// registers the serializer first, gives a restored panel its page at once,
// and keeps what the page says until the dashboard host takes the panel.
import * as vscode from 'vscode';
import { markStartup } from './startupTimeline';
import { webviewPageHtml } from './webviewPage';

export const DASHBOARD_VIEW_TYPE = 'thetaevolve.dashboard';
export const DASHBOARD_TITLE = 'ThetaEvolve Dashboard';

export function dashboardWebviewOptions(extensionUri: vscode.Uri): vscode.WebviewPanelOptions & vscode.WebviewOptions {
  return {
    enableScripts: true,
    enableCommandUris: false,
    localResourceRoots: [vscode.Uri.joinPath(extensionUri, 'dist', 'webview')],
    // The page restores from its saved state at once; no need to keep it alive hidden.
    retainContextWhenHidden: false,
  };
}

/** Give `panel` the dashboard page (a new panel, a restored one, or the page loaded again). */
export function loadDashboardPage(panel: vscode.WebviewPanel, extensionUri: vscode.Uri): void {
  panel.title = DASHBOARD_TITLE;
  panel.iconPath = vscode.Uri.joinPath(extensionUri, 'media', 'thetaevolve.svg');
  panel.webview.options = dashboardWebviewOptions(extensionUri);
  panel.webview.html = webviewPageHtml(panel.webview, vscode.Uri.joinPath(extensionUri, 'dist', 'webview'), 'dashboard', DASHBOARD_TITLE);
}

/** A restored panel whose page is loading or loaded: what its page said meanwhile (raw, validated by whoever takes it). */
export interface RestoredDashboard {
  panel: vscode.WebviewPanel;
  /** When its html was set (epoch ms). */
  loadedAt: number;
  messages: unknown[];
}

/** Takes a panel: the dashboard host once the extension has loaded. */
export type DashboardTaker = (panel: vscode.WebviewPanel, restored: RestoredDashboard | undefined) => void;

export class DashboardRestore implements vscode.Disposable {
  private taker: DashboardTaker | undefined;
  private held: { restored: RestoredDashboard; listeners: vscode.Disposable[] } | undefined;
  private readonly registration: vscode.Disposable;
  private readonly restoredEmitter = new vscode.EventEmitter<void>();
  /** A restored panel got its page (before the host took it). */
  readonly onDidRestore = this.restoredEmitter.event;

  constructor(private readonly extensionUri: vscode.Uri) {
    this.registration = vscode.window.registerWebviewPanelSerializer(DASHBOARD_VIEW_TYPE, {
      deserializeWebviewPanel: async (panel: vscode.WebviewPanel) => this.restore(panel),
    });
  }

  /** Whether a dashboard tab is the one shown in its group: VS Code restores it as soon as the serializer is registered. */
  static shownAfterReload(): boolean {
    return vscode.window.tabGroups.all.some((group) => {
      const input = group.activeTab?.input;
      return input instanceof vscode.TabInputWebview && input.viewType.endsWith(DASHBOARD_VIEW_TYPE);
    });
  }

  /** From now on `taker` takes every restored panel, the one held first. */
  handOver(taker: DashboardTaker): void {
    this.taker = taker;
    const held = this.held;
    this.held = undefined;
    if (!held) return;
    for (const d of held.listeners) d.dispose();
    taker(held.restored.panel, held.restored);
  }

  dispose(): void {
    this.registration.dispose();
    this.restoredEmitter.dispose();
    for (const d of this.held?.listeners ?? []) d.dispose();
    this.held = undefined;
  }

  private restore(panel: vscode.WebviewPanel): void {
    if (this.taker) return this.taker(panel, undefined);
    // Only one dashboard at a time: a second restored before the host loads replaces the first.
    if (this.held) {
      for (const d of this.held.listeners) d.dispose();
      this.held.restored.panel.dispose();
    }
    markStartup('restore asked');
    loadDashboardPage(panel, this.extensionUri);
    markStartup('page html set');
    const restored: RestoredDashboard = { panel, loadedAt: Date.now(), messages: [] };
    const listeners = [
      panel.webview.onDidReceiveMessage((raw: unknown) => restored.messages.push(raw)),
      panel.onDidDispose(() => {
        if (this.held?.restored !== restored) return;
        for (const d of listeners) d.dispose();
        this.held = undefined;
      }),
    ];
    this.held = { restored, listeners };
    this.restoredEmitter.fire();
  }
}
