// The dashboard's step axis in a real browser (Chromium, real chart.js, the
// page's own chart code bundled as the dashboard bundles it): no two x-axis
// tick labels overlap, whatever the last step and the chart's width. Before
// includeBounds: false, a tick at the last step sat next to the last round
// one and "20" and "21" printed as "2021".
import assert from 'node:assert/strict';
import type { Browser, Page } from 'playwright-core';
import { bundledPage } from '../support/bundledPage';
import { launchBrowser } from '../support/codeServer';
import type { TickLabel, TitleOverflow } from './chartTicksPage';

/** The smallest gap between two labels a reader still separates, in pixels. */
const MIN_GAP_PX = 3;

describe('dashboard charts: step axis labels', function () {
  this.timeout(120_000);
  let browser: Browser;
  let page: Page;

  before(async () => {
    browser = await launchBrowser();
    page = await bundledPage(browser, 'test/e2e/chartTicksPage.ts', { width: 1000, height: 400 });
  });

  after(async () => {
    await browser?.close();
  });

  it('never overlap, and the last one is a round step, not the last step squeezed beside it', async () => {
    const problems: string[] = [];
    for (const width of [280, 420, 640]) {
      for (let lastStep = 1; lastStep <= 130; lastStep++) {
        const labels: TickLabel[] = await page.evaluate(([w, s]) => window.xTickLabels(w, s), [width, lastStep] as const);
        assert.ok(labels.length >= 2, `width ${width}, last step ${lastStep}: ${labels.length} tick label(s)`);
        for (let i = 1; i < labels.length; i++) {
          const [a, b] = [labels[i - 1] as TickLabel, labels[i] as TickLabel];
          if (b.left - a.right < MIN_GAP_PX)
            problems.push(
              `width ${width}, last step ${lastStep}: "${a.label}" and "${b.label}" are ${(b.left - a.right).toFixed(1)} px apart`,
            );
        }
      }
    }
    assert.deepEqual(problems.slice(0, 10), [], `${problems.length} crowded pair(s)`);
  });

  it('shows the step as it was reported (20 steps: 0 to 20, no 21)', async () => {
    const labels = await page.evaluate(() => window.xTickLabels(420, 20));
    assert.equal(labels[0]?.label, '0');
    assert.equal(labels.at(-1)?.label, '20');
    const at21 = await page.evaluate(() => window.xTickLabels(420, 21));
    assert.equal(at21.at(-1)?.label, '20', 'the last tick is the round one, not 21 beside it');
  });

  // A panel is 360 px at the narrowest (the grid's minimum), about 370 px in a 760 px editor.
  it('prints every axis title in full, at every panel width the dashboard lays out', async () => {
    const overflows: TitleOverflow[] = [];
    for (const width of [360, 380, 480, 700]) overflows.push(...(await page.evaluate((w) => window.axisTitleOverflows(w), width)));
    assert.deepEqual(
      overflows.map((o) => `${o.chart} ${o.axis} "${o.title}": ${o.titlePx.toFixed(0)} px on a ${o.axisPx.toFixed(0)} px axis`),
      [],
    );
  });

  // With the step axis from 0, one step's bar sat half outside the plot at its right edge, the rest empty.
  it("fills the bar charts' plots with bars from the first step on, however few steps there are", async () => {
    for (const lastStep of [1, 2, 3, 12, 60]) {
      const coverage = await page.evaluate(([w, s]) => window.barCoverage(w, s), [420, lastStep] as const);
      assert.deepEqual(Object.keys(coverage).sort(), ['outcomes', 'stepTime']);
      for (const [chart, share] of Object.entries(coverage)) {
        const at = `${chart} at ${lastStep} step(s)`;
        assert.ok(share.bars > 0.97, `${at}: bars cover ${(share.bars * 100).toFixed(0)}% of the plot`);
        assert.ok(share.plot > 0.8, `${at}: the plot spans ${(share.plot * 100).toFixed(0)}% of its panel`);
      }
    }
  });
});
