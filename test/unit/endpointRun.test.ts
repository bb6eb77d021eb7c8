// Runs against the stand-in server where requests fail or the context is
// small: the loop reports why requests failed, never commits a step in which
// none succeeded, stops with a clear error (a non-zero exit from the CLI), and
// a run whose server context is smaller than thetaevolve.maxTokens evolves.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { defaultSettings } from '../../src/engine/common/config';
import { ProgramDatabase } from '../../src/engine/database/programDatabase';
import type { EngineEvent, StepCommittedEvent } from '../../src/engine/common/events';
import { EndpointClient, endpointOptionsFromSettings } from '../../src/engine/llm/endpointClient';
import { EvolutionRun } from '../../src/engine/loop';
import { Evaluator, evaluatorOptionsFromSettings } from '../../src/engine/sandbox/evaluator';
import { loadTask, type Task } from '../../src/engine/task/task';
import { startAtroposTestServer } from '../server/atroposTestServer';
import { startTestServer, type TestServer, type TestServerOptions } from '../server/openaiTestServer';
import { settingsBuilder } from '../support/settings';
import { tempDir } from '../support/tempDirs';

const ROOT = resolve(__dirname, '..', '..');
const FIXTURE = join(ROOT, 'test', 'fixtures', 'tasks', 'quadratic');

const settings = settingsBuilder({
  batchSize: 2,
  samplesPerPrompt: 2,
  evaluationConcurrency: 2,
  'database.preset': 'small',
  seed: 3,
  sampler: 'llm',
  maxRetries: 0,
  serverRetrySeconds: 1,
});

async function lastStep(dbFile: string): Promise<number> {
  const db = await ProgramDatabase.openReadOnly(dbFile);
  try {
    return db.lastStep;
  } finally {
    await db.close();
  }
}

