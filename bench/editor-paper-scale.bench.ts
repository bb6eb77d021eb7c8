// editor-paper-scale: what the editor shows of the paper's longest runs (600
// steps, 307,200 programs ever added, 10,000 alive; bench/support/paperScaleRun.ts).
// The real pages (dist/webview, as `npm run build` makes them) in headless
// Chromium, fed the protocol messages the extension sends
// (src/protocol/dashboardMessages.ts, compareMessages.ts), built from the
// real engine worker's answers (src/worker/engineWorker.ts, the dashboard's
// own feed, src/dashboard/dashboardFeed.ts). Measured: from asking the worker
// to the page's first frame showing the run (dashboard: the run opened from
// disk, as after a window reload; Compare Runs: three such runs), `report`
// of the run (the CLI command's own code), and the longest frame while a live
// step lands on the open dashboard (requestAnimationFrame gaps, with the
// longest task Chromium reports). Exits 1 when a target is missed.
// Heavy (generates a 60 MB database first): run it alone, with `nice`.
// `node --import tsx bench/editor-paper-scale.bench.ts RUN.sqlite` measures a
// copy of that run instead (one generated here before, while changing the editor).
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { EngineHost } from '../src/worker/engineHost';
import { DashboardModel } from '../src/dashboard/dashboardModel';
import { DashboardFeed, type DashboardSink, replayRunFromDisk } from '../src/dashboard/dashboardFeed';
import type { HostMessage } from '../src/protocol/dashboardMessages';
import type { CompareHostMessage } from '../src/protocol/compareMessages';
import { parseEngineEvent } from '../src/engine/common/events';
import { loadSqlJs } from '../src/engine/database/sqlite';
import { reportCommand } from '../src/cli/report';
import { inlineScriptText, inlineStyleText } from '../src/engine/common/inlineElementText';
import { Rng } from '../src/engine/common/rng';
import { generatePaperScaleRun, PAPER_SCALE_STEPS, paperScaleMeta, statisticsOf } from './support/paperScaleRun';
import { syntheticProgram, REALISTIC_SHAPE } from '../test/unit/fixtures/database/programs';
import { PARENTS_PER_STEP, CHILDREN_PER_PARENT } from '../test/unit/fixtures/database/fill';
import { launchBrowser, REPO_ROOT } from '../test/support/codeServer';

const TARGETS = { dashboardMs: 2000, compareMs: 4000, reportMb: 10, reportMs: 10_000, frameMs: 200 };
const WEBVIEW = path.join(REPO_ROOT, 'dist', 'webview');
const mb = (bytes: number): string => (bytes / 1e6).toFixed(1);

declare global {
  interface Window {
    /** The page's side of postMessage to the host (a page binding). */
    toHost: (message: unknown) => void;
    /** Resolves with the time of the first frame drawn after the next host message of `type` was handled. */
    shownAfter: (type: string) => Promise<number>;
    /** Starts watching frames; stopFrames ends it and says the longest gap between frames and the longest task. */
    watchFrames: () => void;
    stopFrames: () => { longestFrameMs: number; longestTaskMs: number; frames: number };
  }
}

/** What the webview shell gives a page: acquireVsCodeApi, and probes for first content and frames. */
const PAGE_PRELUDE = `
window.acquireVsCodeApi = () => ({ postMessage: (m) => window.toHost(m), getState: () => undefined, setState: () => {} });
window.shownAfter = (type) => new Promise((resolve) => {
  const onMessage = (event) => {
    if (!event.data || event.data.type !== type) return;
    window.removeEventListener('message', onMessage);
    // Added after the page's own listener: it runs once the page handled the message; the frame after is the one showing it.
    requestAnimationFrame(() => setTimeout(() => resolve(performance.now()), 0));
  };
  window.addEventListener('message', onMessage);
});
window.watchFrames = () => {
  let last = performance.now(), longest = 0, frames = 0, longestTask = 0, on = true;
  const observer = new PerformanceObserver((list) => { for (const e of list.getEntries()) longestTask = Math.max(longestTask, e.duration); });
  observer.observe({ type: 'longtask' });
  const tick = (t) => { longest = Math.max(longest, t - last); last = t; frames++; if (on) requestAnimationFrame(tick); };
  requestAnimationFrame(tick);
  window.stopFrames = () => { on = false; observer.disconnect(); longest = Math.max(longest, performance.now() - last); return { longestFrameMs: longest, longestTaskMs: longestTask, frames }; };
};`;

