// End to end: steering a run from the editor (issue 29) in code-server +
// Chromium, with the offline sampler: Add This File to the Run during a run,
// the guidance document saved into the run, then on the stopped run the
// lineage of a program from the Runs view and the blame annotations of a
// program document. Screenshots of each in test-output/.
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import {
  dashboardFrame,
  runPaletteCommand,
  saveScreenshot,
  screenshotOnFailure,
  startRunOnProgram,
  startWorkbench,
  stepOf,
  taskWorkspace,
  waitForStatusBarText,
  type Workbench,
} from '../support/codeServer';
import { waitFor } from '../support/waitFor';

/** A context menu item: hovered (it takes the focus) and chosen with Enter (a click can land before the menu takes clicks). */
async function chooseMenuItem(page: Page, label: string): Promise<void> {
  const item = page.locator('.monaco-menu .action-item', { hasText: label }).first();
  await item.hover();
  await page.locator('.monaco-menu .action-item.focused', { hasText: label }).first().waitFor({ state: 'visible', timeout: 60_000 });
  await page.keyboard.press('Enter');
  await page.locator('.monaco-menu').first().waitFor({ state: 'hidden', timeout: 60_000 });
}

const notification = (page: Page, text: string | RegExp) =>
  page.locator('.notifications-toasts .notification-list-item-message', { hasText: text }).first();

