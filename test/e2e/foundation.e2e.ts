// End to end: the packaged .vsix installed into code-server, driven in Chromium.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { dashboardFrame, paletteEntries, runPaletteCommand, saveScreenshot, startWorkbench, type Workbench } from '../support/codeServer';
import { waitFor } from '../support/waitFor';

/**
 * The next `count` webviews to start hang where VS Code's own platform bug
 * leaves them: their service worker registration never settles, so the page
 * is never loaded (a blank tab, as seen now and then in these runs).
 */
async function hangNextWebviews(page: Page, count: number): Promise<void> {
  await page.evaluate((n) => {
    (window as unknown as { thetaevolveHangWebviews: number }).thetaevolveHangWebviews = n;
  }, count);
}

function webviewsLeftToHang(page: Page): Promise<number> {
  return page.evaluate(() => (window as unknown as { thetaevolveHangWebviews?: number }).thetaevolveHangWebviews ?? 0);
}

/** What the palette offers with no run in progress (Stop and Pause show only while a run is). */
const COMMANDS = ['Start Run', 'Resume Run', 'Open Dashboard', 'Show Best Diff', 'Apply Program to File', 'Set API Key', 'Select Task'];

describe('foundation (code-server + Chromium)', () => {
  let workbench: Workbench;
  let page: Page;

  before(async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'thetaevolve-e2e-'));
    mkdirSync(join(workspace, 'demo'), { recursive: true });
    writeFileSync(join(workspace, 'demo', 'task.json'), '{}\n');
    workbench = await startWorkbench({ workspace });
    page = workbench.page;
    // Runs in every frame attached from now on, the webviews' own host frames included (same origin as the workbench in code-server).
    await page.addInitScript(() => {
      if (!location.pathname.endsWith('/webview/browser/pre/index.html') || window.top === window) return;
      const top = window.top as unknown as { thetaevolveHangWebviews?: number } | null;
      if (!top?.thetaevolveHangWebviews) return;
      top.thetaevolveHangWebviews--;
      navigator.serviceWorker.register = () => new Promise<ServiceWorkerRegistration>(() => undefined);
    });
    // Every resource a webview's service worker asks its host frame for is counted, and the next `thetaevolveDropLoads`
    // webviews' are never answered (as when the tab closes mid-load): VS Code's worker then holds the fetch for 30 s.
    await page.addInitScript(() => {
      if (!location.pathname.endsWith('/webview/browser/pre/index.html') || window.top === window) return;
      const top = window.top as unknown as { thetaevolveResourceLoads?: string[]; thetaevolveDropLoads?: number } | null;
      if (!top) return;
      const drop = (top.thetaevolveDropLoads ?? 0) > 0;
      if (drop) top.thetaevolveDropLoads = (top.thetaevolveDropLoads ?? 1) - 1;
      const worker = navigator.serviceWorker;
      const add = worker.addEventListener.bind(worker);
      worker.addEventListener = ((type: string, listener: (e: Event) => void, options?: boolean | AddEventListenerOptions) => {
        if (type !== 'message') return add(type, listener, options);
        return add(
          'message',
          (e: MessageEvent<{ channel?: string; path?: string } | null>) => {
            if (e.data?.channel === 'load-resource') {
              (top.thetaevolveResourceLoads ??= []).push(`${drop ? 'dropped' : 'answered'} ${e.data.path ?? ''}`);
              if (drop) return;
            }
            listener(e);
          },
          options,
        );
      }) as typeof worker.addEventListener;
    });
  });

  after(async () => {
    await workbench?.close();
  });

  it('lists the ThetaEvolve commands in the command palette that apply with no run in progress', async () => {
    const labels = await paletteEntries(page, 'ThetaEvolve: ');
    await saveScreenshot(page, 'e2e-foundation-palette');
    for (const title of COMMANDS)
      assert.ok(labels.includes(`ThetaEvolve: ${title}`), `missing "ThetaEvolve: ${title}" in ${labels.join(' | ')}`);
    for (const title of ['Stop Run', 'Pause Run'])
      assert.ok(!labels.includes(`ThetaEvolve: ${title}`), `"ThetaEvolve: ${title}" listed with no run: ${labels.join(' | ')}`);
    await page.keyboard.press('Escape');
  });

  it('activates: a command handler answers in a notification', async () => {
    const labels = await paletteEntries(page, 'ThetaEvolve: Show Best Diff');
    assert.ok(labels.includes('ThetaEvolve: Show Best Diff'));
    await page.keyboard.press('Enter');
    const toast = page.locator('.notifications-toasts .notification-list-item-message', { hasText: 'ThetaEvolve' });
    await toast.first().waitFor({ state: 'visible', timeout: 60_000 });
  });

  it('shows the ThetaEvolve view in the activity bar, and the screenshot is not blank', async () => {
    await page.locator('.activitybar .action-item a[aria-label^="ThetaEvolve"]').first().click();
    await page.getByText('No runs yet').first().waitFor({ state: 'visible', timeout: 60_000 });
    const shot = await saveScreenshot(page, 'e2e-foundation-view');
    assert.ok(shot.distinctColours > 20, `screenshot ${shot.file} looks blank (${shot.distinctColours} colours)`);
  });

  it('the dashboard fetches nothing through the webview service worker, so one closed while it loads holds up no later webview', async () => {
    // Were the page's script and style fetched, the first tab's fetches would stay unanswered: closed, it would leave
    // VS Code's worker holding them for 30 s, and no dashboard opened meanwhile would start (seen: the next showed after 29.6 s).
    await page.evaluate(() => {
      const top = window as unknown as { thetaevolveResourceLoads?: string[]; thetaevolveDropLoads?: number };
      top.thetaevolveResourceLoads = [];
      top.thetaevolveDropLoads = 1;
    });
    await runPaletteCommand(page, 'ThetaEvolve: Open Dashboard');
    // Closed as soon as its tab is there (the new webview takes the focus from the palette, so not through the palette).
    const tab = page.locator('.tabs-container .tab', { hasText: 'ThetaEvolve Dashboard' });
    await tab.locator('.tab-actions .action-label').first().click();
    await waitFor(async () => (await tab.count()) === 0, { what: 'the first dashboard tab closed', deadlineMs: 60_000 });
    await runPaletteCommand(page, 'ThetaEvolve: Open Dashboard');
    // Well within the 30 s a held fetch would cost.
    await dashboardFrame(page, 20_000);
    const loads = await page.evaluate(() => (window as unknown as { thetaevolveResourceLoads?: string[] }).thetaevolveResourceLoads ?? []);
    assert.deepEqual(loads, [], 'resources the webviews asked VS Code for');
    await page.evaluate(() => {
      (window as unknown as { thetaevolveDropLoads?: number }).thetaevolveDropLoads = 0;
    });
    await runPaletteCommand(page, 'View: Close Editor');
  });

  it('a dashboard tab VS Code never starts is opened again in its place, and the page shows', async () => {
    await hangNextWebviews(page, 1);
    await runPaletteCommand(page, 'ThetaEvolve: Open Dashboard');
    // The first tab hangs (blank); 10 s later a new one replaces it and loads.
    const frame = await dashboardFrame(page, 60_000);
    assert.equal(await webviewsLeftToHang(page), 0, 'the first dashboard webview was hung');
    assert.equal(await page.locator('.tabs-container .tab', { hasText: 'ThetaEvolve Dashboard' }).count(), 1, 'one dashboard tab');
    await frame.locator('body').waitFor({ state: 'visible' });
    const shot = await saveScreenshot(page, 'e2e-foundation-dashboard-replaced');
    assert.ok(shot.distinctColours > 20, `screenshot ${shot.file} looks blank (${shot.distinctColours} colours)`);
    await runPaletteCommand(page, 'View: Close Editor');
  });

  it('after three blank tabs it closes the last and says so, offering Reload Window; opening the dashboard again starts afresh', async () => {
    await hangNextWebviews(page, 3);
    await runPaletteCommand(page, 'ThetaEvolve: Open Dashboard');
    const warning = page.locator('.notifications-toasts .notification-list-item', { hasText: 'the dashboard did not load' }).first();
    await warning.waitFor({ state: 'visible', timeout: 90_000 });
    // The toast slides in: the screenshot waits until it is whole in the window.
    await waitFor(
      async () => {
        const box = await warning.boundingBox();
        return box !== null && box.y + box.height <= (page.viewportSize()?.height ?? 0);
      },
      { what: 'the warning toast whole in the window', deadlineMs: 60_000 },
    );
    assert.ok(await warning.getByRole('button', { name: 'Reload Window' }).isVisible(), 'Reload Window offered');
    await waitFor(async () => (await page.locator('.tabs-container .tab', { hasText: 'ThetaEvolve Dashboard' }).count()) === 0, {
      what: 'the blank dashboard tab closed',
      deadlineMs: 60_000,
    });
    await saveScreenshot(page, 'e2e-foundation-dashboard-did-not-load');
    assert.equal(await webviewsLeftToHang(page), 0);
    await runPaletteCommand(page, 'ThetaEvolve: Open Dashboard');
    await dashboardFrame(page, 30_000);
    await runPaletteCommand(page, 'View: Close Editor');
  });
});