/** A page as the webview shell builds it (src/vscode/webviewPage.ts): the bundle and its style inline; resolves once it said `ready`. */
async function openPage(browser: Browser, name: 'dashboard' | 'compare'): Promise<Page> {
  const script = fs.readFileSync(path.join(WEBVIEW, `${name}.js`), 'utf8');
  const style = fs.readFileSync(path.join(WEBVIEW, `${name}.css`), 'utf8');
  // An editor column beside the code: about 1,200 x 900 CSS pixels.
  const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  page.on('pageerror', (err) => console.error(`${name} page: ${err.message}`));
  let readied: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (readied = resolve));
  await page.exposeFunction('toHost', (message: unknown) => {
    if ((message as { type?: unknown } | null)?.type === 'ready') readied();
  });
  await page.setContent(
    `<!DOCTYPE html><html lang="en"><head><meta charset="UTF-8"><style>${inlineStyleText(style)}</style>` +
      `<script>${PAGE_PRELUDE}</script></head><body><main id="app" aria-live="polite"></main>` +
      `<script>${inlineScriptText(script)}</script></body></html>`,
  );
  await ready;
  return page;
}

/** The page side of DashboardHost (src/vscode/dashboardPanel.ts): each model change posts its message, in order. */
function pageSink(model: DashboardModel, post: (message: HostMessage) => void): DashboardSink {
  return {
    model,
    setRun: (input) => post(model.setRun(input)),
    setRunState: (state) => post(model.setRunState(state)),
    addStep: (input) => post(model.addStep(input)),
    setDatabase: (input, scores) => post(model.setDatabase(input, scores)),
    setBest: (input) => post(model.setBest(input)),
    setTrainer: (trainer) => post(model.setTrainer(trainer)),
    setBackend: (part) => post(model.setBackend(part)),
    setSourceLabel: (label) => {
      const message = model.setSourceLabel(label);
      if (message) post(message);
    },
    load: (feed) => {
      feed(model);
      post(model.snapshotMessage());
    },
    notify: (level, text) => post({ type: 'notice', level, text }),
  };
}

/** Posts messages to a page in order, as webview.postMessage does; `drained` resolves once all were delivered. */
function poster(page: Page): {
  post: (message: HostMessage | CompareHostMessage) => void;
  drained: () => Promise<void>;
  bytes: () => number;
} {
  let chain = Promise.resolve();
  let bytes = 0;
  return {
    post: (message) => {
      bytes += JSON.stringify(message).length;
      chain = chain.then(() => page.evaluate((m) => window.postMessage(m, '*'), message));
    },
    drained: () => chain,
    bytes: () => bytes,
  };
}

/** A copy of `from` as another run (its own run id): Compare Runs of three such runs. */
async function copyAsRun(from: string, to: string, runId: string, taskDir: string): Promise<void> {
  const SQL = await loadSqlJs();
  const db = new SQL.Database(fs.readFileSync(from));
  try {
    db.run("UPDATE meta SET value = ? WHERE key = 'run_meta'", [JSON.stringify(paperScaleMeta(runId, taskDir))]);
    fs.writeFileSync(to, db.export());
  } finally {
    db.close();
  }
}

/** Live programs in a run database (read here, not by the worker: its first read of the run is measured). */
async function aliveIn(file: string): Promise<number> {
  const SQL = await loadSqlJs();
  const db = new SQL.Database(fs.readFileSync(file));
  try {
    return Number(db.exec('SELECT count(*) FROM programs WHERE alive = 1')[0]?.values[0]?.[0] ?? 0);
  } finally {
    db.close();
  }
}

