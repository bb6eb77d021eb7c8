// End to end: evolve tasks/circle-packing/initial.py in code-server + Chromium
// against the OpenAI-compatible test server: Start Run from the palette,
// steps advancing in the status bar, a parent <-> child diff from the Runs
// view, Apply to File, and the file's EVOLVE-BLOCK changed on disk.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { evolveBlockContent } from '../../src/engine/common/diff';
import { waitFor } from '../support/waitFor';
import { startTestServer, type TestServer } from '../server/openaiTestServer';
import {
  openProgram,
  pickQuickInputItem,
  quickOpenFile,
  runPaletteCommand,
  saveScreenshot,
  screenshotOnFailure,
  startWorkbench,
  stepOf,
  taskWorkspace,
  waitForStatusBarText,
  type Workbench,
} from '../support/codeServer';

/**
 * The Runs view re-renders its rows while a run goes on, so an action on a row
 * can land on one that was just replaced: try it again, up to `tries` times.
 */
async function retryAcrossRefreshes(tries: number, failure: string, once: () => Promise<boolean>): Promise<void> {
  for (let attempt = 1; attempt <= tries; attempt++) {
    if (await once()) return;
  }
  throw new Error(failure);
}

function succeeds(action: Promise<unknown>): Promise<boolean> {
  return action.then(
    () => true,
    () => false,
  );
}

