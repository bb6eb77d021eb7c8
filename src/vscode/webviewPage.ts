// The HTML of a webview page: its bundle and stylesheet from dist/webview,
// inline under a nonce, with a CSP that allows only those (and the nonce'd
// <style> a component library creates, which finds the nonce in the
// csp-nonce meta). One shell for the dashboard and Compare Runs.
//
// Inline, not loaded by URL: in a browser VS Code every webview resource is
// fetched through one service worker shared by all webviews, and a fetch
// whose webview closes before the answer holds that worker for VS Code's 30 s
// resource timeout; meanwhile no newly opened webview starts (the next one's
// worker cannot take over). A page that fetches nothing cannot leave such a
// fetch behind (docs/architecture.md "Webview pages").
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as vscode from 'vscode';
import { inlineScriptText, inlineStyleText } from '../engine/common/inlineElementText';

/** Bundles read and escaped for their element once per extension host: they change only with the extension. */
const assets = new Map<string, string>();

function asset(root: vscode.Uri, file: string, escape: (text: string) => string): string {
  const path = vscode.Uri.joinPath(root, file).fsPath;
  let text = assets.get(path);
  if (text === undefined) {
    text = escape(readFileSync(path, 'utf8'));
    assets.set(path, text);
  }
  return text;
}

/** The bundle's source map comment, pointed at the map beside it (DevTools fetches it only when open). */
function withSourceMapUrl(text: string, webview: vscode.Webview, root: vscode.Uri): string {
  return text.replace(
    /([#@] sourceMappingURL=)([\w.-]+\.map)/,
    (_, comment: string, file: string) => `${comment}${webview.asWebviewUri(vscode.Uri.joinPath(root, file)).toString()}`,
  );
}

/** The page `<name>.js` and `<name>.css` under `root` (dist/webview), titled `title`. */
export function webviewPageHtml(webview: vscode.Webview, root: vscode.Uri, name: string, title: string): string {
  const nonce = randomBytes(18).toString('base64url');
  const script = withSourceMapUrl(asset(root, `${name}.js`, inlineScriptText), webview, root);
  const style = withSourceMapUrl(asset(root, `${name}.css`, inlineStyleText), webview, root);
  const csp = [
    "default-src 'none'",
    `img-src ${webview.cspSource} data:`,
    `font-src ${webview.cspSource}`,
    `style-src 'nonce-${nonce}'`,
    `script-src 'nonce-${nonce}'`,
  ].join('; ');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<meta property="csp-nonce" content="${nonce}">
<style nonce="${nonce}">${style}</style>
<title>${title}</title>
</head>
<body>
<main id="app" aria-live="polite"></main>
<script nonce="${nonce}">${script}</script>
</body>
</html>`;
}
