// The async kit (semaphore, abortable sleep, wake-on-change, retry budget)
// and the network-error descriptions, driven by hand: no timer decides an
// outcome.
import assert from 'node:assert/strict';
import { Notifier } from '../../src/engine/async/notifier';
import { RetryBudget, backoffDelayMs } from '../../src/engine/async/retryBudget';
import { Semaphore } from '../../src/engine/async/semaphore';
import { sleep } from '../../src/engine/async/sleep';
import { describeNetworkError } from '../../src/engine/networkErrors';

const withCode = (message: string, code: string, cause?: unknown) => Object.assign(new Error(message, { cause }), { code });

describe('async: semaphore', () => {
  it('grants up to its capacity at once, then serves waiters first come, first served', async () => {
    const semaphore = new Semaphore(2);
    const first = await semaphore.acquire();
    const second = await semaphore.acquire();
    const granted: number[] = [];
    const waiters = [3, 4, 5].map((i) => semaphore.acquire().then((release) => (granted.push(i), release)));
    await Promise.resolve();
    assert.deepEqual(granted, []);
    second();
    const third = await waiters[0];
    assert.deepEqual(granted, [3]);
    first();
    third!();
    const rest = await Promise.all(waiters.slice(1));
    assert.deepEqual(granted, [3, 4, 5]);
    assert.equal(semaphore.maxHeld, 2);
    for (const release of rest) release();
  });

  it('releases once however often release is called', async () => {
    const semaphore = new Semaphore(1);
    const release = await semaphore.acquire();
    release();
    release();
    const a = await semaphore.acquire();
    let bGranted = false;
    const b = semaphore.acquire().then((r) => ((bGranted = true), r));
    await Promise.resolve();
    assert.equal(bGranted, false);
    a();
    (await b)();
  });

  // A waiter aborted while queued: llmParts.test.ts.
  it('refuses at once a signal that already aborted, even with a permit free, and keeps the permit', async () => {
    const semaphore = new Semaphore(1);
    await assert.rejects(semaphore.acquire(AbortSignal.abort()), /aborted/);
    assert.equal(semaphore.maxHeld, 0);
    (await semaphore.acquire())();
  });

  it('takes Infinity for no cap and refuses less than one', async () => {
    const semaphore = new Semaphore(Number.POSITIVE_INFINITY);
    const releases = await Promise.all(Array.from({ length: 100 }, () => semaphore.acquire()));
    assert.equal(semaphore.maxHeld, 100);
    for (const release of releases) release();
    assert.throws(() => new Semaphore(0), RangeError);
    assert.throws(() => new Semaphore(Number.NaN), RangeError);
  });
});

describe('async: sleep', () => {
  it('resolves true when the time passed', async () => {
    assert.equal(await sleep(0), true);
    assert.equal(await sleep(-5, new AbortController().signal), true);
  });

  it('resolves false when its signal aborts, and at once when it already has', async () => {
    const controller = new AbortController();
    const waiting = sleep(60_000, controller.signal);
    controller.abort();
    assert.equal(await waiting, false);
    assert.equal(await sleep(60_000, controller.signal), false);
    assert.equal(await sleep(60_000, AbortSignal.abort(new Error('any reason'))), false);
  });
});

describe('async: notifier', () => {
  it('wakes its waiters on notify, and only those waiting then', async () => {
    const notifier = new Notifier();
    const woken = Promise.all([notifier.wait(60_000, []), notifier.wait(60_000, [])]);
    notifier.notify();
    await woken;
    const controller = new AbortController();
    const later = notifier.wait(60_000, [controller.signal]);
    notifier.notify();
    await later;
  });

  it('ends a wait when one of its signals aborts, and at once when one has', async () => {
    const notifier = new Notifier();
    const a = new AbortController();
    const b = new AbortController();
    const waiting = notifier.wait(60_000, [a.signal, b.signal]);
    b.abort();
    await waiting;
    await notifier.wait(60_000, [b.signal]);
  });
});

