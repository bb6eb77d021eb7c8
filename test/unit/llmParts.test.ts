// Pieces of the endpoint client: reasoning split, reply reading, retry timing, semaphore.
import assert from 'node:assert/strict';
import { ChatCompletionSchema, readChoice, splitEvenly, splitReasoning } from '../../src/engine/llm/chatResponse';
import { backoffDelayMs } from '../../src/engine/async/retryBudget';
import { Semaphore } from '../../src/engine/async/semaphore';
import { sleep } from '../../src/engine/async/sleep';
import { isRetryableStatus, retryAfterMs } from '../../src/engine/llm/retryPolicy';

describe('llm: reasoning and answer', () => {
  it('takes the answer from content and the reasoning from the field', () => {
    assert.deepEqual(splitReasoning('answer', 'thinking'), { content: 'answer', reasoning: 'thinking' });
    assert.deepEqual(splitReasoning('  answer\n', null), { content: 'answer', reasoning: null });
    assert.deepEqual(splitReasoning('answer', '   '), { content: 'answer', reasoning: null });
  });

  it('moves a leading <think> block out of the answer, and only a leading one (algorithm.md section 3)', () => {
    assert.deepEqual(splitReasoning('<think>\nplan\n</think>\n\nfinal', null), { content: 'final', reasoning: 'plan' });
    assert.deepEqual(splitReasoning('<think>a</think>x<think>b</think>y', 'f'), { content: 'x<think>b</think>y', reasoning: 'f\n\na' });
    // A literal <think> / </think> inside a SEARCH or REPLACE section is code, not reasoning.
    const answer = [
      'Handle the tag:',
      '<<<<<<< SEARCH',
      "    if token == '<think>':",
      '=======',
      "    if token in ('<think>', '</think>'):",
      '>>>>>>> REPLACE',
    ].join('\n');
    assert.deepEqual(splitReasoning(`<think>plan</think>\n${answer}`, null), { content: answer, reasoning: 'plan' });
    assert.deepEqual(splitReasoning(answer, null), { content: answer, reasoning: null });
  });

  it('handles a leading close tag (opening tag in the template) and an unclosed think of a truncated reply', () => {
    assert.deepEqual(splitReasoning('plan\n</think>\n\nfinal', null), { content: 'final', reasoning: 'plan' });
    assert.deepEqual(splitReasoning('<think>half a th', null), { content: '', reasoning: 'half a th' });
    assert.deepEqual(splitReasoning('answer <think>', null), { content: 'answer <think>', reasoning: null }, 'not leading: text');
  });

  it('reads a vLLM choice: token ids, prompt ids from the response, aligned logprobs, truncation', () => {
    const reply = ChatCompletionSchema.parse({
      choices: [
        {
          index: 0,
          message: { content: '<think>r</think>ok', reasoning_content: null },
          finish_reason: 'length',
          token_ids: [5, 6, 7],
          logprobs: { content: [{ logprob: -0.1 }, { logprob: -0.2 }, { logprob: -0.3 }] },
        },
      ],
      usage: { prompt_tokens: 2, completion_tokens: 3 },
      prompt_token_ids: [1, 2],
    });
    const read = readChoice(reply.choices[0] as (typeof reply.choices)[number], reply.prompt_token_ids ?? null);
    assert.equal(read.content, 'ok');
    assert.equal(read.reasoning, 'r');
    assert.equal(read.truncated, true);
    assert.equal(read.completionTokens, 3);
    assert.deepEqual(read.tokens, { promptTokenIds: [1, 2], completionTokenIds: [5, 6, 7], completionLogprobs: [-0.1, -0.2, -0.3] });
  });

  it('reads SGLang prompt ids on the choice, drops misaligned logprobs, takes `reasoning` (vLLM >= 0.11)', () => {
    const reply = ChatCompletionSchema.parse({
      choices: [
        {
          message: { content: null, reasoning: 'why' },
          finish_reason: 'stop',
          token_ids: [9],
          prompt_token_ids: [3],
          logprobs: { content: [] },
        },
      ],
    });
    const read = readChoice(reply.choices[0] as (typeof reply.choices)[number], null);
    assert.equal(read.content, '');
    assert.equal(read.reasoning, 'why');
    assert.deepEqual(read.tokens, { promptTokenIds: [3], completionTokenIds: [9], completionLogprobs: null });
  });

  it('rejects replies that are not chat completions', () => {
    assert.equal(ChatCompletionSchema.safeParse({ choices: [] }).success, false);
    assert.equal(ChatCompletionSchema.safeParse({ choices: [{ message: { content: 42 } }] }).success, false);
    assert.equal(ChatCompletionSchema.safeParse({ object: 'error' }).success, false);
  });

  it('splits usage evenly over the choices of one request', () => {
    assert.deepEqual(splitEvenly(10, 3), [4, 3, 3]);
    assert.deepEqual(splitEvenly(0, 2), [0, 0]);
  });
});

