// End to end: comparing runs (issue 33). Two short runs of the test model,
// one with a stand-in atropos trainer that takes a step (a new policy
// version) after each step of the run, one without RL, are compared in the
// editor (palette and the Runs view's multi-select; screenshots in the dark,
// light and high-contrast themes) and in the report of `thetaevolve report`,
// opened in Chromium with the network off: both runs' series drawn, the
// policy markers present; its --png picture is not blank.
import assert from 'node:assert/strict';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Frame, Page } from 'playwright-core';
import { startAtroposTestServer } from '../server/atroposTestServer';
import { startTestServer } from '../server/openaiTestServer';
import { runCli } from '../support/cli';
import {
  distinctColours,
  pickQuickInputItem,
  REPO_ROOT,
  runPaletteCommand,
  saveScreenshot,
  screenshotOnFailure,
  startWorkbench,
  taskWorkspace,
  TEST_OUTPUT,
  webviewFrame,
  type Workbench,
} from '../support/codeServer';
import { tempDir } from '../support/tempDirs';
import { waitFor } from '../support/waitFor';

const FIXTURE = join(REPO_ROOT, 'test', 'fixtures', 'tasks', 'quadratic');
/** The run without RL starts from a program whose comment is markup and a terminal escape: shown as text only. */
const HOSTILE_COMMENT = '# <img src=x onerror="window.pwned=1"></script><script>window.pwned=2</script>\u001b[31m red';
const STEPS = 4;

/** What the page shows of a comparison: the progress chart's description, policy rows, and each canvas's inked pixels. */
interface PageFacts {
  rendered: boolean;
  progress: string;
  policyRows: number;
  /** The best programs' code as shown, their markup never run, their control characters gone. */
  programText: string;
  images: number;
  pwned: number | null;
  ink: number[];
}

function pageFacts(frame: Frame | Page): Promise<PageFacts> {
  return frame.evaluate(() => {
    const canvases = [...document.querySelectorAll<HTMLCanvasElement>('.chart-box canvas')];
    return {
      rendered: document.body.dataset.rendered === 'true',
      progress: document.querySelector('.chart-box.progress canvas')?.getAttribute('aria-label') ?? '',
      policyRows: document.querySelectorAll('tr.policy-change').length,
      programText: [...document.querySelectorAll('pre.program-code')].map((pre) => pre.textContent ?? '').join('\n'),
      images: document.querySelectorAll('img').length,
      pwned: (window as unknown as { pwned?: number }).pwned ?? null,
      ink: canvases.map((canvas) => {
        const data = canvas.getContext('2d')?.getImageData(0, 0, canvas.width, canvas.height).data ?? [];
        let inked = 0;
        for (let i = 3; i < data.length; i += 4) if ((data[i] ?? 0) > 0) inked++;
        return inked;
      }),
    };
  });
}

/** Both runs drawn, the RL run's policy changes marked and listed, every chart inked. */
function assertComparison(facts: PageFacts, where: string): void {
  assert.ok(facts.rendered, `${where}: not rendered`);
  assert.match(facts.progress, /Progress of 2 runs\. RL on · seed 0: 4 steps, best [\d.]+; policy changed at step 1, 2, 3, 4\./, where);
  assert.match(facts.progress, /RL off · seed 5: 4 steps, best [\d.]+; no policy versions/, where);
  assert.equal(facts.policyRows, STEPS, `${where}: one row per policy version`);
  assert.ok(facts.programText.includes('<img src=x onerror="window.pwned=1"></script><script>window.pwned=2</script>[31m red'), where);
  assert.equal(facts.images, 0, `${where}: the program's markup made an element`);
  assert.equal(facts.pwned, null, `${where}: the program's script ran`);
  assert.ok(facts.ink.length >= 3, `${where}: ${facts.ink.length} charts`);
  for (const [i, inked] of facts.ink.entries()) assert.ok(inked > 500, `${where}: chart ${i} blank (${inked} pixels)`);
}

/** The Compare Runs page's frame, once it shows a comparison. */
async function compareFrame(page: Page): Promise<Frame> {
  return webviewFrame(page, 'compare', (frame) =>
    frame.evaluate(() => document.body?.dataset.rendered === 'true' && document.querySelector('.policy-panel') !== null),
  );
}

