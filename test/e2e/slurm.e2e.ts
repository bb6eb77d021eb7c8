// End to end: evolve tasks/circle-packing with thetaevolve.evaluation.backend
// = slurm in code-server + Chromium, against the OpenAI-compatible test
// server and a real single-node SLURM cluster (test/support/slurmCluster.ts)
// whose slurm.conf reaches the extension host as SLURM_CONF, as on a login
// node. The status bar and the dashboard show the queue, the evaluations
// terminal names each child's job, and Stop Run leaves no job in the queue.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Frame, Page } from 'playwright-core';
import { startTestServer, type TestServer } from '../server/openaiTestServer';
import {
  bestPictureInk,
  dashboardFrame,
  launchBrowser,
  openProgram,
  openWorkbench,
  pickQuickInputItem,
  type RunningCodeServer,
  runPaletteCommand,
  saveScreenshot,
  screenshotOnFailure,
  startCodeServer,
  taskWorkspace,
  waitForStatusBarText,
} from '../support/codeServer';
import { type SlurmCluster, slurmUnavailableReason, startSlurmCluster } from '../support/slurmCluster';

describe('SLURM evaluation backend (code-server + Chromium, real single-node cluster, test inference server)', function () {
  let cluster: SlurmCluster | undefined;
  let model: TestServer | undefined;
  let server: RunningCodeServer | undefined;
  let browser: Browser | undefined;
  let page: Page;
  let frame: Frame;
  let staging = '';

  before(async function () {
    const unavailable = slurmUnavailableReason();
    if (unavailable) {
      console.log(`    skipped: no SLURM test cluster here: ${unavailable}`);
      this.skip();
    }
    cluster = await startSlurmCluster({ cpus: 8 });
    model = await startTestServer({ latencyMs: 20 });
    staging = mkdtempSync(join(tmpdir(), 'te-e2e-slurm-staging-'));
    const workspace = taskWorkspace('thetaevolve-e2e-slurm-', 'circle-packing', {
      'thetaevolve.sampler': 'llm',
      'thetaevolve.batchSize': 2,
      'thetaevolve.samplesPerPrompt': 2,
      'thetaevolve.database.preset': 'small',
      'thetaevolve.maxSteps': 100,
    });
    server = await startCodeServer({
      workspace,
      // On a login node SLURM_CONF (or /etc/slurm/slurm.conf) is in the environment VS Code's server starts with.
      env: { SLURM_CONF: cluster.conf },
      // The endpoint and the SLURM settings are machine-scoped: user settings.
      userSettings: {
        'thetaevolve.endpoint': model.baseURL,
        'thetaevolve.evaluation.backend': 'slurm',
        'thetaevolve.slurm.partition': cluster.partition,
        'thetaevolve.slurm.stagingDirectory': staging,
        'thetaevolve.slurm.pollSeconds': 1,
        // The login environment a job starts from may not have a Node.js >= 20 on PATH: this one.
        'thetaevolve.slurm.nodeCommand': process.execPath,
        'terminal.integrated.gpuAcceleration': 'off',
      },
    });
    browser = await launchBrowser();
    page = await openWorkbench(browser, server.url, workspace);
  });

  afterEach(screenshotOnFailure('e2e-slurm', () => page));

  after(async () => {
    await browser?.close();
    await server?.stop();
    await model?.close();
    await cluster?.stop();
    if (staging) rmSync(staging, { recursive: true, force: true });
  });

  it('starts a run whose status bar shows the SLURM queue', async () => {
    await openProgram(page, 'tasks/circle-packing/initial.py');
    await runPaletteCommand(page, 'ThetaEvolve: Start Run');
    await pickQuickInputItem(page, "this file's task");
    const text = await waitForStatusBarText(
      page,
      'ThetaEvolve step',
      (t) => /step [1-9]/.test(t) && /SLURM \d+ running, \d+ queued/.test(t),
      120_000,
    );
    assert.match(text, /best [\d.]+/);
    await saveScreenshot(page, 'e2e-slurm-1-status-bar');
  });

  it('shows the queue (pending, running, done, queue wait) on the dashboard', async () => {
    await runPaletteCommand(page, 'ThetaEvolve: Open Dashboard');
    frame = await dashboardFrame(page);
    const queue = frame.locator('.backend-queue').first();
    await queue.waitFor({ state: 'visible', timeout: 60_000 });
    const deadline = Date.now() + 60_000;
    let text = '';
    // Once a job ran, the median wait is known.
    while (!/queue wait [\d.]+ s/.test(text)) {
      if (Date.now() > deadline) throw new Error(`the dashboard's queue never showed a queue wait: ${text}`);
      await page.waitForTimeout(500);
      text = await queue.innerText();
    }
    assert.match(text, /^SLURM: \d+ pending, \d+ running, [1-9]\d* done/);
    // The header says where candidates run: not on this machine.
    assert.match(await frame.locator('.run-header').first().innerText(), /sandbox: bwrap\S* .*on the SLURM compute nodes/);
    // The best solution came back from the node with its result: the packing is drawn, as in a local run.
    const drawDeadline = Date.now() + 60_000;
    while ((await bestPictureInk(frame)) <= 500) {
      if (Date.now() > drawDeadline) throw new Error('the best solution of a SLURM run was never drawn');
      await page.waitForTimeout(500);
    }
    await frame.locator('.panel.backend').first().scrollIntoViewIfNeeded();
    const shot = await saveScreenshot(page, 'e2e-slurm-2-dashboard-queue');
    assert.ok(shot.distinctColours > 20, `${shot.file} looks blank`);
  });

  it('names each evaluation\'s SLURM job in the "ThetaEvolve evaluations" terminal', async () => {
    await runPaletteCommand(page, 'View: Toggle Terminal');
    const terminal = page.locator('.terminal-wrapper .xterm-rows').first();
    await terminal.waitFor({ state: 'visible', timeout: 30_000 });
    const deadline = Date.now() + 60_000;
    let text = '';
    while (!/running as SLURM job \d+_\d+/.test(text) || !/step \d+ committed: best/.test(text)) {
      if (Date.now() > deadline) throw new Error(`the evaluations terminal never named a SLURM job; it shows: ${text.slice(-400)}`);
      await page.waitForTimeout(500);
      text = (await terminal.innerText()).replace(/\u00a0/g, ' ');
    }
    await saveScreenshot(page, 'e2e-slurm-3-terminal');
  });

  it('Stop Run leaves no job in the queue, and the dashboard says none is running', async () => {
    await runPaletteCommand(page, 'ThetaEvolve: Stop Run');
    await waitForStatusBarText(page, 'ThetaEvolve step', (t) => t.includes('stopped'), 60_000);
    // The run closes (its terminal says so) once its evaluator scancel-ed its jobs and saw them leave the queue.
    await page
      .locator('.terminal-wrapper .xterm-rows', { hasText: 'The run is over.' })
      .first()
      .waitFor({ state: 'visible', timeout: 60_000 });
    assert.deepEqual(await cluster?.queuedJobs(), []);
    // The dashboard keeps the queue's last word: nothing pending or running.
    await frame
      .locator('.backend-queue', { hasText: /^SLURM: 0 pending, 0 running, \d+ done/ })
      .first()
      .waitFor({ state: 'visible', timeout: 30_000 });
    await saveScreenshot(page, 'e2e-slurm-4-stopped');
  });
});
