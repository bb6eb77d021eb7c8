// The LLM response source: chat completions against any OpenAI-compatible
// server (vLLM, SGLang, hosted APIs) through the `openai` SDK, with our own
// retry policy (the SDK's is off so accounting is exact), a cap on requests in
// flight across all jobs of a generate() call, abort on stop, token ids and
// logprobs for RL where the server offers them, and per-call accounting.
// It adapts to the server: error bodies in any shape, max_tokens fitted to
// the context the server lists (max_model_len), a server that restarts or
// loads waited for (retrySeconds) and reported to status listeners.
import { setMaxListeners } from 'node:events';
import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import { z } from 'zod';
import type { ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import type { Settings } from '../common/config';
import { percentile } from '../common/stats';
import type { ChatMessage, GenerationJob, GenerationStats, ResponseSource, Sample, SampleResponse, SourceStatus } from '../common/types';
import { ChatCompletionSchema, ModelListSchema, readChoice, splitEvenly, type ChatCompletionReply } from './chatResponse';
import { DEFAULT_BACKOFF, backoffDelayMs, isRetryableStatus, retryAfterMs, sleep, type BackoffOptions } from './retryPolicy';
import { Semaphore } from './semaphore';
import { contextRejectionOf, normalizedErrorBody, rejectsTokenFields, type ContextRejection } from './serverErrors';

export interface EndpointOptions {
  baseURL: string;
  model: string; // '' = discover (the only model /v1/models lists)
  apiKey: string | undefined;
  temperature: number;
  topP: number;
  maxTokens: number;
  maxInFlight: number; // 0 = unlimited (B x n)
  useNParameter: boolean;
  requestTimeoutMs: number;
  maxRetries: number;
  requestTokenIds: boolean; // ask vLLM for token ids + logprobs (RL)
  /** How long a server that is unreachable, loading or restarting is waited for, in seconds (retried with backoff). */
  retrySeconds: number;
  /** Backoff tuning (tests use a few ms). */
  backoff?: Partial<BackoffOptions>;
  /** Told once per problem worth a person's attention (e.g. no token ids). */
  onWarning?: (message: string) => void;
}

/** What vLLM accepts when it was started without --api-key. */
export const PLACEHOLDER_API_KEY = 'EMPTY';

/** The API key from the environment (OPENAI_API_KEY), or undefined. */
export function apiKeyFromEnvironment(env: Readonly<Record<string, string | undefined>>): string | undefined {
  const key = env.OPENAI_API_KEY?.trim();
  return key ? key : undefined;
}

export function endpointOptionsFromSettings(
  settings: Settings,
  apiKey: string | undefined,
  extra: { requestTokenIds?: boolean; onWarning?: (message: string) => void } = {},
): EndpointOptions {
  return {
    baseURL: settings.endpoint,
    model: settings.model,
    apiKey,
    temperature: settings.temperature,
    topP: settings.topP,
    maxTokens: settings.maxTokens,
    maxInFlight: settings.maxRequestsInFlight,
    useNParameter: settings.useNParameter,
    requestTimeoutMs: settings.requestTimeoutSeconds * 1000,
    maxRetries: settings.maxRetries,
    retrySeconds: settings.serverRetrySeconds,
    // The atropos trainer needs token ids; slime re-tokenises.
    requestTokenIds: extra.requestTokenIds ?? (settings['trainer.enabled'] && settings['trainer.protocol'] === 'atropos'),
    onWarning: extra.onWarning,
  };
}

export interface TokenSupport {
  /** unknown until check() probed or a reply told. */
  status: 'unknown' | 'supported' | 'missing' | 'not_requested';
  logprobs: boolean;
  /** Why they are missing, for people. */
  message: string | null;
}

export interface EndpointGenerationStats extends GenerationStats {
  samples: number;
  /** Completion tokens per second of wall time. */
  tokensPerSecond: number;
  /** Most requests this call had in flight at once. */
  maxInFlight: number;
  aborted: boolean;
}

/** One HTTP request's worth of samples: one sample, or n with the `n` parameter. */
interface Unit {
  job: GenerationJob;
  firstIndex: number;
  n: number;
  seed: number;
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

/** A prompt's token count: exact (the server's tokenizer or its own 400) or a conservative estimate. */
interface PromptCount {
  tokens: number;
  exact: boolean;
}

interface CallState {
  stats: { requests: number; retries: number; promptTokens: number; completionTokens: number; latencies: number[] };
  signal: AbortSignal;
  semaphore: Semaphore;
  model: string;
  deliver: (sample: Sample) => void;
  /** Prompt token counts by job key (one count serves the job's n requests). */
  promptCounts: Map<string, Promise<PromptCount>>;
}

/** Most context-length refusals of one request answered with a smaller max_tokens. */
const MAX_CONTEXT_RETRIES = 3;

/** What the user can change when a response does not fit the server's context. */
const CONTEXT_ADVICE =
  'lower thetaevolve.maxTokens, or start the server with a longer context (vLLM --max-model-len, SGLang --context-length)';

/**
 * An upper estimate of a chat prompt's tokens where the server cannot count
 * them: two bytes of UTF-8 per token (real tokenizers average three to four
 * on code and English) plus the chat template's tokens per message. A
 * context-length 400 then gives the exact count.
 */
export function estimatePromptTokens(messages: readonly ChatMessage[]): number {
  return messages.reduce((n, m) => n + Math.ceil(Buffer.byteLength(m.content, 'utf8') / 2) + 8, 8);
}

/** vLLM's /tokenize reply (the fields we read). */
const TokenizeReplySchema = z.object({ count: z.number().int().nonnegative() });

/** HTTP statuses of a server that is there but cannot serve now (restarting, loading, behind a proxy that lost it). */
function isUnavailableStatus(status: number): boolean {
  return status === 502 || status === 503 || status === 504;
}

/**
 * The SDK with one change: error bodies in SGLang's and old vLLM's flat shape,
 * or with `error` a plain string, are handed to it in the nested shape it
 * reads, so their message is kept instead of "status code (no body)".
 */
class ServerClient extends OpenAI {
  protected override makeStatusError(status: number, error: object, message: string | undefined, headers: Headers): APIError {
    return super.makeStatusError(status, normalizedErrorBody(error) as object, message, headers);
  }
}

const CONNECTION_CODES: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed',
  ETIMEDOUT: 'connection timed out',
  ECONNRESET: 'connection reset',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  UND_ERR_SOCKET: 'connection closed by the server',
  UND_ERR_CONNECT_TIMEOUT: 'connection timed out',
};

/** The most telling words about a network failure, from its cause chain. */
function describeNetworkError(error: unknown): string {
  let current: unknown = error;
  const messages: string[] = [];
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && CONNECTION_CODES[code]) return CONNECTION_CODES[code] as string;
    messages.push(current.message);
    current = (current as { cause?: unknown }).cause;
  }
  const last = messages.filter((m) => m && m !== 'fetch failed' && m !== 'Connection error.').pop();
  return last ?? 'connection failed';
}

