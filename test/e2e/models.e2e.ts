// End to end: a run of two models (docs/guide.md "Several models and cost")
// against the OpenAI-compatible test server serving both names, started from
// the palette in code-server; the dashboard's "Models and cost" panel shows a
// row per model with its samples, format, cost (or "no price") and the next
// draw's chance, and the run's spend. Screenshot of the panel.
import assert from 'node:assert/strict';
import type { Frame, Page } from 'playwright-core';
import { startTestServer, type TestServer } from '../server/openaiTestServer';
import {
  dashboardFrame,
  runPaletteCommand,
  saveScreenshot,
  screenshotOnFailure,
  startRunOnProgram,
  startWorkbench,
  taskWorkspace,
  type Workbench,
} from '../support/codeServer';
import { waitFor } from '../support/waitFor';

/** The per-model table as the page shows it: header cells and each row's cells. */
function modelRows(frame: Frame): Promise<{ header: string[]; rows: Record<string, string[]>; spend: string; notes: string[] }> {
  return frame.evaluate(() => {
    // No function declared in here: the test's compiler would wrap it in a helper the page does not have.
    const panel = document.querySelector('.models-panel');
    const rows: Record<string, string[]> = {};
    for (const tr of panel?.querySelectorAll<HTMLElement>('tr[data-model]') ?? [])
      rows[tr.dataset.model ?? ''] = [...tr.querySelectorAll('td')].map((c) => c.textContent ?? '');
    return {
      header: [...(panel?.querySelectorAll('th') ?? [])].map((th) => th.textContent ?? ''),
      rows,
      spend: panel?.querySelector('.model-spend')?.textContent ?? '',
      notes: [...(panel?.querySelectorAll('p.muted') ?? [])].map((p) => p.textContent ?? ''),
    };
  });
}

describe('several models on the dashboard (code-server + Chromium)', () => {
  let model: TestServer;
  let workbench: Workbench;
  let page: Page;

  before(async () => {
    model = await startTestServer({ models: ['big', 'small'], latencyMs: 20 });
    const workspace = taskWorkspace('thetaevolve-e2e-models-', 'circle-packing', {
      'thetaevolve.sampler': 'llm',
      'thetaevolve.batchSize': 4,
      'thetaevolve.samplesPerPrompt': 2,
      'thetaevolve.evaluationConcurrency': 2,
      'thetaevolve.database.preset': 'small',
      'thetaevolve.maxSteps': 2000,
    });
    // The endpoint (and the models, which may name endpoints) are the user's: a workspace must not redirect requests.
    workbench = await startWorkbench({
      workspace,
      userSettings: {
        'thetaevolve.endpoint': model.baseURL,
        'thetaevolve.models': [
          { name: 'big', weight: 0.7, pricePerMillionInput: 2, pricePerMillionOutput: 8 },
          { name: 'small', weight: 0.3, mode: 'rewrite' },
        ],
      },
    });
    page = workbench.page;
  });

  afterEach(screenshotOnFailure('e2e-models', () => page));

  after(async () => {
    await workbench?.close();
    await model?.close();
  });

  it('shows a row per model with samples, format, cost and the next draw, and the run spend', async () => {
    await startRunOnProgram(page, 'tasks/circle-packing/initial.py');
    await runPaletteCommand(page, 'ThetaEvolve: Open Dashboard');
    const frame = await dashboardFrame(page, 90_000);
    // Both models answered at least one prompt (weights 0.7 / 0.3, four prompts a step).
    const shown = await waitFor(() => modelRows(frame), {
      what: 'a row with samples for each model',
      until: (t) => ['big', 'small'].every((name) => Number(t.rows[name]?.[2] ?? 0) > 0),
      deadlineMs: 120_000,
    });
    await runPaletteCommand(page, 'ThetaEvolve: Stop Run');
    assert.deepEqual(shown.header, ['model', 'format', 'samples', 'valid', 'improved', 'reward', 'tokens', 'cost', 'next draw']);
    const big = shown.rows.big as string[];
    const small = shown.rows.small as string[];
    assert.deepEqual([big[1], small[1]], ['diff', 'rewrite']);
    assert.match(big[7] ?? '', /^\$[0-9.]+$/);
    assert.equal(small[7], 'no price');
    assert.deepEqual([big[8], small[8]], ['70%', '30%']);
    assert.match(shown.spend, /^Spent \$[0-9.]+$/);
    await frame.evaluate(() => document.querySelector('.models-panel')?.scrollIntoView({ block: 'center' }));
    const shot = await saveScreenshot(page, 'e2e-models-dashboard-table');
    assert.ok(shot.distinctColours > 20, `${shot.file}: ${shot.distinctColours} colours`);
  });
});
