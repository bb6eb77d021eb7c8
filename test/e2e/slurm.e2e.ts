// End to end: evolve tasks/circle-packing with thetaevolve.evaluation.backend
// = slurm in code-server + Chromium, against the OpenAI-compatible test
// server and a real single-node SLURM cluster (test/support/slurmCluster.ts)
// whose slurm.conf reaches the extension host as SLURM_CONF, as on a login
// node. Besides thetaevolve.endpoint's server, the run starts two inference
// servers as SLURM jobs (the same test server, thetaevolve.slurm.inference.*).
// The status bar and the dashboard show the queue and the server jobs, the
// evaluations terminal names each child's job, and Stop Run leaves no job of
// the run (evaluations or servers) in the queue.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Frame, Page } from 'playwright-core';
import { jobNameOfRun } from '../../src/engine/evaluation/slurmCli';
import { inferenceJobName } from '../../src/engine/llm/slurmInferenceJobs';
import { startTestServer, type TestServer } from '../server/openaiTestServer';
import {
  REPO_ROOT,
  bestPictureInk,
  dashboardFrame,
  runPaletteCommand,
  saveScreenshot,
  screenshotOnFailure,
  startRunOnProgram,
  startWorkbench,
  taskWorkspace,
  waitForStatusBarText,
  type Workbench,
} from '../support/codeServer';
import { type SlurmCluster, slurmUnavailableReason, startSlurmCluster } from '../support/slurmCluster';
import { testServerJobCommand } from '../support/testServerJob';
import { waitFor } from '../support/waitFor';

/** A dashboard or tooltip line of a job server that is up and has answered requests (inferenceJobText). */
const SERVING_JOB = /^server ([01]) job (\d+) RUNNING on \S+, ([1-9]\d*) requests, \d+ tok\/s$/;

