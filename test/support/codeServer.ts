// A real VS Code for tests and the demo: code-server 4.100.3 (VS Code 1.100.3)
// with the packaged extension installed, driven by Debian's Chromium through
// playwright-core. See docs in ../shared/spec/testing.md.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type Browser, type BrowserContext, chromium, type Frame, type Page } from 'playwright-core';
import { freePort } from './freePort';

export { freePort };

export const REPO_ROOT = resolve(__dirname, '..', '..');
export const VSIX = join(REPO_ROOT, 'out', 'thetaevolve.vsix');
export const TEST_OUTPUT = join(REPO_ROOT, 'test-output');
const CODE_SERVER = join(REPO_ROOT, 'tools', 'code-server', 'node_modules', '.bin', 'code-server');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export function codeServerBinary(): string {
  if (!existsSync(CODE_SERVER)) {
    throw new Error(`code-server is not installed at ${CODE_SERVER}: run \`npm run setup\` (scripts/setup.sh) first`);
  }
  return CODE_SERVER;
}

/** A fresh workspace holding a copy of tasks/<taskName> (at tasks/<taskName>) and these workspace settings. */
export function taskWorkspace(prefix: string, taskName: string, settings: Record<string, unknown>): string {
  const workspace = mkdtempSync(join(tmpdir(), prefix));
  cpSync(join(REPO_ROOT, 'tasks', taskName), join(workspace, 'tasks', taskName), { recursive: true });
  mkdirSync(join(workspace, '.vscode'), { recursive: true });
  writeFileSync(join(workspace, '.vscode', 'settings.json'), JSON.stringify(settings, null, 2));
  return workspace;
}

export interface CodeServerOptions {
  workspace: string;
  /** Extra environment for the server and so for the extension host. */
  env?: Record<string, string>;
  /** User settings.json content. */
  userSettings?: Record<string, unknown>;
  port?: number;
  /** Install the packaged extension (default true). */
  installExtension?: boolean;
  /** More .vsix files to install beside it (the in-host test runner). */
  extraExtensions?: string[];
  /** Where user data and extensions live (default: a fresh temp dir). */
  stateDir?: string;
  /**
   * Open the workspace untrusted (Restricted Mode) rather than with Workspace
   * Trust off (default false): trust on, never asked at start, so the folder
   * stays untrusted as a folder someone handed over does until its user says.
   */
  untrusted?: boolean;
}

export interface RunningCodeServer {
  url: string;
  port: number;
  stateDir: string;
  logs: () => string;
  stop: () => Promise<void>;
}

export function installExtension(extensionsDir: string, userDataDir: string, vsix = VSIX): void {
  if (!existsSync(vsix)) throw new Error(`${vsix} is missing: run \`npm run build && npm run package\` first`);
  const result = spawnSync(
    codeServerBinary(),
    ['--extensions-dir', extensionsDir, '--user-data-dir', userDataDir, '--install-extension', vsix, '--force'],
    { encoding: 'utf8', timeout: 120_000 },
  );
  if (result.status !== 0) throw new Error(`installing ${vsix} into code-server failed: ${result.stderr || result.stdout}`);
}

