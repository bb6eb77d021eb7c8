// The requests of one generate() call: each unit (one sample, or n with the
// `n` parameter) is sent under the cap on requests in flight and retried
// until it has its responses or a budget is spent: maxRetries for failures
// worth another try, retrySeconds for a server that is away (unreachable,
// loading, restarting, aborting generations), a few context-length refusals
// answered with a smaller max_tokens.
import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import type { ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import type { GenerationJob, Sample, SampleResponse } from '../common/types';
import { RetryBudget } from '../async/retryBudget';
import type { Semaphore } from '../async/semaphore';
import { sleep } from '../async/sleep';
import { describeNetworkError, permanentAddressError } from '../networkErrors';
import { ChatCompletionSchema, policyVersionOf, readChoice, splitEvenly } from './chatResponse';
import { type ContextBudget, MAX_CONTEXT_RETRIES, type PromptCounts } from './contextBudget';
import { zodIssueText } from '../common/errors';
import { type EndpointConnection } from './endpointConnection';
import { isRetryableStatus, isUnavailableStatus, retryAfterMs } from './retryPolicy';
import { contextRejectionOf, rejectsTokenFields, type ContextRejection } from './serverErrors';
import type { ServerProbe } from './serverProbe';

/** One HTTP request's worth of samples: one sample, or n with the `n` parameter. */
export interface Unit {
  job: GenerationJob;
  firstIndex: number;
  n: number;
  seed: number;
}

/** What the units of one generate() call share. */
export interface CallState {
  stats: { requests: number; retries: number; promptTokens: number; completionTokens: number; latencies: number[] };
  signal: AbortSignal;
  semaphore: Semaphore;
  model: string;
  deliver: (sample: Sample) => void;
  promptCounts: PromptCounts;
}

/**
 * How a failed attempt is retried: `retry` within maxRetries, `unavailable`
 * (no server, loading, restarting, generation aborted) within retrySeconds,
 * `context` with a smaller max_tokens, `fatal` never.
 */
type FailureKind = 'retry' | 'unavailable' | 'context' | 'fatal';

type AttemptResult =
  | { ok: true; samples: Omit<SampleResponse, 'latencyMs' | 'retries'>[]; latencyMs: number }
  | { ok: false; kind: FailureKind; error: string; retryAfterMs: number | null; context?: ContextRejection };

/** The requests of the jobs: one per sample, or one per job with the `n` parameter. */
export function unitsOf(jobs: GenerationJob[], useNParameter: boolean): Unit[] {
  const units: Unit[] = [];
  for (const job of jobs) {
    if (job.n <= 0) continue;
    if (useNParameter && job.n > 1) {
      units.push({ job, firstIndex: 0, n: job.n, seed: job.seed });
    } else {
      for (let i = 0; i < job.n; i++) units.push({ job, firstIndex: i, n: 1, seed: job.seed + i });
    }
  }
  return units;
}

export class RequestRunner {
  constructor(
    private readonly connection: EndpointConnection,
    private readonly probe: ServerProbe,
    private readonly context: ContextBudget,
  ) {}

  /** One unit to its end: a response per sample, or request_failed after the retries. Never throws. */
  async run(unit: Unit, state: CallState): Promise<void> {
    const { options } = this.connection;
    let firstStart: number | null = null;
    let retries = 0; // all retries, for the sample's record
    const counted = new RetryBudget({ maxRetries: options.maxRetries, backoff: this.connection.backoff });
    const serverAway = new RetryBudget({ windowMs: options.retrySeconds * 1000, backoff: this.connection.backoff });
    const contextRetries = new RetryBudget({ maxRetries: MAX_CONTEXT_RETRIES });
    let maxTokensCap = Number.POSITIVE_INFINITY; // lowered by context-length refusals
    const fail = (error: string, latencyMs: number) => {
      const text = this.connection.redact(error);
      for (let k = 0; k < unit.n; k++) {
        state.deliver({ ok: false, jobKey: unit.job.key, index: unit.firstIndex + k, latencyMs, retries, error: text });
      }
    };
    for (;;) {
      let release: () => void;
      try {
        release = await state.semaphore.acquire(state.signal);
      } catch {
        return; // stopped while queued
      }
      firstStart ??= performance.now();
      let result: AttemptResult;
      let sentMaxTokens = options.maxTokens;
      try {
        const budget = await this.context.maxTokensFor(unit.job, state.model, state.promptCounts, state.signal);
        sentMaxTokens = Math.min(budget.maxTokens ?? options.maxTokens, maxTokensCap);
        result =
          budget.error !== null
            ? { ok: false, kind: 'fatal', error: budget.error, retryAfterMs: null }
            : await this.attempt(unit, state, sentMaxTokens);
      } catch (error) {
        result = { ok: false, kind: 'retry', error: `unexpected client error: ${(error as Error).message}`, retryAfterMs: null };
      } finally {
        release();
      }
      if (state.signal.aborted) return;
      const latencyMs = performance.now() - firstStart;
      if (result.ok) {
        this.connection.setWaiting(false, '');
        state.stats.latencies.push(result.latencyMs);
        for (const sample of result.samples) state.deliver({ ...sample, latencyMs, retries });
        return;
      }
      // The server-away window runs from the first of failures in a row of that kind.
      if (result.kind !== 'unavailable') serverAway.closeWindow();
      if (result.kind === 'fatal') return fail(result.error, latencyMs);

      let wait: number;
      if (result.kind === 'context') {
        const rejection = result.context ?? { contextLength: null, promptTokens: null };
        const next = this.context.retryAfterRefusal(unit.job, state.promptCounts, rejection, sentMaxTokens, contextRetries, result.error);
        if (next.error !== null) return fail(next.error, latencyMs);
        maxTokensCap = next.maxTokens;
        wait = 0;
      } else if (result.kind === 'unavailable') {
        const left = serverAway.windowLeftMs();
        if (left <= 0) {
          return fail(
            `${result.error} (the server did not come back within ${options.retrySeconds} s: thetaevolve.serverRetrySeconds)`,
            latencyMs,
          );
        }
        // One failed attempt in a busy step is no outage worth a line; a second in a row is.
        if (serverAway.retries >= 1) this.connection.setWaiting(true, result.error);
        serverAway.take();
        wait = Math.min(left, serverAway.delayMs());
      } else {
        if (!counted.canRetry) {
          const n = counted.retries;
          return fail(n > 0 ? `${result.error} (gave up after ${n} ${n === 1 ? 'retry' : 'retries'})` : result.error, latencyMs);
        }
        counted.take();
        wait = counted.delayMs(result.retryAfterMs);
      }
      retries++;
      state.stats.retries++;
      if (wait > 0 && !(await sleep(wait, state.signal))) return;
    }
  }

  /** One HTTP request. Failed attempts come back as values, never as exceptions. */
  private async attempt(unit: Unit, state: CallState, maxTokens: number): Promise<AttemptResult> {
    const { options } = this.connection;
    const sentTokenFields = options.requestTokenIds && this.probe.sendsTokenFields();
    const body: ChatCompletionCreateParamsNonStreaming & Record<string, unknown> = {
      model: state.model,
      messages: unit.job.messages.map((m) => ({ role: m.role, content: m.content })),
      temperature: options.temperature,
      top_p: options.topP,
      max_tokens: maxTokens,
      seed: unit.seed,
    };
    if (unit.n > 1) body.n = unit.n;
    if (sentTokenFields) Object.assign(body, this.probe.tokenFields());

    state.stats.requests++;
    const controller = new AbortController();
    const onAbort = () => controller.abort();
    state.signal.addEventListener('abort', onAbort, { once: true });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, options.requestTimeoutMs);
    const timeoutText = `no reply within ${options.requestTimeoutMs / 1000} s (request timeout)`;
    const started = performance.now();
    let text: string;
    try {
      // The SDK timeout is a backstop: ours covers the body too.
      const response = await this.connection.client.chat.completions
        .create(body, { signal: controller.signal, timeout: options.requestTimeoutMs + 1000, maxRetries: 0 })
        .asResponse();
      text = await response.text();
    } catch (error) {
      if (state.signal.aborted) return { ok: false, kind: 'fatal', error: 'aborted', retryAfterMs: null };
      if (timedOut || error instanceof APIConnectionTimeoutError)
        return { ok: false, kind: 'retry', error: timeoutText, retryAfterMs: null };
      if (error instanceof APIUserAbortError) return { ok: false, kind: 'retry', error: 'request aborted', retryAfterMs: null };
      if (error instanceof APIConnectionError) {
        // An address fetch refuses outright never starts working: not retried as a server that is away.
        const unusable = permanentAddressError(error);
        if (unusable) return { ok: false, kind: 'fatal', error: `${describeNetworkError(error)}: ${unusable}`, retryAfterMs: null };
        return { ok: false, kind: 'unavailable', error: `connection failed: ${describeNetworkError(error)}`, retryAfterMs: null };
      }
      if (error instanceof APIError && error.status !== undefined) {
        const status = error.status;
        const message = error.message.replace(/^\d{3}\s*/, '');
        const described = `HTTP ${status}: ${message}`;
        if (
          sentTokenFields &&
          this.probe.tokenSupport.status === 'unknown' &&
          (status === 400 || status === 422) &&
          rejectsTokenFields(message)
        ) {
          // A server that refuses the extra fields by name: drop them and try again.
          this.probe.markTokensMissing(`it rejected return_token_ids: HTTP ${status}`);
          return { ok: false, kind: 'retry', error: described, retryAfterMs: 0 };
        }
        const context = status === 400 ? contextRejectionOf(message) : null;
        if (context) return { ok: false, kind: 'context', error: described, retryAfterMs: null, context };
        if (isUnavailableStatus(status)) return { ok: false, kind: 'unavailable', error: described, retryAfterMs: null };
        return {
          ok: false,
          kind: isRetryableStatus(status) ? 'retry' : 'fatal',
          error: described,
          retryAfterMs: retryAfterMs(error.headers),
        };
      }
      return { ok: false, kind: 'unavailable', error: `reply cut off: ${describeNetworkError(error)}`, retryAfterMs: null };
    } finally {
      clearTimeout(timer);
      state.signal.removeEventListener('abort', onAbort);
    }
    const latencyMs = performance.now() - started;

    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      const start = text.slice(0, 40).replace(/\s+/g, ' ');
      return { ok: false, kind: 'retry', error: `malformed reply: not JSON (starts with ${JSON.stringify(start)})`, retryAfterMs: null };
    }
    const parsed = ChatCompletionSchema.safeParse(json);
    if (!parsed.success) {
      return { ok: false, kind: 'retry', error: `malformed reply: ${zodIssueText(parsed.error, '')}`, retryAfterMs: null };
    }
    const reply = parsed.data;
    if (reply.choices.length !== unit.n) {
      return { ok: false, kind: 'retry', error: `malformed reply: ${reply.choices.length} choices for n = ${unit.n}`, retryAfterMs: null };
    }
    if (reply.choices.some((c) => c.finish_reason === 'abort')) {
      // SGLang aborts requests in flight when it pauses for a weight update: not the model's answer.
      return {
        ok: false,
        kind: 'unavailable',
        error: 'the server aborted the generation (finish_reason "abort", as during a weight update)',
        retryAfterMs: null,
      };
    }
    if (sentTokenFields) this.probe.learnTokenSupport(reply);

    const choices = [...reply.choices].sort((a, b) => (a.index ?? 0) - (b.index ?? 0));
    const read = choices.map((choice) => readChoice(choice, reply.prompt_token_ids ?? null));
    const countedCompletion = read.every((r) => r.completionTokens !== null)
      ? read.reduce((n, r) => n + (r.completionTokens as number), 0)
      : null;
    // No usage and no token ids: counted from the text (about 4 characters a token), and said so.
    const promptKnown = reply.usage?.prompt_tokens ?? read[0]?.tokens?.promptTokenIds.length;
    const completionKnown = reply.usage?.completion_tokens ?? countedCompletion;
    const usageEstimated = promptKnown === undefined || completionKnown === null;
    const usagePrompt = promptKnown ?? estimateTokens(unit.job.messages.map((m) => m.content).join('\n'));
    const usageCompletion = completionKnown ?? read.reduce((n, r) => n + estimateTokens(r.content + (r.reasoning ?? '')), 0);
    const shares = splitEvenly(usageCompletion, unit.n);
    state.stats.promptTokens += usagePrompt;
    state.stats.completionTokens += usageCompletion;

    return {
      ok: true,
      latencyMs,
      samples: read.map((r, k) => ({
        ok: true as const,
        jobKey: unit.job.key,
        index: unit.firstIndex + k,
        content: r.content,
        reasoning: r.reasoning,
        finishReason: r.finishReason,
        truncated: r.truncated,
        promptTokens: usagePrompt,
        completionTokens: r.completionTokens ?? (shares[k] as number),
        // Ids a reply carries are kept, whatever was concluded about the server.
        tokens: r.tokens,
        policyVersion: policyVersionOf(reply.metadata?.weight_version),
        billedPromptTokens: k === 0 ? usagePrompt : 0,
        ...(usageEstimated ? { usageEstimated } : {}),
      })),
    };
  }
}

/** Tokens of a text without a tokenizer: about 4 characters each (what OpenAI's guidance says of English). */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}
