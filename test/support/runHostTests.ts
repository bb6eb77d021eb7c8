// npm run test:host: runs the in-host suite (test/host) inside a real VS Code
// (code-server) beside the packaged extension, through a test-only runner
// extension (test/host/runner, packaged here; the shipped extension has no
// test hook), and fails if it never reports or any in-host test fails.
// Needs `npm run build && npm run package` first (npm test does both).
// THETAEVOLVE_HOST_GREP=<pattern> runs only the tests whose full title matches.
import { spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { launchBrowser, openWorkbench, REPO_ROOT, saveScreenshot, startCodeServer } from './codeServer';

interface Report {
  passes: number;
  failures: number;
  skipped?: number;
  tests: { title: string; state: string; error?: string; durationMs?: number }[];
}

/** A test-only extension built by npm run build into out/test/<name> (the runner, the Python extension's stand-in) as a .vsix in `dir`. */
function packageTestExtension(dir: string, name: string, main: string): string {
  const folder = join(REPO_ROOT, 'out', 'test', name);
  if (!existsSync(join(folder, main))) throw new Error(`${folder} is missing: run \`npm run build\` first`);
  const vsix = join(dir, `host-test-${name}.vsix`);
  // A test-only package: no licence, repository or README to check.
  const vsce = join(REPO_ROOT, 'node_modules', '@vscode', 'vsce', 'vsce');
  const args = [vsce, 'package', '--no-dependencies', '--skip-license', '--allow-missing-repository', '--out', vsix];
  const result = spawnSync(process.execPath, args, { cwd: folder, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`packaging the in-host test extension ${name} failed: ${result.stderr || result.stdout}`);
  return vsix;
}

/**
 * Answer the workbench's ThetaEvolve confirmation dialogs (the agent tools'
 * confirmationMessages, which VS Code asks in a modal dialog when a tool is
 * invoked outside a chat) with Yes, logging each one's message and detail as a
 * JSON line that the in-host test reads; until `done`.
 */
async function answerConfirmations(page: Page, log: string, done: () => boolean): Promise<void> {
  const dialog = page.locator('.monaco-dialog-box');
  while (!done() && !page.isClosed()) {
    const shown = await dialog
      .first()
      .waitFor({ state: 'visible', timeout: 1_000 })
      .then(() => true)
      .catch(() => false);
    if (!shown) continue;
    try {
      const message = (await dialog.locator('.dialog-message-text').first().innerText()).trim();
      // The confirm dialog's buttons are Yes and Cancel, in an order that depends on the platform; another dialog is left to whoever asked it.
      const yes = dialog.locator('.dialog-buttons .monaco-button', { hasText: /^Yes$/ });
      if (message.startsWith('ThetaEvolve:') && (await yes.count()) > 0) {
        const detail = (await dialog.locator('.dialog-message-detail').first().innerText()).trim();
        appendFileSync(log, `${JSON.stringify({ message, detail })}\n`);
        await yes.first().click();
      }
      await dialog.first().waitFor({ state: 'hidden', timeout: 10_000 });
    } catch (err) {
      if (page.isClosed()) return;
      console.log(`test:host: a dialog could not be answered: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
}

async function main(): Promise<number> {
  const bundle = join(REPO_ROOT, 'out', 'test', 'host.js');
  if (!existsSync(bundle)) throw new Error(`${bundle} is missing: run \`npm run build\` first`);
  const scratch = mkdtempSync(join(tmpdir(), 'thetaevolve-host-tests-'));
  const runner = packageTestExtension(scratch, 'runner', 'runner.js');
  // ms-python.python as the tests need it: the active environment is the test's to set (test/host/python.host.ts).
  const pythonExtension = packageTestExtension(scratch, 'pythonExtension', 'extension.js');
  const workspace = join(scratch, 'workspace');
  mkdirSync(join(workspace, 'my-task'), { recursive: true });
  // A malformed task folder in the workspace: the task picker tests list it with its error.
  writeFileSync(join(workspace, 'my-task', 'task.json'), '{}\n');
  const resultsFile = join(scratch, 'results.json');
  // Confirmations the workbench asks in a modal dialog (a tool invoked outside a chat): answered here, as a person would, and logged for the tests.
  const dialogLog = join(scratch, 'dialogs.jsonl');
  const server = await startCodeServer({
    workspace,
    extraExtensions: [runner, pythonExtension],
    env: {
      THETAEVOLVE_HOST_TESTS: bundle,
      THETAEVOLVE_HOST_TEST_RESULTS: resultsFile,
      THETAEVOLVE_TEST_WORKSPACE: workspace,
      THETAEVOLVE_HOST_DIALOGS: dialogLog,
    },
  });
  const browser = await launchBrowser();
  try {
    const page = await openWorkbench(browser, server.url, workspace);
    const answering = answerConfirmations(page, dialogLog, () => existsSync(resultsFile));
    const deadline = Date.now() + 240_000;
    while (!existsSync(resultsFile)) {
      if (Date.now() > deadline) {
        await saveScreenshot(page, 'host-tests-timeout');
        throw new Error(`the in-host suite never reported: did the extension activate? code-server log:\n${server.logs().slice(-4000)}`);
      }
      await new Promise((r) => setTimeout(r, 500));
    }
    await answering;
    await saveScreenshot(page, 'host-tests');
  } finally {
    await browser.close();
    await server.stop();
  }
  const report = JSON.parse(readFileSync(resultsFile, 'utf8')) as Report;
  for (const t of report.tests) {
    console.log(
      `  ${t.state === 'passed' ? '✔' : t.state === 'skipped' ? '-' : '✘'} ${t.title}${t.durationMs !== undefined && t.durationMs >= 1000 ? ` (${t.durationMs} ms)` : ''}`,
    );
    if (t.error) console.log(`      ${t.error.split('\n').slice(0, 8).join('\n      ')}`);
  }
  console.log(
    `\nin-host (code-server): ${report.passes} passed, ${report.failures} failed${report.skipped ? `, ${report.skipped} skipped` : ''}`,
  );
  return report.failures > 0 || report.passes === 0 ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(`test:host: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
