// The HTML of a webview page: its bundle and stylesheet from dist/webview,
// nothing inline but the nonce'd script tag, under a CSP that allows only
// those (and the nonce'd <style> a component library creates, which finds the
// nonce in the csp-nonce meta). One shell for the dashboard and Compare Runs.
import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';

/** The page `<name>.js` and `<name>.css` under `root` (dist/webview), titled `title`. */
export function webviewPageHtml(webview: vscode.Webview, root: vscode.Uri, name: string, title: string): string {
  const nonce = randomBytes(18).toString('base64url');
  const script = webview.asWebviewUri(vscode.Uri.joinPath(root, `${name}.js`));
  const style = webview.asWebviewUri(vscode.Uri.joinPath(root, `${name}.css`));
  const csp = [
    "default-src 'none'",
    `img-src ${webview.cspSource} data:`,
    `font-src ${webview.cspSource}`,
    `style-src ${webview.cspSource} 'nonce-${nonce}'`,
    `script-src 'nonce-${nonce}'`,
  ].join('; ');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<meta property="csp-nonce" content="${nonce}">
<link rel="stylesheet" nonce="${nonce}" href="${style.toString()}">
<title>${title}</title>
</head>
<body>
<main id="app" aria-live="polite"></main>
<script nonce="${nonce}" src="${script.toString()}"></script>
</body>
</html>`;
}
