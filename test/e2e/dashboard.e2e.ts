// End to end: the dashboard webview in code-server + Chromium during a run of
// the offline sampler on tasks/circle-packing. Charts draw with data, the step
// and best shown match the run database (read back with the CLI), Pause and
// Resume work from the page, the RL toggle turns the trainer bridge on (a
// slime rollout buffer receives the rollouts), Stop ends the run, and a window
// reload brings the page back with its data; screenshots in the dark and the
// light theme.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Frame, Page } from 'playwright-core';
import { startSlimeTestServer, type SlimeTestServer } from '../server/slimeTestServer';
import {
  bestPictureInk,
  dashboardFrame,
  pickQuickInputItem,
  REPO_ROOT,
  runPaletteCommand,
  saveScreenshot,
  screenshotOnFailure,
  startRunOnProgram,
  startWorkbench,
  taskWorkspace,
  waitForStatusBarText,
  type Workbench,
} from '../support/codeServer';
import { waitFor } from '../support/waitFor';

interface CanvasInk {
  label: string;
  /** Pixels that are not fully transparent. */
  inked: number;
  colours: number;
}

/** How much each chart canvas has drawn (a blank canvas is all transparent). */
function canvasInk(frame: Frame): Promise<CanvasInk[]> {
  return frame.evaluate(() =>
    [...document.querySelectorAll<HTMLCanvasElement>('canvas[role="img"]')].map((canvas) => {
      const ctx = canvas.getContext('2d');
      const label = canvas.getAttribute('aria-label') ?? '';
      if (!ctx || canvas.width === 0 || canvas.height === 0) return { label, inked: 0, colours: 0 };
      const data = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
      const colours = new Set<number>();
      let inked = 0;
      for (let i = 0; i < data.length; i += 4) {
        if (data[i + 3] === 0) continue;
        inked++;
        colours.add((data[i]! << 16) | (data[i + 1]! << 8) | data[i + 2]!);
      }
      return { label, inked, colours: colours.size };
    }),
  );
}

function tileValue(frame: Frame, label: string): Promise<string> {
  return frame
    .locator('.tile', { has: frame.locator('.tile-label', { hasText: label }) })
    .locator('.tile-value')
    .first()
    .innerText();
}

/** A count as the tiles write it ("112", "1.2K", "3.4M"). */
function compactNumber(text: string): number {
  const m = /([\d.,]+)\s*([KMB]?)/.exec(text);
  if (!m) return Number.NaN;
  return Number((m[1] ?? '').replace(/,/g, '')) * ({ K: 1e3, M: 1e6, B: 1e9 }[m[2] ?? ''] ?? 1);
}

function runState(frame: Frame): Promise<string> {
  return frame
    .locator('.run-header .title-row .tag')
    .first()
    .getAttribute('data-state')
    .then((s) => s ?? '');
}

function trainerState(frame: Frame): Promise<string> {
  return frame
    .locator('.run-header .trainer .tag')
    .first()
    .getAttribute('data-state')
    .then((s) => s ?? '');
}

function clickButton(frame: Frame, label: string): Promise<void> {
  return frame.locator('vscode-button', { hasText: label }).first().click();
}