describe('compare runs in the editor and as a report (code-server + Chromium)', () => {
  let workbench: Workbench;
  let page: Page;
  let workspace: string;
  const closers: (() => Promise<void>)[] = [];
  const dbOf = (runId: string) => join(workspace, '.thetaevolve', 'runs', `${runId}.sqlite`);

  before(async () => {
    workspace = taskWorkspace('thetaevolve-e2e-compare-', 'circle-packing', {});
    const endpoint = await startTestServer();
    closers.push(() => endpoint.close());
    // One trainer step per batch of B x n = 4 sequences: a new policy version after each step of the run.
    const trainer = await startAtroposTestServer({ trainer: { batchSize: 4 } });
    closers.push(() => trainer.close());
    const common = ['run', FIXTURE, '--endpoint', endpoint.baseURL, '--batch', '2', '--samples', '2', '--steps', String(STEPS)];
    const rl = await runCli([...common, '--db', dbOf('with-rl'), '--trainer', trainer.url, '--set', 'trainer.mode=sync'], workspace);
    assert.equal(rl.code, 0, rl.stderr);
    const program = join(tempDir('thetaevolve-e2e-compare-program-'), 'hostile.py');
    writeFileSync(program, `${HOSTILE_COMMENT}\n${readFileSync(join(FIXTURE, 'initial.py'), 'utf8')}`);
    const plain = await runCli([...common, '--db', dbOf('without-rl'), '--seed', '5', '--program', program], workspace);
    assert.equal(plain.code, 0, plain.stderr);
    // A task that minimises (the fixture's objective, minimised): another task and direction, never on the others' axis.
    const minimiseTask = join(tempDir('thetaevolve-e2e-compare-minimise-'), 'quadratic-min');
    cpSync(FIXTURE, minimiseTask, { recursive: true });
    const taskJson = JSON.parse(readFileSync(join(minimiseTask, 'task.json'), 'utf8')) as Record<string, unknown>;
    writeFileSync(
      join(minimiseTask, 'task.json'),
      JSON.stringify({ ...taskJson, name: 'quadratic-min', title: 'Quadratic, minimised', direction: 'minimize', targetValue: 1 }),
    );
    const minimise = await runCli(
      [
        'run',
        minimiseTask,
        '--endpoint',
        endpoint.baseURL,
        '--batch',
        '2',
        '--samples',
        '2',
        '--steps',
        String(STEPS),
        '--db',
        dbOf('minimise-task'),
      ],
      workspace,
    );
    assert.equal(minimise.code, 0, minimise.stderr);
    workbench = await startWorkbench({ workspace });
    page = workbench.page;
  });

  afterEach(screenshotOnFailure('e2e-compare', () => page));

  after(async () => {
    await workbench?.close();
    for (const close of closers.splice(0).reverse()) await close();
  });

  it('Compare Runs from the palette: both runs overlaid, policy versions marked and listed', async () => {
    await runPaletteCommand(page, 'ThetaEvolve: Compare Runs');
    await pickQuickInputItem(page, 'with-rl');
    await pickQuickInputItem(page, 'without-rl');
    await page.keyboard.press('Enter');
    const frame = await compareFrame(page);
    assertComparison(await pageFacts(frame), 'editor');
    const shot = await saveScreenshot(page, 'e2e-compare-1-dark');
    assert.ok(shot.distinctColours > 40, `${shot.file} looks blank`);
    // By elapsed time: the same series against minutes, then back by step.
    await frame.getByRole('button', { name: 'by elapsed time' }).click();
    assert.equal(await frame.getByRole('button', { name: 'by elapsed time' }).getAttribute('aria-pressed'), 'true');
    assertComparison(await pageFacts(frame), 'editor, by elapsed time');
    await saveScreenshot(page, 'e2e-compare-1b-by-time');
    await frame.getByRole('button', { name: 'by step' }).click();
  });

  it('follows the light and high-contrast themes, charts drawn again', async () => {
    for (const [theme, bodyClass, name] of [
      ['Default Light Modern', 'vscode-light', 'light'],
      ['Default High Contrast', 'vscode-high-contrast', 'high-contrast'],
      ['Default Dark Modern', 'vscode-dark', 'dark-again'],
    ] as const) {
      await runPaletteCommand(page, 'Preferences: Color Theme');
      await page.locator('.quick-input-widget input').fill(theme);
      await pickQuickInputItem(page, theme);
      const frame = await compareFrame(page);
      await waitFor(() => frame.evaluate((c) => document.body.classList.contains(c), bodyClass), {
        what: `the ${name} theme on the page`,
        until: (on) => on,
        deadlineMs: 60_000,
        intervalMs: 500,
      });
      assertComparison(await pageFacts(frame), name);
      const shot = await saveScreenshot(page, `e2e-compare-2-${name}`);
      assert.ok(shot.distinctColours > 20, `${shot.file} looks blank`);
    }
  });

  it('Compare Runs from the Runs view with both runs selected', async () => {
    await runPaletteCommand(page, 'View: Close Editor');
    await page.locator('.activitybar .action-item a[aria-label^="ThetaEvolve"]').first().click();
    const view = page.locator('.pane', { has: page.locator('.pane-header', { hasText: 'Runs' }) }).first();
    const first = view.locator('.monaco-list-row', { hasText: 'with-rl' }).first();
    const second = view.locator('.monaco-list-row', { hasText: 'without-rl' }).first();
    await first.waitFor({ state: 'visible', timeout: 60_000 });
    await second.waitFor({ state: 'visible', timeout: 60_000 });
    await first.click();
    await second.click({ modifiers: ['Control'] });
    await waitFor(() => view.locator('.monaco-list-row.selected').count(), {
      what: 'two runs selected',
      until: (n) => n === 2,
      deadlineMs: 60_000,
    });
    await second.click({ button: 'right' });
    const item = page.locator('.monaco-menu .action-item', { hasText: 'Compare Runs' }).first();
    await item.hover();
    await page
      .locator('.monaco-menu .action-item.focused', { hasText: 'Compare Runs' })
      .first()
      .waitFor({ state: 'visible', timeout: 60_000 });
    await page.keyboard.press('Enter');
    const frame = await compareFrame(page);
    assertComparison(await pageFacts(frame), 'Runs view');
    await saveScreenshot(page, 'e2e-compare-3-runs-view');
  });

  it('the HTML report, opened with the network off, draws both runs and the policy markers; its picture is not blank', async () => {
    const dir = tempDir('thetaevolve-e2e-report-');
    const html = join(dir, 'report.html');
    const png = join(TEST_OUTPUT, 'e2e-compare-4-report-picture.png');
    const result = await runCli(['report', dbOf('with-rl'), dbOf('without-rl'), '--output', html, '--png', png], workspace, {
      PATH: process.env.PATH,
    });
    assert.equal(result.code, 0, result.stderr);
    const context = await workbench.browser.newContext({ offline: true, viewport: { width: 1200, height: 900 } });
    const requests: string[] = [];
    context.on('request', (r) => requests.push(r.url()));
    const report = await context.newPage();
    const errors: string[] = [];
    report.on('pageerror', (e) => errors.push(e.message));
    try {
      await report.goto(pathToFileURL(html).href);
      await waitFor(() => report.evaluate(() => document.body.dataset.rendered === 'true'), {
        what: 'the report rendered',
        until: (r) => r,
        deadlineMs: 60_000,
        intervalMs: 200,
      });
      assertComparison(await pageFacts(report), 'report');
      assert.deepEqual(errors, []);
      assert.deepEqual(
        requests.filter((u) => !u.startsWith('file:') && !u.startsWith('data:')),
        [],
        'the report loads nothing from outside the file',
      );
      await report.screenshot({ path: join(TEST_OUTPUT, 'e2e-compare-4-report.png'), fullPage: true });
    } finally {
      await context.close();
    }
    const probe = await workbench.browser.newContext();
    const colours = await distinctColours(probe, readFileSync(png)).finally(() => probe.close());
    assert.ok(colours > 20, `${png}: ${colours} colours, looks blank`);
  });
  /** The progress charts of a page: each one's axis title, accessible name and heading, and the note above them. */
  function progressPanels(frame: Frame | Page): Promise<{ note: string; charts: { axis: string; label: string; heading: string }[] }> {
    return frame.evaluate(() => ({
      note: document.querySelector('.compare-note')?.textContent ?? '',
      charts: [...document.querySelectorAll('.progress-panel')].map((panel) => {
        const canvas = panel.querySelector('canvas');
        return {
          axis: canvas?.dataset.axisTitle ?? '',
          label: canvas?.getAttribute('aria-label') ?? '',
          heading: panel.querySelector('h3')?.textContent ?? '',
        };
      }),
    }));
  }

  /** A maximising and a minimising task: a chart each, each axis in its direction, and the note saying why. */
  function assertSeparateTasks(panels: Awaited<ReturnType<typeof progressPanels>>, where: string): void {
    assert.match(panels.note, /different tasks and directions: their objectives are not on one scale/, where);
    assert.equal(panels.charts.length, 2, `${where}: ${JSON.stringify(panels)}`);
    // The charts come in the order of the runs (the Runs view's), each headed by its task.
    const max = panels.charts.find((c) => c.heading.startsWith('quadratic:'));
    const min = panels.charts.find((c) => c.heading.startsWith('quadratic-min:'));
    assert.equal(max?.axis, 'objective (higher is better)', where);
    assert.equal(max?.heading, 'quadratic: maximise (higher is better)', where);
    assert.match(max?.label ?? '', /^Progress of 1 run of quadratic: maximise/, where);
    assert.equal(min?.axis, 'objective (lower is better)', where);
    assert.equal(min?.heading, 'quadratic-min: minimise (lower is better)', where);
    assert.match(
      min?.label ?? '',
      /^Progress of 1 run of quadratic-min: minimise \(lower is better\)\. task quadratic-min · [^:]+: 4 steps, best [\d.]+/,
      where,
    );
  }

  it('runs of different tasks and directions: a progress chart per task, each axis in its direction, and a note (editor and report)', async () => {
    // The previous comparison's panel, still settling, can take the focus and close the quick pick (CI met it once).
    await runPaletteCommand(page, 'View: Close All Editors');
    await runPaletteCommand(page, 'ThetaEvolve: Compare Runs');
    await pickQuickInputItem(page, 'with-rl');
    await pickQuickInputItem(page, 'minimise-task');
    await page.keyboard.press('Enter');
    const frame = await webviewFrame(page, 'compare', (f) =>
      f.evaluate(() => document.body?.dataset.rendered === 'true' && document.querySelectorAll('.progress-panel').length === 2),
    );
    assertSeparateTasks(await progressPanels(frame), 'editor');
    const ink = await pageFacts(frame);
    for (const [i, inked] of ink.ink.entries()) assert.ok(inked > 500, `editor: chart ${i} blank (${inked} pixels)`);
    await saveScreenshot(page, 'e2e-compare-5-two-tasks');
    const dir = tempDir('thetaevolve-e2e-report-tasks-');
    const html = join(dir, 'report.html');
    const png = join(TEST_OUTPUT, 'e2e-compare-6-two-tasks-picture.png');
    const result = await runCli(['report', dbOf('with-rl'), dbOf('minimise-task'), '--output', html, '--png', png], workspace, {
      PATH: process.env.PATH,
    });
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /Note: These runs are of different tasks and directions/);
    assert.match(result.stdout, /task quadratic-min [^\n]*best [\d.]+ \(lower is better\)/);
    const context = await workbench.browser.newContext({ offline: true, viewport: { width: 1200, height: 900 } });
    try {
      const report = await context.newPage();
      await report.goto(pathToFileURL(html).href);
      await waitFor(() => report.evaluate(() => document.body.dataset.rendered === 'true'), {
        what: 'the report rendered',
        until: (r) => r,
        deadlineMs: 60_000,
        intervalMs: 200,
      });
      assertSeparateTasks(await progressPanels(report), 'report');
      // Lineages name programs as the Runs view does ("step 1 #1 · model", "initial"), the id in the tooltip.
      const lineage = await report.evaluate(() =>
        [...document.querySelectorAll('.lineage li:not(.muted)')].map((li) => li.textContent ?? ''),
      );
      assert.ok(lineage.length > 0, "the report shows the best programs' lineages");
      for (const entry of lineage) assert.match(entry, /^(initial|step \d+( #\d+)? · [a-z ]+) · /, lineage.join(' | '));
      await report.screenshot({ path: join(TEST_OUTPUT, 'e2e-compare-6-two-tasks-report.png'), fullPage: true });
    } finally {
      await context.close();
    }
    const probe = await workbench.browser.newContext();
    const colours = await distinctColours(probe, readFileSync(png)).finally(() => probe.close());
    assert.ok(colours > 20, `${png}: ${colours} colours, looks blank`);
  });
});