export async function startCodeServer(options: CodeServerOptions): Promise<RunningCodeServer> {
  const stateDir = options.stateDir ?? mkdtempSync(join(tmpdir(), 'thetaevolve-code-server-'));
  const userDataDir = join(stateDir, 'user-data');
  const extensionsDir = join(stateDir, 'extensions');
  mkdirSync(join(userDataDir, 'User'), { recursive: true });
  mkdirSync(extensionsDir, { recursive: true });
  const settings = {
    'workbench.startupEditor': 'none',
    'workbench.tips.enabled': false,
    'telemetry.telemetryLevel': 'off',
    'extensions.autoCheckUpdates': false,
    'extensions.autoUpdate': false,
    'update.mode': 'none',
    'security.workspace.trust.enabled': options.untrusted === true,
    ...(options.untrusted === true
      ? {
          'security.workspace.trust.startupPrompt': 'never',
          'security.workspace.trust.banner': 'never',
          'security.workspace.trust.emptyWindow': false,
        }
      : {}),
    'window.restoreWindows': 'none',
    'workbench.colorTheme': 'Default Dark Modern',
    ...options.userSettings,
  };
  writeFileSync(join(userDataDir, 'User', 'settings.json'), JSON.stringify(settings, null, 2));
  if (options.installExtension !== false) installExtension(extensionsDir, userDataDir);
  for (const vsix of options.extraExtensions ?? []) installExtension(extensionsDir, userDataDir, vsix);

  const port = options.port ?? (await freePort());
  const args = [
    '--auth',
    'none',
    '--bind-addr',
    `127.0.0.1:${port}`,
    '--disable-telemetry',
    '--disable-update-check',
    ...(options.untrusted === true ? [] : ['--disable-workspace-trust']),
    '--disable-getting-started-override',
    '--config',
    join(stateDir, 'config.yaml'),
    '--user-data-dir',
    userDataDir,
    '--extensions-dir',
    extensionsDir,
    '--ignore-last-opened',
    options.workspace,
  ];
  let output = '';
  const child: ChildProcess = spawn(codeServerBinary(), args, {
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`code-server exited (${child.exitCode}):\n${output}`);
    try {
      const res = await fetch(`${url}/healthz`);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`code-server did not answer on ${url} within 60 s:\n${output}`);
    await new Promise((r) => setTimeout(r, 250));
  }
  return {
    url,
    port,
    stateDir,
    logs: () => output,
    stop: async () => {
      if (child.exitCode !== null || child.pid === undefined) return;
      const exited = new Promise<void>((r) => child.once('exit', () => r()));
      try {
        process.kill(-child.pid, 'SIGTERM');
      } catch {
        return;
      }
      const timer = setTimeout(() => {
        try {
          process.kill(-(child.pid as number), 'SIGKILL');
        } catch {
          // already gone
        }
      }, 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-dev-shm-usage',
    ],
  });
}

/** The last lines each page's frames logged about webviews and their service worker (said when a page never shows). */
const webviewConsole = new WeakMap<Page, string[]>();

/** Opens the workbench on `folder` and waits until it is ready. */
export async function openWorkbench(browser: Browser, url: string, folder: string): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
  const page = await context.newPage();
  const lines: string[] = [];
  webviewConsole.set(page, lines);
  page.on('console', (message) => {
    const text = message.text();
    if (!/service ?worker|webview|controller/i.test(text)) return;
    lines.push(`[${message.type()}] ${text.slice(0, 240)}`);
    if (lines.length > 30) lines.shift();
  });
  await page.goto(`${url}/?folder=${encodeURIComponent(folder)}`);
  await page.waitForSelector('.monaco-workbench', { timeout: 90_000 });
  // The activity bar and status bar appear once the workbench has restored.
  await page.waitForSelector('.statusbar', { timeout: 60_000 });
  // Contributions are in once the extension's activity-bar entry shows.
  await page.waitForSelector('.activitybar .action-item a[aria-label^="ThetaEvolve"]', { timeout: 90_000 });
  return page;
}

/** code-server with the packaged extension, and Chromium on its workbench: what an end-to-end suite's before hook opens. */
export interface Workbench {
  server: RunningCodeServer;
  browser: Browser;
  page: Page;
  /** Closes Chromium, then stops code-server. */
  close: () => Promise<void>;
}

/** Starts code-server on `options.workspace`, launches Chromium and opens the workbench; a failure on the way closes what started. */
export async function startWorkbench(options: CodeServerOptions): Promise<Workbench> {
  const server = await startCodeServer(options);
  let browser: Browser | undefined;
  try {
    browser = await launchBrowser();
    const page = await openWorkbench(browser, server.url, options.workspace);
    const opened = browser;
    return {
      server,
      browser,
      page,
      close: async () => {
        await opened.close();
        await server.stop();
      },
    };
  } catch (error) {
    await browser?.close();
    await server.stop();
    throw error;
  }
}

