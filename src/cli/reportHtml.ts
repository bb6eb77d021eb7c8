// The `thetaevolve report` HTML file: one self-contained page (the Compare
// Runs page's script and style inline, the comparison embedded as JSON, no
// network: its CSP allows nothing from outside the file). Everything of a run
// reaches the page as data and is drawn as text (docs/architecture.md
// "Comparing runs").
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import * as path from 'node:path';
import { inlineScriptText, inlineStyleText } from '../engine/common/inlineElementText';
import { EMBEDDED_COMPARISON_ID, type RunComparison } from '../engine/common/runComparison';
import { InputError } from './io';

/** The page's own script and style, built by `npm run build` (dist/webview/compare.*). */
export interface ReportAssets {
  script: string;
  style: string;
}

/** Beside the CLI bundle (dist/cli.js), or the repository's dist/ when the CLI runs from its sources. */
function assetFolder(): string {
  const besideBundle = path.join(__dirname, 'webview');
  return existsSync(path.join(besideBundle, 'compare.js')) ? besideBundle : path.join(__dirname, '..', '..', 'dist', 'webview');
}

export async function readReportAssets(): Promise<ReportAssets> {
  const folder = assetFolder();
  try {
    const [script, style] = await Promise.all([
      readFile(path.join(folder, 'compare.js'), 'utf8'),
      readFile(path.join(folder, 'compare.css'), 'utf8'),
    ]);
    return { script, style };
  } catch (err) {
    throw new InputError(`the report page is not built (${path.join(folder, 'compare.js')} is missing): run npm run build`, { cause: err });
  }
}

/** Text for an HTML element or attribute. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** JSON that cannot end the script element it sits in, nor be read as markup. */
export function jsonForScript(value: unknown): string {
  return JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** A light theme of the --vscode-* variables the page reads (a report is read outside the editor). */
const REPORT_THEME = `
:root {
  color-scheme: light;
  --vscode-foreground: #1f2328;
  --vscode-descriptionForeground: #59636e;
  --vscode-editor-background: #ffffff;
  --vscode-font-family: system-ui, -apple-system, 'Segoe UI', sans-serif;
  --vscode-editor-font-family: ui-monospace, 'Cascadia Mono', 'DejaVu Sans Mono', monospace;
  --vscode-charts-lines: #59636e;
  --vscode-charts-blue: #0969da;
  --vscode-charts-orange: #bc4c00;
  --vscode-charts-green: #1a7f37;
  --vscode-charts-purple: #8250df;
  --vscode-charts-red: #cf222e;
  --vscode-charts-yellow: #9a6700;
  --vscode-errorForeground: #cf222e;
  --vscode-button-background: #0969da;
  --vscode-button-foreground: #ffffff;
}`;

export function reportHtml(comparison: RunComparison, assets: ReportAssets): string {
  const nonce = randomBytes(16).toString('base64');
  const title = `ThetaEvolve report: ${comparison.runs.map((r) => r.label).join(' vs ')}`;
  return [
    '<!DOCTYPE html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'nonce-${nonce}'; script-src 'nonce-${nonce}'">`,
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${escapeHtml(title)}</title>`,
    `<style nonce="${nonce}">${REPORT_THEME}\n${inlineStyleText(assets.style)}</style>`,
    '</head>',
    '<body>',
    '<main id="app"></main>',
    `<script type="application/json" id="${EMBEDDED_COMPARISON_ID}">${jsonForScript(comparison)}</script>`,
    `<script nonce="${nonce}">${inlineScriptText(assets.script)}</script>`,
    '</body>',
    '</html>',
    '',
  ].join('\n');
}
