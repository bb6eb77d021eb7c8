// Several inference servers behind one thetaevolve.endpoint: the list is
// validated, requests spread by least outstanding requests over real test
// servers, and a server that goes away mid-run is taken out while the run goes on.
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { parseSettings } from '../../src/engine/common/config';
import { EvolutionRun } from '../../src/engine/loop';
import { Evaluator, evaluatorOptionsFromSettings } from '../../src/engine/sandbox/evaluator';
import { loadTask } from '../../src/engine/task/task';
import { EngineEventSchema, type StepCommittedEvent } from '../../src/engine/common/events';
import { EndpointClient, endpointOptionsFromSettings } from '../../src/engine/llm/endpointClient';
import { EndpointPool, endpointSource, parseEndpointList } from '../../src/engine/llm/endpointPool';
import type { GenerationJob, Sample } from '../../src/engine/common/types';
import { startTestServer, type TestServer } from '../server/openaiTestServer';
import { tempDir } from '../support/tempDirs';

const PROGRAM = ['# EVOLVE-BLOCK-START', 'def f():', '    return 0.5', '# EVOLVE-BLOCK-END', ''].join('\n');

function jobs(count: number, n: number): GenerationJob[] {
  return Array.from({ length: count }, (_, i) => ({
    key: `s1-p${i}`,
    n,
    seed: 1000 * i,
    parentId: 'p0',
    parentCode: PROGRAM,
    messages: [{ role: 'user' as const, content: `Improve this:\n\n\`\`\`python\n${PROGRAM}\`\`\`\n` }],
  }));
}

function pool(baseURLs: string[], extra: Partial<ConstructorParameters<typeof EndpointPool>[0]> = {}): EndpointPool {
  return new EndpointPool({
    baseURLs,
    model: '',
    apiKey: undefined,
    temperature: 1,
    topP: 1,
    maxTokens: 256,
    maxInFlight: 0,
    useNParameter: false,
    requestTimeoutMs: 10_000,
    maxRetries: 4,
    requestTokenIds: false,
    retrySeconds: 0,
    backoff: { baseMs: 5, maxMs: 20, maxRetryAfterMs: 50 },
    healthRetryMs: 60_000,
    ...extra,
  });
}