describe('evolve a program (code-server + Chromium + test inference server)', () => {
  let model: TestServer;
  let workbench: Workbench;
  let page: Page;
  let workspace: string;
  let programFile: string;
  let originalBlock: string;

  before(async () => {
    model = await startTestServer({ latencyMs: 20 });
    workspace = taskWorkspace('thetaevolve-e2e-evolve-', 'circle-packing', {
      'thetaevolve.sampler': 'llm',
      'thetaevolve.batchSize': 2,
      'thetaevolve.samplesPerPrompt': 2,
      'thetaevolve.evaluationConcurrency': 2,
      'thetaevolve.database.preset': 'small',
      'thetaevolve.maxSteps': 2000,
    });
    programFile = join(workspace, 'tasks', 'circle-packing', 'initial.py');
    originalBlock = evolveBlockContent(readFileSync(programFile, 'utf8'));
    // thetaevolve.endpoint is machine-scoped (a workspace must not redirect
    // requests carrying the API key), so VS Code ignores it in a workspace's
    // settings.json: it goes into the user settings.
    // The DOM renderer (no GPU) keeps the terminal's text in the page, where the test reads it.
    workbench = await startWorkbench({
      workspace,
      userSettings: { 'thetaevolve.endpoint': model.baseURL, 'terminal.integrated.gpuAcceleration': 'off' },
    });
    page = workbench.page;
  });

  afterEach(screenshotOnFailure('e2e-evolve', () => page));

  after(async () => {
    await workbench?.close();
    await model?.close();
  });

  it('starts a run from the command palette on the open file, answering the task pick', async () => {
    await openProgram(page, 'tasks/circle-packing/initial.py');
    await saveScreenshot(page, 'e2e-evolve-1-file');
    await runPaletteCommand(page, 'ThetaEvolve: Start Run');
    await pickQuickInputItem(page, "this file's task");
    // Waited for in the status bar, which the run owns: its "evolving with" toast may be hidden or replaced meanwhile.
    await waitForStatusBarText(page, 'ThetaEvolve step', (t) => !/starting/.test(t));
    await saveScreenshot(page, 'e2e-evolve-2-started');
    assert.ok(model.counters.modelsRequests >= 1, 'the health check asked /v1/models');
  });

  it('shows the steps advancing in the status bar', async () => {
    const first = await waitForStatusBarText(page, 'ThetaEvolve step', (t) => stepOf(t) >= 1);
    const later = await waitForStatusBarText(page, 'ThetaEvolve step', (t) => stepOf(t) >= stepOf(first) + 1);
    assert.match(later, /best [\d.]+/);
    assert.match(later, /samples\/s/);
    const shot = await saveScreenshot(page, 'e2e-evolve-3-status-bar');
    assert.ok(shot.distinctColours > 20, `${shot.file} looks blank`);
    assert.ok(model.counters.chatRequests >= 8, `chat requests: ${model.counters.chatRequests}`);
    // Only the start had a progress notification: nothing covers the editor while the run goes on.
    assert.equal(await page.locator('.notifications-toasts .notification-toast', { hasText: 'checking the endpoint' }).count(), 0);
  });

  it('shows each evaluation and committed step in the "ThetaEvolve evaluations" terminal', async () => {
    await runPaletteCommand(page, 'View: Toggle Terminal');
    const terminal = page.locator('.terminal-wrapper .xterm-rows').first();
    await terminal.waitFor({ state: 'visible', timeout: 60_000 });
    // The task's terminal is the only one: its lines name outcomes and committed steps.
    await waitFor(async () => (await terminal.innerText()).replace(/\u00a0/g, ' '), {
      what: 'a committed step and a valid child in the evaluations terminal',
      until: (text) => /step \d+ committed: best/.test(text) && /valid/.test(text),
      deadlineMs: 60_000,
      intervalMs: 500,
    });
    await saveScreenshot(page, 'e2e-evolve-3b-terminal');
    await runPaletteCommand(page, 'View: Toggle Terminal');
  });

  it("opens a failed evaluation's whole output by Ctrl+click on its terminal line while the run streams (the lines hold still)", async () => {
    await runPaletteCommand(page, 'View: Toggle Terminal');
    const terminal = page.locator('.terminal-wrapper .xterm-rows').first();
    await terminal.waitFor({ state: 'visible', timeout: 60_000 });
    const terminalText = async (): Promise<string> => (await terminal.innerText()).replace(/\u00a0/g, ' ');
    const hint = /full output: ThetaEvolve: Open Evaluation Output (s\d+-p\d+#\d+)/;
    await waitFor(terminalText, {
      what: 'a failed evaluation in the terminal (the test model writes some invalid children)',
      until: (text) => hint.test(text),
      deadlineMs: 120_000,
      intervalMs: 500,
    });
    // The run goes on: lines keep arriving (seen: the terminal changes again), and the pointer comes while they do.
    assert.doesNotMatch(await page.locator('.statusbar-item', { hasText: 'ThetaEvolve step' }).first().innerText(), /paused|done|stopped/);
    // With no pointer on it the terminal streams at its burst pace (about a second): it holds only for a link pointed at.
    await page.mouse.move(0, 0);
    let last = await terminalText();
    let bursts = 0;
    await waitFor(
      async () => {
        const text = await terminalText();
        if (text !== last) bursts++;
        last = text;
        return bursts;
      },
      { what: 'two bursts of new lines in the running terminal, none pointed at', until: (n) => n >= 2, deadlineMs: 60_000 },
    );
    // Where the last named evaluation is drawn (the DOM renderer keeps the text in the page).
    const spot = await terminal.evaluate((rows) => {
      const lines = [...rows.children].filter((row) =>
        /full output: ThetaEvolve: Open Evaluation Output s\d+-p\d+#\d+/.test((row.textContent ?? '').replace(/\u00a0/g, ' ')),
      );
      const row = lines.at(-1);
      if (!row) return null;
      const key = /s\d+-p\d+#\d+/.exec((row.textContent ?? '').replace(/\u00a0/g, ' '))?.[0] ?? '';
      const walker = document.createTreeWalker(row, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        const at = (node.textContent ?? '').replace(/\u00a0/g, ' ').indexOf(key.slice(0, 3));
        if (at < 0) continue;
        const range = document.createRange();
        range.setStart(node, at);
        range.setEnd(node, Math.min((node.textContent ?? '').length, at + 3));
        const box = range.getBoundingClientRect();
        return { x: box.left + box.width / 2, y: box.top + box.height / 2 };
      }
      return null;
    });
    assert.ok(spot, 'the line naming the output is on screen');
    /** The evaluation named by the terminal row under the pointer now. */
    const keyUnderPointer = (): Promise<string | null> =>
      page.evaluate(
        ([x, y]) => {
          const rows = [...document.querySelectorAll('.terminal-wrapper .xterm-rows > div')];
          const row = rows.find((r) => {
            const box = r.getBoundingClientRect();
            return box.top <= y && y < box.bottom && box.left <= x && x < box.right;
          });
          return /s\d+-p\d+#\d+/.exec((row?.textContent ?? '').replace(/\u00a0/g, ' '))?.[0] ?? null;
        },
        [spot.x, spot.y] as const,
      );
    await page.mouse.move(spot.x, spot.y);
    // The terminal asks the link provider when the pointer rests: its hover says the link is there, and the lines hold from then on.
    await page.getByText('Open the whole output').first().waitFor({ state: 'visible', timeout: 60_000 });
    const pointed = await keyUnderPointer();
    assert.ok(pointed, 'the pointer rests on a line naming an output');
    // While it rests there the run goes on (its step in the status bar advances) and the terminal does not move:
    // watched for longer than a burst (evaluationTask.ts writes lines at least once a second).
    const statusStep = async (): Promise<number> =>
      stepOf(await page.locator('.statusbar-item', { hasText: 'ThetaEvolve step' }).first().innerText());
    const heldText = await terminalText();
    const stepAtHover = await statusStep();
    const watchUntil = performance.now() + 1500;
    while (performance.now() < watchUntil) {
      assert.equal(await terminalText(), heldText, 'the terminal moved while the pointer rested on its link');
      await page.waitForTimeout(100);
    }
    assert.ok((await statusStep()) > stepAtHover, 'the run went on while the terminal held still');
    assert.equal(await keyUnderPointer(), pointed);
    await saveScreenshot(page, 'e2e-evolve-3c-terminal-link-hover');
    await page.keyboard.down('Control');
    await page.mouse.click(spot.x, spot.y);
    await page.keyboard.up('Control');
    const [jobKey, sampleIndex] = pointed.split('#');
    // One click, the output of the line the hover was on: the line did not move between hover and click.
    const tab = page.locator('.tabs-container .tab', { hasText: `${jobKey}-${sampleIndex} output.log` }).first();
    await tab.waitFor({ state: 'visible', timeout: 60_000 });
    const editor = page.locator('.editor-instance .view-lines').first();
    await editor
      .locator('.view-line', { hasText: `Evaluation ${pointed}` })
      .first()
      .waitFor({ state: 'visible', timeout: 60_000 });
    await editor.locator('.view-line', { hasText: '--- candidate stderr ---' }).first().waitFor({ state: 'attached', timeout: 60_000 });
    await saveScreenshot(page, 'e2e-evolve-3d-evaluation-output');
    await runPaletteCommand(page, 'View: Close Editor');
    await runPaletteCommand(page, 'View: Toggle Terminal');
    // Released by the click: the run's lines come again.
    await page.mouse.move(0, 0);
  });

  it('opens a parent <-> child diff from the Runs view', async () => {
    await page.locator('.activitybar .action-item a[aria-label^="ThetaEvolve"]').first().click();
    const view = page.locator('.pane', { has: page.locator('.pane-header', { hasText: 'Runs' }) }).first();
    await view.locator('.monaco-list-row', { hasText: 'circle-packing-' }).first().waitFor({ state: 'visible', timeout: 60_000 });
    // An improving child (step >= 1, named by its step and rank there) appears once the model beat the starting program.
    const child = view.locator('.monaco-list-row', { hasText: /step [1-9]\d* #\d+ · [+-]/ }).first();
    await child.waitFor({ state: 'visible', timeout: 150_000 });
    const diff = page.locator('.monaco-diff-editor').first();
    // A click that lands during a refresh only selects the row.
    await retryAcrossRefreshes(6, 'clicking an improving program never opened a diff editor', async () => {
      await child.click();
      return succeeds(diff.waitFor({ state: 'visible', timeout: 5_000 }));
    });
    // Both sides rendered, with the child's change highlighted.
    await diff.locator('.editor.modified .view-lines', { hasText: 'EVOLVE-BLOCK-START' }).waitFor({ state: 'visible', timeout: 60_000 });
    await diff.locator('.editor.original .view-lines', { hasText: 'EVOLVE-BLOCK-START' }).waitFor({ state: 'visible', timeout: 60_000 });
    await diff.locator('.char-insert, .line-insert').first().waitFor({ state: 'attached', timeout: 60_000 });
    const tab = page.locator('.tabs-container .tab.active');
    // Named by step and rank ("step 3 #1"), not by opaque ids.
    assert.match((await tab.textContent()) ?? '', /(initial|step \d+ #\d+) \([^)]*\) \u2194 step \d+ #\d+ \(/);
    await saveScreenshot(page, 'e2e-evolve-4-diff');
  });

  it('shows the diff and the Runs view in light and high-contrast themes too', async () => {
    for (const [theme, workbenchClass, name] of [
      ['Default Light Modern', 'vs', 'light'],
      ['Default High Contrast', 'hc-black', 'high-contrast'],
      ['Default Dark Modern', 'vs-dark', 'dark'],
    ] as const) {
      await runPaletteCommand(page, 'Preferences: Color Theme');
      await page.locator('.quick-input-widget input').fill(theme);
      await pickQuickInputItem(page, theme);
      await page.locator(`.monaco-workbench.${workbenchClass}`).first().waitFor({ state: 'attached', timeout: 60_000 });
      await page.locator('.monaco-diff-editor .editor.modified .view-lines').first().waitFor({ state: 'visible', timeout: 60_000 });
      const shot = await saveScreenshot(page, `e2e-evolve-4b-diff-runs-${name}`);
      assert.ok(shot.distinctColours > 12, `${shot.file} looks blank`);
    }
  });

  it('applies the child to the file: the EVOLVE-BLOCK changes on disk after saving', async () => {
    const view = page.locator('.pane', { has: page.locator('.pane-header', { hasText: 'Runs' }) }).first();
    const child = view.locator('.monaco-list-row', { hasText: /step [1-9]\d* #\d+ · [+-]/ }).first();
    const applied = page.locator('.notifications-toasts .notification-list-item-message', { hasText: 'applied' }).first();
    // Inline actions show only on the hovered row; a row re-rendered under a
    // still pointer is not hovered, and one re-rendered between mouse down and
    // up gets no click, so move away, hover and click until the file is applied.
    await retryAcrossRefreshes(6, 'Apply to File on an improving program never applied it', async () => {
      await page.mouse.move(0, 0);
      await child.hover();
      const clicked = await succeeds(child.locator('.action-label[aria-label^="Apply to File"]').first().click({ timeout: 3_000 }));
      return clicked && succeeds(applied.waitFor({ state: 'visible', timeout: 10_000 }));
    });
    await quickOpenFile(page, 'tasks/circle-packing/initial.py');
    await page.keyboard.press('Control+S');
    // The file on disk says when the save landed.
    await waitFor(() => evolveBlockContent(readFileSync(programFile, 'utf8')), {
      what: 'the EVOLVE-BLOCK on disk to change',
      until: (block) => block !== originalBlock,
    });
    await saveScreenshot(page, 'e2e-evolve-5-applied');
  });

  it('stops the run from the palette', async () => {
    await runPaletteCommand(page, 'ThetaEvolve: Stop Run');
    // The run is still going (2000 steps): the palette offers Stop only while a run is in progress.
    await waitForStatusBarText(page, 'ThetaEvolve step', (t) => t.includes('stopped'), 60_000);
    await saveScreenshot(page, 'e2e-evolve-6-stopped');
  });

  it('a second run reads the same User endpoint (a remote window applies it: the setting is not machine-scoped)', async () => {
    const before = model.counters.chatRequests;
    await openProgram(page, 'tasks/circle-packing/initial.py');
    await runPaletteCommand(page, 'ThetaEvolve: Start Run');
    // The file's task is remembered from the first run: no pick this time. The new run's own steps in the status
    // bar (the last run's status said "stopped" or "done"), not its toast, which may be hidden or replaced.
    await waitForStatusBarText(page, 'ThetaEvolve step', (t) => stepOf(t) >= 1 && !/stopped|done/.test(t));
    assert.ok(
      model.counters.chatRequests > before,
      `the second run sent its requests to the User endpoint (${before} -> ${model.counters.chatRequests})`,
    );
    await runPaletteCommand(page, 'ThetaEvolve: Stop Run');
    await waitForStatusBarText(page, 'ThetaEvolve step', (t) => /stopped|done/.test(t), 60_000);
  });

  it('shows thetaevolve.endpoint as an editable field in the User settings', async () => {
    await runPaletteCommand(page, 'Preferences: Open User Settings');
    const search = page.locator('.settings-editor .suggest-input-container .monaco-editor textarea').first();
    await search.waitFor({ state: 'attached', timeout: 60_000 });
    await search.focus();
    await page.keyboard.type('thetaevolve.endpoint');
    const field = page.locator('.settings-editor .setting-item-contents', { hasText: 'Endpoint' }).locator('input').first();
    await field.waitFor({ state: 'visible', timeout: 60_000 });
    assert.equal(await field.inputValue(), model.baseURL);
    assert.equal(await field.isEditable(), true);
    assert.equal(await page.getByText('No Settings Found').first().isVisible(), false);
    await saveScreenshot(page, 'e2e-evolve-7-endpoint-setting');
  });
});
