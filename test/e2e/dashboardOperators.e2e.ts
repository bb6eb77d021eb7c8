// The dashboard page (webview/src/dashboard.ts, bundled as the build bundles
// it) in a blank Chromium page, fed the host's messages as DashboardModel
// makes them: the evaluator cascade's stage counts and the model's
// meta-recommendations (docs/algorithm.md section 12) are drawn, as text, and
// marked as the model's. The page's one handle to VS Code, acquireVsCodeApi,
// is what the page is given in place of the webview host.
import assert from 'node:assert/strict';
import type { Browser, Page } from 'playwright-core';
import { DashboardModel } from '../../src/dashboard/dashboardModel';
import { OUTCOMES } from '../../src/engine/common/types';
import type { DashboardStepInput } from '../../src/protocol/dashboardMessages';
import { bundledPage } from '../support/bundledPage';
import { launchBrowser } from '../support/codeServer';
import { dashboardDatabaseInput, dashboardRunInput } from '../support/dashboardInputs';

function step(n: number, cascade: Record<string, number>): DashboardStepInput {
  const counts = Object.fromEntries(OUTCOMES.map((o) => [o, 0])) as DashboardStepInput['counts'];
  counts.valid = 4;
  return {
    step: n,
    samples: 4,
    counts,
    best: 1,
    mean: 1,
    p10: 1,
    p50: 1,
    p90: 1,
    tokens: { prompt: 10, completion: 10 },
    timings: { generationMs: 10, evaluationMs: 10, totalMs: 20 },
    bestEver: 1,
    dbSize: 5,
    elapsedMs: 20 * n,
    cascade,
  };
}

describe('dashboard page: operators beyond the paper', function () {
  this.timeout(120_000);
  let browser: Browser;
  let page: Page;

  before(async () => {
    browser = await launchBrowser();
    page = await bundledPage(
      browser,
      'webview/src/dashboard.ts',
      { width: 1200, height: 900 },
      'window.sent = []; window.acquireVsCodeApi = () => ({ postMessage: (m) => window.sent.push(m), getState: () => undefined, setState: () => undefined });',
    );
    // The page listens once its charts are made, after its first paint, and then says `ready`: the host posts only after.
    await page.waitForFunction("window.sent.some((m) => m.type === 'ready')", undefined, { timeout: 60_000 });
  });

  after(async () => {
    await browser?.close();
  });

  it("draws the cascade's stage counts and the model's recommendations, marked as the model's and as edited", async () => {
    const model = new DashboardModel();
    model.setRun(dashboardRunInput({ source: { kind: 'llm', label: 'm' } }));
    model.addStep(step(1, { '1': 3, '2': 1 }));
    model.addStep(step(2, { '1': 1, '2': 3 }));
    const db = dashboardDatabaseInput({
      lastStep: 2,
      programs: 5,
      hashIndexSize: 5,
      islands: [{ island: 0, size: 5, generation: 2, best: { id: 'a', score: 1 } }],
      guidance: { text: 'Prefer numpy.', step: 1 },
      // Text a model wrote: markup stays text.
      recommendations: { text: '- Keep <b>x</b> near 3.', step: 3, afterStep: 2, editedBy: 'researcher' },
    });
    model.setDatabase(db, [1]);
    const snapshot = JSON.parse(JSON.stringify(model.snapshotMessage())) as unknown;
    await page.evaluate(`window.postMessage(${JSON.stringify(snapshot)}, '*')`);
    await page.waitForSelector('.cascade-panel li', { timeout: 60_000 });
    const stages = (await page.evaluate("[...document.querySelectorAll('.cascade-panel li')].map((li) => li.textContent)")) as string[];
    assert.deepEqual(stages, ['stage 1: 8 reached, 4 ended there', 'stage 2: 4 reached, 4 ended there']);
    assert.equal(await page.evaluate("document.querySelector('.cascade-panel').hidden"), false);
    const facts = (await page.evaluate(
      "Object.fromEntries([...document.querySelectorAll('dt')].map((dt) => [dt.textContent, dt.nextElementSibling?.textContent ?? '']))",
    )) as Record<string, string>;
    assert.equal(facts.guidance, 'since step 1: Prefer numpy.');
    assert.equal(facts.recommendations, 'from the model after step 2, edited by the researcher, since step 3: - Keep <b>x</b> near 3.');
    assert.equal(await page.evaluate("document.querySelectorAll('dd b').length"), 0, 'no markup from the text');
  });
});