function firstIssue(error: { issues: { path: PropertyKey[]; message: string }[] }): string {
  const issue = error.issues[0];
  if (!issue) return 'unexpected shape';
  const path = issue.path.map(String).join('.');
  return path ? `${path}: ${issue.message}` : issue.message;
}

export class EndpointClient implements ResponseSource {
  readonly kind = 'llm' as const;
  private readonly options: EndpointOptions;
  private readonly baseURL: string;
  private readonly backoff: BackoffOptions;
  private readonly client: OpenAI;
  private resolvedModel: string | null = null;
  private tokenState: TokenSupport;
  private readonly warned = new Set<string>();
  private askPromptIds = false;
  /** The served model's context (max_model_len), from /v1/models or a context-length 400; null while unknown. */
  private contextLength: number | null = null;
  /** Whether the server counts prompt tokens at /tokenize (vLLM); null until tried. */
  private tokenizeOffered: boolean | null = null;
  private contextCapWarned = false;
  private waiting = false;
  private readonly statusListeners = new Set<(status: SourceStatus) => void>();

  constructor(options: EndpointOptions) {
    this.options = options;
    this.baseURL = options.baseURL.trim().replace(/\/+$/, '');
    this.backoff = { ...DEFAULT_BACKOFF, ...options.backoff };
    this.tokenState = options.requestTokenIds
      ? { status: 'unknown', logprobs: false, message: null }
      : { status: 'not_requested', logprobs: false, message: null };
    this.client = new ServerClient({
      baseURL: this.baseURL,
      apiKey: options.apiKey || PLACEHOLDER_API_KEY,
      // Explicit so the SDK reads nothing from the environment and logs nothing.
      organization: null,
      project: null,
      maxRetries: 0,
      timeout: options.requestTimeoutMs,
      logLevel: 'off',
    });
  }