/** Opens the command palette and types a query; returns the visible entries' labels. */
export async function paletteEntries(page: Page, query: string): Promise<string[]> {
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible', timeout: 15_000 });
  await input.fill(`>${query}`);
  await page.waitForTimeout(600);
  const labels = await page.locator('.quick-input-list .monaco-list-row .label-name').allTextContents();
  return labels.map((l) => l.trim());
}

export async function runPaletteCommand(page: Page, title: string): Promise<void> {
  const labels = await paletteEntries(page, title);
  if (!labels.some((l) => l === title)) throw new Error(`command '${title}' is not in the palette (saw: ${labels.join(' | ')})`);
  await page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first().click();
}

/** Distinct colours of a PNG, decoded in a page of `context`, sampling every `every`-th pixel (a blank picture has one or two). */
export async function distinctColours(context: BrowserContext, png: Buffer, every = 1): Promise<number> {
  const probe = await context.newPage();
  try {
    return await probe.evaluate(
      async ([b64, stride]) => {
        const img = new Image();
        img.src = `data:image/png;base64,${b64}`;
        await img.decode();
        const canvas = document.createElement('canvas');
        canvas.width = img.width;
        canvas.height = img.height;
        const ctx = canvas.getContext('2d');
        if (!ctx) return 0;
        ctx.drawImage(img, 0, 0);
        const data = ctx.getImageData(0, 0, img.width, img.height).data;
        const colours = new Set<number>();
        for (let i = 0; i < data.length; i += 4 * stride) colours.add((data[i]! << 16) | (data[i + 1]! << 8) | data[i + 2]!);
        return colours.size;
      },
      [png.toString('base64'), every] as const,
    );
  } finally {
    await probe.close();
  }
}

/**
 * Saves a screenshot and checks it is not blank: decodes it in the browser
 * and counts distinct colours (a blank or single-colour page has very few).
 */
export async function saveScreenshot(page: Page, name: string): Promise<{ file: string; distinctColours: number }> {
  mkdirSync(TEST_OUTPUT, { recursive: true });
  const file = join(TEST_OUTPUT, `${name}.png`);
  const png = await page.screenshot({ path: file });
  return { file, distinctColours: await distinctColours(page.context(), png, 7) };
}

/** Opens a workspace file through Quick Open (Ctrl+P) and waits for its editor tab. */
export async function quickOpenFile(page: Page, relativePath: string): Promise<void> {
  await page.keyboard.press('Control+P');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible', timeout: 15_000 });
  await input.fill(relativePath);
  await page.locator('.quick-input-list .monaco-list-row').first().waitFor({ state: 'visible', timeout: 15_000 });
  await page.waitForTimeout(400);
  await page.keyboard.press('Enter');
  const name = relativePath.split('/').pop() ?? relativePath;
  await page.locator('.tabs-container .tab', { hasText: name }).first().waitFor({ state: 'visible', timeout: 15_000 });
}

/** Opens a program through Quick Open and waits until its EVOLVE-BLOCK is on screen. */
export async function openProgram(page: Page, relativePath: string): Promise<void> {
  await quickOpenFile(page, relativePath);
  await page
    .locator('.monaco-editor .view-lines', { hasText: 'EVOLVE-BLOCK-START' })
    .first()
    .waitFor({ state: 'visible', timeout: 30_000 });
}

/** Opens the program at `relativePath` and starts a run on it from the palette, answering the task pick with the file's own task. */
export async function startRunOnProgram(page: Page, relativePath: string): Promise<void> {
  await openProgram(page, relativePath);
  await runPaletteCommand(page, 'ThetaEvolve: Start Run');
  await pickQuickInputItem(page, "this file's task");
}

