// When the dashboard page shows its run in code-server + Chromium: its header
// painted with the run's numbers, timed from a moment the caller names, each
// stage on the way printed. The first-use e2e prints the figures; bench
// editor-reload-dashboard holds them to their targets.
import type { Frame, Page } from 'playwright-core';
import { waitFor } from './waitFor';

/** What the dashboard's header and step tile show, read in one go from a frame. */
export interface Painted {
  step: string;
  best: string;
  details: string;
}

/** The dashboard page's frame once its header is painted with the run's numbers (not its waiting state), or null. */
export async function paintedDashboard(page: Page): Promise<{ frame: Frame; painted: Painted } | null> {
  for (const frame of page.frames()) {
    const painted = await frame
      .evaluate(() => {
        if (document.body?.dataset.thetaevolve !== 'dashboard') return null;
        // No named functions in here: the test's TypeScript loader would wrap them in a helper the page lacks.
        const values: Record<string, string> = {};
        for (const t of document.querySelectorAll('.tile'))
          values[t.querySelector('.tile-label')?.textContent ?? ''] = (t.querySelector('.tile-value')?.textContent ?? '').trim();
        const step = values['step'] ?? '';
        const title = document.querySelector('.run-header .run-title')?.textContent ?? '';
        // Painted: the run's title and a step number, with a box on the screen.
        if (
          !/^\d+$/.test(step) ||
          title === 'ThetaEvolve' ||
          (document.querySelector('.run-header')?.getBoundingClientRect().height ?? 0) === 0
        )
          return null;
        return {
          step,
          best: values['best objective'] ?? '',
          details: document.querySelector('.run-header .run-source')?.textContent ?? '',
        };
      })
      .catch(() => null);
    if (painted) return { frame, painted };
  }
  return null;
}

/** Where the page stands: webview host frames, whether the dashboard's script ran (its body marker). */
async function pageStage(page: Page): Promise<string> {
  const hosts = page.frames().filter((f) => f.url().includes('/webview/browser/pre/')).length;
  let script = false;
  for (const frame of page.frames())
    if ((await frame.evaluate(() => document.body?.dataset.thetaevolve ?? null).catch(() => null)) === 'dashboard') script = true;
  return `${hosts} webview host frame(s), dashboard script ${script ? 'ran' : 'not run'}`;
}

/** Milliseconds from `since` until the dashboard's header is painted with the run's numbers (polled every 100 ms); each stage on the way is printed. */
export async function timeToPainted(
  page: Page,
  since: number,
  what: string,
): Promise<{ ms: number; fromWebviewMs: number; frame: Frame; painted: Painted }> {
  let stage = '';
  let webviewAt: number | null = null;
  const shown = await waitFor(
    async () => {
      const now = await pageStage(page);
      if (webviewAt === null && !now.startsWith('0 ')) webviewAt = Date.now();
      if (now !== stage) console.log(`    [e2e] ${new Date().toISOString()} ${Date.now() - since} ms: ${(stage = now)}`);
      return paintedDashboard(page);
    },
    { what: `the dashboard painted ${what}`, until: (p) => p !== null, deadlineMs: 60_000, intervalMs: 100 },
  );
  const painted = Date.now();
  const ms = painted - since;
  if (!shown) throw new Error(`the dashboard was never painted ${what}`);
  const fromWebviewMs = painted - (webviewAt ?? painted);
  console.log(`    [e2e] dashboard painted ${what}: ${ms} ms (${fromWebviewMs} ms after VS Code made its webview)`);
  return { ms, fromWebviewMs, ...shown };
}