/** A local port nothing listens on. */
function deadPort(): Promise<number> {
  return new Promise((resolvePort) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}

describe('endpoint list (thetaevolve.endpoint with several base URLs)', () => {
  it('takes one base URL or several separated by commas, and names what is wrong', () => {
    assert.deepEqual(parseEndpointList('http://127.0.0.1:8000/v1'), ['http://127.0.0.1:8000/v1']);
    assert.deepEqual(parseEndpointList(' http://a:8000/v1/ , http://b:8000/v1,'), ['http://a:8000/v1', 'http://b:8000/v1']);
    assert.throws(() => parseEndpointList('http://a:8000/v1, ftp://b/v1'), /thetaevolve\.endpoint \(entry 2\) is not an http\(s\) URL/);
    assert.throws(() => parseEndpointList('http://a/v1,http://a/v1/'), /lists the same base URL twice/);
    assert.throws(() => parseEndpointList(' , '), /names no base URL/);
  });

  it('gives the single-server client for one URL and a pool for several', () => {
    const options = {
      model: '',
      apiKey: undefined,
      temperature: 1,
      topP: 1,
      maxTokens: 8,
      maxInFlight: 0,
      useNParameter: false,
      requestTimeoutMs: 1000,
      maxRetries: 0,
      requestTokenIds: false,
      retrySeconds: 0,
    };
    assert.ok(endpointSource({ ...options, baseURL: 'http://a:1/v1' }) instanceof EndpointClient);
    const several = endpointSource({ ...options, baseURL: 'http://a:1/v1,http://b:2/v1' });
    assert.ok(several instanceof EndpointPool);
    assert.match(several.label, /at 2 servers \(http:\/\/a:1\/v1, http:\/\/b:2\/v1\)/);
  });
});

describe('endpoint pool against two real test servers', function () {
  this.timeout(60_000);
  let a: TestServer;
  let b: TestServer;

  beforeEach(async () => {
    a = await startTestServer({ latencyMs: 20 });
    b = await startTestServer({ latencyMs: 20 });
  });
  afterEach(async () => {
    await a.close();
    await b.close();
  });

  it('servers join (once they answer, serving the same model) and leave while it runs: inference jobs on SLURM', async () => {
    const source = pool([], { maxInFlight: 4, retrySeconds: 10 });
    const samples: Sample[] = [];
    // Nothing yet: the requests wait for a server to join.
    const generating = source.generate(jobs(4, 2), new AbortController().signal, (s) => samples.push(s));
    await source.addServer(a.baseURL);
    await generating;
    assert.equal(samples.length, 8);
    assert.ok(samples.every((s) => s.ok));
    assert.equal(a.counters.chatRequests, 8);
    // A server serving another model is refused, and the pool stays as it was.
    const other = await startTestServer({ models: ['another-model'] });
    try {
      await assert.rejects(source.addServer(other.baseURL), /serves another-model, not test-model/);
    } finally {
      await other.close();
    }
    await source.addServer(b.baseURL);
    assert.deepEqual(
      source.serverStats().map((s) => s.baseURL),
      [a.baseURL, b.baseURL],
    );
    source.removeServer(a.baseURL);
    await source.generate(jobs(2, 2), new AbortController().signal, () => undefined);
    assert.equal(a.counters.chatRequests, 8, 'the server that left gets nothing more');
    assert.equal(b.counters.chatRequests, 4);
    source.dispose();
  });

  it('spreads requests across both servers and reports per-server throughput', async () => {
    const source = pool([a.baseURL, b.baseURL], { maxInFlight: 8 });
    const samples: Sample[] = [];
    await source.check();
    const stats = await source.generate(jobs(8, 5), new AbortController().signal, (s) => samples.push(s));
    assert.equal(samples.length, 40);
    assert.ok(samples.every((s) => s.ok));
    assert.equal(stats.requests, 40);
    assert.ok(stats.maxInFlight <= 8);
    // Least outstanding requests with equal servers: close to half each.
    for (const server of [a, b]) assert.ok(server.counters.chatRequests >= 12, `one server got only ${server.counters.chatRequests} of 40`);
    const perServer = source.serverStats();
    assert.deepEqual(
      perServer.map((s) => s.baseURL),
      [a.baseURL, b.baseURL],
    );
    assert.equal(
      perServer.reduce((n, s) => n + s.requests, 0),
      40,
    );
    for (const s of perServer) {
      assert.equal(s.healthy, true);
      assert.equal(s.outstanding, 0);
      assert.ok(s.completionTokens > 0 && s.tokensPerSecond > 0, JSON.stringify(s));
      assert.ok(s.latencyMsP50 !== null && s.latencyMsP50 >= 20);
    }
    assert.equal(EngineEventSchema.parse(source.serversEvent()).type, 'endpoint_servers');
    source.dispose();
  });

  it('takes out a server closed mid-run; the run goes on on the other', async () => {
    const warnings: string[] = [];
    const source = pool([a.baseURL, b.baseURL], { maxInFlight: 4, onWarning: (w) => warnings.push(w) });
    const samples: Sample[] = [];
    let closing: Promise<void> | null = null;
    await source.generate(jobs(10, 4), new AbortController().signal, (s) => {
      samples.push(s);
      if (samples.length === 6) closing = b.close();
    });
    await closing;
    assert.equal(samples.length, 40);
    const failed = samples.filter((s) => !s.ok);
    assert.deepEqual(failed, [], 'every sample still got its response');
    const [statsA, statsB] = source.serverStats();
    assert.equal(statsB?.healthy, false);
    assert.ok((statsB?.failures ?? 0) >= 1, 'requests in flight on the closed server failed there and were answered by the other');
    assert.equal(statsA?.healthy, true);
    assert.ok((statsA?.samples ?? 0) > (statsB?.samples ?? 0));
    assert.equal((statsA?.samples ?? 0) + (statsB?.samples ?? 0), 40);
    assert.ok(
      warnings.some((w) => w.startsWith(`${b.baseURL} is taken out`)),
      warnings.join('\n'),
    );
    source.dispose();
  });

  it('an evolution run over both servers goes on when one of them is closed after its first step', async () => {
    const task = await loadTask(resolve(__dirname, '../fixtures/tasks/quadratic'));
    const settings = parseSettings({
      endpoint: `${a.baseURL},${b.baseURL}`,
      sampler: 'llm',
      batchSize: 2,
      samplesPerPrompt: 4,
      evaluationConcurrency: 8,
      'database.preset': 'small',
      seed: 7,
      maxRetries: 3,
    });
    const source = endpointSource({
      ...endpointOptionsFromSettings(settings, undefined),
      backoff: { baseMs: 5, maxMs: 20, maxRetryAfterMs: 50 },
    });
    assert.ok(source instanceof EndpointPool);
    const evaluator = new Evaluator(task, evaluatorOptionsFromSettings(settings));
    const dir = tempDir('te-pool-run-');
    const committed: StepCommittedEvent[] = [];
    let closing: Promise<void> | null = null;
    try {
      const run = new EvolutionRun({
        runId: 'pool',
        task,
        settings,
        dbFile: join(dir, 'run.sqlite'),
        source,
        evaluator,
        stepsThisInvocation: 3,
        onEvent: (e) => {
          if (e.type !== 'step_committed') return;
          committed.push(e);
          if (e.step === 1) closing = b.close();
        },
      });
      const result = await run.run();
      await closing;
      assert.equal(result.reason, 'steps_done');
      assert.deepEqual(
        committed.map((c) => c.step),
        [1, 2, 3],
      );
      for (const c of committed) assert.equal(c.counts.request_failed, 0, `step ${c.step}: ${JSON.stringify(c.counts)}`);
      const [statsA, statsB] = source.serverStats();
      assert.ok((statsB?.samples ?? 0) > 0, 'the second server served the first step');
      assert.equal(statsB?.healthy, false);
      assert.equal((statsA?.samples ?? 0) + (statsB?.samples ?? 0), 3 * 8);
    } finally {
      source.dispose();
      await evaluator.close();
    }
  });

  it('puts a server back once its health check answers again', async () => {
    const port = b.port;
    await b.close();
    let back: () => void = () => undefined;
    const answeredAgain = new Promise<void>((resolve) => (back = resolve));
    const source = pool([a.baseURL, b.baseURL], {
      healthRetryMs: 20,
      onWarning: (w) => (w.startsWith(`${b.baseURL} answers again`) ? back() : undefined),
    });
    await source.check();
    assert.deepEqual(
      source.serverStats().map((s) => s.healthy),
      [true, false],
    );
    b = await startTestServer({ latencyMs: 20, port });
    await answeredAgain;
    assert.deepEqual(
      source.serverStats().map((s) => s.healthy),
      [true, true],
    );
    const samples: Sample[] = [];
    await source.generate(jobs(4, 5), new AbortController().signal, (s) => samples.push(s));
    assert.ok(samples.length === 20 && samples.every((s) => s.ok));
    assert.ok(b.counters.chatRequests > 0, 'the server that came back takes requests again');
    source.dispose();
  });

  it('check() takes out a server that does not answer and goes on with the rest; none answering is an error', async () => {
    const dead = `http://127.0.0.1:${await deadPort()}/v1`;
    const warnings: string[] = [];
    const source = pool([dead, a.baseURL], { onWarning: (w) => warnings.push(w) });
    await source.check();
    assert.deepEqual(
      source.serverStats().map((s) => s.healthy),
      [false, true],
    );
    const samples: Sample[] = [];
    await source.generate(jobs(2, 3), new AbortController().signal, (s) => samples.push(s));
    assert.ok(samples.length === 6 && samples.every((s) => s.ok));
    assert.equal(a.counters.chatRequests, 6);
    assert.ok(warnings.some((w) => w.startsWith(`${dead} is taken out`)));
    source.dispose();

    const none = pool([dead, `http://127.0.0.1:${await deadPort()}/v1`], { maxRetries: 2 });
    await assert.rejects(none.check(), /No server of thetaevolve\.endpoint answers: No server at/);
    // With every server out, samples end as request_failed once the retries are spent (the run does not hang).
    const failures: Sample[] = [];
    await none.generate(jobs(1, 2), new AbortController().signal, (s) => failures.push(s));
    assert.equal(failures.length, 2);
    for (const f of failures)
      assert.ok(!f.ok && /^every server of thetaevolve\.endpoint is out \(last: No server at/.test(f.error), JSON.stringify(f));
    none.dispose();
  });

  it('with every server out, waits thetaevolve.serverRetrySeconds for one to come back (a restart), then goes on there', async () => {
    const [portA, portB] = [await deadPort(), await deadPort()];
    const warnings: string[] = [];
    let restarted: TestServer | null = null;
    let out = 0;
    let bothOut: () => void = () => undefined;
    const takenOut = new Promise<void>((resolveOut) => (bothOut = resolveOut));
    const source = pool([`http://127.0.0.1:${portA}/v1`, `http://127.0.0.1:${portB}/v1`], {
      maxRetries: 1,
      retrySeconds: 60,
      healthRetryMs: 50,
      onWarning: (w) => {
        warnings.push(w);
        if (/is taken out/.test(w) && ++out === 2) bothOut();
      },
    });
    const states: boolean[] = [];
    source.addStatusListener((status) => states.push(status.waiting));
    try {
      const samples: Sample[] = [];
      const generated = source.generate(jobs(2, 2), new AbortController().signal, (s) => samples.push(s));
      // Both servers are out (the retry budget of 1 alone would end the samples now); one comes back on its port.
      await takenOut;
      restarted = await startTestServer({ port: portB });
      await generated;
      assert.equal(samples.length, 4);
      assert.ok(
        samples.every((s) => s.ok),
        JSON.stringify(samples.filter((s) => !s.ok)),
      );
      assert.ok(restarted.counters.chatRequests > 0);
      assert.ok(
        warnings.some((w) => w.includes(`127.0.0.1:${portB}/v1 answers again`)),
        warnings.join('\n'),
      );
      // The run says it waits (status bar, dashboard), then that a server answers again.
      assert.deepEqual(states, [true, false]);
    } finally {
      source.dispose();
      await restarted?.close();
    }
  });

  it('check() with waitForServer waits for a server that comes up (a run started while its servers load)', async () => {
    const [portA, portB] = [await deadPort(), await deadPort()];
    let restarted: TestServer | null = null;
    let bothOut: () => void = () => undefined;
    const takenOut = new Promise<void>((resolveOut) => (bothOut = resolveOut));
    let out = 0;
    const messages: string[] = [];
    const source = pool([`http://127.0.0.1:${portA}/v1`, `http://127.0.0.1:${portB}/v1`], {
      retrySeconds: 60,
      healthRetryMs: 50,
      onWarning: (w) => {
        if (/is taken out/.test(w) && ++out === 2) bothOut();
      },
    });
    source.addStatusListener((status) => messages.push(status.message));
    try {
      const checked = source.check(new AbortController().signal, { waitForServer: true });
      await takenOut;
      restarted = await startTestServer({ port: portA });
      await checked;
      assert.equal(source.model, 'test-model');
      assert.match(messages[0] ?? '', /^waiting for a server of thetaevolve\.endpoint: all 2 are out .*thetaevolve\.serverRetrySeconds/);
      assert.match(messages[1] ?? '', /answers again/);
      // Without waitForServer, none answering is an error at once.
      const none = pool([`http://127.0.0.1:${portB}/v1`, `http://127.0.0.1:${await deadPort()}/v1`], { retrySeconds: 60 });
      await assert.rejects(none.check(), /No server of thetaevolve\.endpoint answers: /);
      none.dispose();
      // With unreachableFailsFast, none listening at all is an error at once too, whatever the window.
      const away = pool([`http://127.0.0.1:${await deadPort()}/v1`, `http://127.0.0.1:${await deadPort()}/v1`], { retrySeconds: 600 });
      await assert.rejects(
        away.check(undefined, { waitForServer: true, unreachableFailsFast: true }),
        /^Error: No server of thetaevolve\.endpoint answers: No server at .*connection refused/,
      );
      away.dispose();
      // Addresses fetch refuses outright (a blocked port, a foreign scheme) fail at once even without it.
      const unusable = pool(['http://127.0.0.1:6000/v1', 'ftp://127.0.0.1:8000/v1'], { retrySeconds: 600 });
      await assert.rejects(
        unusable.check(undefined, { waitForServer: true }),
        /^Error: No server of thetaevolve\.endpoint answers: .*bad port.* \| .*unknown scheme/,
      );
      unusable.dispose();
    } finally {
      source.dispose();
      await restarted?.close();
    }
  });
});