  get label(): string {
    const model = this.resolvedModel ?? (this.options.model || 'the served model');
    return `${model} at ${this.baseURL}`;
  }

  /** The model requests go to, once check() resolved it. */
  get model(): string | null {
    return this.resolvedModel;
  }

  get tokenSupport(): TokenSupport {
    return { ...this.tokenState };
  }

  /** The served model's context length (max_model_len) once known, else null. */
  get serverContextLength(): number | null {
    return this.contextLength;
  }

  addStatusListener(listener: (status: SourceStatus) => void): () => void {
    this.statusListeners.add(listener);
    return () => this.statusListeners.delete(listener);
  }

  private setWaiting(waiting: boolean, reason: string): void {
    if (this.waiting === waiting) return;
    this.waiting = waiting;
    const message = waiting
      ? `waiting for the server at ${this.baseURL} (${this.redact(reason)}); retrying for up to ${this.options.retrySeconds} s (thetaevolve.serverRetrySeconds)`
      : `the server at ${this.baseURL} answers again`;
    for (const listener of this.statusListeners) listener({ waiting, message });
  }

  /**
   * Health check: /v1/models reachable, the model present (or the only one);
   * probes token ids when asked. With waitForServer, a server that is
   * unreachable or loading is retried for retrySeconds.
   */
  async check(signal?: AbortSignal, options: { waitForServer?: boolean } = {}): Promise<void> {
    const models = await this.listModels(signal, options.waitForServer ?? false);
    const ids = models.map((m) => m.id);
    const wanted = this.options.model.trim();
    if (wanted) {
      if (!ids.includes(wanted)) {
        throw new Error(
          ids.length === 0
            ? `The server at ${this.baseURL} lists no models; model "${wanted}" is not being served.`
            : `Model "${wanted}" is not served at ${this.baseURL}; it serves: ${ids.join(', ')}. Set thetaevolve.model to one of them.`,
        );
      }
      this.resolvedModel = wanted;
    } else if (ids.length === 1) {
      this.resolvedModel = ids[0] as string;
    } else if (ids.length === 0) {
      throw new Error(`The server at ${this.baseURL} lists no models at /models: is the model still loading?`);
    } else {
      throw new Error(
        `The server at ${this.baseURL} serves several models (${ids.join(', ')}): set thetaevolve.model to one of them.`,
      );
    }
    this.contextLength = models.find((m) => m.id === this.resolvedModel)?.max_model_len ?? this.contextLength;
    if (this.tokenState.status === 'unknown') await this.probeTokenIds(signal);
  }

  private redact(text: string): string {
    const key = this.options.apiKey;
    return key && key.length >= 4 ? text.split(key).join('***') : text;
  }

  private warn(message: string): void {
    if (this.warned.has(message)) return;
    this.warned.add(message);
    this.options.onWarning?.(message);
  }