describe('async: retry budget', () => {
  const backoff = { baseMs: 100, maxMs: 1000, maxRetryAfterMs: 5000 };

  it('counts retries up to its limit, and starts over after reset', () => {
    const budget = new RetryBudget({ maxRetries: 2, backoff, random: () => 1 });
    assert.equal(budget.canRetry, true);
    budget.take();
    assert.equal(budget.delayMs(), 100);
    budget.take();
    assert.equal(budget.delayMs(), 200);
    assert.equal(budget.canRetry, false);
    assert.equal(budget.retries, 2);
    budget.reset();
    assert.equal(budget.retries, 0);
    assert.equal(budget.canRetry, true);
  });

  it('has no count limit unless given one, and backs off as backoffDelayMs does', () => {
    const budget = new RetryBudget({ backoff, random: () => 0 });
    for (let i = 0; i < 50; i++) budget.take();
    assert.equal(budget.canRetry, true);
    assert.equal(
      budget.delayMs(),
      backoffDelayMs(50, backoff, () => 0),
    );
  });

  it('waits what the other side asked for, capped and jittered up to 10%, instead of the backoff', () => {
    const budget = new RetryBudget({ backoff, random: () => 1 });
    budget.take();
    assert.equal(budget.delayMs(300), 330);
    assert.equal(budget.delayMs(60_000), 5500);
    assert.equal(budget.delayMs(0), 100); // no wait asked: the backoff
    assert.equal(budget.delayMs(null), 100);
  });

  it('runs its time window from the first call, and a closed window starts anew while the count stays', () => {
    let now = 1000;
    const budget = new RetryBudget({ windowMs: 500, now: () => now });
    assert.equal(budget.windowLeftMs(), 500);
    now += 200;
    assert.equal(budget.windowLeftMs(), 300);
    budget.take();
    now += 400;
    assert.equal(budget.windowLeftMs(), -100);
    budget.closeWindow();
    assert.equal(budget.windowLeftMs(), 500);
    assert.equal(budget.retries, 1);
  });
});

describe('network error descriptions', () => {
  it('names the known codes of Node sockets, DNS and undici', () => {
    assert.equal(describeNetworkError(withCode('connect ECONNREFUSED 127.0.0.1:1', 'ECONNREFUSED')), 'connection refused');
    assert.equal(describeNetworkError(withCode('write EPIPE', 'EPIPE')), 'connection closed while sending');
    assert.equal(describeNetworkError(withCode('other side closed', 'UND_ERR_SOCKET')), 'connection closed by the server');
    assert.equal(describeNetworkError(withCode('Connect Timeout Error', 'UND_ERR_CONNECT_TIMEOUT')), 'connection timed out');
    assert.equal(describeNetworkError(withCode('getaddrinfo ENOTFOUND nowhere', 'ENOTFOUND')), 'host not found');
  });

  it('walks the cause chain to the first known code', () => {
    const socket = withCode('read ECONNRESET', 'ECONNRESET');
    const fetchError = new TypeError('fetch failed', { cause: socket });
    const sdkError = new Error('Connection error.', { cause: fetchError });
    assert.equal(describeNetworkError(sdkError), 'connection reset');
  });

  it('falls back to the innermost telling message, then to "connection failed"', () => {
    const inner = withCode('certificate has expired', 'CERT_HAS_EXPIRED');
    assert.equal(
      describeNetworkError(new Error('Connection error.', { cause: new TypeError('fetch failed', { cause: inner }) })),
      'certificate has expired',
    );
    assert.equal(describeNetworkError(new Error('socket hang up')), 'socket hang up');
    assert.equal(describeNetworkError(new Error('Connection error.', { cause: new TypeError('fetch failed') })), 'connection failed');
    assert.equal(describeNetworkError('not an error'), 'connection failed');
    assert.equal(describeNetworkError(withCode('', 'constructor')), 'connection failed');
  });
});
