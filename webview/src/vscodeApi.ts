// The webview's handle to VS Code (acquireVsCodeApi may be called once per page).
import type { DashboardState, PageMessage } from '../../src/protocol/dashboardMessages';

export interface VsCodeApi {
  postMessage(message: PageMessage): void;
  getState(): unknown;
  setState(state: DashboardState): void;
}

declare function acquireVsCodeApi(): VsCodeApi;

let api: VsCodeApi | undefined;

export function vscodeApi(): VsCodeApi {
  api ??= acquireVsCodeApi();
  return api;
}
