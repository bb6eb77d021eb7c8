// End to end: the packaged .vsix installed into code-server, driven in Chromium.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import {
  launchBrowser,
  openWorkbench,
  paletteEntries,
  type RunningCodeServer,
  saveScreenshot,
  startCodeServer,
} from '../support/codeServer';

/** What the palette offers with no run in progress (Stop and Pause show only while a run is). */
const COMMANDS = ['Start Run', 'Resume Run', 'Open Dashboard', 'Show Best Diff', 'Apply Program to File', 'Set API Key', 'Select Task'];

describe('foundation (code-server + Chromium)', () => {
  let server: RunningCodeServer;
  let browser: Browser;
  let page: Page;

  before(async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'thetaevolve-e2e-'));
    mkdirSync(join(workspace, 'demo'), { recursive: true });
    writeFileSync(join(workspace, 'demo', 'task.json'), '{}\n');
    server = await startCodeServer({ workspace });
    browser = await launchBrowser();
    page = await openWorkbench(browser, server.url, workspace);
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
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
    await toast.first().waitFor({ state: 'visible', timeout: 30_000 });
  });

  it('shows the ThetaEvolve view in the activity bar, and the screenshot is not blank', async () => {
    await page.locator('.activitybar .action-item a[aria-label^="ThetaEvolve"]').first().click();
    await page.getByText('No runs yet').first().waitFor({ state: 'visible', timeout: 30_000 });
    const shot = await saveScreenshot(page, 'e2e-foundation-view');
    assert.ok(shot.distinctColours > 20, `screenshot ${shot.file} looks blank (${shot.distinctColours} colours)`);
  });
});
