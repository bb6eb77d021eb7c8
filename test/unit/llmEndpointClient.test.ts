// The endpoint client against the real test server over HTTP: every sample is
// accounted for exactly once under every fault kind and mixed faults, retries
// are bounded, stop aborts within a second, the cap on requests in flight holds.
import assert from 'node:assert/strict';
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import { defaultSettings } from '../../src/engine/common/config';
import {
  EndpointClient,
  apiKeyFromEnvironment,
  endpointOptionsFromSettings,
  type EndpointOptions,
} from '../../src/engine/llm/endpointClient';
import type { GenerationJob, Sample, SampleResponse, SourceStatus } from '../../src/engine/common/types';
import { EndpointAddressError, ServerUnreachableError } from '../../src/engine/llm/serverProbe';
import { EOS_TOKEN, startTestServer, type TestServer, type TestServerOptions } from '../server/openaiTestServer';
import { waitFor } from '../support/waitFor';

const PROGRAM = [
  'import numpy as np',
  '# EVOLVE-BLOCK-START',
  'def construct(n):',
  '    scale = 0.75',
  '    offset = 3',
  '    return np.ones(n) * scale + offset',
  '# EVOLVE-BLOCK-END',
  '',
].join('\n');

function job(key: string, n: number, seed: number): GenerationJob {
  return {
    key,
    n,
    seed,
    parentId: 'p0',
    parentCode: PROGRAM,
    messages: [
      { role: 'system', content: 'You improve programs.' },
      { role: 'user', content: `Improve this:\n\n\`\`\`python\n${PROGRAM}\`\`\`\n` },
    ],
  };
}

function jobs(count: number, n: number): GenerationJob[] {
  return Array.from({ length: count }, (_, i) => job(`s1-p${i}`, n, 1000 * i));
}

/** Collects samples and checks each (job, index) arrives exactly once. */
function collector(expected: GenerationJob[]) {
  const samples: Sample[] = [];
  const seen = new Set<string>();
  return {
    samples,
    onSample: (sample: Sample) => {
      const id = `${sample.jobKey}#${sample.index}`;
      assert.ok(!seen.has(id), `sample ${id} delivered twice`);
      const owner = expected.find((j) => j.key === sample.jobKey);
      assert.ok(owner && sample.index >= 0 && sample.index < owner.n, `unexpected sample ${id}`);
      seen.add(id);
      samples.push(sample);
    },
    assertComplete() {
      const total = expected.reduce((n, j) => n + j.n, 0);
      assert.equal(samples.length, total, `${samples.length} of ${total} samples delivered`);
    },
    ok(): SampleResponse[] {
      return samples.filter((s): s is SampleResponse => s.ok);
    },
  };
}

async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const port = (probe.address() as { port: number }).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