describe('steer a run from the editor (code-server + Chromium, offline sampler)', () => {
  let workbench: Workbench;
  let page: Page;

  before(async () => {
    const workspace = taskWorkspace('thetaevolve-e2e-steer-', 'circle-packing', {
      'thetaevolve.sampler': 'mutate',
      'thetaevolve.batchSize': 2,
      'thetaevolve.samplesPerPrompt': 2,
      'thetaevolve.evaluationConcurrency': 2,
      'thetaevolve.database.preset': 'small',
    });
    workbench = await startWorkbench({ workspace });
    page = workbench.page;
  });

  afterEach(screenshotOnFailure('e2e-steer', () => page));

  after(async () => {
    await workbench?.close();
  });

  it('adds the open file, as edited, to the running run', async () => {
    await startRunOnProgram(page, 'tasks/circle-packing/initial.py');
    await waitForStatusBarText(page, 'ThetaEvolve step', (t) => stepOf(t) >= 1, 120_000);
    // An edit of the code (not a comment: the run already has the file as it was), left unsaved.
    await page.locator('.editor-instance .view-lines').first().click();
    await page.keyboard.press('Control+End');
    await page.keyboard.type('\n_steered_by_hand = 1\n');
    await runPaletteCommand(page, 'ThetaEvolve: Add This File to the Run');
    await notification(page, /added program \w+ \(valid/).waitFor({ state: 'visible', timeout: 120_000 });
    const shot = await saveScreenshot(page, 'e2e-steer-1-add-file');
    assert.ok(shot.distinctColours > 20, `${shot.file} looks blank`);
  });

  it('saves guidance into the running run from its guidance document', async () => {
    await runPaletteCommand(page, 'ThetaEvolve: Edit Guidance');
    const tab = page.locator('.tabs-container .tab.active', { hasText: 'guidance.md' });
    await tab.waitFor({ state: 'visible', timeout: 60_000 });
    await page.locator('.editor-instance .view-lines').first().click();
    await page.keyboard.type('Prefer circles that touch the border of the square.');
    await page.keyboard.press('Control+S');
    await notification(page, /step \d+: guidance set \(run /).waitFor({ state: 'visible', timeout: 120_000 });
    await saveScreenshot(page, 'e2e-steer-2-guidance');
    // The dashboard's database facts name the guidance in force and since which step.
    await runPaletteCommand(page, 'ThetaEvolve: Open Dashboard');
    const frame = await dashboardFrame(page);
    await frame
      .getByText(/since step \d+: Prefer circles that touch the border/)
      .first()
      .waitFor({ state: 'visible', timeout: 60_000 });
    // The panel stays while its facts are redrawn after each step.
    await frame.locator('.db-panel').first().scrollIntoViewIfNeeded();
    await saveScreenshot(page, 'e2e-steer-2b-dashboard-guidance');
    // The dashboard stays open through the stop, as a researcher's does: a new dashboard webview opened right after
    // this one closed is where the fresh-clone CI saw VS Code start none (docs/architecture.md "Webview pages").
    await runPaletteCommand(page, 'ThetaEvolve: Stop Run');
    await waitForStatusBarText(page, 'ThetaEvolve step', (t) => /stopped|done/.test(t), 60_000);
  });

  it("the dashboard's best card opens the best program's lineage", async () => {
    // The dashboard left open by the run: Open Dashboard brings it to the front.
    await runPaletteCommand(page, 'ThetaEvolve: Open Dashboard');
    const frame = await dashboardFrame(page);
    const button = frame.locator('.best-card vscode-button', { hasText: 'Lineage' }).first();
    await button.waitFor({ state: 'visible', timeout: 60_000 });
    await waitFor(async () => (await button.getAttribute('disabled')) === null, { what: 'the Lineage button enabled', deadlineMs: 60_000 });
    await button.click();
    const picks = page.locator('.quick-input-widget', { hasText: /Lineage of (step \d+ #\d+|initial)/ }).first();
    await picks.waitFor({ state: 'visible', timeout: 60_000 });
    await saveScreenshot(page, 'e2e-steer-3a-dashboard-lineage');
    await page.keyboard.press('Escape');
    await runPaletteCommand(page, 'View: Close Editor');
  });

  it("shows a program's lineage from the Runs view, each entry opening the diff to its parent", async () => {
    await page.locator('.activitybar .action-item a[aria-label^="ThetaEvolve"]').first().click();
    const view = page.locator('.pane', { has: page.locator('.pane-header', { hasText: 'Runs' }) }).first();
    const run = view.locator('.monaco-list-row', { hasText: 'circle-packing-' }).first();
    await run.waitFor({ state: 'visible', timeout: 60_000 });
    // The run is stopped: its rows no longer change under the pointer.
    const child = view.locator('.monaco-list-row', { hasText: /step [1-9]\d* #\d+ · / }).first();
    if (!(await child.isVisible())) await run.click();
    await child.waitFor({ state: 'visible', timeout: 60_000 });
    await child.click({ button: 'right' });
    await chooseMenuItem(page, 'Show Lineage');
    const picks = page.locator('.quick-input-widget .monaco-list-row');
    await picks.first().waitFor({ state: 'visible', timeout: 60_000 });
    assert.ok((await picks.count()) >= 2, 'the program and at least its parent');
    await saveScreenshot(page, 'e2e-steer-3-lineage');
    await page.keyboard.press('Enter');
    await page.locator('.monaco-diff-editor').first().waitFor({ state: 'visible', timeout: 60_000 });
  });

  it('annotates a program document with the step, author and objective of each block of lines', async () => {
    const view = page.locator('.pane', { has: page.locator('.pane-header', { hasText: 'Runs' }) }).first();
    const child = view.locator('.monaco-list-row', { hasText: /step [1-9]\d* #\d+ · / }).first();
    // Only the program's own editor is open: the annotations read are its.
    await runPaletteCommand(page, 'View: Close All Editors');
    await child.click({ button: 'right' });
    await chooseMenuItem(page, 'Open Program');
    // The annotations are drawn after the lines (CSS content): read them from the rendered styles.
    const drawnAnnotations = (): Promise<{ text: string; line: string }[]> =>
      page.evaluate(() =>
        [...document.querySelectorAll('.editor-instance .view-line span')]
          .map((span) => ({ text: getComputedStyle(span, '::after').content, line: span.closest('.view-line')?.textContent ?? '' }))
          .filter((a) => a.text.includes(' · ')),
      );
    const found = await waitFor(drawnAnnotations, {
      what: 'blame annotations on the program document',
      until: (drawn) => drawn.length >= 2,
      deadlineMs: 60_000,
      intervalMs: 500,
    });
    const annotations = found.map((a) => a.text);
    // Named as the Runs view names programs ("step 3 #1 · model", "initial"), never "step 0 · migration".
    assert.ok(
      annotations.every((a) => /^"(initial|step [1-9]\d*( #\d+)? · (model|researcher|island copy)) · /.test(a)),
      annotations.join(' | '),
    );
    // None on a blank line.
    assert.ok(
      found.every((a) => a.line.replace(/\u00a0/g, ' ').trim() !== ''),
      found.map((a) => JSON.stringify(a)).join(' | '),
    );
    await saveScreenshot(page, 'e2e-steer-4-blame');
    // The hover of a line's annotation opens the diff of the step that brought it.
    const spot = await page.evaluate(() => {
      for (const span of document.querySelectorAll('.editor-instance .view-line span')) {
        const content = getComputedStyle(span, '::after').content;
        if (!/step [1-9]\d*( #\d+)? · model/.test(content)) continue;
        const box = span.getBoundingClientRect();
        // On the line's own text, just before its annotation.
        return { x: box.left - 15, y: box.top + box.height / 2 };
      }
      return null;
    });
    assert.ok(spot, 'an annotation of a step after the start');
    await page.mouse.move(spot.x - 5, spot.y);
    await page.mouse.move(spot.x, spot.y, { steps: 3 });
    const link = page.locator('.monaco-hover a', { hasText: /Open the diff of step \d+ #\d+/ }).first();
    await link.waitFor({ state: 'visible', timeout: 60_000 });
    await saveScreenshot(page, 'e2e-steer-5-blame-hover');
    await link.click();
    await page.locator('.monaco-diff-editor').first().waitFor({ state: 'visible', timeout: 60_000 });
    // The diff's narrow sides carry no annotation (the hovers stay).
    await waitFor(
      () =>
        page.evaluate(
          () =>
            [...document.querySelectorAll('.monaco-diff-editor .view-line span')].filter((span) =>
              getComputedStyle(span, '::after').content.includes(' · '),
            ).length,
        ),
      { what: 'no blame annotation drawn in the diff editor', until: (n) => n === 0, deadlineMs: 60_000, intervalMs: 250 },
    );
    await saveScreenshot(page, 'e2e-steer-6-blame-diff');
  });

  it('annotates the file after Apply to File with the blame of its EVOLVE-BLOCK lines', async () => {
    await runPaletteCommand(page, 'View: Close All Editors');
    const view = page.locator('.pane', { has: page.locator('.pane-header', { hasText: 'Runs' }) }).first();
    const child = view.locator('.monaco-list-row', { hasText: /step [1-9]\d* #\d+ · / }).first();
    await child.click({ button: 'right' });
    await chooseMenuItem(page, 'Apply to File');
    // The file was edited since the run started (the first test): Apply asks before replacing its EVOLVE-BLOCK.
    const replace = page.locator('.monaco-dialog-box .monaco-button', { hasText: 'Replace EVOLVE-BLOCK' }).first();
    const applied = notification(page, /applied .* to initial\.py/);
    await waitFor(async () => (await replace.isVisible()) || (await applied.isVisible()), {
      what: 'Apply to File to ask or apply',
      deadlineMs: 60_000,
    });
    if (await replace.isVisible()) await replace.click();
    await applied.waitFor({ state: 'visible', timeout: 60_000 });
    await page.locator('.tabs-container .tab.active', { hasText: 'initial.py' }).waitFor({ state: 'visible', timeout: 60_000 });
    // The EVOLVE-BLOCK's first lines in view (only lines in view are drawn).
    await page.locator('.editor-instance .view-lines').first().click();
    await page.keyboard.press('Control+Home');
    const annotations = await waitFor(
      () =>
        page.evaluate(() =>
          [...document.querySelectorAll('.editor-instance .view-line span')]
            .map((span) => getComputedStyle(span, '::after').content)
            .filter((content) => content.includes(' · ')),
        ),
      { what: 'blame annotations on the file after Apply', until: (found) => found.length >= 2, deadlineMs: 60_000, intervalMs: 500 },
    );
    assert.ok(
      annotations.some((a) => /step [1-9]\d*( #\d+)? · model/.test(a)),
      annotations.join(' | '),
    );
    await saveScreenshot(page, 'e2e-steer-7-blame-after-apply');
  });
});
