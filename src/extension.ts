// The extension's entry (dist/extension.js), kept small: VS Code makes the
// dashboard it restores after Reload Window only once this has registered the
// dashboard's serializer, and the page shows its run as soon as it has its
// html. So the entry registers that first, and when a dashboard tab is shown,
// lets it have its page before loading the rest of the extension
// (dist/extensionMain.js, src/vscode/extensionMain.ts), which then takes the
// panel over (docs/architecture.md "Start-up").
// First: its first mark is when the bundle began to run.
import { markStartup } from './vscode/startupTimeline';
import type * as vscode from 'vscode';
import { DashboardRestore } from './vscode/dashboardRestore';
import type { ThetaEvolveApi } from './vscode/extensionMain';

export type { ThetaEvolveApi };

/** How long a shown dashboard tab's restore is waited for before the rest loads anyway (VS Code asks at once). */
const RESTORE_WAIT_MS = 3_000;

export async function activate(context: vscode.ExtensionContext): Promise<ThetaEvolveApi> {
  markStartup('activate');
  const restore = new DashboardRestore(context.extensionUri);
  context.subscriptions.push(restore);
  markStartup('dashboard serializer registered');
  if (DashboardRestore.shownAfterReload()) {
    await restoredWithin(restore, RESTORE_WAIT_MS);
    // Let the page's html leave for the window before this thread is busy loading the rest.
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
  const { activateMain } = await import('./vscode/extensionMain');
  const api = activateMain(context, restore);
  markStartup('activated');
  return api;
}

function restoredWithin(restore: DashboardRestore, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      listener.dispose();
      resolve();
    };
    const timer = setTimeout(done, ms);
    const listener = restore.onDidRestore(done);
  });
}

export function deactivate(): void {}
