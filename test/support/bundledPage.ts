// A blank Chromium page running browser code of ours bundled as the build
// bundles it (esbuild, one IIFE, nothing written): the page tests that need
// no VS Code (test/e2e/chartTicks.e2e.ts, dashboardOperators.e2e.ts).
import { join } from 'node:path';
import { build } from 'esbuild';
import type { Browser, Page } from 'playwright-core';
import { REPO_ROOT } from './codeServer';

/**
 * A new page of `browser` with `entry` (relative to the repository) bundled
 * into it, and its stylesheet when it imports one. `prelude`, when given,
 * runs first: as text, since a function compiled by tsx would name helpers
 * the page lacks.
 */
export async function bundledPage(
  browser: Browser,
  entry: string,
  viewport: { width: number; height: number },
  prelude?: string,
): Promise<Page> {
  const bundle = await build({
    entryPoints: [join(REPO_ROOT, entry)],
    bundle: true,
    format: 'iife',
    platform: 'browser',
    write: false,
    // A stylesheet the entry imports is emitted beside the script (nothing is written).
    outdir: join(REPO_ROOT, 'out', 'bundled-page'),
    logLevel: 'silent',
  });
  const script = bundle.outputFiles.find((f) => f.path.endsWith('.js'))?.text ?? '';
  const style = bundle.outputFiles.find((f) => f.path.endsWith('.css'))?.text;
  const page = await browser.newPage({ viewport });
  await page.setContent('<!DOCTYPE html><html><body></body></html>');
  if (prelude !== undefined) await page.addScriptTag({ content: prelude });
  if (style !== undefined) await page.addStyleTag({ content: style });
  await page.addScriptTag({ content: script });
  return page;
}