/** A mocha afterEach hook: a screenshot named after the failed test, to see what the page showed. */
export function screenshotOnFailure(prefix: string, page: () => Page | undefined): (this: Mocha.Context) => Promise<void> {
  return async function (this: Mocha.Context) {
    const current = page();
    if (this.currentTest?.state !== 'failed' || !current) return;
    const title = (this.currentTest.title.split(' ')[0] ?? 'test').replace(/[^a-z]/gi, '');
    await saveScreenshot(current, `${prefix}-failed-${title}`).catch(() => undefined);
  };
}

/** Picks the entry of an open quick pick whose row contains `text`. */
export async function pickQuickInputItem(page: Page, text: string, timeoutMs = 60_000): Promise<void> {
  const row = page.locator('.quick-input-widget .quick-input-list .monaco-list-row', { hasText: text }).first();
  await row.waitFor({ state: 'visible', timeout: timeoutMs });
  await row.click();
}

/** The text of the first status bar item containing `text`, once it shows and `until` holds (polled). */
/** The step a status bar text shows ("ThetaEvolve step 12 · ..."), or -1. */
export function stepOf(statusText: string): number {
  const match = /step (\d+)/.exec(statusText);
  return match ? Number(match[1]) : -1;
}

export async function waitForStatusBarText(
  page: Page,
  text: string,
  until: (value: string) => boolean = () => true,
  timeoutMs = 120_000,
): Promise<string> {
  const item = page.locator('.statusbar-item', { hasText: text }).first();
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = (await item.isVisible()) ? ((await item.textContent()) ?? '') : '';
    if (value && until(value)) return value.trim();
    if (Date.now() > deadline) throw new Error(`status bar item "${text}" never satisfied the condition (last: "${value}")`);
    await page.waitForTimeout(500);
  }
}

/**
 * The frame of one of our webview pages (`kind`: the marker its script sets
 * on its body) once `ready` says it shows what the test needs. When it never
 * does, the failure says what each frame held: whether the page never loaded
 * (seen now and then in the fresh-clone CI, a blank tab, cause not found) or
 * loaded and never became ready.
 */
export async function webviewFrame(
  page: Page,
  kind: 'dashboard' | 'compare',
  ready: (frame: Frame) => Promise<boolean>,
  timeoutMs = 60_000,
): Promise<Frame> {
  const started = Date.now();
  let workersStopped = false;
  for (;;) {
    for (const frame of page.frames()) {
      const marker = await frame.evaluate(() => document.body?.dataset.thetaevolve ?? null).catch(() => null);
      if (marker === kind && (await ready(frame).catch(() => false))) return frame;
    }
    if (!workersStopped && Date.now() - started > 8_000) {
      // code-server's webviews share one service-worker scope, and a webview can wait on it for good
      // (docs/architecture.md "Webview pages"); the extension opens a blank page again after 10 s. Before that,
      // the webview frames' and workers' state is printed (so a recurrence says where it stuck), every worker
      // registration of the origin cleared (VS Code's and code-server's own) and the browser's workers stopped,
      // so the next page starts afresh. Said, never silent.
      workersStopped = true;
      console.log(`    [e2e] no ${kind} page after 8 s: ${await resetWebviewWorkers(page)}`);
    }
    if (Date.now() - started > timeoutMs) {
      // What each frame held, so a failure says whether the page never loaded or loaded and never became ready.
      const frames = await Promise.all(
        page.frames().map(async (frame) => {
          const body = await frame
            .evaluate(() =>
              document.body ? `${JSON.stringify({ ...document.body.dataset })}, ${document.body.innerText.length} chars` : 'no body',
            )
            .catch((err: unknown) => `unreadable: ${String(err).slice(0, 80)}`);
          return `${frame.url().slice(0, 100)} (${body})`;
        }),
      );
      const logged = webviewConsole.get(page) ?? [];
      throw new Error(
        `the ${kind} webview never showed; frames:\n${frames.join('\n')}\nwebview console (last ${logged.length}):\n${logged.join('\n')}`,
      );
    }
    await page.waitForTimeout(500);
  }
}

