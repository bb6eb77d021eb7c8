// The engine worker thread for real: src/worker/engineWorker.ts under tsx, driven
// through EngineHost (the extension's side of the protocol) and, for the
// malformed-message cases, through a bare Worker.
import assert from 'node:assert/strict';
import { type AddressInfo, createServer } from 'node:net';
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Worker } from 'node:worker_threads';
import { defaultSettings, type Settings } from '../../src/engine/common/config';
import type { EngineEvent } from '../../src/engine/common/events';
import { parseWorkerToHost, type Query, type WorkerToHost } from '../../src/protocol/workerMessages';
import { enqueueSteer } from '../../src/engine/steering/inbox';
import { EngineHost } from '../../src/worker/engineHost';
import { startSlimeTestServer } from '../server/slimeTestServer';
import { tempDir } from '../support/tempDirs';
import { runCli } from '../support/cli';
import { standalonePython } from '../support/standalonePython';
import { loadSqlJs } from '../../src/engine/database/sqlite';

const DEBIAN_PYTHON = '/usr/bin/python3';

const WORKER = resolve(__dirname, '../../src/worker/engineWorker.ts');
const TASK_DIR = resolve(__dirname, '../fixtures/tasks/quadratic');
// tsx's CommonJS hook: `--import tsx` does not reach a worker's entry file on Node 20.
const EXEC_ARGV = ['--require', 'tsx/cjs'];

function smallSettings(overrides: Partial<Settings> = {}): Settings {
  return {
    ...defaultSettings(),
    sampler: 'mutate',
    batchSize: 2,
    samplesPerPrompt: 2,
    evaluationConcurrency: 2,
    'database.preset': 'small',
    ...overrides,
  };
}

/** Collects a run's events until it is closed (or the start failed). */
function collectRun(
  host: EngineHost,
  runId: string,
  onEvent?: (event: EngineEvent) => void,
): Promise<{ events: EngineEvent[]; startFailed: string | null }> {
  const events: EngineEvent[] = [];
  return new Promise((resolvePromise) => {
    const offs = [
      host.on('event', (id, event) => {
        if (id !== runId) return;
        events.push(event);
        onEvent?.(event);
      }),
      host.on('runClosed', (id) => {
        if (id !== runId) return;
        offs.forEach((off) => off());
        resolvePromise({ events, startFailed: null });
      }),
      host.on('startFailed', (id, message) => {
        if (id !== runId) return;
        offs.forEach((off) => off());
        resolvePromise({ events, startFailed: message });
      }),
      host.on('exit', (code) => {
        offs.forEach((off) => off());
        resolvePromise({ events, startFailed: `the worker exited with code ${code}` });
      }),
    ];
  });
}