  private async listModels(signal: AbortSignal | undefined, waitForServer: boolean): Promise<z.infer<typeof ModelListSchema>['data']> {
    const noServer = (detail: string) =>
      new Error(
        `No server at ${this.baseURL} (${detail}${waitForServer ? `, for ${this.options.retrySeconds} s` : ''}): start \`vllm serve MODEL\` (or \`python -m sglang.launch_server --model-path MODEL\`) ` +
          `or set thetaevolve.endpoint to the server's base URL.`,
      );
    const timeout = Math.min(this.options.requestTimeoutMs, 15_000);
    const started = performance.now();
    let waits = 0;
    /** Wait before the next try when the server may still come; false when the window is over. */
    const waitForIt = async (reason: string): Promise<boolean> => {
      const left = this.options.retrySeconds * 1000 - (performance.now() - started);
      if (!waitForServer || left <= 0) return false;
      this.setWaiting(true, reason);
      const slept = await sleep(Math.min(left, backoffDelayMs(++waits, this.backoff)), signal ?? new AbortController().signal);
      if (!slept) throw new Error('Health check aborted.');
      return true;
    };
    for (let attempt = 0; ; attempt++) {
      let response: Response;
      let text: string;
      try {
        response = await this.client.models.list({ signal, timeout, maxRetries: 0 }).asResponse();
        text = await response.text();
      } catch (error) {
        if (signal?.aborted) throw new Error('Health check aborted.');
        if (error instanceof APIError && error.status !== undefined && isUnavailableStatus(error.status)) {
          const reason = `HTTP ${error.status}: ${error.message.replace(/^\d{3}\s*/, '')}`;
          if (await waitForIt(reason)) continue;
          throw new Error(this.redact(`The server at ${this.baseURL} is not ready (${reason}): is it still loading the model?`));
        }
        if (error instanceof APIError && error.status !== undefined) {
          const status = error.status;
          if (status === 401 || status === 403) {
            throw new Error(
              `The server at ${this.baseURL} refused the API key (HTTP ${status}): set it with "ThetaEvolve: Set API Key" or OPENAI_API_KEY.`,
            );
          }
          if (status === 404) {
            throw new Error(
              `${this.baseURL}/models was not found (HTTP 404): is the base URL right? It usually ends in /v1 (e.g. http://127.0.0.1:8000/v1).`,
            );
          }
          if (isRetryableStatus(status) && attempt < 2) {
            await sleep(backoffDelayMs(attempt + 1, this.backoff), signal ?? new AbortController().signal);
            continue;
          }
          throw new Error(this.redact(`The server at ${this.baseURL} failed its health check (HTTP ${status}): ${error.message}`));
        }
        const reason = error instanceof APIConnectionTimeoutError ? `no answer within ${Math.round(timeout / 1000)} s` : describeNetworkError(error);
        if (await waitForIt(reason)) continue;
        throw noServer(this.redact(reason));
      }
      this.setWaiting(false, '');
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        throw new Error(`${this.baseURL}/models did not answer like an OpenAI-compatible server (the reply is not JSON): is the base URL right?`);
      }
      const parsed = ModelListSchema.safeParse(json);
      if (!parsed.success) {
        throw new Error(`${this.baseURL}/models did not answer like an OpenAI-compatible server (${firstIssue(parsed.error)}).`);
      }
      return parsed.data.data;
    }
  }

  private markTokensMissing(reason: string): void {
    this.tokenState = {
      status: 'missing',
      logprobs: false,
      message:
        `${this.baseURL} does not return token ids (${reason}): RL training through atropos needs them. ` +
        'Use vLLM >= 0.10.2 (return_token_ids) or a recent SGLang; samples are kept without token ids.',
    };
    this.warn(this.tokenState.message as string);
  }

  /** Tiny requests that tell whether the server returns token ids and logprobs (a second one for SGLang's prompt ids). */
  private async probeTokenIds(signal?: AbortSignal): Promise<void> {
    for (let probe = 0; probe < 2 && this.tokenState.status === 'unknown'; probe++) {
      const body: ChatCompletionCreateParamsNonStreaming & Record<string, unknown> = {
        model: this.resolvedModel as string,
        messages: [{ role: 'user', content: 'Reply with OK.' }],
        max_tokens: 1,
        temperature: this.options.temperature,
        top_p: this.options.topP,
        seed: 0,
        ...this.tokenFields(),
      };
      try {
        const response = await this.client.chat.completions
          .create(body, { signal, timeout: Math.min(this.options.requestTimeoutMs, 60_000), maxRetries: 0 })
          .asResponse();
        const parsed = ChatCompletionSchema.safeParse(JSON.parse(await response.text()));
        if (!parsed.success) return; // undecided: the first real reply decides
        this.learnTokenSupport(parsed.data);
      } catch (error) {
        // Only a refusal that names the fields decides; anything else (a 5xx,
        // a timeout, a 400 about something else) leaves it to the first reply.
        if (error instanceof APIError && (error.status === 400 || error.status === 422) && rejectsTokenFields(error.message)) {
          this.markTokensMissing(`it rejected return_token_ids: HTTP ${error.status}`);
        }
        return;
      }
    }
  }

  /** vLLM / SGLang extra body fields; the SDK forwards unknown params as they are. */
  private tokenFields(): Record<string, boolean> {
    const fields: Record<string, boolean> = { logprobs: true, return_token_ids: true };
    if (this.askPromptIds) fields.return_prompt_token_ids = true;
    return fields;
  }

  /** The first reply that carried the token fields decides whether the server supports them. */
  private learnTokenSupport(reply: ChatCompletionReply): void {
    if (this.tokenState.status !== 'unknown') return;
    const choice = reply.choices[0];
    if (!choice?.token_ids) return this.markTokensMissing('replies carry no token_ids');
    if (!(reply.prompt_token_ids ?? choice.prompt_token_ids)) {
      // SGLang returns prompt ids only when asked with return_prompt_token_ids.
      if (!this.askPromptIds) {
        this.askPromptIds = true;
        return;
      }
      return this.markTokensMissing('replies carry no prompt_token_ids');
    }
    const logprobs = Array.isArray(choice.logprobs?.content);
    this.tokenState = { status: 'supported', logprobs, message: logprobs ? null : `${this.baseURL} returns token ids but no logprobs.` };
    if (!logprobs) this.warn(this.tokenState.message as string);
  }

  private sendsTokenFields(): boolean {
    return this.tokenState.status === 'unknown' || this.tokenState.status === 'supported';
  }

  async generate(jobs: GenerationJob[], signal: AbortSignal, onSample: (sample: Sample) => void): Promise<EndpointGenerationStats> {
    const started = performance.now();
    const stats: CallState['stats'] = { requests: 0, retries: 0, promptTokens: 0, completionTokens: 0, latencies: [] };
    const delivered = new Map<string, boolean[]>();
    for (const job of jobs) delivered.set(job.key, new Array<boolean>(job.n).fill(false));
    const total = jobs.reduce((n, job) => n + job.n, 0);
    let failures = 0;
    let finished = false;
    let callbackError: unknown = null;

    // Our own controller: stopped by the caller's signal or by a throwing onSample.
    const internal = new AbortController();
    setMaxListeners(0, internal.signal); // one listener per request in flight and per queued request
    const onCallerAbort = () => internal.abort();
    if (signal.aborted) internal.abort();
    else signal.addEventListener('abort', onCallerAbort, { once: true });

    const deliver = (sample: Sample) => {
      if (finished || callbackError !== null) return;
      const flags = delivered.get(sample.jobKey);
      if (!flags || flags[sample.index] !== false) return;
      flags[sample.index] = true;
      if (!sample.ok) failures++;
      try {
        onSample(sample);
      } catch (error) {
        callbackError = error;
        internal.abort();
      }
    };
    const failRest = (error: string) => {
      for (const job of jobs) {
        const flags = delivered.get(job.key) as boolean[];
        flags.forEach((done, index) => {
          if (!done) deliver({ ok: false, jobKey: job.key, index, latencyMs: 0, retries: 0, error });
        });
      }
    };

    let maxInFlight = 0;
    try {
      if (total > 0 && !internal.signal.aborted) {
        let ready = true;
        if (this.resolvedModel === null) {
          try {
            await this.check(internal.signal, { waitForServer: true });
          } catch (error) {
            ready = false;
            if (!internal.signal.aborted) failRest(this.redact((error as Error).message));
          }
        }
        if (ready && !internal.signal.aborted) {
          const units = this.unitsOf(jobs);
          const capacity = this.options.maxInFlight > 0 ? Math.min(this.options.maxInFlight, units.length) : units.length;
          const semaphore = new Semaphore(Math.max(1, capacity));
          const state: CallState = { stats, signal: internal.signal, semaphore, model: this.resolvedModel as string, deliver, promptCounts: new Map() };
          const stopped = new Promise<void>((resolve) => {
            if (internal.signal.aborted) resolve();
            else internal.signal.addEventListener('abort', () => resolve(), { once: true });
          });
          // Stop returns at once: in-flight requests are aborted and their late results ignored.
          await Promise.race([Promise.all(units.map((unit) => this.runUnit(unit, state))), stopped]);
          maxInFlight = semaphore.maxHeld;
        }
      }
      if (internal.signal.aborted && callbackError === null) failRest('aborted: the run was stopped before the endpoint answered');
    } finally {
      finished = true;
      signal.removeEventListener('abort', onCallerAbort);
      if (!internal.signal.aborted) internal.abort(); // nothing of this call may outlive it
    }
    if (callbackError !== null) throw callbackError;

    const wallMs = performance.now() - started;
    const latencyOr0 = (p: number) => (stats.latencies.length > 0 ? percentile(stats.latencies, p) : 0);
    return {
      requests: stats.requests,
      retries: stats.retries,
      failures,
      promptTokens: stats.promptTokens,
      completionTokens: stats.completionTokens,
      latencyMsP50: latencyOr0(50),
      latencyMsP95: latencyOr0(95),
      wallMs,
      samples: total,
      tokensPerSecond: wallMs > 0 ? (stats.completionTokens * 1000) / wallMs : 0,
      maxInFlight,
      aborted: signal.aborted,
    };
  }

  private unitsOf(jobs: GenerationJob[]): Unit[] {
    const units: Unit[] = [];
    for (const job of jobs) {
      if (job.n <= 0) continue;
      if (this.options.useNParameter && job.n > 1) {
        units.push({ job, firstIndex: 0, n: job.n, seed: job.seed });
      } else {
        for (let i = 0; i < job.n; i++) units.push({ job, firstIndex: i, n: 1, seed: job.seed + i });
      }
    }
    return units;
  }

  /** One unit to its end: a response per sample, or request_failed after the retries. Never throws. */
  private async runUnit(unit: Unit, state: CallState): Promise<void> {
    let firstStart: number | null = null;
    let retries = 0; // all retries, for the sample's record
    let countedRetries = 0; // those within maxRetries
    let unavailableSince: number | null = null;
    let unavailableRetries = 0;
    let contextRetries = 0;
    let maxTokensCap = Number.POSITIVE_INFINITY; // lowered by context-length refusals
    const fail = (error: string, latencyMs: number) => {
      const text = this.redact(error);
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
      let sentMaxTokens = this.options.maxTokens;
      try {
        const budget = await this.maxTokensFor(unit.job, state);
        sentMaxTokens = Math.min(budget.maxTokens ?? this.options.maxTokens, maxTokensCap);
        result = budget.error !== null ? { ok: false, kind: 'fatal', error: budget.error, retryAfterMs: null } : await this.attempt(unit, state, sentMaxTokens);
      } catch (error) {
        result = { ok: false, kind: 'retry', error: `unexpected client error: ${(error as Error).message}`, retryAfterMs: null };
      } finally {
        release();
      }
      if (state.signal.aborted) return;
      const latencyMs = performance.now() - firstStart;
      if (result.ok) {
        this.setWaiting(false, '');
        state.stats.latencies.push(result.latencyMs);
        for (const sample of result.samples) state.deliver({ ...sample, latencyMs, retries });
        return;
      }
      if (result.kind !== 'unavailable') unavailableSince = null;
      if (result.kind === 'fatal') return fail(result.error, latencyMs);

      let wait: number;
      if (result.kind === 'context') {
        const next = this.learnContext(unit.job, state, result.context ?? { contextLength: null, promptTokens: null }, sentMaxTokens);
        if (next.room !== null && next.room < 1) {
          return fail(`${result.error} (the prompt alone fills the server's context: start the server with a longer context, vLLM --max-model-len, SGLang --context-length; lowering thetaevolve.maxTokens cannot help)`, latencyMs);
        }
        if (contextRetries >= MAX_CONTEXT_RETRIES || next.maxTokens === null || next.maxTokens >= sentMaxTokens) {
          return fail(`${result.error} (thetaevolve.maxTokens is ${this.options.maxTokens}: ${CONTEXT_ADVICE})`, latencyMs);
        }
        contextRetries++;
        maxTokensCap = next.maxTokens;
        wait = 0;
      } else if (result.kind === 'unavailable') {
        unavailableSince ??= performance.now();
        const left = this.options.retrySeconds * 1000 - (performance.now() - unavailableSince);
        if (left <= 0) {
          return fail(`${result.error} (the server did not come back within ${this.options.retrySeconds} s: thetaevolve.serverRetrySeconds)`, latencyMs);
        }
        // One failed attempt in a busy step is no outage worth a line; a second in a row is.
        if (unavailableRetries >= 1) this.setWaiting(true, result.error);
        wait = Math.min(left, backoffDelayMs(++unavailableRetries, this.backoff));
      } else {
        if (countedRetries >= this.options.maxRetries) {
          return fail(countedRetries > 0 ? `${result.error} (gave up after ${countedRetries} ${countedRetries === 1 ? 'retry' : 'retries'})` : result.error, latencyMs);
        }
        countedRetries++;
        const asked = result.retryAfterMs;
        wait =
          asked !== null && asked > 0
            ? Math.min(asked, this.backoff.maxRetryAfterMs) * (1 + 0.1 * Math.random())
            : backoffDelayMs(countedRetries, this.backoff);
      }
      retries++;
      state.stats.retries++;
      if (wait > 0 && !(await sleep(wait, state.signal))) return;
    }
  }

  /**
   * The max_tokens a job's requests may ask for: thetaevolve.maxTokens, or
   * less where the server's context leaves less after the prompt (the one
   * token spare covers SGLang, which refuses prompt + max_tokens == context).
   * An error when the prompt alone fills the context.
   */
  private async maxTokensFor(job: GenerationJob, state: CallState): Promise<{ maxTokens: number | null; error: string | null }> {
    const wanted = this.options.maxTokens;
    const context = this.contextLength;
    if (context === null) return { maxTokens: wanted, error: null };
    let count = state.promptCounts.get(job.key);
    if (!count) {
      const estimate = estimatePromptTokens(job.messages);
      if (estimate + wanted < context) return { maxTokens: wanted, error: null }; // fits even by the upper estimate
      count = this.countPromptTokens(job.messages, state.model, state.signal).then((exact) =>
        exact === null ? { tokens: estimate, exact: false } : { tokens: exact, exact: true },
      );
      state.promptCounts.set(job.key, count);
    }
    const prompt = await count;
    const room = context - prompt.tokens - 1;
    if (room < 1) {
      // An estimate may be too high: let the server's own check decide.
      if (!prompt.exact) return { maxTokens: wanted, error: null };
      return {
        maxTokens: null,
        error:
          `the prompt (${prompt.tokens} tokens) leaves no room for a response in the server's context of ${context} tokens ` +
          `(max_model_len): start the server with a longer context (vLLM --max-model-len, SGLang --context-length); lowering thetaevolve.maxTokens cannot help`,
      };
    }
    if (room >= wanted) return { maxTokens: wanted, error: null };
    if (!this.contextCapWarned) {
      this.contextCapWarned = true;
      this.warn(
        `The server's context (${context} tokens) leaves about ${room} tokens for a response after a ${prompt.tokens}-token prompt, ` +
          `less than thetaevolve.maxTokens (${wanted}): requests ask for what fits. To silence this, ${CONTEXT_ADVICE}.`,
      );
    }
    return { maxTokens: room, error: null };
  }

  /** What a context-length refusal teaches: the context, the prompt's exact count, and the max_tokens to try next (null: no better guess). */
  private learnContext(job: GenerationJob, state: CallState, rejection: ContextRejection, sent: number): { maxTokens: number | null; room: number | null } {
    if (rejection.contextLength !== null) this.contextLength = rejection.contextLength;
    const context = this.contextLength;
    if (rejection.promptTokens !== null) {
      state.promptCounts.set(job.key, Promise.resolve({ tokens: rejection.promptTokens, exact: true }));
      if (context !== null) {
        const room = context - rejection.promptTokens - 1;
        return { maxTokens: room >= 1 ? room : null, room };
      }
    }
    const half = Math.floor(sent / 2);
    return { maxTokens: half >= 1 ? half : null, room: null };
  }

  /** The prompt's token count from vLLM's /tokenize (beside /v1), or null where the server does not offer it. */
  private async countPromptTokens(messages: readonly ChatMessage[], model: string, signal: AbortSignal): Promise<number | null> {
    if (this.tokenizeOffered === false) return null;
    const url = `${this.baseURL.replace(/\/v1$/, '')}/tokenize`;
    try {
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${this.options.apiKey || PLACEHOLDER_API_KEY}` },
        body: JSON.stringify({ model, messages: messages.map((m) => ({ role: m.role, content: m.content })), add_generation_prompt: true }),
        signal: AbortSignal.any([signal, AbortSignal.timeout(Math.min(this.options.requestTimeoutMs, 15_000))]),
      });
      const parsed = response.ok ? TokenizeReplySchema.safeParse(await response.json()) : null;
      if (!parsed?.success) {
        if (response.status === 404 || response.status === 405 || parsed) this.tokenizeOffered = false;
        return null;
      }
      this.tokenizeOffered = true;
      return parsed.data.count;
    } catch {
      return null; // unreachable now: the estimate serves, and the request itself meets the outage
    }
  }

  /** One HTTP request. Failed attempts come back as values, never as exceptions. */
  private async attempt(unit: Unit, state: CallState, maxTokens: number): Promise<AttemptResult> {
    const sentTokenFields = this.options.requestTokenIds && this.sendsTokenFields();
    const body: ChatCompletionCreateParamsNonStreaming & Record<string, unknown> = {
      model: state.model,
      messages: unit.job.messages.map((m) => ({ role: m.role, content: m.content })),
      temperature: this.options.temperature,
      top_p: this.options.topP,
      max_tokens: maxTokens,
      seed: unit.seed,
    };
    if (unit.n > 1) body.n = unit.n;
    if (sentTokenFields) Object.assign(body, this.tokenFields());

    state.stats.requests++;
    const controller = new AbortController();
    const onAbort = () => controller.abort();
    state.signal.addEventListener('abort', onAbort, { once: true });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, this.options.requestTimeoutMs);
    const timeoutText = `no reply within ${this.options.requestTimeoutMs / 1000} s (request timeout)`;
    const started = performance.now();
    let text: string;
    try {
      // The SDK timeout is a backstop: ours covers the body too.
      const response = await this.client.chat.completions
        .create(body, { signal: controller.signal, timeout: this.options.requestTimeoutMs + 1000, maxRetries: 0 })
        .asResponse();
      text = await response.text();
    } catch (error) {
      if (state.signal.aborted) return { ok: false, kind: 'fatal', error: 'aborted', retryAfterMs: null };
      if (timedOut || error instanceof APIConnectionTimeoutError) return { ok: false, kind: 'retry', error: timeoutText, retryAfterMs: null };
      if (error instanceof APIUserAbortError) return { ok: false, kind: 'retry', error: 'request aborted', retryAfterMs: null };
      if (error instanceof APIConnectionError) {
        return { ok: false, kind: 'unavailable', error: `connection failed: ${describeNetworkError(error)}`, retryAfterMs: null };
      }
      if (error instanceof APIError && error.status !== undefined) {
        const status = error.status;
        const message = error.message.replace(/^\d{3}\s*/, '');
        const described = `HTTP ${status}: ${message}`;
        if (sentTokenFields && this.tokenState.status === 'unknown' && (status === 400 || status === 422) && rejectsTokenFields(message)) {
          // A server that refuses the extra fields by name: drop them and try again.
          this.markTokensMissing(`it rejected return_token_ids: HTTP ${status}`);
          return { ok: false, kind: 'retry', error: described, retryAfterMs: 0 };
        }
        const context = status === 400 ? contextRejectionOf(message) : null;
        if (context) return { ok: false, kind: 'context', error: described, retryAfterMs: null, context };
        if (isUnavailableStatus(status)) return { ok: false, kind: 'unavailable', error: described, retryAfterMs: null };
        return { ok: false, kind: isRetryableStatus(status) ? 'retry' : 'fatal', error: described, retryAfterMs: retryAfterMs(error.headers) };
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
      return { ok: false, kind: 'retry', error: `malformed reply: ${firstIssue(parsed.error)}`, retryAfterMs: null };
    }
    const reply = parsed.data;
    if (reply.choices.length !== unit.n) {
      return { ok: false, kind: 'retry', error: `malformed reply: ${reply.choices.length} choices for n = ${unit.n}`, retryAfterMs: null };
    }
    if (reply.choices.some((c) => c.finish_reason === 'abort')) {
      // SGLang aborts requests in flight when it pauses for a weight update: not the model's answer.
      return { ok: false, kind: 'unavailable', error: 'the server aborted the generation (finish_reason "abort", as during a weight update)', retryAfterMs: null };
    }
    if (sentTokenFields) this.learnTokenSupport(reply);

    const choices = [...reply.choices].sort((a, b) => (a.index ?? 0) - (b.index ?? 0));
    const read = choices.map((choice) => readChoice(choice, reply.prompt_token_ids ?? null));
    const usagePrompt = reply.usage?.prompt_tokens ?? read[0]?.tokens?.promptTokenIds.length ?? 0;
    const countedCompletion = read.every((r) => r.completionTokens !== null)
      ? read.reduce((n, r) => n + (r.completionTokens as number), 0)
      : null;
    const usageCompletion = reply.usage?.completion_tokens ?? countedCompletion ?? 0;
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
      })),
    };
  }
}

/**
 * The policy version a reply names: SGLang's metadata.weight_version, except
 * its placeholder "default" (sent until a trainer tags an update), which
 * names no version and must not stand in for the trainer's step.
 */
export function policyVersionOf(weightVersion: string | number | null | undefined): string | null {
  if (weightVersion === undefined || weightVersion === null) return null;
  const version = String(weightVersion);
  return version === 'default' || version === '' ? null : version;
}
