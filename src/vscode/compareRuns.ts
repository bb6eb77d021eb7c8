// Compare Runs (docs/architecture.md "Comparing runs"): two or more runs,
// picked in the Runs view (multi-select) or from the palette, on one page
// (the Compare Runs page of webview/src/compare, also the page of
// `thetaevolve report`). The runs are read by the engine worker from their
// databases; a live run among them is read again after each step it commits.
import * as vscode from 'vscode';
import { pickMany, showInfo } from './notify';
import { WebviewLoadWatch } from './webviewLoadWatch';
import { webviewPageHtml } from './webviewPage';
import { errorMessage } from '../engine/common/errors';
import type { RunComparison } from '../engine/common/runComparison';
import { type CompareHostMessage, parseComparePageMessage } from '../protocol/compareMessages';
import { COMMAND_IDS } from './commandIds';
import { registerCommand } from './commandRegistry';
import { listRunFiles, type RunController } from './runController';
import { isRunNode } from './runsTree';

export const COMPARE_VIEW_TYPE = 'thetaevolve.compareRuns';

const posted = new vscode.EventEmitter<CompareHostMessage>();
/** Each message posted to the Compare Runs page (the in-host tests watch it). */
export const onDidPostComparison = posted.event;

/** The run databases a Compare Runs invocation names: the Runs view's selection, or none (then asked for). */
export function selectedRunFiles(args: readonly unknown[]): string[] {
  const [clicked, selection] = args;
  const nodes = Array.isArray(selection) ? (selection as unknown[]) : [clicked];
  return [...new Set(nodes.filter(isRunNode).map((n) => n.dbFile))];
}

/** The one Compare Runs panel of a window. */
export class CompareRunsHost implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;
  private files: string[] = [];
  private pageReady = false;
  /** A read is going: a step committed meanwhile reads again once it is done, not once per step. */
  private reading: Promise<void> | null = null;
  private readAgain = false;
  private readonly disposables: vscode.Disposable[] = [];
  private readonly loadWatch = new WebviewLoadWatch({
    what: 'Compare Runs',
    reloadsWhenShown: false,
    reopen: (column) => this.show(this.files, column),
  });

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly controller: RunController,
  ) {
    this.disposables.push(
      controller.onDidEngineEvent(({ event }) => {
        const live = controller.active?.dbFile;
        if (event.type === 'step_committed' && live !== undefined && this.files.includes(live)) this.refresh();
      }),
    );
  }

  show(files: readonly string[], column: vscode.ViewColumn = vscode.ViewColumn.Active): void {
    this.files = [...files];
    if (!this.panel) {
      const root = vscode.Uri.joinPath(this.extensionUri, 'dist', 'webview');
      this.panel = vscode.window.createWebviewPanel(COMPARE_VIEW_TYPE, 'Compare Runs', column, {
        enableScripts: true,
        retainContextWhenHidden: true,
        localResourceRoots: [root],
      });
      this.pageReady = false;
      const panel = this.panel;
      panel.webview.onDidReceiveMessage((raw: unknown) => {
        if (parseComparePageMessage(raw)?.type !== 'ready') return;
        this.pageReady = true;
        this.loadWatch.readied();
        this.refresh();
      });
      panel.onDidDispose(() => {
        if (this.panel === panel) this.panel = undefined;
      });
      this.loadWatch.loading(panel);
      panel.webview.html = webviewPageHtml(panel.webview, root, 'compare', 'Compare Runs');
    } else {
      this.panel.reveal();
      this.refresh();
    }
  }

  /** Reads the runs again and posts them (coalesced while a read is going). */
  private refresh(): void {
    if (!this.panel || !this.pageReady) return;
    if (this.reading) {
      this.readAgain = true;
      return;
    }
    this.reading = this.read().finally(() => {
      this.reading = null;
      if (this.readAgain) {
        this.readAgain = false;
        this.refresh();
      }
    });
  }

  private async read(): Promise<void> {
    let message: CompareHostMessage;
    try {
      const comparison: RunComparison = await this.controller.query({ kind: 'comparison', dbFiles: this.files });
      message = { type: 'comparison', comparison };
    } catch (err) {
      message = { type: 'error', message: `The runs could not be read: ${errorMessage(err)}` };
    }
    if (!this.panel) return;
    await this.panel.webview.postMessage(message);
    posted.fire(message);
  }

  dispose(): void {
    this.loadWatch.dispose();
    this.panel?.dispose();
    for (const d of this.disposables.splice(0)) d.dispose();
  }
}

/** Asks for the runs to compare (two or more) among the workspace's run databases; those in `picked` come checked. */
async function pickRuns(picked: readonly string[]): Promise<string[] | undefined> {
  const files = await listRunFiles();
  if (files.length < 2) {
    void showInfo(`ThetaEvolve: Compare Runs needs two or more runs; this workspace has ${files.length === 0 ? 'none' : 'one'}.`);
    return undefined;
  }
  const items = files.map((f) => ({ label: f.runId, description: vscode.workspace.asRelativePath(f.dbFile), dbFile: f.dbFile }));
  const chosen = (
    await pickMany(items, {
      title: 'ThetaEvolve: Compare Runs',
      placeHolder: 'Pick two or more runs to compare',
      selected: (item) => picked.includes(item.dbFile),
    })
  )?.map((item) => item.dbFile);
  if (chosen && chosen.length < 2) {
    void showInfo('ThetaEvolve: pick two or more runs to compare.');
    return undefined;
  }
  return chosen;
}

export function registerCompareRuns(context: vscode.ExtensionContext, controller: RunController): CompareRunsHost {
  const host = new CompareRunsHost(context.extensionUri, controller);
  context.subscriptions.push(host);
  registerCommand(context, COMMAND_IDS.compareRuns, async (...args: unknown[]) => {
    const selected = selectedRunFiles(args);
    const files = selected.length >= 2 ? selected : await pickRuns(selected);
    if (files) host.show(files);
  });
  return host;
}