describe('llm: retry timing', () => {
  const headers = (h: Record<string, string>) => new Headers(h);

  it('reads retry-after-ms, Retry-After seconds and HTTP dates', () => {
    assert.equal(retryAfterMs(headers({ 'retry-after-ms': '250', 'retry-after': '9' })), 250);
    assert.equal(retryAfterMs(headers({ 'retry-after': '2' })), 2000);
    assert.equal(retryAfterMs(headers({ 'retry-after': '0.5' })), 500);
    const now = Date.parse('2025-01-01T00:00:00Z');
    assert.equal(retryAfterMs(headers({ 'retry-after': 'Wed, 01 Jan 2025 00:00:03 GMT' }), now), 3000);
    assert.equal(retryAfterMs(headers({ 'retry-after': 'soon' })), null);
    assert.equal(retryAfterMs(headers({})), null);
    assert.equal(retryAfterMs(undefined), null);
  });

  it('backs off exponentially with jitter, capped', () => {
    const options = { baseMs: 100, maxMs: 1000, maxRetryAfterMs: 5000 };
    assert.equal(
      backoffDelayMs(1, options, () => 0),
      50,
    );
    assert.equal(
      backoffDelayMs(1, options, () => 1),
      100,
    );
    assert.equal(
      backoffDelayMs(3, options, () => 1),
      400,
    );
    assert.equal(
      backoffDelayMs(20, options, () => 1),
      1000,
    );
    const draws = new Set(Array.from({ length: 20 }, () => backoffDelayMs(2, options)));
    assert.ok(draws.size > 1);
  });

  it('retries timeouts, conflicts, rate limits and server errors only', () => {
    assert.deepEqual([408, 409, 429, 500, 503].map(isRetryableStatus), [true, true, true, true, true]);
    assert.deepEqual([400, 401, 403, 404, 422].map(isRetryableStatus), [false, false, false, false, false]);
  });

  it('sleeps abortably', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 20);
    // false: woken by the abort (a sleep that ran out says true; 10 minutes would pass the test's timeout first).
    assert.equal(await sleep(600_000, controller.signal), false);
    assert.equal(await sleep(1, new AbortController().signal), true);
  });
});

describe('llm: semaphore', () => {
  it('never grants more than its capacity and serves waiters in order', async () => {
    const semaphore = new Semaphore(2);
    let running = 0;
    let most = 0;
    const order: number[] = [];
    await Promise.all(
      Array.from({ length: 8 }, async (_, i) => {
        const release = await semaphore.acquire();
        order.push(i);
        running++;
        most = Math.max(most, running);
        await new Promise((r) => setTimeout(r, 5));
        running--;
        release();
      }),
    );
    assert.equal(most, 2);
    assert.equal(semaphore.maxHeld, 2);
    assert.deepEqual(order, [0, 1, 2, 3, 4, 5, 6, 7]);
  });

  it('drops a waiter whose signal aborts', async () => {
    const semaphore = new Semaphore(1);
    const release = await semaphore.acquire();
    const controller = new AbortController();
    const waiting = semaphore.acquire(controller.signal);
    controller.abort();
    await assert.rejects(waiting);
    release();
    const again = await semaphore.acquire();
    again();
    assert.throws(() => new Semaphore(0));
  });
});