describe('SLURM evaluation backend (code-server + Chromium, real single-node cluster, test inference server)', function () {
  let cluster: SlurmCluster | undefined;
  let model: TestServer | undefined;
  let workbench: Workbench | undefined;
  let page: Page;
  let frame: Frame;
  let staging = '';
  /** The run's SLURM job names: its evaluations', then each server's. */
  let runJobNames: string[] = [];

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
    workbench = await startWorkbench({
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
        // Two more servers, run as SLURM jobs, join the endpoint's in one pool.
        'thetaevolve.slurm.inference.count': 2,
        'thetaevolve.slurm.inference.command': testServerJobCommand(REPO_ROOT),
        'terminal.integrated.gpuAcceleration': 'off',
      },
    });
    page = workbench.page;
  });

  afterEach(screenshotOnFailure('e2e-slurm', () => page));

  after(async () => {
    await workbench?.close();
    await model?.close();
    await cluster?.stop();
    if (staging) rmSync(staging, { recursive: true, force: true });
  });

  it('starts a run whose status bar shows the SLURM queue', async () => {
    await startRunOnProgram(page, 'tasks/circle-packing/initial.py');
    const text = await waitForStatusBarText(page, 'ThetaEvolve step', (t) => /step [1-9]/.test(t), 120_000);
    assert.match(text, /best [\d.]+/);
    // The queue has its own item beside the run's.
    await waitForStatusBarText(page, 'SLURM', (t) => /^SLURM \d+ running, \d+ queued/.test(t.trim()), 60_000);
    await saveScreenshot(page, 'e2e-slurm-1-status-bar');
  });

  it('counts its two inference server jobs up in the status bar; its tooltip lists each job', async () => {
    // Each job starts Node.js and tsx on the node before its server answers.
    await waitForStatusBarText(page, 'SLURM', (t) => /^SLURM \d+ running, \d+ queued · servers 2\/2 up$/.test(t.trim()), 180_000);
    // A person reads the whole of both items: neither is cut at the width VS Code gives an item (40% of the window).
    for (const label of ['ThetaEvolve step', 'SLURM']) {
      const sizes = await page
        .locator('.statusbar-item', { hasText: label })
        .first()
        .evaluate((el) => [el, ...el.querySelectorAll('*')].map((e) => ({ scroll: e.scrollWidth, client: e.clientWidth })));
      assert.ok(
        sizes.every((size) => size.scroll <= size.client),
        `the status bar item "${label}" is cut: ${JSON.stringify(sizes)}`,
      );
    }
    // Read together: the SLURM item comes right after the run's.
    const next = await page
      .locator('.statusbar-item', { hasText: 'ThetaEvolve step' })
      .first()
      .evaluate((el) => {
        let sibling = el.nextElementSibling;
        while (sibling instanceof HTMLElement && sibling.offsetParent === null) sibling = sibling.nextElementSibling;
        return sibling?.textContent ?? '';
      });
    assert.match(next.trim(), /^SLURM /);
    const item = page.locator('.statusbar-item', { hasText: 'SLURM' }).first();
    await item.hover();
    const hover = page.locator('.workbench-hover, .monaco-hover', { hasText: 'Inference jobs (SLURM)' }).first();
    await hover.waitFor({ state: 'visible', timeout: 60_000 });
    // It fades in: the screenshot waits until it is fully drawn.
    await hover.evaluate((el) => Promise.all(el.getAnimations({ subtree: true }).map((a) => a.finished)));
    // One line per job, once both servers answered requests (the tooltip follows the run while it shows).
    const lines = await waitFor(
      async () =>
        (await hover.innerText())
          .replace(/\u00a0/g, ' ')
          .split('\n')
          .map((l) => l.trim())
          .filter((l) => l.startsWith('server ')),
      {
        what: 'the tooltip to list two serving job servers',
        deadlineMs: 60_000,
        intervalMs: 500,
        until: (l) => l.length === 2 && l.every((x) => SERVING_JOB.test(x)),
      },
    );
    assert.deepEqual(
      lines.map((l) => SERVING_JOB.exec(l)?.[1]),
      ['0', '1'],
    );
    await saveScreenshot(page, 'e2e-slurm-1b-status-bar-inference-jobs');
    // Away from the item, so the tooltip does not cover what the next tests look at.
    await page.mouse.move(700, 300);
    await hover.waitFor({ state: 'hidden', timeout: 60_000 });
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

  it("lists the two inference server jobs on the dashboard, beside the endpoint's server", async () => {
    const jobs = frame.locator('.backend-jobs li');
    const texts = await waitFor(() => jobs.allInnerTexts(), {
      what: 'the dashboard to list two serving job servers',
      deadlineMs: 60_000,
      intervalMs: 500,
      until: (t) => t.length === 2 && t.every((x) => SERVING_JOB.test(x.trim())),
    });
    const shown = texts.map((t) => SERVING_JOB.exec(t.trim()) as RegExpExecArray);
    assert.deepEqual(
      shown.map((m) => m[1]),
      ['0', '1'],
    );
    // The ids shown are the cluster's jobs of this run's servers (the run named in the dashboard's header).
    const runId = /^run (\S+)$/.exec((await frame.locator('.run-id').first().innerText()).trim())?.[1] ?? '';
    runJobNames = [jobNameOfRun(runId), inferenceJobName(runId, 0), inferenceJobName(runId, 1)];
    for (const [, index, jobId] of shown) {
      const out = await cluster?.client('squeue', ['-h', '-j', jobId ?? '', '-o', '%j']);
      assert.equal(out?.code, 0, out?.stderr);
      assert.equal(out?.stdout.trim(), inferenceJobName(runId, Number(index)), `job ${jobId}`);
    }
    // One pool: thetaevolve.endpoint's server and the two job servers, each up.
    const servers = (await frame.locator('.backend-servers li').allInnerTexts()).map((t) => t.trim());
    assert.equal(servers.length, 3, servers.join('\n'));
    assert.ok(
      servers.some((s) => s.startsWith(`${model?.baseURL ?? '-'}: up`)),
      servers.join('\n'),
    );
    assert.ok(
      servers.every((s) => /: up · /.test(s)),
      servers.join('\n'),
    );
    // The panel stays while its lists are rebuilt at each report of the servers.
    await frame.locator('.panel.backend').first().scrollIntoViewIfNeeded();
    await saveScreenshot(page, 'e2e-slurm-2b-dashboard-inference-jobs');
  });

  it('names each evaluation\'s SLURM job in the "ThetaEvolve evaluations" terminal', async () => {
    await runPaletteCommand(page, 'View: Toggle Terminal');
    const terminal = page.locator('.terminal-wrapper .xterm-rows').first();
    await terminal.waitFor({ state: 'visible', timeout: 60_000 });
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
    // Neither an evaluation nor a server job of the run is left (squeue by name), nor any job at all.
    assert.equal(runJobNames.length, 3, 'the dashboard named the run');
    for (const name of runJobNames) {
      const queued = await cluster?.client('squeue', ['-h', '-r', '-n', name, '-o', '%i']);
      assert.equal(queued?.code, 0, queued?.stderr);
      assert.equal(queued?.stdout.trim(), '', `no job of ${name} is left in the queue`);
    }
    assert.deepEqual(await cluster?.queuedJobs(), []);
    // Those names were the run's jobs: the cluster's completion log lists each (the servers' as cancelled).
    const jobcomp = join(cluster?.dir ?? '', 'log', 'jobcomp.log');
    await waitFor(() => readFileSync(jobcomp, 'utf8'), {
      what: "the completion log to list the run's jobs",
      deadlineMs: 60_000,
      until: (log) => runJobNames.every((name) => log.includes(`Name=${name} `)),
    });
    // The run holds no server job any more, nor a live queue: the SLURM item is gone.
    await page.locator('.statusbar-item', { hasText: 'SLURM' }).first().waitFor({ state: 'hidden', timeout: 60_000 });
    // The dashboard keeps the queue's last word: nothing pending or running.
    await frame
      .locator('.backend-queue', { hasText: /^SLURM: 0 pending, 0 running, \d+ done/ })
      .first()
      .waitFor({ state: 'visible', timeout: 60_000 });
    await saveScreenshot(page, 'e2e-slurm-4-stopped');
  });
});