/** What `step` said, that it failed, or that it did not answer within 5 s (a wedged browser may never answer). */
function outcomeWithin(step: Promise<string>): Promise<string> {
  return Promise.race([
    step.catch((err: unknown) => `failed: ${String(err).slice(0, 120)}`),
    new Promise<string>((r) => setTimeout(() => r('no answer in 5 s'), 5_000)),
  ]);
}

/** The webview frames and workers as they stand, then every worker registration of the origin cleared and every worker stopped. */
async function resetWebviewWorkers(page: Page): Promise<string> {
  const frames = page.frames().filter((f) => f.url().includes('/webview/browser/pre/'));
  const said = [`${frames.length} webview host frame(s)`];
  for (const frame of frames) {
    const state = await outcomeWithin(
      frame.evaluate(
        () =>
          `${document.readyState}, controller ${navigator.serviceWorker.controller ? (new URL(navigator.serviceWorker.controller.scriptURL).searchParams.get('id')?.slice(0, 8) ?? navigator.serviceWorker.controller.scriptURL.split('/').pop()) : 'none'}`,
      ),
    );
    said.push(`frame ${new URL(frame.url()).searchParams.get('id')?.slice(0, 8) ?? '?'}: ${state}`);
  }
  // No named functions inside: the test's TypeScript loader would wrap them in a helper the page lacks.
  const registrations = page.evaluate(async () => {
    const lines: string[] = [];
    for (const r of await navigator.serviceWorker.getRegistrations()) {
      const workers = (['active', 'waiting', 'installing'] as const).map((k) => {
        const w = r[k];
        const url = w ? new URL(w.scriptURL) : null;
        return `${k} ${w && url ? `${w.state} ${url.searchParams.get('id')?.slice(0, 8) ?? url.pathname.split('/').pop()}` : '-'}`;
      });
      lines.push(`${new URL(r.scope).pathname.split('/').slice(-4).join('/')}: ${workers.join(', ')}`);
    }
    return lines.join('\n      ');
  });
  said.push(`registrations: ${await outcomeWithin(registrations)}`);
  // Through the DevTools protocol, each step bounded: once, a webview registration's own unregister() never answered.
  const session = await page.context().newCDPSession(page);
  const cleared = session.send('Storage.clearDataForOrigin', { origin: new URL(page.url()).origin, storageTypes: 'service_workers' });
  said.push(`cleared every service worker registration of the origin: ${await outcomeWithin(cleared.then(() => 'done'))}`);
  const stopped = (async () => {
    await session.send('ServiceWorker.enable');
    await session.send('ServiceWorker.stopAllWorkers');
    return 'done';
  })();
  said.push(`stopped the browser's service workers: ${await outcomeWithin(stopped)}`);
  await session.detach().catch(() => undefined);
  return said.join('\n      ');
}

/** The dashboard page's frame, once it has the host's first snapshot (not its saved or empty state). */
export function dashboardFrame(page: Page, timeoutMs = 60_000): Promise<Frame> {
  return webviewFrame(page, 'dashboard', (frame) => frame.evaluate(() => document.body?.dataset.synced === 'true'), timeoutMs);
}

/** Pixels the best card's solution picture has drawn (0 while hidden or blank). */
export function bestPictureInk(frame: Frame): Promise<number> {
  return frame.evaluate(() => {
    const canvas = document.querySelector<HTMLCanvasElement>('canvas.best-picture');
    if (!canvas || canvas.hidden || canvas.width === 0) return 0;
    const data = canvas.getContext('2d')?.getImageData(0, 0, canvas.width, canvas.height).data ?? [];
    let inked = 0;
    for (let i = 3; i < data.length; i += 4) if ((data[i] ?? 0) > 0) inked++;
    return inked;
  });
}