describe('EndpointClient against the test server', function () {
  this.timeout(60_000);
  let server: TestServer;
  const start = async (options: TestServerOptions = {}) => {
    server = await startTestServer({ retryAfterSeconds: 0, ...options });
    return server;
  };
  const clientFor = (overrides: Partial<EndpointOptions> = {}) =>
    new EndpointClient({
      baseURL: server.baseURL,
      model: '',
      apiKey: undefined,
      temperature: 1,
      topP: 0.95,
      maxTokens: 4096,
      maxInFlight: 0,
      useNParameter: false,
      requestTimeoutMs: 2000,
      maxRetries: 4,
      requestTokenIds: false,
      retrySeconds: 0.3,
      backoff: { baseMs: 5, maxMs: 40 },
      ...overrides,
    });
  const run = async (client: EndpointClient, work: GenerationJob[], signal = new AbortController().signal) => {
    const c = collector(work);
    const stats = await client.generate(work, signal, c.onSample);
    return { ...c, stats };
  };
  afterEach(async () => {
    await server?.close();
  });

  describe('health check', () => {
    it('discovers the only model and names it in the label', async () => {
      await start({ models: ['Qwen3-8B'] });
      const client = clientFor();
      await client.check();
      assert.equal(client.model, 'Qwen3-8B');
      assert.equal(client.label, `Qwen3-8B at ${server.baseURL}`);
      assert.equal(client.kind, 'llm');
    });

    it('names the served models when several are listed and none is chosen, or the chosen one is absent', async () => {
      await start({ models: ['a', 'b'] });
      await assert.rejects(clientFor().check(), /several models \(a, b\).*thetaevolve\.model/);
      await assert.rejects(clientFor({ model: 'c' }).check(), /Model "c" is not served .*it serves: a, b/);
      const chosen = clientFor({ model: 'b' });
      await chosen.check();
      assert.equal(chosen.model, 'b');
    });

    it('gives up on a server that sends headers and then stalls within its deadline, naming the real figure', async () => {
      await start({ modelsStallAfterHeaders: true });
      const started = performance.now();
      // Not the HTTP library's 300 s body timeout but the setting's deadline: the message names it, and a minute means never.
      await assert.rejects(clientFor({ requestTimeoutMs: 1500, retrySeconds: 0 }).check(), (err: unknown) => {
        assert.match(
          String(err),
          new RegExp(
            `No server at ${server.baseURL.replace(/[.]/g, '\\.')} \\(no whole answer within 1.5 s \\(thetaevolve\\.requestTimeoutSeconds`,
          ),
        );
        return true;
      });
      assert.ok(performance.now() - started < 60_000, `took ${Math.round(performance.now() - started)} ms`);
    });

    it('names within seconds a health check the server took and never answers (what and where), before its deadline', async () => {
      server = await startTestServer(); // for afterEach
      const silent = createHttpServer(() => undefined);
      await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
      const baseURL = `http://127.0.0.1:${(silent.address() as { port: number }).port}/v1`;
      try {
        const client = clientFor({ baseURL, requestTimeoutMs: 60_000, retrySeconds: 0 });
        const statuses: SourceStatus[] = [];
        const named = new Promise<number>((resolve) =>
          client.addStatusListener((status) => {
            statuses.push(status);
            if (status.waiting) resolve(performance.now());
          }),
        );
        const stop = new AbortController();
        let gaveUp = false;
        const checking = client.check(stop.signal).catch((err: unknown) => {
          gaveUp = true;
          return err;
        });
        await named;
        // Named while the request still waits: before its deadline gave up on it.
        assert.equal(gaveUp, false, 'named only once the health check had given up');
        assert.match(
          statuses[0]?.message ?? '',
          new RegExp(
            `^awaiting the server at ${baseURL.replace(/[.]/g, '\\.')}: GET ${baseURL.replace(/[.]/g, '\\.')}/models unanswered for 5 s \\(it gives up after 15 s\\)$`,
          ),
        );
        stop.abort();
        assert.match(String(await checking), /aborted/);
        assert.deepEqual(
          statuses.map((st) => st.waiting),
          [true, false],
          'the wait is said to be over when the request ends',
        );
      } finally {
        silent.closeAllConnections();
        await new Promise<void>((resolve) => silent.close(() => resolve()));
      }
    });

    it('says how to start a server when none answers', async () => {
      const port = await closedPort();
      server = await startTestServer(); // for afterEach
      const client = new EndpointClient({
        ...endpointOptionsFromSettings(defaultSettings(), undefined),
        baseURL: `http://127.0.0.1:${port}/v1`,
      });
      await assert.rejects(client.check(), (error: Error) => {
        assert.match(error.message, new RegExp(`^No server at http://127\\.0\\.0\\.1:${port}/v1 \\(connection refused\\)`));
        assert.match(error.message, /vllm serve MODEL/);
        assert.match(error.message, /thetaevolve\.endpoint/);
        return true;
      });
    });

    it('points at /v1 when the base URL misses it', async () => {
      await start();
      const client = clientFor({ baseURL: server.baseURL.replace(/\/v1$/, '') });
      await assert.rejects(client.check(), /usually ends in \/v1/);
    });

    it('reports a refused key without ever showing it', async () => {
      await start({ apiKey: 'sk-right-key' });
      await assert.rejects(clientFor({ apiKey: 'sk-wrong-key-123' }).check(), (error: Error) => {
        assert.match(error.message, /refused the API key \(HTTP 401\)/);
        assert.ok(!error.message.includes('sk-wrong-key-123'));
        return true;
      });
      const client = clientFor({ apiKey: 'sk-right-key' });
      await client.check();
      const { stats } = await run(client, [job('k', 1, 1)]);
      assert.equal(stats.failures, 0);
      assert.equal(server.requests[0]?.authorization, 'Bearer sk-right-key');
    });

    it('fails every sample with the actionable message when generate runs without a server', async () => {
      const port = await closedPort();
      server = await startTestServer();
      const client = clientFor({ baseURL: `http://127.0.0.1:${port}/v1` });
      const work = jobs(2, 2);
      const { samples, stats, assertComplete } = await run(client, work);
      assertComplete();
      assert.ok(samples.every((s) => !s.ok && /No server at/.test(s.error)));
      assert.equal(stats.failures, 4);
    });
  });

  describe('generation', () => {
    it('delivers n responses per prompt with seed + i, always sending temperature, top_p, max_tokens', async () => {
      await start({ latencyMs: 2 });
      const client = clientFor();
      const work = jobs(3, 4);
      const { stats, assertComplete, ok } = await run(client, work);
      assertComplete();
      assert.equal(ok().length, 12);
      for (const sample of ok()) {
        assert.match(sample.content, /<<<<<<< SEARCH\n[\s\S]+\n=======\n[\s\S]+\n>>>>>>> REPLACE/);
        assert.equal(sample.finishReason, 'stop');
        assert.equal(sample.truncated, false);
        assert.equal(sample.retries, 0);
        assert.ok(sample.completionTokens > 0 && sample.promptTokens > 0);
        assert.equal(sample.tokens, null);
      }
      const seeds = server.requests.map((r) => r.seed).sort((a, b) => (a ?? 0) - (b ?? 0));
      assert.deepEqual(seeds, [0, 1, 2, 3, 1000, 1001, 1002, 1003, 2000, 2001, 2002, 2003]);
      for (const r of server.requests) {
        assert.deepEqual([r.temperature, r.topP, r.maxTokens, r.n, r.model], [1, 0.95, 4096, 1, 'test-model']);
        assert.equal(r.authorization, 'Bearer EMPTY');
        assert.deepEqual(r.extraFields, []);
      }
      assert.equal(stats.requests, 12);
      assert.equal(stats.samples, 12);
      assert.equal(stats.retries, 0);
      assert.equal(stats.failures, 0);
      assert.equal(
        stats.completionTokens,
        ok().reduce((n, s) => n + s.completionTokens, 0),
      );
      assert.equal(
        stats.promptTokens,
        ok().reduce((n, s) => n + s.promptTokens, 0),
      );
      assert.ok(stats.latencyMsP50 > 0 && stats.latencyMsP95 >= stats.latencyMsP50);
      assert.ok(stats.tokensPerSecond > 0 && stats.wallMs > 0);
    });

    it('with useNParameter sends one request per prompt with n and gets the same answers', async () => {
      await start();
      const work = jobs(2, 3);
      const separate = await run(clientFor(), work);
      server.resetCounters();
      const together = await run(clientFor({ useNParameter: true }), work);
      together.assertComplete();
      assert.equal(together.stats.requests, 2);
      assert.deepEqual(server.requests.map((r) => [r.n, r.seed]).sort(), [
        [3, 0],
        [3, 1000],
      ]);
      const byId = (s: SampleResponse[]) => new Map(s.map((x) => [`${x.jobKey}#${x.index}`, x.content]));
      assert.deepEqual(byId(together.ok()), byId(separate.ok()));
      const total = together.ok().reduce((n, s) => n + s.completionTokens, 0);
      assert.equal(total, together.stats.completionTokens);
    });

    for (const mode of ['reasoning_content', 'reasoning', 'inline'] as const) {
      it(`keeps reasoning apart from the answer (${mode})`, async () => {
        await start({ reasoning: mode });
        const { ok } = await run(clientFor(), [job('k', 2, 5)]);
        for (const sample of ok()) {
          assert.ok(sample.reasoning && sample.reasoning.length > 10);
          assert.doesNotMatch(sample.content, /think>/);
          assert.match(sample.content, /^Changing .*\n\n<<<<<<< SEARCH/);
        }
      });
    }

    it('keeps token ids and aligned logprobs for RL, with the weight version', async () => {
      await start({ weightVersion: 'step-7' });
      const warnings: string[] = [];
      const client = clientFor({ requestTokenIds: true, useNParameter: true, onWarning: (w) => warnings.push(w) });
      await client.check();
      assert.deepEqual(client.tokenSupport, { status: 'supported', logprobs: true, message: null });
      const { ok } = await run(client, [job('k', 3, 9)]);
      assert.equal(ok().length, 3);
      for (const sample of ok()) {
        const tokens = sample.tokens;
        assert.ok(tokens);
        assert.equal(tokens.completionTokenIds.length, sample.completionTokens);
        assert.equal(tokens.completionLogprobs?.length, sample.completionTokens);
        assert.equal(tokens.promptTokenIds.length, sample.promptTokens);
        assert.equal(sample.policyVersion, 'step-7');
      }
      assert.ok(server.requests.every((r) => r.returnTokenIds && r.logprobs && !r.returnPromptTokenIds));
      assert.deepEqual(warnings, []);
    });

    it('asks SGLang-style servers for prompt ids on the choices', async () => {
      await start({ mode: 'sglang' });
      const client = clientFor({ requestTokenIds: true });
      await client.check(); // two probes: the second asks for prompt ids
      assert.equal(client.tokenSupport.status, 'supported');
      server.resetCounters();
      const { ok } = await run(client, [job('k', 2, 9)]);
      for (const sample of ok()) assert.equal(sample.tokens?.promptTokenIds.length, sample.promptTokens);
      assert.ok(server.requests.every((r) => r.returnTokenIds && r.returnPromptTokenIds));
    });

    it('learns token support from the replies when the probe was inconclusive', async () => {
      await start({ mode: 'sglang', script: ['server_error'] }); // the probe gets a 500
      const client = clientFor({ requestTokenIds: true, maxInFlight: 1 });
      await client.check();
      assert.equal(client.tokenSupport.status, 'unknown');
      const { ok } = await run(client, [job('k', 3, 9)]);
      assert.equal(client.tokenSupport.status, 'supported');
      // The first reply lacked prompt ids (not asked yet): no half traces.
      assert.deepEqual(
        ok()
          .sort((a, b) => a.index - b.index)
          .map((s) => s.tokens !== null),
        [false, true, true],
      );
    });

    it('says once, clearly, when the server returns no token ids, and stops asking', async () => {
      await start({ supportsTokenIds: false });
      const warnings: string[] = [];
      const client = clientFor({ requestTokenIds: true, onWarning: (w) => warnings.push(w) });
      await client.check(); // probes
      assert.equal(client.tokenSupport.status, 'missing');
      assert.match(client.tokenSupport.message ?? '', /does not return token ids/);
      server.resetCounters();
      const { ok } = await run(client, jobs(2, 2));
      assert.equal(ok().length, 4);
      assert.ok(ok().every((s) => s.tokens === null));
      assert.ok(server.requests.every((r) => !r.returnTokenIds));
      assert.equal(warnings.length, 1);
    });

    it('records finish_reason length as truncated', async () => {
      await start();
      const { ok } = await run(clientFor({ maxTokens: 6 }), [job('k', 1, 1)]);
      assert.equal(ok()[0]?.truncated, true);
      assert.equal(ok()[0]?.finishReason, 'length');
      assert.equal(ok()[0]?.completionTokens, 6);
    });
  });

  describe('faults', () => {
    const scripted = async (script: TestServerOptions['script'], overrides: Partial<EndpointOptions> = {}) => {
      await start({ script, latencyMs: 1 });
      const result = await run(clientFor({ maxInFlight: 1, ...overrides }), [job('k', 1, 3)]);
      result.assertComplete();
      return { ...result, sample: result.samples[0] as Sample };
    };

    for (const kind of ['rate_limit', 'server_error', 'reset', 'garbage'] as const) {
      it(`retries ${kind} and then answers`, async () => {
        const { sample, stats } = await scripted([kind, kind, 'ok']);
        assert.equal(sample.ok, true);
        assert.equal(sample.retries, 2);
        assert.equal(stats.retries, 2);
        assert.equal(stats.requests, 3);
        assert.equal(server.counters.faults[kind], 2);
      });
    }

    it('retries three kinds of garbage bodies as failed attempts', async () => {
      const { sample, stats } = await scripted(['garbage', 'garbage', 'garbage', 'garbage', 'garbage', 'garbage', 'ok'], { maxRetries: 6 });
      assert.equal(sample.ok, true);
      assert.equal(stats.retries, 6);
    });

    it('times out a stalled request and retries it', async () => {
      const { sample } = await scripted(['stall', 'ok'], { requestTimeoutMs: 150 });
      assert.equal(sample.ok, true);
      assert.equal(sample.retries, 1);
      await waitFor(() => server.counters.clientAborts >= 1, { what: 'the server to see the stalled request abandoned', deadlineMs: 5000 });
      assert.equal(server.counters.clientAborts, 1);
    });

    it('keeps truncated and diff-less answers as responses, not failures', async () => {
      const truncated = await scripted(['truncate']);
      assert.equal(truncated.sample.ok && truncated.sample.truncated, true);
      await server.close();
      const plain = await scripted(['no_diff']);
      assert.ok(plain.sample.ok);
      assert.doesNotMatch(plain.sample.ok ? plain.sample.content : '', /SEARCH/);
      assert.equal(plain.stats.retries, 0);
    });

    it('gives up after maxRetries with request_failed naming the cause', async () => {
      const { sample, stats } = await scripted(Array(10).fill('server_error'), { maxRetries: 2 });
      assert.equal(sample.ok, false);
      assert.match(sample.ok ? '' : sample.error, /^HTTP 500: .*\(gave up after 2 retries\)$/);
      assert.equal(stats.requests, 3);
      assert.equal(stats.failures, 1);
      assert.equal(server.counters.chatRequests, 3);
    });

    it('does not retry a request the server rejects as invalid', async () => {
      await start();
      const client = clientFor({ temperature: 5 }); // out of range: HTTP 400
      const { samples, stats } = await run(client, [job('k', 2, 1)]);
      assert.ok(samples.every((s) => !s.ok && /^HTTP 400/.test(s.error)));
      assert.equal(stats.requests, 2);
      assert.equal(stats.retries, 0);
    });

    it('honours Retry-After', async () => {
      await start({ script: ['rate_limit', 'ok'], retryAfterSeconds: 1 });
      const started = performance.now();
      const { samples } = await run(clientFor(), [job('k', 1, 1)]);
      const elapsed = performance.now() - started;
      assert.equal(samples[0]?.ok, true);
      // Not before the server's Retry-After.
      assert.ok(elapsed >= 1000, `retried after ${elapsed} ms`);
    });

    for (const useNParameter of [false, true]) {
      it(`accounts for every sample under 30% mixed faults (useNParameter ${useNParameter})`, async () => {
        await start({ faultRate: 0.3, faultSeed: 11, latencyMs: 2, latencyJitterMs: 5 });
        const client = clientFor({ useNParameter, requestTimeoutMs: 300, maxRetries: 8, maxInFlight: 16 });
        const work = jobs(8, 8);
        const { stats, assertComplete, samples } = await run(client, work);
        assertComplete();
        const units = useNParameter ? 8 : 64;
        assert.equal(stats.requests, units + stats.retries, 'each retry is one more request');
        // A request the client timed out (300 ms) before the server read it is counted by the client only (seen on a loaded machine).
        assert.ok(
          server.counters.chatRequests <= stats.requests && stats.requests <= server.counters.chatRequests + 3,
          `client ${stats.requests}, server ${server.counters.chatRequests}`,
        );
        assert.ok(stats.retries <= units * 8);
        assert.ok(stats.retries > 0, 'faults were injected and retried');
        assert.equal(stats.failures, samples.filter((s) => !s.ok).length);
        assert.ok(samples.filter((s) => s.ok).length >= 56, `${stats.failures} failures`);
        assert.ok(server.counters.maxInFlight <= 16);
        const retriesPerSample = samples.reduce((n, s) => n + s.retries, 0);
        assert.equal(
          retriesPerSample,
          useNParameter ? samples.reduce((n, s) => n + (s.index === 0 ? s.retries : 0), 0) * 8 : stats.retries,
        );
      });
    }
  });

  describe('stopping', () => {
    const timeStop = async (serverOptions: TestServerOptions, clientOptions: Partial<EndpointOptions>, stopAfterMs: number) => {
      await start(serverOptions);
      const client = clientFor(clientOptions);
      await client.check();
      const work = jobs(4, 4);
      const c = collector(work);
      const controller = new AbortController();
      setTimeout(() => controller.abort(), stopAfterMs);
      const started = performance.now();
      const stats = await client.generate(work, controller.signal, c.onSample);
      const afterStop = performance.now() - started - stopAfterMs;
      c.assertComplete();
      return { stats, samples: c.samples, afterStop };
    };

    it('aborts in-flight requests within a second', async () => {
      const { stats, samples, afterStop } = await timeStop({ latencyMs: 10_000 }, { requestTimeoutMs: 60_000 }, 150);
      assert.ok(afterStop < 1000, `stop took ${afterStop} ms`);
      assert.ok(samples.every((s) => !s.ok && /stopped/.test(s.error)));
      assert.equal(stats.aborted, true);
      await waitFor(() => server.counters.clientAborts >= 16 && server.counters.inFlight === 0, {
        what: 'the server to see every request abandoned',
        deadlineMs: 5000,
      });
      assert.equal(server.counters.clientAborts, 16, 'the server saw every request abandoned');
      assert.equal(server.counters.inFlight, 0);
    });

    it('aborts during backoff and while queued', async () => {
      const backoff = await timeStop({ faultRate: 1, faultKinds: ['rate_limit'], retryAfterSeconds: 30 }, {}, 150);
      assert.ok(backoff.afterStop < 1000, `stop took ${backoff.afterStop} ms`);
      await server.close();
      const queued = await timeStop({ latencyMs: 10_000 }, { maxInFlight: 2, requestTimeoutMs: 60_000 }, 150);
      assert.ok(queued.afterStop < 1000, `stop took ${queued.afterStop} ms`);
      assert.equal(server.counters.chatRequests, 2);
    });

    it('delivers every sample as stopped when the signal is already aborted', async () => {
      await start();
      const client = clientFor();
      await client.check();
      const controller = new AbortController();
      controller.abort();
      const work = jobs(2, 2);
      const c = collector(work);
      const stats = await client.generate(work, controller.signal, c.onSample);
      c.assertComplete();
      assert.equal(stats.requests, 0);
      assert.equal(server.counters.chatRequests, 0);
    });

    it('stops and rethrows when onSample throws', async () => {
      await start({ latencyMs: 5 });
      const client = clientFor({ maxInFlight: 1 });
      let calls = 0;
      await assert.rejects(
        client.generate(jobs(1, 5), new AbortController().signal, () => {
          calls++;
          throw new Error('consumer broke');
        }),
        /consumer broke/,
      );
      assert.equal(calls, 1);
    });
  });

  describe('concurrency', () => {
    it('keeps exactly the configured number of requests in flight', async () => {
      await start({ latencyMs: 40 });
      const { stats, assertComplete } = await run(clientFor({ maxInFlight: 4 }), jobs(5, 4));
      assertComplete();
      assert.equal(server.counters.maxInFlight, 4);
      assert.equal(stats.maxInFlight, 4);
    });

    it('sends the whole step at once when uncapped (B x n)', async () => {
      await start({ latencyMs: 200 });
      const { stats } = await run(clientFor({ maxInFlight: 0 }), jobs(4, 8));
      assert.equal(server.counters.maxInFlight, 32);
      assert.equal(stats.maxInFlight, 32);
    });
  });

  describe('settings and keys', () => {
    it('reads the API key from OPENAI_API_KEY only', () => {
      assert.equal(apiKeyFromEnvironment({ OPENAI_API_KEY: ' sk-1 ' }), 'sk-1');
      assert.equal(apiKeyFromEnvironment({ OPENAI_API_KEY: '' }), undefined);
      assert.equal(apiKeyFromEnvironment({}), undefined);
    });

    it('builds options from settings', () => {
      const settings = { ...defaultSettings(), requestTimeoutSeconds: 30, maxRequestsInFlight: 64 };
      const options = endpointOptionsFromSettings(settings, 'k');
      assert.deepEqual(
        [
          options.baseURL,
          options.model,
          options.apiKey,
          options.temperature,
          options.maxTokens,
          options.requestTimeoutMs,
          options.maxInFlight,
          options.requestTokenIds,
        ],
        ['http://127.0.0.1:8000/v1', '', 'k', 1, 16384, 30_000, 64, false],
      );
      assert.equal(endpointOptionsFromSettings({ ...settings, 'trainer.enabled': true }, undefined).requestTokenIds, true);
    });
  });
  describe('what real vLLM and SGLang servers do', () => {
    for (const mode of ['sglang', 'old-vllm'] as const) {
      it(`keeps the message of a flat error body (${mode})`, async () => {
        await start({ mode });
        const { samples } = await run(clientFor({ temperature: 5 }), [job('k', 1, 1)]); // out of range: HTTP 400
        const sample = samples[0] as Sample;
        assert.ok(!sample.ok);
        assert.match(sample.error, /^HTTP 400: Invalid request: temperature /);
        assert.doesNotMatch(sample.error, /no body/);
      });
    }

    it("reads vLLM's 503 whose error is a plain string, waits for it by time and names the setting", async () => {
      await start({ faultRate: 1, faultKinds: ['unavailable'] });
      const { samples, stats } = await run(clientFor({ retrySeconds: 0.2 }), [job('k', 1, 1)]);
      const sample = samples[0] as Sample;
      assert.ok(!sample.ok);
      assert.match(
        sample.error,
        /^HTTP 503: The model is currently scaling\. Please try again later\. \(the server did not come back within 0\.2 s: thetaevolve\.serverRetrySeconds\)$/,
      );
      assert.ok(stats.requests > 2, 'retried within the window, not by maxRetries');
    });

    for (const mode of ['vllm', 'sglang', 'old-vllm'] as const) {
      it(`fits max_tokens to a context smaller than thetaevolve.maxTokens, and says so once (${mode})`, async () => {
        await start({ mode, maxModelLen: 300 });
        const warnings: string[] = [];
        const { ok, samples } = await run(clientFor({ maxTokens: 4096, onWarning: (w) => warnings.push(w) }), jobs(2, 2));
        assert.equal(ok().length, 4, JSON.stringify(samples.filter((x) => !x.ok)));
        assert.equal(server.counters.contextRejections, 0);
        for (const r of server.requests) assert.ok((r.maxTokens ?? Infinity) < 300, `max_tokens ${r.maxTokens}`);
        // vLLM counts the prompt at /tokenize, once per prompt; SGLang has none: a conservative estimate.
        assert.equal(server.tokenizeRequests.length, mode === 'sglang' ? 0 : 2);
        assert.equal(warnings.length, 1);
        assert.match(warnings[0] ?? '', /less than thetaevolve\.maxTokens \(4096\)/);
      });
    }

    for (const mode of ['vllm', 'sglang', 'old-vllm'] as const) {
      it(`retries a context-length 400 with what the server says fits, when it lists no max_model_len (${mode})`, async () => {
        await start({ mode, maxModelLen: 300, listsMaxModelLen: false });
        const client = clientFor({ maxTokens: 4096 });
        const { ok } = await run(client, [job('k', 2, 1)]);
        assert.equal(ok().length, 2);
        assert.ok(server.counters.contextRejections >= 1);
        assert.equal(client.serverContextLength, 300);
        const prompt = ok()[0]?.promptTokens as number;
        assert.deepEqual(server.requests.map((r) => r.maxTokens).slice(-1), [300 - prompt - 1]);
      });
    }

    for (const mode of ['vllm', 'sglang', 'old-vllm'] as const) {
      it(`names the setting to change when the prompt alone fills the context (${mode})`, async () => {
        await start({ mode, maxModelLen: 20 });
        const { samples } = await run(clientFor({ maxTokens: 4096 }), [job('k', 1, 1)]);
        const sample = samples[0] as Sample;
        assert.ok(!sample.ok);
        assert.match(sample.error, /thetaevolve\.maxTokens/);
        assert.match(sample.error, /--max-model-len/);
      });
    }

    it('keeps token ids when the probe was inconclusive and an unrelated 400 follows', async () => {
      // The probe gets a 500; the first request a context-length 400: neither says anything about return_token_ids.
      await start({ script: ['server_error'], maxModelLen: 300, listsMaxModelLen: false });
      const client = clientFor({ requestTokenIds: true, maxTokens: 4096 });
      await client.check();
      assert.equal(client.tokenSupport.status, 'unknown');
      const { ok } = await run(client, [job('k', 1, 1)]);
      assert.equal(ok().length, 1);
      assert.ok(ok()[0]?.tokens, 'the reply carried ids and they are kept');
      assert.equal(client.tokenSupport.status, 'supported');
      assert.ok(server.requests.every((r) => r.returnTokenIds));
    });

    it('says vLLM <= 0.10.0 gives no token ids and keeps its samples', async () => {
      await start({ mode: 'old-vllm' });
      const warnings: string[] = [];
      const client = clientFor({ requestTokenIds: true, onWarning: (w) => warnings.push(w) });
      await client.check();
      assert.equal(client.tokenSupport.status, 'missing');
      const { ok } = await run(client, [job('k', 2, 1)]);
      assert.equal(ok().length, 2);
      assert.ok(ok().every((x) => x.tokens === null));
      assert.deepEqual(
        warnings.map((w) => /does not return token ids \(replies carry no token_ids\).*vLLM >= 0\.10\.2/.test(w)),
        [true],
      );
    });

    it('counts the end-of-sequence token the servers put in token_ids, logprobs and usage', async () => {
      await start({ mode: 'sglang' });
      const client = clientFor({ requestTokenIds: true });
      const { ok } = await run(client, [job('k', 1, 1)]);
      const sample = ok()[0] as SampleResponse;
      assert.equal(sample.finishReason, 'stop');
      assert.equal(sample.tokens?.completionTokenIds.at(-1), EOS_TOKEN.id);
      assert.equal(sample.tokens?.completionLogprobs?.length, sample.tokens?.completionTokenIds.length);
      assert.equal(sample.completionTokens, sample.tokens?.completionTokenIds.length);
      assert.doesNotMatch(sample.content, /im_end/);
    });

    it('reads content "" of an SGLang reply still in its reasoning as an empty, truncated answer', async () => {
      await start({ mode: 'sglang', reasoning: 'reasoning_content' });
      const { ok } = await run(clientFor({ maxTokens: 4 }), [job('k', 1, 1)]);
      assert.equal(ok()[0]?.content, '');
      assert.equal(ok()[0]?.truncated, true);
      assert.ok(ok()[0]?.reasoning);
    });

    it('retries an SGLang finish_reason "abort" and never delivers it as an answer', async () => {
      await start({ mode: 'sglang', script: ['abort', 'abort', 'ok'] });
      const { ok, stats } = await run(clientFor(), [job('k', 1, 1)]);
      assert.equal(ok().length, 1);
      assert.equal(ok()[0]?.finishReason, 'stop');
      assert.equal(stats.requests, 3);
      assert.equal(server.counters.faults.abort, 2);
    });

    it('does not take SGLang\'s weight_version "default" for a policy version', async () => {
      await start({ mode: 'sglang', weightVersion: 'default' });
      const { ok } = await run(clientFor(), [job('k', 1, 1)]);
      assert.equal(ok()[0]?.policyVersion, null);
      await server.close();
      await start({ mode: 'sglang', weightVersion: '12' });
      const tagged = await run(clientFor(), [job('k', 1, 1)]);
      assert.equal(tagged.ok()[0]?.policyVersion, '12');
    });

    it('waits for a server that restarts, says so, and resumes when it answers', async () => {
      await start();
      const client = clientFor({ retrySeconds: 30 });
      await client.check();
      const port = server.port;
      await server.close();
      const statuses: SourceStatus[] = [];
      client.addStatusListener((status) => {
        statuses.push(status);
        // The server comes back when the client says it waits: no timer decides.
        if (status.waiting) void startTestServer({ port }).then((s) => (server = s));
      });
      const { ok, assertComplete } = await run(client, jobs(2, 2));
      assertComplete();
      assert.equal(ok().length, 4);
      assert.deepEqual(
        statuses.map((s) => s.waiting),
        [true, false],
      );
      assert.match(
        statuses[0]?.message ?? '',
        /^waiting for the server at .* \(connection failed: connection refused\); retrying for up to 30 s/,
      );
    });

    it('waits through the loading phase at the start of a run', async () => {
      await start({ loading: true });
      const client = clientFor({ retrySeconds: 30 });
      const statuses: boolean[] = [];
      client.addStatusListener((status) => {
        statuses.push(status.waiting);
        if (status.waiting) server.setLoading(false);
      });
      await client.check(undefined, { waitForServer: true });
      assert.equal(client.model, 'test-model');
      assert.deepEqual(statuses, [true, false]);
      assert.ok(server.counters.loadingRejections >= 1);
    });

    it('with unreachableFailsFast, says at once that nothing listens (no wait of serverRetrySeconds), yet waits for a loading server', async () => {
      const port = await closedPort();
      const away = clientFor({ baseURL: `http://127.0.0.1:${port}/v1`, retrySeconds: 600 });
      const statuses: boolean[] = [];
      away.addStatusListener((status) => statuses.push(status.waiting));
      // Were it waited for, the 600 s window would outlast the test's timeout.
      const refused = await away.check(undefined, { waitForServer: true, unreachableFailsFast: true }).then(
        () => null,
        (err: unknown) => err,
      );
      assert.ok(refused instanceof ServerUnreachableError, String(refused));
      assert.match(refused.message, /^No server at http:\/\/127\.0\.0\.1:\d+\/v1 \(connection refused\): start `vllm serve MODEL`/);
      assert.deepEqual(statuses, [], 'no waiting was announced');

      await start({ loading: true });
      const loading = clientFor({ retrySeconds: 30 });
      loading.addStatusListener((status) => {
        if (status.waiting) server.setLoading(false);
      });
      await loading.check(undefined, { waitForServer: true, unreachableFailsFast: true });
      assert.equal(loading.model, 'test-model');
      assert.ok(server.counters.loadingRejections >= 1, 'a server that answers 503 while loading is waited for');
    });

    it('fails at once, never waiting, on an address fetch refuses outright (a blocked port, a scheme it does not speak)', async () => {
      server = await startTestServer(); // for afterEach
      // Port 6000 (X11) is on fetch's blocked-port list; ftp:// is a scheme it does not fetch.
      for (const [baseURL, words] of [
        ['http://127.0.0.1:6000/v1', /\(bad port: a port fetch refuses .*choose another port/],
        ['ftp://127.0.0.1:8000/v1', /\(unknown scheme: not an http:\/\/ or https:\/\/ URL\)/],
      ] as const) {
        const client = clientFor({ baseURL, retrySeconds: 600 });
        const statuses: boolean[] = [];
        client.addStatusListener((status) => statuses.push(status.waiting));
        // Were it waited for like a loading server, the 600 s window would outlast the test's timeout.
        const refused = await client.check(undefined, { waitForServer: true }).then(
          () => null,
          (err: unknown) => err,
        );
        assert.ok(refused instanceof EndpointAddressError, String(refused));
        assert.match(refused.message, words);
        assert.match(refused.message, /set thetaevolve\.endpoint/);
        assert.deepEqual(statuses, [], 'no waiting was announced');
        // generate() without a check fails its samples at once too, naming why.
        const { samples, stats } = await run(clientFor({ baseURL, retrySeconds: 600, maxRetries: 4 }), jobs(1, 2));
        assert.ok(
          samples.every((s) => !s.ok && words.test(s.error)),
          JSON.stringify(samples),
        );
        assert.equal(stats.failures, 2);
      }
    });

    it('gives up on a server that stays away after serverRetrySeconds, naming the setting', async () => {
      const port = await closedPort();
      server = await startTestServer();
      const client = clientFor({ baseURL: `http://127.0.0.1:${port}/v1`, retrySeconds: 0.2 });
      await assert.rejects(client.check(undefined, { waitForServer: true }), /No server at .* \(connection refused, for 0\.2 s\)/);
    });
  });
});