async function main(): Promise<number> {
  if (!fs.existsSync(path.join(WEBVIEW, 'compare.js'))) {
    const built = spawnSync(process.execPath, [path.join(REPO_ROOT, 'scripts', 'build.mjs')], { cwd: REPO_ROOT, stdio: 'inherit' });
    if (built.status !== 0) throw new Error('npm run build failed');
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'thetaevolve-bench-editor-'));
  const host = new EngineHost({ workerFile: path.join(REPO_ROOT, 'src/worker/engineWorker.ts'), execArgv: ['--require', 'tsx/cjs'] });
  let browser: Browser | undefined;
  const missed: string[] = [];
  try {
    const taskDir = path.join(dir, 'task');
    const files = ['paper-a', 'paper-b', 'paper-c'].map((runId) => path.join(dir, runId, 'run.sqlite'));
    const [runA, runB, runC] = files as [string, string, string];
    for (const file of files) fs.mkdirSync(path.dirname(file), { recursive: true });
    const generated = performance.now();
    const given = process.argv[2];
    if (given) await copyAsRun(given, runA, 'paper-a', taskDir);
    else await (await generatePaperScaleRun(runA, { seed: 600, meta: paperScaleMeta('paper-a', taskDir) })).close();
    const alive = await aliveIn(runA);
    await copyAsRun(runA, runB, 'paper-b', taskDir);
    await copyAsRun(runA, runC, 'paper-c', taskDir);
    const fileBytes = fs.statSync(runA).size;
    const where = `${PAPER_SCALE_STEPS} steps, ${alive.toLocaleString('en-US')} programs alive, ${mb(fileBytes)} MB file`;
    console.log(`(${given ? `copied ${given}:` : 'generated'} the ${where} in ${((performance.now() - generated) / 1000).toFixed(0)} s)`);

    browser = await launchBrowser();
    // ----- the dashboard: the run opened from disk (a window reload, or the Runs view's Open Dashboard)
    const dashboard = await openPage(browser, 'dashboard');
    const dashboardPosts = poster(dashboard);
    const model = new DashboardModel();
    const sink = pageSink(model, dashboardPosts.post);
    // The worker is up (the editor starts it with the extension; a question about no run starts it here), no run read yet.
    await host.query({ kind: 'summary', dbFile: path.join(dir, 'no-run.sqlite') }).catch(() => undefined);
    const shown = dashboard.evaluate(() => window.shownAfter('snapshot'));
    const dashboardStarted = performance.now();
    const pageStarted = await dashboard.evaluate(() => performance.now());
    const replayed = await replayRunFromDisk(sink, (q) => host.query(q), { runId: 'paper-a', dbFile: runA });
    const answeredMs = performance.now() - dashboardStarted;
    const pageShown = await shown;
    const dashboardMs = pageShown - pageStarted;
    const nodeMs = performance.now() - dashboardStarted;
    const stepTile = await dashboard.evaluate(() => (document.body.dataset.synced === 'true' ? document.body.innerText : ''));
    if (!replayed || !stepTile.includes(String(PAPER_SCALE_STEPS)))
      throw new Error(`the dashboard does not show step ${PAPER_SCALE_STEPS}: ${stepTile.slice(0, 300)}`);
    console.log(
      `bench editor-paper-scale-dashboard: ${dashboardMs.toFixed(0)} ms (the ${where} opened from disk: the worker's answers, ` +
        `the dashboard's snapshot of ${mb(dashboardPosts.bytes())} MB posted, the page's first frame showing it; the worker's answers took ${answeredMs.toFixed(0)} ms of ${nodeMs.toFixed(0)} as the host saw it; ` +
        `target <= ${TARGETS.dashboardMs})`,
    );
    if (dashboardMs > TARGETS.dashboardMs) missed.push('dashboard');

    // ----- a live step lands on the open dashboard
    const rng = Rng.fromSeed(601);
    const step = PAPER_SCALE_STEPS + 1;
    const best = model.snapshot().best;
    const children = Array.from({ length: PARENTS_PER_STEP * CHILDREN_PER_PARENT }, () =>
      syntheticProgram(rng, step, null, REALISTIC_SHAPE),
    );
    const committed = parseEngineEvent({
      ...statisticsOf(step, children),
      type: 'step_committed',
      time: Date.now(),
      dbSize: alive,
      bestEver: best?.score ?? null,
      newBest: true,
      elapsedMs: 3_600_000,
    });
    const feed = new DashboardFeed(sink, (q) => host.query(q));
    const postsBefore = dashboardPosts.bytes();
    await dashboard.evaluate(() => window.watchFrames());
    const stepShown = dashboard.evaluate(() => window.shownAfter('database'));
    feed.handle(committed, runA);
    if (best)
      feed.handle(
        parseEngineEvent({
          type: 'new_best',
          time: Date.now(),
          id: best.id,
          step,
          score: best.score,
          objective: best.objective,
          parentId: null,
        }),
        runA,
      );
    await feed.settled();
    await dashboardPosts.drained();
    await stepShown;
    // A few frames more: what the step's messages started (chart animations, layout) finishes.
    await dashboard.evaluate(
      () => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(resolve, 100)))),
    );
    const frames = await dashboard.evaluate(() => window.stopFrames());
    const afterStep = await dashboard.evaluate(() => document.body.innerText);
    if (!afterStep.includes(String(step))) throw new Error(`the dashboard does not show the live step ${step}`);
    console.log(
      `bench editor-paper-scale-longest-frame: ${frames.longestFrameMs.toFixed(0)} ms (longest gap between frames while step ${step} lands on the open dashboard: ` +
        `its step, database and best messages, ${((dashboardPosts.bytes() - postsBefore) / 1e3).toFixed(0)} KB; ${frames.frames} frames, longest task ` +
        `${frames.longestTaskMs.toFixed(0)} ms; target <= ${TARGETS.frameMs})`,
    );
    if (frames.longestFrameMs > TARGETS.frameMs) missed.push('longest-frame');

    // ----- Compare Runs of three such runs
    const compare = await openPage(browser, 'compare');
    const comparePosts = poster(compare);
    const compareShown = compare.evaluate(() => window.shownAfter('comparison'));
    const compareStarted = await compare.evaluate(() => performance.now());
    const comparison = await host.query({ kind: 'comparison', dbFiles: files });
    comparePosts.post({ type: 'comparison', comparison });
    await comparePosts.drained();
    const compareMs = (await compareShown) - compareStarted;
    const compareText = await compare.evaluate(() => document.body.innerText);
    for (const runId of ['paper-a', 'paper-b', 'paper-c'])
      if (!compareText.includes(runId)) throw new Error(`Compare Runs does not show ${runId}: ${compareText.slice(0, 300)}`);
    console.log(
      `bench editor-paper-scale-compare: ${compareMs.toFixed(0)} ms (three runs of ${where}, the one on the dashboard and two not read before: the worker's comparison, ` +
        `${mb(comparePosts.bytes())} MB posted, the page's first frame showing it; target <= ${TARGETS.compareMs})`,
    );
    if (compareMs > TARGETS.compareMs) missed.push('compare');

    // ----- thetaevolve report of the run
    const reportFile = path.join(dir, 'report.html');
    const reportStarted = performance.now();
    const io = {
      stdout: () => undefined,
      stderr: (text: string) => process.stderr.write(text),
      stderrIsTTY: false,
      signal: new AbortController().signal,
      cwd: dir,
      env: process.env,
    };
    const code = await reportCommand({ positionals: [runA], flags: { output: reportFile } }, io);
    const reportMs = performance.now() - reportStarted;
    if (code !== 0) throw new Error(`report exited ${code}`);
    const reportBytes = fs.statSync(reportFile).size;
    console.log(
      `bench editor-paper-scale-report-size: ${mb(reportBytes)} MB (thetaevolve report of the ${where}; target <= ${TARGETS.reportMb})`,
    );
    console.log(
      `bench editor-paper-scale-report-time: ${reportMs.toFixed(0)} ms (read the run, write the self-contained HTML file; target <= ${TARGETS.reportMs})`,
    );
    if (reportBytes / 1e6 > TARGETS.reportMb) missed.push('report-size');
    if (reportMs > TARGETS.reportMs) missed.push('report-time');
  } finally {
    await browser?.close();
    await host.dispose();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  if (missed.length > 0) console.error(`bench editor-paper-scale: missed ${missed.join(', ')}`);
  return missed.length > 0 ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
