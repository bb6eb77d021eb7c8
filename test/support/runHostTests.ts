// npm run test:host: runs the in-host suite (test/host) inside a real VS Code
// (code-server) beside the packaged extension, through a test-only runner
// extension (test/host/runner, packaged here; the shipped extension has no
// test hook), and fails if it never reports or any in-host test fails.
// Needs `npm run build && npm run package` first (npm test does both).
// THETAEVOLVE_HOST_GREP=<pattern> runs only the tests whose full title matches;
// THETAEVOLVE_HOST_PASS=trusted|untrusted runs one of the two passes (default both).
import { spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
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
 * Answer the workbench's ThetaEvolve dialogs as a person would, until `done`:
 * a confirmation with Yes (the agent tools' confirmationMessages, which VS
 * Code asks in a modal dialog when a tool is invoked outside a chat) is
 * confirmed; any other ThetaEvolve modal (the run database's task folder or
 * program file outside the workspace, src/vscode/runTrust.ts) is declined
 * with Cancel. Each is logged as a JSON line ({ message, detail, answer })
 * that the in-host tests read. ThetaEvolve notifications are logged too
 * ({ notification, links }) and every link VS Code rendered in one is
 * clicked, as the person the issue 42 links were made for would: a test then
 * sees whether the command behind it ran.
 */
async function answerDialogs(page: Page, log: string, done: () => boolean): Promise<void> {
  const dialog = page.locator('.monaco-dialog-box');
  const seenNotifications = new Set<string>();
  while (!done() && !page.isClosed()) {
    try {
      await logNotifications(page, log, seenNotifications);
    } catch (err) {
      if (page.isClosed()) return;
      console.log(`test:host: a notification could not be read: ${err instanceof Error ? err.message : String(err)}`);
    }
    const shown = await dialog
      .first()
      .waitFor({ state: 'visible', timeout: 1_000 })
      .then(() => true)
      .catch(() => false);
    if (!shown) continue;
    try {
      const message = (await dialog.locator('.dialog-message-text').first().innerText()).trim();
      if (message.startsWith('ThetaEvolve:')) {
        // The buttons' order depends on the platform; a dialog of someone else's is left to whoever asked it.
        const yes = dialog.locator('.dialog-buttons .monaco-button', { hasText: /^Yes$/ });
        const cancel = dialog.locator('.dialog-buttons .monaco-button', { hasText: /^Cancel$/ });
        const answer = (await yes.count()) > 0 ? 'Yes' : (await cancel.count()) > 0 ? 'Cancel' : undefined;
        if (answer) {
          const detail = (await dialog.locator('.dialog-message-detail').first().innerText()).trim();
          appendFileSync(log, `${JSON.stringify({ message, detail, answer })}\n`);
          await (answer === 'Yes' ? yes : cancel).first().click();
        }
      }
      await dialog.first().waitFor({ state: 'hidden', timeout: 10_000 });
    } catch (err) {
      if (page.isClosed()) return;
      console.log(`test:host: a dialog could not be answered: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
}

/** Logs each ThetaEvolve notification on screen once, with the links VS Code rendered in it, and clicks those links. */
async function logNotifications(page: Page, log: string, seen: Set<string>): Promise<void> {
  const messages = page.locator('.notification-list-item-message');
  for (let i = 0; i < (await messages.count()); i++) {
    const message = messages.nth(i);
    // A toast may hide between the count and the read: it is read again while it shows.
    const text = (await message.innerText({ timeout: 1_000 }).catch(() => '')).trim();
    if (!text.startsWith('ThetaEvolve') || seen.has(text)) continue;
    seen.add(text);
    const anchors = message.locator('a');
    const links: string[] = [];
    for (let a = 0; a < (await anchors.count()); a++)
      links.push((await anchors.nth(a).getAttribute('href')) ?? (await anchors.nth(a).innerText()));
    for (let a = 0; a < links.length; a++)
      await anchors
        .nth(a)
        .click({ timeout: 2_000 })
        .catch(() => undefined);
    appendFileSync(log, `${JSON.stringify({ notification: text, links })}\n`);
  }
}

/**
 * One pass of the in-host suite in a fresh code-server: with Workspace Trust
 * off (the suites of a trusted workspace), or on with the folder untrusted
 * (the suites whose title says "untrusted workspace", test/host/index.ts).
 */
async function runPass(untrusted: boolean): Promise<Report> {
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
  // The suite names each test as it starts: the deadline below is for news, not for the whole suite.
  const progressFile = join(scratch, 'progress.txt');
  // Dialogs the workbench shows (a confirmation, a modal of ours) answered here, as a person would, and logged for the tests.
  const dialogLog = join(scratch, 'dialogs.jsonl');
  const server = await startCodeServer({
    workspace,
    untrusted,
    extraExtensions: [runner, pythonExtension],
    env: {
      THETAEVOLVE_HOST_TESTS: bundle,
      THETAEVOLVE_HOST_TEST_RESULTS: resultsFile,
      THETAEVOLVE_TEST_WORKSPACE: workspace,
      THETAEVOLVE_HOST_DIALOGS: dialogLog,
      THETAEVOLVE_HOST_PROGRESS: progressFile,
      ...(untrusted ? { THETAEVOLVE_HOST_UNTRUSTED: '1' } : {}),
    },
  });
  const browser = await launchBrowser();
  const name = untrusted ? 'host-tests-untrusted' : 'host-tests';
  try {
    const page = await openWorkbench(browser, server.url, workspace);
    const answering = answerDialogs(page, dialogLog, () => existsSync(resultsFile));
    const started = Date.now();
    while (!existsSync(resultsFile)) {
      const news = existsSync(progressFile) ? statSync(progressFile).mtimeMs : started;
      if (Date.now() - news > NO_NEWS_MS) {
        await saveScreenshot(page, `${name}-timeout`);
        const running = existsSync(progressFile) ? readFileSync(progressFile, 'utf8').trim().split('\n').at(-1) : undefined;
        throw new Error(
          running
            ? `the in-host test "${running}" has run for ${Math.round(NO_NEWS_MS / 1000)} s without an end`
            : `the in-host suite never started: did the extension activate? code-server log:\n${server.logs().slice(-4000)}`,
        );
      }
      await new Promise((r) => setTimeout(r, 500));
    }
    await answering;
    await saveScreenshot(page, name);
  } finally {
    await browser.close();
    await server.stop();
  }
  return JSON.parse(readFileSync(resultsFile, 'utf8')) as Report;
}

/** How long the suite may go without starting a test (each test has its own mocha timeout, most well under this). */
const NO_NEWS_MS = 300_000;

/** THETAEVOLVE_HOST_PASS: trusted, untrusted, or both (default). */
function passes(): boolean[] {
  const pass = process.env.THETAEVOLVE_HOST_PASS ?? 'both';
  if (pass === 'trusted') return [false];
  if (pass === 'untrusted') return [true];
  if (pass === 'both') return [false, true];
  throw new Error(`THETAEVOLVE_HOST_PASS is ${pass}: trusted, untrusted or both`);
}

async function main(): Promise<number> {
  let passed = 0;
  let failed = 0;
  for (const untrusted of passes()) {
    const report = await runPass(untrusted);
    for (const t of report.tests) {
      console.log(
        `  ${t.state === 'passed' ? '✔' : t.state === 'skipped' ? '-' : '✘'} ${t.title}${t.durationMs !== undefined && t.durationMs >= 1000 ? ` (${t.durationMs} ms)` : ''}`,
      );
      if (t.error) console.log(`      ${t.error.split('\n').slice(0, 8).join('\n      ')}`);
    }
    console.log(
      `\nin-host (code-server, ${untrusted ? 'untrusted' : 'trusted'} workspace): ${report.passes} passed, ${report.failures} failed${report.skipped ? `, ${report.skipped} skipped` : ''}\n`,
    );
    passed += report.passes;
    failed += report.failures;
  }
  return failed > 0 || passed === 0 ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(`test:host: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
