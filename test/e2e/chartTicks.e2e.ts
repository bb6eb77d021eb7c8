// The dashboard's step axis in a real browser (Chromium, real chart.js, the
// page's own chart code bundled as the dashboard bundles it): no two x-axis
// tick labels overlap, whatever the last step and the chart's width. Before
// includeBounds: false, a tick at the last step sat next to the last round
// one and "20" and "21" printed as "2021".
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { build } from 'esbuild';
import type { Browser, Page } from 'playwright-core';
import { launchBrowser, REPO_ROOT } from '../support/codeServer';
import type { TickLabel } from './chartTicksPage';

/** The smallest gap between two labels a reader still separates, in pixels. */
const MIN_GAP_PX = 3;

describe('dashboard charts: step axis labels', function () {
  this.timeout(120_000);
  let browser: Browser;
  let page: Page;

  before(async () => {
    const bundle = await build({
      entryPoints: [join(REPO_ROOT, 'test', 'e2e', 'chartTicksPage.ts')],
      bundle: true,
      format: 'iife',
      platform: 'browser',
      write: false,
      logLevel: 'silent',
    });
    browser = await launchBrowser();
    page = await browser.newPage({ viewport: { width: 1000, height: 400 } });
    await page.setContent('<!DOCTYPE html><html><body></body></html>');
    await page.addScriptTag({ content: bundle.outputFiles[0]?.text ?? '' });
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
});
