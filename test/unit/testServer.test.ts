// The OpenAI-compatible test server speaks the protocol faithfully, its
// "model" proposes applicable edits, and its faults are what they claim.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { EOS_TOKEN, startTestServer, type TestServer, type TestServerOptions } from '../server/openaiTestServer';
import { programInPrompt, tokenPieces } from '../server/testModel';
import { waitFor } from '../support/waitFor';

const PROGRAM = [
  'import numpy as np',
  'def helper():',
  '    x = 1',
  '    return x',
  '',
  '# EVOLVE-BLOCK-START',
  'def construct(n):',
  '    x = 1',
  '    scale = 0.75',
  '    # a comment with 99 in it',
  '    return np.ones(n) * scale + x',
  '# EVOLVE-BLOCK-END',
  '',
  'print(construct(26))',
  '',
].join('\n');

const PROMPT = `Improve the program.\n\n\`\`\`python\n${PROGRAM}\`\`\`\n\nAnswer with SEARCH/REPLACE blocks.`;

interface Reply {
  status: number;
  headers: Headers;
  text: string;
  json: Record<string, unknown> | null;
}

async function post(server: TestServer, body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<Reply> {
  const response = await fetch(`${server.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  let json: Record<string, unknown> | null = null;
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    json = null;
  }
  return { status: response.status, headers: response.headers, text, json };
}

function chat(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { model: 'test-model', messages: [{ role: 'user', content: PROMPT }], max_tokens: 4096, seed: 1, ...extra };
}

interface Choice {
  index: number;
  message: { content: string | null; reasoning_content?: string | null; reasoning?: string | null };
  finish_reason: string;
  token_ids?: number[];
  logprobs: { content: { token: string; logprob: number }[] } | null;
}

function choicesOf(reply: Reply): Choice[] {
  return (reply.json as { choices: Choice[] }).choices;
}

/** Apply one SEARCH/REPLACE block the way the engine does: first exact match. */
function applyEdit(program: string, answer: string): { child: string; at: number } {
  const m = /<<<<<<< SEARCH\n([\s\S]*?)\n=======\n([\s\S]*?)\n>>>>>>> REPLACE/.exec(answer);
  assert.ok(m, `no SEARCH/REPLACE block in ${answer}`);
  const search = m[1] as string;
  const at = program.indexOf(search);
  assert.ok(at >= 0, `SEARCH text not in the program: ${search}`);
  return { child: program.slice(0, at) + (m[2] as string) + program.slice(at + search.length), at };
}

describe('OpenAI-compatible test server', () => {
  let server: TestServer;
  const start = async (options: TestServerOptions = {}) => {
    server = await startTestServer(options);
    return server;
  };
  afterEach(async () => {
    await server?.close();
  });

  it('lists its models like vLLM at /v1/models', async () => {
    await start({ models: ['a', 'b'] });
    const response = await fetch(`${server.baseURL}/models`);
    const body = (await response.json()) as { object: string; data: { id: string; object: string; owned_by: string }[] };
    assert.equal(body.object, 'list');
    assert.deepEqual(
      body.data.map((m) => m.id),
      ['a', 'b'],
    );
    assert.equal(body.data[0]?.object, 'model');
    assert.equal(server.counters.modelsRequests, 1);
  });

  it('answers with n choices, usage that matches token_ids, and aligned logprobs', async () => {
    await start();
    const reply = await post(server, chat({ n: 3, return_token_ids: true, logprobs: true }));
    assert.equal(reply.status, 200);
    const body = reply.json as {
      object: string;
      usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
      prompt_token_ids: number[];
    };
    assert.equal(body.object, 'chat.completion');
    const choices = choicesOf(reply);
    assert.equal(choices.length, 3);
    assert.deepEqual(
      choices.map((c) => c.index),
      [0, 1, 2],
    );
    let completion = 0;
    for (const choice of choices) {
      assert.equal(choice.finish_reason, 'stop');
      const ids = choice.token_ids as number[];
      assert.ok(ids.length > 10);
      completion += ids.length;
      const logprobs = choice.logprobs?.content ?? [];
      assert.equal(logprobs.length, ids.length);
      assert.ok(logprobs.every((l) => l.logprob <= 0));
      // The tokens spell the generated text, then the end-of-sequence token (in ids, logprobs and usage, never in the text).
      assert.equal(logprobs.map((l) => l.token).join(''), `${choice.message.content}${EOS_TOKEN.text}`);
      assert.equal(ids.at(-1), EOS_TOKEN.id);
    }
    assert.equal(body.usage.completion_tokens, completion);
    assert.equal(body.usage.prompt_tokens, body.prompt_token_ids.length);
    assert.equal(body.usage.total_tokens, body.usage.prompt_tokens + completion);
  });

  it('leaves token ids and logprobs out unless asked, or when told it lacks them', async () => {
    await start({ supportsTokenIds: false });
    const plain = await post(server, chat());
    assert.equal(choicesOf(plain)[0]?.token_ids, undefined);
    assert.equal(choicesOf(plain)[0]?.logprobs, null);
    const asked = await post(server, chat({ return_token_ids: true }));
    assert.equal(choicesOf(asked)[0]?.token_ids, undefined);
    assert.equal((asked.json as { prompt_token_ids: unknown }).prompt_token_ids, null);
  });

  it('is deterministic given the seed; choice i of a request with n equals a request with seed + i', async () => {
    await start();
    const a = await post(server, chat({ seed: 42, n: 2 }));
    const b = await post(server, chat({ seed: 42, n: 2 }));
    const c = await post(server, chat({ seed: 43 }));
    assert.deepEqual(
      choicesOf(a).map((x) => x.message.content),
      choicesOf(b).map((x) => x.message.content),
    );
    assert.equal(choicesOf(a)[1]?.message.content, choicesOf(c)[0]?.message.content);
    const contents = new Set<string>();
    for (let seed = 0; seed < 20; seed++) contents.add(choicesOf(await post(server, chat({ seed })))[0]?.message.content ?? '');
    assert.ok(contents.size > 5, `only ${contents.size} distinct answers over 20 seeds`);
  });

  it('proposes edits that apply inside the EVOLVE-BLOCK and change the code', async () => {
    await start();
    const blockStart = PROGRAM.indexOf('# EVOLVE-BLOCK-START');
    const blockEnd = PROGRAM.indexOf('# EVOLVE-BLOCK-END');
    for (let seed = 0; seed < 40; seed++) {
      const answer = choicesOf(await post(server, chat({ seed })))[0]?.message.content ?? '';
      assert.match(answer, /^\S.*\n\n<<<<<<< SEARCH\n/); // explanation first
      const { child, at } = applyEdit(PROGRAM, answer);
      assert.ok(at > blockStart && at < blockEnd, `edit at ${at} lands outside the block`);
      assert.notEqual(child, PROGRAM);
      assert.ok(!child.includes('99 in it') || child.includes('# a comment with 99 in it'), 'comments are not edited');
    }
  });

  it('finds the program only in a fenced block with EVOLVE-BLOCK-START and says so when there is none', async () => {
    assert.equal(programInPrompt('```\nprint(1)\n```\n```python\n# EVOLVE-BLOCK-START\nx = 1\n```'), '# EVOLVE-BLOCK-START\nx = 1\n');
    assert.equal(programInPrompt('no code here'), null);
    await start();
    const reply = await post(server, { model: 'test-model', messages: [{ role: 'user', content: 'hello' }] });
    assert.equal(reply.status, 200);
    assert.doesNotMatch(choicesOf(reply)[0]?.message.content ?? '', /SEARCH/);
  });

  it('puts reasoning in reasoning_content, reasoning, or inline <think> as configured', async () => {
    await start({ reasoning: 'reasoning_content' });
    let m = choicesOf(await post(server, chat()))[0]?.message;
    assert.ok(m?.reasoning_content && m.reasoning_content.length > 10);
    assert.doesNotMatch(m?.content ?? '', /think/);
    await server.close();
    await start({ reasoning: 'reasoning' });
    m = choicesOf(await post(server, chat()))[0]?.message;
    assert.ok(m?.reasoning && m.reasoning.length > 10);
    assert.equal(m?.reasoning_content, undefined);
    await server.close();
    await start({ reasoning: 'inline' });
    m = choicesOf(await post(server, chat()))[0]?.message;
    assert.match(m?.content ?? '', /^<think>\n[\s\S]+\n<\/think>\n\n[\s\S]*<<<<<<< SEARCH/);
  });

  it('cuts replies at max_tokens with finish_reason length', async () => {
    await start();
    const reply = await post(server, chat({ max_tokens: 5, return_token_ids: true }));
    const choice = choicesOf(reply)[0] as Choice;
    assert.equal(choice.finish_reason, 'length');
    assert.equal(choice.token_ids?.length, 5);
    assert.equal(tokenPieces(choice.message.content ?? '').length, 5);
    assert.equal((reply.json as { usage: { completion_tokens: number } }).usage.completion_tokens, 5);
  });

  it('injects each scripted fault as what it claims to be, and counts them', async () => {
    await start({
      script: ['rate_limit', 'server_error', 'reset', 'garbage', 'truncate', 'no_diff', 'ok'],
      retryAfterSeconds: 2,
      retryAfterMs: 1500,
    });
    const limited = await post(server, chat());
    assert.equal(limited.status, 429);
    assert.equal(limited.headers.get('retry-after'), '2');
    assert.equal(limited.headers.get('retry-after-ms'), '1500');
    assert.equal((limited.json as { error: { code: number } }).error.code, 429);
    assert.equal((await post(server, chat())).status, 500);
    await assert.rejects(post(server, chat()));
    const garbage = await post(server, chat());
    assert.equal(garbage.status, 200);
    assert.ok(
      garbage.json === null ||
        !Array.isArray((garbage.json as { choices?: unknown }).choices) ||
        typeof choicesOf(garbage)[0]?.message.content !== 'string',
    );
    const truncated = choicesOf(await post(server, chat()))[0] as Choice;
    assert.equal(truncated.finish_reason, 'length');
    assert.doesNotMatch(choicesOf(await post(server, chat()))[0]?.message.content ?? '', /SEARCH/);
    assert.match(choicesOf(await post(server, chat()))[0]?.message.content ?? '', /SEARCH/);
    const f = server.counters.faults;
    assert.deepEqual([f.rate_limit, f.server_error, f.reset, f.garbage, f.truncate, f.no_diff, f.stall], [1, 1, 1, 1, 1, 1, 0]);
    assert.equal(server.counters.chatRequests, 7);
    assert.equal(server.counters.completions, 3);
  });

  it('stalls until the client gives up', async () => {
    await start({ script: ['stall'] });
    await assert.rejects(
      fetch(`${server.baseURL}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(chat()),
        signal: AbortSignal.timeout(150),
      }),
    );
    await waitFor(() => server.counters.clientAborts >= 1 && server.counters.inFlight === 0, {
      what: 'the server to see the request abandoned',
      deadlineMs: 5000,
    });
    assert.equal(server.counters.clientAborts, 1);
    assert.equal(server.counters.inFlight, 0);
  });

  it('injects faults at about the configured rate', async () => {
    await start({ faultRate: 0.3, faultKinds: ['server_error', 'rate_limit'], retryAfterSeconds: 0, faultSeed: 7 });
    let failed = 0;
    for (let i = 0; i < 150; i++) if ((await post(server, chat({ max_tokens: 8 }))).status !== 200) failed++;
    assert.ok(failed > 25 && failed < 65, `${failed} of 150 failed`);
    assert.equal(server.counters.faults.server_error + server.counters.faults.rate_limit, failed);
  });

  it('counts the most requests in flight', async () => {
    await start({ latencyMs: 100 });
    await Promise.all(Array.from({ length: 12 }, () => post(server, chat())));
    assert.equal(server.counters.maxInFlight, 12);
    assert.equal(server.counters.inFlight, 0);
    server.resetCounters();
    assert.equal(server.counters.maxInFlight, 0);
  });

  it('rejects unknown models, bad bodies and wrong keys like an OpenAI server', async () => {
    await start({ apiKey: 'sk-test' });
    const auth = { authorization: 'Bearer sk-test' };
    assert.equal((await post(server, chat(), { authorization: 'Bearer nope' })).status, 401);
    const unknown = await post(server, chat({ model: 'other' }), auth);
    assert.equal(unknown.status, 404);
    assert.match((unknown.json as { error: { message: string } }).error.message, /other/);
    assert.equal((await post(server, { model: 'test-model' }, auth)).status, 400);
    assert.equal((await post(server, chat(), auth)).status, 200);
    assert.equal(server.requests.at(-1)?.authorization, 'Bearer sk-test');
  });

  it('runs from the command line and prints its base URL', async function () {
    this.timeout(60_000);
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', 'test/server/main.ts', '--port', '0', '--latency-ms', '1', '--model', 'cli-model'],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    try {
      const lines = createInterface({ input: child.stdout });
      const baseURL = await new Promise<string>((resolve, reject) => {
        lines.once('line', resolve);
        child.once('exit', (code) => reject(new Error(`server exited with ${code}`)));
      });
      assert.match(baseURL, /^http:\/\/127\.0\.0\.1:\d+\/v1$/);
      const models = (await (await fetch(`${baseURL}/models`)).json()) as { data: { id: string }[] };
      assert.deepEqual(
        models.data.map((m) => m.id),
        ['cli-model'],
      );
    } finally {
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      assert.equal(await exited, 0);
    }
  });
  describe('modes: the shapes of vLLM, SGLang and vLLM <= 0.10.0', () => {
    const promptTokens = async (srv: TestServer): Promise<number> => {
      const reply = await post(srv, chat({ max_tokens: 1 }));
      return (reply.json as { usage: { prompt_tokens: number } }).usage.prompt_tokens;
    };

    it('sends error bodies nested (vLLM) or flat with object "error" (SGLang, old vLLM)', async () => {
      for (const mode of ['vllm', 'sglang', 'old-vllm'] as const) {
        await start({ mode });
        const reply = await post(server, chat({ temperature: 5 }));
        assert.equal(reply.status, 400);
        const body = reply.json as Record<string, unknown>;
        if (mode === 'vllm') {
          assert.deepEqual(Object.keys(body), ['error']);
          assert.equal((body.error as { code: number }).code, 400);
        } else {
          assert.equal(body.object, 'error');
          assert.equal(body.code, 400);
          assert.match(String(body.message), /temperature/);
          assert.equal(body.error, undefined);
        }
        await server.close();
      }
    });

    it("answers 503 with `error` a plain string in vLLM mode, flat in SGLang's, and in the loading phase to every route", async () => {
      await start({ script: ['unavailable'] });
      const unavailable = await post(server, chat());
      assert.equal(unavailable.status, 503);
      assert.deepEqual(unavailable.json, { error: 'The model is currently scaling. Please try again later.' });
      await server.close();
      await start({ mode: 'sglang', loading: true });
      const models = await fetch(`${server.baseURL}/models`);
      assert.equal(models.status, 503);
      assert.equal(((await models.json()) as { object: string }).object, 'error');
      assert.equal((await post(server, chat())).status, 503);
      server.setLoading(false);
      assert.equal((await post(server, chat())).status, 200);
      assert.equal(server.counters.loadingRejections, 2);
    });

    it("enforces max_model_len with each server's context-length 400, SGLang one token stricter", async () => {
      const expected = {
        vllm: /^This model's maximum context length is 300 tokens\. However, you requested \d+ output tokens and your prompt contains at least \d+ input tokens, for a total of at least 301 tokens\. .*\(parameter=input_tokens, value=\d+\)$/,
        'old-vllm':
          /^This model's maximum context length is 300 tokens\. However, you requested 301 tokens \(\d+ in the messages, \d+ in the completion\)\. Please reduce the length of the messages or completion\.$/,
        sglang:
          /^Requested token count exceeds the model's maximum context length of 300 tokens\. You requested a total of 300 tokens: \d+ tokens from the input messages and \d+ tokens for the completion\./,
      } as const;
      for (const mode of ['vllm', 'sglang', 'old-vllm'] as const) {
        await start({ mode, maxModelLen: 300 });
        const prompt = await promptTokens(server);
        const exact = await post(server, chat({ max_tokens: 300 - prompt }));
        const over = await post(server, chat({ max_tokens: 301 - prompt }));
        const refused = mode === 'sglang' ? exact : over;
        assert.equal(refused.status, 400, mode);
        const body = refused.json as Record<string, unknown>;
        const message = mode === 'vllm' ? (body.error as { message: string }).message : String(body.message);
        assert.match(message, expected[mode]);
        assert.equal(over.status, 400);
        assert.equal(exact.status, mode === 'sglang' ? 400 : 200, `${mode}: prompt + max_tokens == context`);
        await server.close();
      }
    });

    it('lists max_model_len at /v1/models (unless told not to) and counts prompts at /tokenize in the vLLM modes', async () => {
      await start({ maxModelLen: 1234 });
      const listed = (await (await fetch(`${server.baseURL}/models`)).json()) as { data: { max_model_len?: number }[] };
      assert.equal(listed.data[0]?.max_model_len, 1234);
      const counted = await fetch(server.baseURL.replace(/\/v1$/, '/tokenize'), {
        method: 'POST',
        body: JSON.stringify({ model: 'test-model', messages: chat().messages }),
      });
      const count = ((await counted.json()) as { count: number; max_model_len: number }).count;
      assert.equal(count, await promptTokens(server));
      await server.close();
      await start({ mode: 'sglang', listsMaxModelLen: false });
      const unlisted = (await (await fetch(`${server.baseURL}/models`)).json()) as { data: { max_model_len?: number; owned_by: string }[] };
      assert.equal(unlisted.data[0]?.max_model_len, undefined);
      assert.equal(unlisted.data[0]?.owned_by, 'sglang');
      assert.equal((await fetch(server.baseURL.replace(/\/v1$/, '/tokenize'), { method: 'POST', body: '{}' })).status, 404);
    });

    it('sends no Retry-After on a 429 unless asked', async () => {
      await start({ script: ['rate_limit'] });
      const limited = await post(server, chat());
      assert.equal(limited.status, 429);
      assert.equal(limited.headers.get('retry-after'), null);
    });

    it('answers content "" in SGLang mode where vLLM answers null, and finish_reason "abort" with HTTP 200', async () => {
      for (const mode of ['vllm', 'sglang'] as const) {
        await start({ mode, reasoning: 'reasoning_content', script: ['ok', 'abort'] });
        const cut = choicesOf(await post(server, chat({ max_tokens: 3 })))[0] as Choice;
        assert.equal(cut.message.content, mode === 'sglang' ? '' : null);
        const aborted = await post(server, chat());
        assert.equal(aborted.status, 200);
        assert.equal(choicesOf(aborted)[0]?.finish_reason, 'abort');
        await server.close();
      }
    });
  });
});