describe('engine worker thread', function () {
  this.timeout(60_000);
  let scratch: string;
  let host: EngineHost;
  const logs: string[] = [];

  before(async () => {
    scratch = tempDir('thetaevolve-worker-');
    host = new EngineHost({ workerFile: WORKER, execArgv: EXEC_ARGV });
    host.on('log', (level, message) => logs.push(`${level}: ${message}`));
  });

  after(async () => {
    await host.dispose();
  });

  const dbFile = (): string => join(scratch, 'two-steps.sqlite');

  it('runs 2 steps of the offline sampler; every event arrives validated and in order', async () => {
    const done = collectRun(host, 'two-steps');
    host.start({
      runId: 'two-steps',
      dbFile: dbFile(),
      taskDir: TASK_DIR,
      startCode: null,
      startPath: null,
      settings: smallSettings({ maxSteps: 2 }),
      apiKey: 'sk-never-logged',
      resume: false,
    });
    assert.equal(host.activeRunId, 'two-steps');
    const { events, startFailed } = await done;
    assert.equal(startFailed, null);
    assert.equal(host.activeRunId, null);
    assert.equal(events[0]?.type, 'run_started');
    const committed = events.filter((e) => e.type === 'step_committed');
    assert.deepEqual(
      committed.map((e) => e.step),
      [1, 2],
    );
    for (const e of committed) assert.equal(e.samples, 4);
    const evaluations = events.filter((e) => e.type === 'evaluation_finished');
    assert.ok(evaluations.length >= 1, 'the initial program was evaluated');
    const finished = events.at(-1);
    assert.equal(finished?.type, 'run_finished');
    assert.equal(finished.type === 'run_finished' && finished.reason, 'steps_done');
    assert.ok(!logs.some((l) => l.includes('sk-never-logged')), 'the API key never appears in a log message');
  });

  it('answers queries about the closed run by opening its database read-only in the worker', async () => {
    const info = await host.query({ kind: 'runInfo', dbFile: dbFile() });
    assert.equal(info.lastStep, 2);
    assert.equal(info.meta.taskDir, TASK_DIR);
    assert.equal(info.summary.steps, 2);
    const improvements = await host.query({ kind: 'improvements', dbFile: dbFile() });
    assert.ok(improvements.length >= 1);
    const first = improvements[0];
    assert.ok(first);
    const program = await host.query({ kind: 'program', dbFile: dbFile(), programId: first.id });
    assert.ok(program);
    assert.equal(program.id, first.id);
    assert.match(program.code, /EVOLVE-BLOCK-START/);
    assert.equal(await host.query({ kind: 'program', dbFile: dbFile(), programId: 'no-such-program' }), null);
    const steps = await host.query({ kind: 'steps', dbFile: dbFile() });
    assert.deepEqual(
      steps.map((s) => s.step),
      [1, 2],
    );
    const snapshot = await host.query({ kind: 'snapshot', dbFile: dbFile() });
    assert.equal(snapshot.lastStep, 2);
    await assert.rejects(host.query({ kind: 'summary', dbFile: join(scratch, 'missing.sqlite') }), /no such run database/);
  });

  it('resumes after the last committed step, serves queries from the live database, and stops on request', async () => {
    let liveQuery: Promise<unknown> | null = null;
    let stopped = false;
    const done = collectRun(host, 'two-steps', (event) => {
      if (event.type === 'step_committed' && !stopped) {
        stopped = true;
        liveQuery = host.query({ kind: 'summary', dbFile: dbFile() });
        host.stop();
      }
    });
    host.start({
      runId: 'two-steps',
      dbFile: dbFile(),
      taskDir: TASK_DIR,
      startCode: null,
      startPath: null,
      settings: smallSettings({ maxSteps: 0 }),
      apiKey: null,
      resume: true,
    });
    const { events, startFailed } = await done;
    assert.equal(startFailed, null);
    const started = events.find((e) => e.type === 'run_started');
    assert.equal(started?.type === 'run_started' && started.resumedFromStep, 2);
    const firstCommitted = events.find((e) => e.type === 'step_committed');
    assert.equal(firstCommitted?.step, 3);
    const finished = events.at(-1);
    assert.equal(finished?.type === 'run_finished' && finished.reason, 'stopped');
    assert.ok(liveQuery);
    const summary = (await liveQuery) as { steps: number };
    assert.ok(summary.steps >= 3);
  });

  it('steers the stopped run at once and the running run at its next step, never taking the lock the run holds', async () => {
    const initial = readFileSync(join(TASK_DIR, 'initial.py'), 'utf8');
    const withChoice = (value: string): string => initial.replace(/return \d+/, `return ${value}`);
    const steer = (request: Extract<Query, { kind: 'steer' }>['request']) =>
      host.query({ kind: 'steer', dbFile: dbFile(), request, settings: smallSettings() }, { timeoutMs: 60_000 });

    // Stopped: applied now, an added program evaluated in the sandbox.
    const lastStep = (await host.query({ kind: 'runInfo', dbFile: dbFile() })).lastStep;
    assert.deepEqual(await steer({ kind: 'guidance', text: 'try x near 3' }), { kind: 'guidance', step: lastStep + 1 });
    assert.deepEqual((await host.query({ kind: 'snapshot', dbFile: dbFile() })).guidance, { text: 'try x near 3', step: lastStep + 1 });
    const added = await steer({ kind: 'add', code: withChoice('3 + 0 * 101') });
    assert.ok('id' in added && added.outcome === 'valid', JSON.stringify(added));
    const lineage = await host.query({ kind: 'lineage', dbFile: dbFile(), programId: added.id });
    assert.equal(lineage.programs[0]?.origin, 'researcher');
    await assert.rejects(steer({ kind: 'add', code: withChoice('3 + 0 * 101') }), /already has this program/);

    // Live: queued in the run's inbox, applied by its next step (a steered event says so).
    let queued: Promise<unknown> | null = null;
    let steered: EngineEvent | undefined;
    const done = collectRun(host, 'two-steps', (event) => {
      if (event.type === 'step_committed' && queued === null) queued = steer({ kind: 'add', code: withChoice('3 + 0 * 103') });
      if (event.type === 'steered') {
        steered = event;
        host.stop();
      }
    });
    host.start({
      runId: 'two-steps',
      dbFile: dbFile(),
      taskDir: TASK_DIR,
      startCode: null,
      startPath: null,
      settings: smallSettings({ maxSteps: 0 }),
      apiKey: null,
      resume: true,
    });
    const { startFailed } = await done;
    assert.equal(startFailed, null);
    assert.deepEqual(await queued, { kind: 'add', queued: true });
    assert.ok(steered?.type === 'steered' && steered.ok && steered.kind === 'add', JSON.stringify(steered));
    const program = await host.query({ kind: 'program', dbFile: dbFile(), programId: steered.id ?? '' });
    assert.equal(program?.code, withChoice('3 + 0 * 103'));
    assert.equal(program?.origin, 'researcher');
  });

  it("answers the guidance waiting in a run's steering inbox, and the step it applies at, until the run takes it", async () => {
    const lastStep = (await host.query({ kind: 'runInfo', dbFile: dbFile() })).lastStep;
    assert.equal(await host.query({ kind: 'queuedGuidance', dbFile: dbFile() }), null);
    // As another process (the CLI, a window) leaves requests for the process that runs the database.
    await enqueueSteer(dbFile(), { kind: 'guidance', text: '  prefer x above 2  ' });
    assert.deepEqual(await host.query({ kind: 'queuedGuidance', dbFile: dbFile() }), { text: 'prefer x above 2', step: lastStep + 1 });
    await enqueueSteer(dbFile(), { kind: 'clearGuidance' });
    assert.deepEqual(await host.query({ kind: 'queuedGuidance', dbFile: dbFile() }), { text: null, step: lastStep + 1 });
    await enqueueSteer(dbFile(), { kind: 'guidance', text: 'prefer x below 4' });

    // The run takes them at its next step: nothing waits any more, and the last one is in force.
    const done = collectRun(host, 'takes-guidance', (event) => {
      if (event.type === 'step_committed') host.stop();
    });
    host.start({
      runId: 'takes-guidance',
      dbFile: dbFile(),
      taskDir: TASK_DIR,
      startCode: null,
      startPath: null,
      settings: smallSettings({ maxSteps: 0 }),
      apiKey: null,
      resume: true,
    });
    assert.equal((await done).startFailed, null);
    assert.equal(await host.query({ kind: 'queuedGuidance', dbFile: dbFile() }), null);
    assert.deepEqual((await host.query({ kind: 'snapshot', dbFile: dbFile() })).guidance, { text: 'prefer x below 4', step: lastStep + 1 });
  });

  it('refuses to start over an existing database, with a message', async () => {
    const { startFailed } = await (async () => {
      const done = collectRun(host, 'again');
      host.start({
        runId: 'again',
        dbFile: dbFile(),
        taskDir: TASK_DIR,
        startCode: null,
        startPath: null,
        settings: smallSettings(),
        apiKey: null,
        resume: false,
      });
      return done;
    })();
    assert.match(startFailed ?? '', /already exists/);
    const missingTask = collectRun(host, 'bad-task');
    host.start({
      runId: 'bad-task',
      dbFile: join(scratch, 'bad.sqlite'),
      taskDir: join(scratch, 'nowhere'),
      startCode: null,
      startPath: null,
      settings: smallSettings(),
      apiKey: null,
      resume: false,
    });
    assert.ok((await missingTask).startFailed);
  });

  it('sends rollouts to the RL trainer once the toggle turns it on mid-run, and refuses atropos without token ids', async function () {
    // Two runs of several steps: on a loaded machine more than the suite's minute, which would mean nothing here.
    this.timeout(180_000);
    const trainer = await startSlimeTestServer({ groupSize: 2 });
    try {
      const maxSteps = 4;
      const settings = smallSettings({ maxSteps, 'trainer.url': trainer.url, 'trainer.protocol': 'slime' });
      // The toggle goes out while the run is paused: a toggle posted while steps run lands at whichever step the
      // worker is at then (a step committed before it is not sent), so the steps it covers would depend on the
      // machine's speed. Paused, no step is in flight: exactly the steps after the pause are sent.
      let pausedAfter: number | null = null;
      const done = collectRun(host, 'rl', (event) => {
        if (event.type === 'step_committed' && event.step === 1) host.pause();
        if (event.type === 'paused') {
          pausedAfter = event.step;
          host.setTrainerEnabled(true);
          host.resume();
        }
      });
      host.start({
        runId: 'rl',
        dbFile: join(scratch, 'rl.sqlite'),
        taskDir: TASK_DIR,
        startCode: null,
        startPath: null,
        settings,
        apiKey: null,
        resume: false,
      });
      const { events, startFailed } = await done;
      assert.equal(startFailed, null);
      const states = events.filter((e) => e.type === 'trainer_state').map((e) => (e.type === 'trainer_state' ? e.state : null));
      assert.equal(states[0]?.enabled, false, 'off as the setting says');
      assert.ok(
        states.some((s) => s?.enabled && s.connected),
        `never connected: ${JSON.stringify(states)}`,
      );
      // Paused after step 1 (or a later one the pause reached first), never at the end: the run went on after the toggle.
      assert.ok(pausedAfter !== null && pausedAfter >= 1 && pausedAfter < maxSteps, `paused after step ${String(pausedAfter)}`);
      // Each step after the pause, B=2 groups of n=2 each; none of the steps committed before it.
      const sent = trainer.received.filter((r) => !r.repeat);
      const after = Array.from({ length: maxSteps - pausedAfter }, (_, i) => (pausedAfter as number) + 1 + i);
      assert.deepEqual([...new Set(sent.map((r) => r.item.extra_info.step))].sort(), after);
      assert.equal(sent.length, after.length * 2 * 2);
      assert.equal(events.at(-1)?.type, 'run_finished');

      const atropos = collectRun(host, 'rl-atropos');
      host.start({
        runId: 'rl-atropos',
        dbFile: join(scratch, 'rl-atropos.sqlite'),
        taskDir: TASK_DIR,
        startCode: null,
        startPath: null,
        settings: smallSettings({ 'trainer.enabled': true, 'trainer.url': trainer.url, 'trainer.protocol': 'atropos' }),
        apiKey: null,
        resume: false,
      });
      assert.match((await atropos).startFailed ?? '', /token ids/);
    } finally {
      await trainer.close();
    }
  });

  it('a run whose steps are over hands what it spooled to the trainer before it closes (asynchronous mode, the trainer away until then)', async () => {
    const trainer = await startSlimeTestServer({ groupSize: 2 });
    await trainer.goDown();
    try {
      const done = collectRun(host, 'rl-last', (event) => {
        // Back only once the run's steps are over: everything they spooled is still to go then.
        if (event.type === 'run_finished') void trainer.comeUp();
      });
      host.start({
        runId: 'rl-last',
        dbFile: join(scratch, 'rl-last.sqlite'),
        taskDir: TASK_DIR,
        startCode: null,
        startPath: null,
        settings: smallSettings({
          maxSteps: 2,
          'trainer.enabled': true,
          'trainer.mode': 'async',
          'trainer.url': trainer.url,
          'trainer.protocol': 'slime',
          'trainer.syncTimeoutSeconds': 600,
        }),
        apiKey: null,
        resume: false,
      });
      const { startFailed } = await done;
      assert.equal(startFailed, null);
      // Closed only once both steps' groups (B=2 of n=2 each) were handed over.
      const sent = trainer.received.filter((r) => !r.repeat);
      assert.deepEqual([...new Set(sent.map((r) => r.item.extra_info.step))].sort(), [1, 2]);
      assert.equal(sent.length, 2 * 2 * 2);
    } finally {
      await trainer.close();
    }
  });

  it('the RL toggle sent while the run is still starting applies once its bridge exists', async () => {
    const trainer = await startSlimeTestServer({ groupSize: 2 });
    try {
      const settings = smallSettings({ maxSteps: 2, 'trainer.url': trainer.url, 'trainer.protocol': 'slime' });
      const done = collectRun(host, 'rl-early');
      host.start({
        runId: 'rl-early',
        dbFile: join(scratch, 'rl-early.sqlite'),
        taskDir: TASK_DIR,
        startCode: null,
        startPath: null,
        settings,
        apiKey: null,
        resume: false,
      });
      host.setTrainerEnabled(true);
      const { events, startFailed } = await done;
      assert.equal(startFailed, null);
      const first = events.find((e) => e.type === 'trainer_state');
      assert.equal(first?.type === 'trainer_state' && first.state.enabled, true);
      // Both steps: B=2 groups of n=2.
      assert.equal(trainer.received.filter((r) => !r.repeat).length, 2 * 2 * 2);
    } finally {
      await trainer.close();
    }
  });

  it('stop while the run is still starting (an atropos trainer waits on a silent endpoint) abandons the start', async () => {
    // Accepts connections and never answers: the endpoint check would wait for its timeout.
    let asked: () => void = () => undefined;
    const firstRequest = new Promise<void>((resolve) => (asked = resolve));
    const silent = createServer(() => asked());
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const port = (silent.address() as AddressInfo).port;
    try {
      const done = collectRun(host, 'silent');
      host.start({
        runId: 'silent',
        dbFile: join(scratch, 'silent.sqlite'),
        taskDir: TASK_DIR,
        startCode: null,
        startPath: null,
        settings: smallSettings({
          sampler: 'llm',
          endpoint: `http://127.0.0.1:${port}/v1`,
          'trainer.url': `http://127.0.0.1:${port}`,
          'trainer.protocol': 'atropos',
        }),
        apiKey: null,
        resume: false,
      });
      // The start is under way once the endpoint check reaches the server (and waits there).
      await firstRequest;
      const stopAt = Date.now();
      host.stop();
      const { startFailed } = await done;
      assert.equal(startFailed, 'stopped before the run started');
      // The endpoint check would wait for its request timeout (15 minutes): a minute means it never did.
      assert.ok(Date.now() - stopAt < 60_000, 'the start was abandoned, not waited out');
    } finally {
      silent.close();
    }
  });

  it('adds a program to a stopped run with the interpreter resolved now, never the one its database names', async function () {
    this.timeout(180_000);
    // A handed-over database naming a planted interpreter (a script that fails every candidate) and its folder as a prefix.
    const taskDir = join(scratch, 'python-task');
    cpSync(TASK_DIR, taskDir, { recursive: true });
    const taskJson = readFileSync(join(taskDir, 'task.json'), 'utf8').replaceAll('"/usr/bin/python3"', '"{python}"');
    writeFileSync(join(taskDir, 'task.json'), taskJson);
    const file = join(scratch, 'planted-python.sqlite');
    const created = await runCli(
      ['run', taskDir, '--db', file, '--steps', '1', '--set', 'sampler=mutate', '--set', 'batchSize=1', '--set', 'samplesPerPrompt=1'],
      scratch,
      {
        PATH: '/usr/bin:/bin',
      },
    );
    assert.equal(created.code, 0, created.stderr);
    const planted = join(scratch, 'planted');
    mkdirSync(planted);
    writeFileSync(join(planted, 'python3'), '#!/bin/sh\nexit 7\n', { mode: 0o755 });
    const SQL = await loadSqlJs();
    const raw = new SQL.Database(readFileSync(file));
    const meta = JSON.parse(String(raw.exec("SELECT value FROM meta WHERE key = 'run_meta'")[0]?.values[0]?.[0])) as Record<
      string,
      unknown
    >;
    meta.python = { executable: join(planted, 'python3'), source: 'PATH', version: '3.11.2', prefixes: [planted], packages: {} };
    raw.run("UPDATE meta SET value = ? WHERE key = 'run_meta'", [JSON.stringify(meta)]);
    writeFileSync(file, raw.export());
    raw.close();
    const initial = readFileSync(join(taskDir, 'initial.py'), 'utf8');
    const added = await host.query(
      {
        kind: 'steer',
        dbFile: file,
        request: { kind: 'add', code: initial.replace(/return \d+/, 'return 3') },
        settings: smallSettings({ python: DEBIAN_PYTHON }),
      },
      { timeoutMs: 60_000 },
    );
    assert.ok('id' in added && added.outcome === 'valid', JSON.stringify(added));
  });

  it('evaluates for the editor with its workspace folders: an interpreter whose prefix holds one is evaluation_failed naming it, a venv inside one scores', async function () {
    this.timeout(120_000);
    const taskDir = join(scratch, 'prefix-task');
    cpSync(TASK_DIR, taskDir, { recursive: true });
    const taskJson = readFileSync(join(taskDir, 'task.json'), 'utf8').replaceAll('"/usr/bin/python3"', '"{python}"');
    writeFileSync(join(taskDir, 'task.json'), taskJson);
    const code = readFileSync(join(taskDir, 'initial.py'), 'utf8');
    // A Python installed at a folder that holds the editor's workspace folder (a --prefix at a parent of the project).
    const outer = join(scratch, 'outer-prefix');
    const outerPython = standalonePython(outer, 'thetaevolve_unused', 1);
    const workspace = join(outer, 'project');
    mkdirSync(workspace);
    const refused = await host.query(
      {
        kind: 'evaluate',
        taskDir,
        code,
        settings: smallSettings(),
        python: { path: outerPython, source: 'thetaevolve.python' },
        workspaceFolders: [workspace],
      },
      { timeoutMs: 60_000 },
    );
    assert.equal(refused.status, 'evaluation_failed', JSON.stringify(refused));
    assert.match(refused.reason, new RegExp(`the Python prefix ${outer} holds ${workspace}`));
    // A venv-like environment inside the workspace folder is the ordinary case: it evaluates.
    const project = join(scratch, 'project');
    const innerPython = standalonePython(join(project, '.venv'), 'thetaevolve_unused', 1);
    const scored = await host.query(
      {
        kind: 'evaluate',
        taskDir,
        code,
        settings: smallSettings(),
        python: { path: innerPython, source: 'thetaevolve.python' },
        workspaceFolders: [project],
      },
      { timeoutMs: 60_000 },
    );
    assert.equal(scored.status, 'ok', JSON.stringify(scored));
  });

  it('answers a malformed message with a clear error and keeps serving', async () => {
    const worker = new Worker(WORKER, { execArgv: EXEC_ARGV });
    const messages: WorkerToHost[] = [];
    const waiters: (() => void)[] = [];
    let failure: Error | null = null;
    worker.on('message', (raw: unknown) => {
      messages.push(parseWorkerToHost(raw));
      waiters.splice(0).forEach((w) => w());
    });
    worker.on('error', (err) => (failure = err));
    const next = async (predicate: (m: WorkerToHost) => boolean): Promise<WorkerToHost> => {
      const deadline = Date.now() + 20_000;
      for (;;) {
        const found = messages.find(predicate);
        if (found) return found;
        if (failure) throw failure;
        if (Date.now() > deadline) throw new Error(`no such message; saw ${JSON.stringify(messages)}`);
        await new Promise<void>((r) => {
          waiters.push(r);
          setTimeout(r, 200);
        });
      }
    };
    try {
      await next((m) => m.type === 'ready');
      worker.postMessage({ type: 'start', runId: 5, apiKey: 'sk-secret' });
      const refused = await next((m) => m.type === 'protocolError');
      assert.equal(refused.type, 'protocolError');
      assert.match(refused.type === 'protocolError' ? refused.message : '', /malformed message from the host \(type start\) at runId/);
      assert.ok(!JSON.stringify(refused).includes('sk-secret'));
      worker.postMessage({ type: 'query', requestId: 7, query: { kind: 'nope' } });
      const withId = await next((m) => m.type === 'protocolError' && m.requestId === 7);
      assert.match(withId.type === 'protocolError' ? withId.message : '', /query/);
      worker.postMessage('not even an object');
      await next((m) => m.type === 'protocolError' && m.message.includes('(type (none))'));
      worker.postMessage({ type: 'query', requestId: 8, query: { kind: 'summary', dbFile: dbFile() } });
      const reply = await next((m) => m.type === 'reply' && m.requestId === 8);
      assert.equal(reply.type === 'reply' && reply.ok, true);
    } finally {
      await worker.terminate();
    }
  });
});