describe('runs against a failing or small-context server', function () {
  this.timeout(90_000);
  let task: Task;
  let dir: string;
  let server: TestServer;

  before(async () => {
    task = await loadTask(FIXTURE);
  });
  beforeEach(() => {
    dir = tempDir('thetaevolve-endpoint-run-');
  });
  afterEach(async () => {
    await server?.close();
  });

  const runLoop = async (serverOptions: TestServerOptions, overrides: Record<string, unknown>, steps: number) => {
    server = await startTestServer({ latencyMs: 1, ...serverOptions });
    const s = settings({ endpoint: server.baseURL, ...overrides });
    const evaluator = new Evaluator(task, evaluatorOptionsFromSettings(s));
    const events: EngineEvent[] = [];
    const dbFile = join(dir, 'run.sqlite');
    const run = new EvolutionRun({
      runId: 'endpoint-run',
      task,
      settings: s,
      dbFile,
      source: new EndpointClient({ ...endpointOptionsFromSettings(s, undefined), backoff: { baseMs: 1, maxMs: 5 } }),
      evaluator,
      stepsThisInvocation: steps,
      onEvent: (e) => events.push(e),
    });
    try {
      const result = await run.run();
      return { result, events, dbFile, committed: events.filter((e): e is StepCommittedEvent => e.type === 'step_committed') };
    } finally {
      await evaluator.close();
    }
  };

  it('names each distinct failure reason once per step, with its count', async () => {
    // Chat requests 2 and 4 (in arrival order) fail; with maxRetries 0 they stay failed.
    const { result, committed } = await runLoop({ script: ['ok', 'server_error', 'ok', 'server_error'] }, {}, 1);
    assert.equal(result.reason, 'steps_done');
    assert.equal(committed[0]?.counts.request_failed, 2);
    assert.deepEqual(committed[0]?.failures, [{ message: 'HTTP 500: The engine hit an internal error.', count: 2 }]);
  });

  it('stops with an error naming the reason when no request of a step succeeded, and commits nothing of it', async () => {
    const { result, events, dbFile, committed } = await runLoop({ faultRate: 1, faultKinds: ['server_error'] }, {}, 3);
    assert.equal(result.reason, 'error');
    assert.deepEqual(committed, []);
    assert.equal(await lastStep(dbFile), 0, 'only the initial program');
    const fatal = events.find((e) => e.type === 'error' && e.fatal);
    assert.match(
      fatal?.type === 'error' ? fatal.message : '',
      /^no request of step 1 succeeded \(4 failed\): 4 x HTTP 500: The engine hit an internal error\./,
    );
  });

  it('redoes a failed step up to maxFailedSteps before stopping', async () => {
    // Step 1 fails whole once, then the server answers.
    const { result, events, committed } = await runLoop(
      { script: ['server_error', 'server_error', 'server_error', 'server_error'] },
      { maxFailedSteps: 2 },
      1,
    );
    assert.equal(result.reason, 'steps_done');
    assert.deepEqual(
      committed.map((c) => c.step),
      [1],
    );
    assert.equal(committed[0]?.counts.request_failed, 0);
    const redo = events.filter((e) => e.type === 'error' && !e.fatal && /step is redone/.test(e.message));
    assert.equal(redo.length, 1);
  });

  it('tells an atropos run once that the endpoint gives no token ids, so its trainer would receive nothing', async () => {
    const { events } = await runLoop(
      { supportsTokenIds: false },
      { 'trainer.enabled': true, 'trainer.url': 'http://127.0.0.1:9/', 'trainer.protocol': 'atropos' },
      2,
    );
    const warnings = events.filter((e) => e.type === 'error' && /atropos trainer receives nothing/.test(e.message));
    assert.equal(warnings.length, 1);
  });

  it('reports waiting for a server that is loading, and runs once it answers', async () => {
    server = await startTestServer({ loading: true });
    const s = settings({ endpoint: server.baseURL, serverRetrySeconds: 30 });
    const evaluator = new Evaluator(task, evaluatorOptionsFromSettings(s));
    const events: EngineEvent[] = [];
    const run = new EvolutionRun({
      runId: 'loading',
      task,
      settings: s,
      dbFile: join(dir, 'loading.sqlite'),
      source: new EndpointClient({ ...endpointOptionsFromSettings(s, undefined), backoff: { baseMs: 1, maxMs: 5 } }),
      evaluator,
      stepsThisInvocation: 1,
      onEvent: (e) => {
        events.push(e);
        if (e.type === 'endpoint_state' && e.waiting) server.setLoading(false);
      },
    });
    try {
      const result = await run.run();
      assert.equal(result.reason, 'steps_done');
    } finally {
      await evaluator.close();
    }
    const states = events.flatMap((e) => (e.type === 'endpoint_state' ? [e.waiting] : []));
    assert.deepEqual(states, [true, false]);
  });

  const runCli = (args: string[], onStderr?: (text: string) => void): Promise<{ code: number | null; stdout: string; stderr: string }> =>
    new Promise((resolvePromise, reject) => {
      const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src/cli.ts'), 'run', FIXTURE, ...args], {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString();
        onStderr?.(stderr);
      });
      child.on('error', reject);
      child.on('close', (code) => resolvePromise({ code, stdout, stderr }));
    });

  it(`thetaevolve run evolves against a server whose context is smaller than the default maxTokens (${defaultSettings().maxTokens})`, async () => {
    server = await startTestServer({ maxModelLen: 4096 });
    const db = join(dir, 'cli.sqlite');
    const { code, stdout, stderr } = await runCli([
      '--endpoint',
      server.baseURL,
      '--steps',
      '2',
      '--batch',
      '2',
      '--samples',
      '2',
      '--db',
      db,
      '--json',
    ]);
    assert.equal(code, 0, stderr);
    const lines = stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { step: number; counts: Record<string, number>; failures: unknown[] });
    assert.deepEqual(
      lines.map((l) => l.step),
      [1, 2],
    );
    for (const line of lines) {
      assert.equal(line.counts.request_failed, 0, stderr);
      assert.deepEqual(line.failures, []);
    }
    assert.ok(
      lines.some((l) => (l.counts.valid ?? 0) > 0),
      'children were evaluated',
    );
    assert.equal(server.counters.contextRejections, 0);
    assert.ok(server.requests.every((r) => (r.maxTokens ?? Infinity) < 4096));
    assert.match(stderr, /less than thetaevolve\.maxTokens \(16384\)/);
  });

  it('thetaevolve run exits non-zero naming why every request of a step failed', async () => {
    server = await startTestServer({ maxModelLen: 40 }); // the prompt alone fills the context
    const { code, stderr } = await runCli([
      '--endpoint',
      server.baseURL,
      '--steps',
      '3',
      '--batch',
      '1',
      '--samples',
      '2',
      '--db',
      join(dir, 'failing.sqlite'),
    ]);
    assert.notEqual(code, 0);
    assert.match(
      stderr,
      /no request of step 1 succeeded \(2 failed\): 2 x the prompt \(\d+ tokens\) leaves no room for a response in the server's context of 40 tokens/,
    );
    assert.match(stderr, /--max-model-len/);
    assert.equal(server.counters.chatRequests, 0, 'nothing was sent that could not fit');
  });
  it('thetaevolve run with atropos tags groups with the trainer\'s step, not SGLang\'s weight_version "default"', async () => {
    server = await startTestServer({ mode: 'sglang', weightVersion: 'default' });
    const trainer = await startAtroposTestServer({ trainer: { batchSize: 4 } });
    try {
      const db = join(dir, 'atropos.sqlite');
      const { code, stderr } = await runCli([
        '--endpoint',
        server.baseURL,
        '--trainer',
        trainer.url,
        '--trainer-protocol',
        'atropos',
        '--steps',
        '1',
        '--batch',
        '2',
        '--samples',
        '2',
        '--db',
        db,
      ]);
      assert.equal(code, 0, stderr);
      const versions = trainer.received.map((r) => (r.data.group_overrides?.thetaevolve as Record<string, unknown>).policy_version);
      assert.equal(versions.length, 2);
      assert.deepEqual(versions, ['0', '0'], 'the trainer step seen at sampling time');
    } finally {
      await trainer.close();
    }
  });
  it('thetaevolve run started while the server loads says it waits, then evolves', async () => {
    server = await startTestServer({ loading: true });
    const { code, stderr } = await runCli(
      ['--endpoint', server.baseURL, '--steps', '1', '--batch', '1', '--samples', '2', '--db', join(dir, 'loading.sqlite')],
      (text) => {
        if (text.includes('waiting for the server')) server.setLoading(false);
      },
    );
    assert.equal(code, 0, stderr);
    assert.match(
      stderr,
      /thetaevolve run: waiting for the server at \S+ \(HTTP 503: The model is currently scaling\. Please try again later\.\); retrying for up to 300 s \(thetaevolve\.serverRetrySeconds\)\n/,
    );
    assert.match(stderr, /thetaevolve run: the server at \S+ answers again\n/);
    assert.match(stderr, /step 1: /);
  });
});