describe('dashboard webview (code-server + Chromium, offline sampler)', () => {
  let trainer: SlimeTestServer;
  let workbench: Workbench;
  let page: Page;
  let frame: Frame;
  let workspace: string;

  before(async () => {
    trainer = await startSlimeTestServer({ groupSize: 4 });
    workspace = taskWorkspace('thetaevolve-e2e-dashboard-', 'circle-packing', {
      'thetaevolve.sampler': 'mutate',
      'thetaevolve.batchSize': 4,
      'thetaevolve.samplesPerPrompt': 4,
      'thetaevolve.evaluationConcurrency': 2,
      'thetaevolve.database.preset': 'small',
      'thetaevolve.maxSteps': 500,
      'thetaevolve.trainer.protocol': 'slime',
    });
    // The trainer URL is machine-scoped, like the endpoint: user settings.
    workbench = await startWorkbench({ workspace, userSettings: { 'thetaevolve.trainer.url': trainer.url } });
    page = workbench.page;
  });

  afterEach(screenshotOnFailure('e2e-dashboard', () => page));

  after(async () => {
    await workbench?.close();
    await trainer?.close();
  });

  it('opens during a run of the offline sampler and draws every chart with data', async () => {
    await startRunOnProgram(page, 'tasks/circle-packing/initial.py');
    await waitForStatusBarText(page, 'ThetaEvolve step', (t) => /step [2-9]|step \d\d/.test(t));
    await runPaletteCommand(page, 'ThetaEvolve: Open Dashboard');
    frame = await dashboardFrame(page);
    assert.equal(await runState(frame), 'running');
    await waitFor(() => tileValue(frame, 'step'), {
      what: 'step tile',
      until: (v) => Number(v) >= 3,
      deadlineMs: 120_000,
      intervalMs: 500,
    });
    const ink = await waitFor(() => canvasInk(frame), {
      what: 'chart canvases',
      until: (all) => all.length >= 6 && all.every((c) => c.inked > 500 && c.colours >= 3),
      deadlineMs: 60_000,
      intervalMs: 500,
    });
    for (const c of ink) assert.ok(c.inked > 500, `${c.label} looks blank: ${JSON.stringify(c)}`);
    // The task's target (tasks/circle-packing: 2.635983), in its own units.
    assert.match(await tileValue(frame, 'target'), /^2\.63598/);
    assert.ok(
      ink.some((c) => c.label === 'Progress'),
      `charts: ${ink.map((c) => c.label).join(', ')}`,
    );
    // MAP-Elites: at least one occupied cell drawn.
    assert.ok((await frame.locator('.heat-grid canvas, .heat-grid .heat-cell').count()) > 0, 'no MAP-Elites heat map');
    // The best program's EVOLVE-BLOCK is shown beside its score.
    await waitFor(() => frame.locator('.best-code').first().textContent(), {
      what: 'best program code',
      until: (t) => (t ?? '').trim().length > 0,
      deadlineMs: 60_000,
      intervalMs: 500,
    });
    // The best packing is drawn from its solution file: the canvas has ink.
    await waitFor(() => bestPictureInk(frame), {
      what: 'best solution picture',
      until: (inked) => inked > 500,
      deadlineMs: 60_000,
      intervalMs: 500,
    });
    assert.match((await frame.locator('canvas.best-picture').getAttribute('aria-label')) ?? '', /26 circles/);
    // The best is named by its step and rank there; its opaque id is in the tooltip.
    const programFact = frame.locator('.best-facts dd').last();
    assert.match((await programFact.innerText()).trim(), /^(initial|step \d+ #\d+)$/);
    assert.match((await programFact.getAttribute('title')) ?? '', /program \w+$/);
    await frame.locator('.best-card').first().scrollIntoViewIfNeeded();
    await saveScreenshot(page, 'e2e-dashboard-1b-best-program');
    // Every chart panel ends soon after its chart: none is stretched to a taller neighbour's height (the best card).
    const emptyBelow = await frame.evaluate(() =>
      [...document.querySelectorAll('.chart-panel')].map((panel) => {
        const box = panel.querySelector('.chart-box')?.getBoundingClientRect();
        const bounds = panel.getBoundingClientRect();
        return { title: panel.querySelector('h2')?.textContent ?? '', px: box ? Math.round(bounds.bottom - box.bottom) : -1 };
      }),
    );
    assert.ok(emptyBelow.length >= 6, JSON.stringify(emptyBelow));
    for (const panel of emptyBelow) assert.ok(panel.px >= 0 && panel.px < 40, `${panel.title}: ${panel.px} px empty below its chart`);
    // Back to the top (the header is sticky, so scrolling it into view would not move the page).
    await frame.evaluate(() => {
      for (const el of [document.scrollingElement, ...document.querySelectorAll('*')]) if (el && el.scrollTop > 0) el.scrollTop = 0;
    });
    // A disabled button looks disabled (Start, while a run is in progress).
    const start = frame.locator('vscode-button', { hasText: 'Start' }).first();
    assert.equal(await start.getAttribute('aria-disabled'), 'true');
    assert.ok(Number(await start.evaluate((el) => getComputedStyle(el).opacity)) < 0.6, 'a disabled button is drawn faded');
    const shot = await saveScreenshot(page, 'e2e-dashboard-1-dark');
    assert.ok(shot.distinctColours > 40, `${shot.file} looks blank`);
  });

  /** The run's database (the one run of this workspace). */
  function runDatabaseFile(): string {
    const runsDir = join(workspace, '.thetaevolve', 'runs');
    return join(runsDir, readdirSync(runsDir).find((f) => f.endsWith('.sqlite')) ?? 'missing');
  }

  /** What the run database holds, read back with the CLI. */
  function readRunDatabase(): { lastStep: number; programs: number; best: { score: number; id: string } | null } {
    return JSON.parse(
      execFileSync(process.execPath, [join(REPO_ROOT, 'dist', 'cli.js'), 'db', runDatabaseFile(), '--json'], { encoding: 'utf8' }),
    ) as {
      lastStep: number;
      programs: number;
      best: { score: number; id: string } | null;
    };
  }

  /** The charts once they are drawn again after a theme change (every canvas inked). */
  function redrawnCharts(theme: string): Promise<CanvasInk[]> {
    return waitFor(() => canvasInk(frame), {
      what: `charts redrawn in the ${theme}`,
      until: (all) => all.length >= 6 && all.every((c) => c.inked > 500),
      deadlineMs: 60_000,
      intervalMs: 250,
    });
  }

  it('shows the step and best the run database holds (paused, read back with the CLI)', async () => {
    await clickButton(frame, 'Pause');
    await waitFor(() => runState(frame), { what: 'run state', until: (s) => s === 'paused', deadlineMs: 120_000, intervalMs: 500 });
    const db = readRunDatabase();
    const step = Number(await tileValue(frame, 'step'));
    assert.equal(step, db.lastStep, 'the step shown is the last committed step');
    assert.equal(Number((await tileValue(frame, 'programs in database')).replace(/,/g, '')), db.programs);
    const best = Number(await tileValue(frame, 'best objective'));
    assert.ok(db.best, 'the database has a best program');
    // circle-packing maximises the sum of radii: the score is the objective.
    assert.ok(Math.abs(best - db.best.score) <= 1e-3 * Math.abs(db.best.score), `best shown ${best}, database ${db.best.score}`);
    const status = await waitForStatusBarText(page, 'ThetaEvolve');
    assert.match(status, new RegExp(`step ${db.lastStep}\\b`), `status bar: ${status}`);
    await clickButton(frame, 'Resume');
    await waitFor(() => runState(frame), { what: 'run state', until: (s) => s === 'running', deadlineMs: 60_000, intervalMs: 500 });
    await waitFor(() => tileValue(frame, 'step'), {
      what: 'step tile',
      until: (v) => Number(v) > step,
      deadlineMs: 120_000,
      intervalMs: 500,
    });
  });

  it('turns the RL trainer on from the toggle: the state changes and the rollout buffer receives groups', async () => {
    assert.equal(await trainerState(frame), 'off');
    assert.equal(trainer.received.length, 0);
    await frame.locator('vscode-checkbox').first().click();
    await waitFor(() => trainerState(frame), {
      what: 'trainer state',
      until: (s) => s === 'ready' || s === 'waiting',
      deadlineMs: 60_000,
      intervalMs: 500,
    });
    await waitFor(async () => trainer.received.length, {
      what: 'rollouts received',
      until: (n) => n >= 16,
      deadlineMs: 120_000,
      intervalMs: 500,
    });
    const info = await frame.locator('.run-header .trainer-info').first().innerText();
    assert.match(info, /slime/);
    await saveScreenshot(page, 'e2e-dashboard-2-rl-on');
  });

  it('follows the theme: light colours, charts still drawn', async () => {
    await runPaletteCommand(page, 'Preferences: Color Theme');
    const input = page.locator('.quick-input-widget input');
    await input.fill('Default Light Modern');
    await pickQuickInputItem(page, 'Default Light Modern');
    await waitFor(() => frame.evaluate(() => document.body.classList.contains('vscode-light')), {
      what: 'light theme',
      until: (light) => light,
      deadlineMs: 60_000,
      intervalMs: 500,
    });
    const ink = await redrawnCharts('light theme');
    for (const c of ink) assert.ok(c.inked > 500, `${c.label} blank after the theme change`);
    const background = await frame.evaluate(() => getComputedStyle(document.body).backgroundColor);
    const [r = 0, g = 0, b = 0] = (background.match(/\d+/g) ?? []).map(Number);
    assert.ok(r + g + b > 600, `the page background is not light: ${background}`);
    const shot = await saveScreenshot(page, 'e2e-dashboard-3-light');
    assert.ok(shot.distinctColours > 40, `${shot.file} looks blank`);
  });

  it('follows a high-contrast theme too: charts still drawn', async () => {
    await runPaletteCommand(page, 'Preferences: Color Theme');
    await page.locator('.quick-input-widget input').fill('Default High Contrast');
    await pickQuickInputItem(page, 'Default High Contrast');
    await waitFor(() => frame.evaluate(() => document.body.classList.contains('vscode-high-contrast')), {
      what: 'high-contrast theme',
      until: (hc) => hc,
      deadlineMs: 60_000,
      intervalMs: 500,
    });
    for (const c of await redrawnCharts('high contrast')) assert.ok(c.inked > 500, `${c.label} blank in high contrast`);
    const shot = await saveScreenshot(page, 'e2e-dashboard-3b-high-contrast');
    assert.ok(shot.distinctColours > 20, `${shot.file} looks blank`);
    // Back to light for the rest.
    await runPaletteCommand(page, 'Preferences: Color Theme');
    await page.locator('.quick-input-widget input').fill('Default Light Modern');
    await pickQuickInputItem(page, 'Default Light Modern');
    await waitFor(() => frame.evaluate(() => document.body.classList.contains('vscode-light')), {
      what: 'light theme',
      until: (light) => light,
      deadlineMs: 60_000,
      intervalMs: 500,
    });
  });

  it('stops the run with Stop', async () => {
    await clickButton(frame, 'Stop');
    await waitFor(() => runState(frame), { what: 'run state', until: (s) => s === 'finished', deadlineMs: 120_000, intervalMs: 500 });
    // Nothing can commit once no process holds the run: its lock is given back when the run closes.
    const lock = `${runDatabaseFile()}.lock`;
    await waitFor(() => existsSync(lock), {
      what: `${lock} given back after Stop`,
      until: (held) => !held,
      deadlineMs: 60_000,
      intervalMs: 250,
    });
    assert.equal(
      Number(await tileValue(frame, 'step')),
      readRunDatabase().lastStep,
      'the step shown is the last one committed, and none commits after Stop',
    );
    assert.match(await frame.locator('.state-message').first().innerText(), /stop/i);
    await saveScreenshot(page, 'e2e-dashboard-4-stopped');
  });

  it('comes back after a window reload with the run it showed (serializer, saved state)', async () => {
    // What a person reads before the reload: the numbers, the best program's facts (step, lineage depth) and its code.
    const shown = async (): Promise<Record<string, string>> => ({
      step: await tileValue(frame, 'step'),
      best: await tileValue(frame, 'best objective'),
      programs: await tileValue(frame, 'programs in database'),
      elapsed: await tileValue(frame, 'elapsed'),
      facts: await frame.locator('.best-facts').first().innerText(),
      code: await frame.locator('.best-code').first().innerText(),
    });
    const before = await shown();
    // Tabs of the run's documents come back after the reload too: the best program's diff and a failed evaluation's output.
    const dashboardTab = page.locator('.tabs-container .tab', { hasText: 'ThetaEvolve Dashboard' }).first();
    await clickButton(frame, 'Show Diff');
    const diffTab = page.locator('.tabs-container .tab.active', { hasText: '\u2194' }).first();
    await diffTab.waitFor({ state: 'visible', timeout: 60_000 });
    const diffTitle = (await diffTab.innerText()).trim();
    await runPaletteCommand(page, 'View: Keep Editor');
    await runPaletteCommand(page, 'ThetaEvolve: Open Evaluation Output');
    const firstOutput = page.locator('.quick-input-widget .quick-input-list .monaco-list-row').first();
    await firstOutput.waitFor({ state: 'visible', timeout: 60_000 });
    await firstOutput.click();
    const outputTab = page.locator('.tabs-container .tab.active', { hasText: 'output.log' }).first();
    await outputTab.waitFor({ state: 'visible', timeout: 60_000 });
    const outputTitle = (await outputTab.innerText()).trim();
    await runPaletteCommand(page, 'View: Keep Editor');
    await dashboardTab.click();
    await dashboardFrame(page, 30_000);
    // As a person reloads: the command shuts the workbench down (its open editors saved), then loads it again.
    const reloaded = page.waitForEvent('framenavigated', { predicate: (f) => f === page.mainFrame(), timeout: 90_000 });
    await runPaletteCommand(page, 'Developer: Reload Window');
    await reloaded;
    await page.waitForSelector('.monaco-workbench', { timeout: 90_000 });
    await dashboardTab.click();
    frame = await dashboardFrame(page, 90_000);
    // The same numbers as before the reload, read back from the run's database by the new extension host
    // (each part arrives as its query answers: wait until all have, then compare all).
    const after = await waitFor(shown, {
      what: 'restored dashboard',
      until: (now) => JSON.stringify(now) === JSON.stringify(before),
      deadlineMs: 60_000,
      intervalMs: 500,
    }).catch(async () => shown());
    assert.equal(after.step, before.step);
    assert.equal(after.best, before.best);
    assert.equal(after.programs, before.programs);
    assert.equal(after.elapsed, before.elapsed, 'elapsed time does not go down after a reload');
    assert.equal(after.facts, before.facts, 'best program facts (step, lineage depth) unchanged');
    assert.equal(after.code, before.code);
    const histogramNote = await frame
      .locator('.chart-panel', { has: frame.locator('h2', { hasText: 'Score histogram' }) })
      .locator('.panel-note')
      .first()
      .innerText();
    assert.match(histogramNote, /valid programs in the database \(\d+\)/, "the histogram shows the database's valid programs");
    // A stopped run can go on: Resume is offered.
    assert.equal(await frame.locator('vscode-button', { hasText: 'Resume' }).first().isVisible(), true);
    // The RL switch was turned on (thetaevolve.trainer.enabled): it stays on for the next run.
    assert.equal(await trainerState(frame), 'next_run');
    const ink = await waitFor(() => canvasInk(frame), {
      what: 'restored charts',
      until: (all) => all.length >= 6 && all.every((c) => c.inked > 500),
      deadlineMs: 60_000,
      intervalMs: 500,
    });
    assert.ok(ink.length >= 6);
    await saveScreenshot(page, 'e2e-dashboard-5-restored');
    // Each restored tab shows its document, not "unable to open" (Monaco draws spaces as no-break spaces: \s).
    const tabNamed = (title: string) => page.locator('.tabs-container .tab', { hasText: title }).first();
    await tabNamed(diffTitle).click();
    const diff = page.locator('.monaco-diff-editor').first();
    await diff.locator('.editor.modified .view-lines', { hasText: 'EVOLVE-BLOCK-START' }).waitFor({ state: 'visible', timeout: 60_000 });
    await diff.locator('.editor.original .view-lines', { hasText: 'EVOLVE-BLOCK-START' }).waitFor({ state: 'visible', timeout: 60_000 });
    await saveScreenshot(page, 'e2e-dashboard-5b-restored-diff');
    await tabNamed(outputTitle).click();
    await page
      .locator('.editor-instance .view-lines', { hasText: /Evaluation\s+(initial|s\d+-p\d+)#\d+,\s+step\s+\d+\s+of\s+run/ })
      .first()
      .waitFor({ state: 'visible', timeout: 60_000 });
    await saveScreenshot(page, 'e2e-dashboard-5c-restored-output');
    await dashboardTab.click();
    frame = await dashboardFrame(page, 60_000);
  });

  it("Resume goes on with the run's history: earlier steps, best program and totals stay, elapsed time adds up", async () => {
    const tileNote = (label: string): Promise<string> =>
      frame
        .locator('.tile', { has: frame.locator('.tile-label', { hasText: label }) })
        .locator('.tile-note')
        .first()
        .innerText();
    const stepBefore = Number(await tileValue(frame, 'step'));
    const samplesBefore = await tileValue(frame, 'samples');
    await clickButton(frame, 'Resume');
    await waitFor(() => runState(frame), { what: 'run state', until: (s) => s === 'running', deadlineMs: 60_000, intervalMs: 500 });
    // Before its first new step, the resumed run shows what its database holds (the charts do not go blank).
    assert.ok(Number(await tileValue(frame, 'step')) >= stepBefore, 'the step tile did not restart');
    assert.ok((await frame.locator('.best-code').first().innerText()).trim().length > 0, 'the best card keeps its program');
    await waitFor(() => tileValue(frame, 'step'), {
      what: 'a step after the resume',
      until: (v) => Number(v) > stepBefore,
      deadlineMs: 120_000,
      intervalMs: 500,
    });
    assert.ok(compactNumber(await tileValue(frame, 'samples')) > compactNumber(samplesBefore), 'samples go on from the earlier ones');
    assert.match(await tileNote('elapsed'), /this session .* · 2 sessions/);
    for (const c of await canvasInk(frame)) assert.ok(c.inked > 500, `${c.label} blank after the resume`);
    await saveScreenshot(page, 'e2e-dashboard-6-resumed');
    await clickButton(frame, 'Stop');
    await waitFor(() => runState(frame), { what: 'run state', until: (s) => s === 'finished', deadlineMs: 120_000, intervalMs: 500 });
  });
});
