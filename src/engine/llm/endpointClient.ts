// The LLM response source: chat completions against any OpenAI-compatible
// server (vLLM, SGLang, hosted APIs) through the `openai` SDK, with our own
// retry policy (the SDK's is off so accounting is exact), a cap on requests in
// flight across all jobs of a generate() call, abort on stop, token ids and
// logprobs for RL where the server offers them, and per-call accounting.
import { setMaxListeners } from 'node:events';
import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import type { ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import type { Settings } from '../config';
import { percentile } from '../stats';
import type { GenerationJob, GenerationStats, ResponseSource, Sample, SampleResponse } from '../types';
import { ChatCompletionSchema, ModelListSchema, readChoice, splitEvenly, type ChatCompletionReply } from './chatResponse';
import { DEFAULT_BACKOFF, backoffDelayMs, isRetryableStatus, retryAfterMs, sleep, type BackoffOptions } from './retryPolicy';
import { Semaphore } from './semaphore';

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

type AttemptResult =
  | { ok: true; samples: Omit<SampleResponse, 'latencyMs' | 'retries'>[]; latencyMs: number }
  | { ok: false; retryable: boolean; error: string; retryAfterMs: number | null };

interface CallState {
  stats: { requests: number; retries: number; promptTokens: number; completionTokens: number; latencies: number[] };
  signal: AbortSignal;
  semaphore: Semaphore;
  model: string;
  deliver: (sample: Sample) => void;
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

  constructor(options: EndpointOptions) {
    this.options = options;
    this.baseURL = options.baseURL.trim().replace(/\/+$/, '');
    this.backoff = { ...DEFAULT_BACKOFF, ...options.backoff };
    this.tokenState = options.requestTokenIds
      ? { status: 'unknown', logprobs: false, message: null }
      : { status: 'not_requested', logprobs: false, message: null };
    this.client = new OpenAI({
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

  /** Health check: /v1/models reachable, the model present (or the only one); probes token ids when asked. */
  async check(signal?: AbortSignal): Promise<void> {
    const ids = await this.listModels(signal);
    const wanted = this.options.model.trim();
    if (wanted) {
      if (!ids.includes(wanted)) {
        throw new Error(
          ids.length === 0
            ? `The server at ${this.baseURL} lists no models; model "${wanted}" is not being served.`
            : `Model "${wanted}" is not served at ${this.baseURL}; it serves: ${ids.join(', ')}. Set thetaevolve.model (--model) to one of them.`,
        );
      }
      this.resolvedModel = wanted;
    } else if (ids.length === 1) {
      this.resolvedModel = ids[0] as string;
    } else if (ids.length === 0) {
      throw new Error(`The server at ${this.baseURL} lists no models at /models: is the model still loading?`);
    } else {
      throw new Error(
        `The server at ${this.baseURL} serves several models (${ids.join(', ')}): set thetaevolve.model (--model) to one of them.`,
      );
    }
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

  private async listModels(signal?: AbortSignal): Promise<string[]> {
    const noServer = (detail: string) =>
      new Error(
        `No server at ${this.baseURL} (${detail}): start \`vllm serve MODEL\` (or \`python -m sglang.launch_server --model-path MODEL\`) ` +
          `or set thetaevolve.endpoint (--endpoint) to the server's base URL.`,
      );
    const timeout = Math.min(this.options.requestTimeoutMs, 15_000);
    for (let attempt = 0; ; attempt++) {
      let response: Response;
      let text: string;
      try {
        response = await this.client.models.list({ signal, timeout, maxRetries: 0 }).asResponse();
        text = await response.text();
      } catch (error) {
        if (signal?.aborted) throw new Error('Health check aborted.');
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
        if (error instanceof APIConnectionTimeoutError) throw noServer(`no answer within ${Math.round(timeout / 1000)} s`);
        throw noServer(this.redact(describeNetworkError(error)));
      }
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
      return parsed.data.data.map((m) => m.id);
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
        if (error instanceof APIError && (error.status === 400 || error.status === 422)) {
          this.markTokensMissing(`it rejected return_token_ids: HTTP ${error.status}`);
        }
        return; // other failures leave it undecided; generate() learns from the first reply
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
            await this.check(internal.signal);
          } catch (error) {
            ready = false;
            if (!internal.signal.aborted) failRest(this.redact((error as Error).message));
          }
        }
        if (ready && !internal.signal.aborted) {
          const units = this.unitsOf(jobs);
          const capacity = this.options.maxInFlight > 0 ? Math.min(this.options.maxInFlight, units.length) : units.length;
          const semaphore = new Semaphore(Math.max(1, capacity));
          const state: CallState = { stats, signal: internal.signal, semaphore, model: this.resolvedModel as string, deliver };
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
    let retries = 0;
    for (;;) {
      let release: () => void;
      try {
        release = await state.semaphore.acquire(state.signal);
      } catch {
        return; // stopped while queued
      }
      firstStart ??= performance.now();
      let result: AttemptResult;
      try {
        result = await this.attempt(unit, state);
      } catch (error) {
        result = { ok: false, retryable: true, error: `unexpected client error: ${(error as Error).message}`, retryAfterMs: null };
      } finally {
        release();
      }
      if (state.signal.aborted) return;
      const latencyMs = performance.now() - firstStart;
      if (result.ok) {
        state.stats.latencies.push(result.latencyMs);
        for (const sample of result.samples) state.deliver({ ...sample, latencyMs, retries });
        return;
      }
      if (!result.retryable || retries >= this.options.maxRetries) {
        const error = this.redact(retries > 0 ? `${result.error} (gave up after ${retries} ${retries === 1 ? 'retry' : 'retries'})` : result.error);
        for (let k = 0; k < unit.n; k++) {
          state.deliver({ ok: false, jobKey: unit.job.key, index: unit.firstIndex + k, latencyMs, retries, error });
        }
        return;
      }
      retries++;
      state.stats.retries++;
      const asked = result.retryAfterMs;
      const wait =
        asked !== null && asked > 0
          ? Math.min(asked, this.backoff.maxRetryAfterMs) * (1 + 0.1 * Math.random())
          : backoffDelayMs(retries, this.backoff);
      if (!(await sleep(wait, state.signal))) return;
    }
  }

  /** One HTTP request. Failed attempts come back as values, never as exceptions. */
  private async attempt(unit: Unit, state: CallState): Promise<AttemptResult> {
    const sentTokenFields = this.options.requestTokenIds && this.sendsTokenFields();
    const body: ChatCompletionCreateParamsNonStreaming & Record<string, unknown> = {
      model: state.model,
      messages: unit.job.messages.map((m) => ({ role: m.role, content: m.content })),
      temperature: this.options.temperature,
      top_p: this.options.topP,
      max_tokens: this.options.maxTokens,
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
      if (state.signal.aborted) return { ok: false, retryable: false, error: 'aborted', retryAfterMs: null };
      if (timedOut || error instanceof APIConnectionTimeoutError) return { ok: false, retryable: true, error: timeoutText, retryAfterMs: null };
      if (error instanceof APIUserAbortError) return { ok: false, retryable: true, error: 'request aborted', retryAfterMs: null };
      if (error instanceof APIConnectionError) {
        return { ok: false, retryable: true, error: `connection failed: ${describeNetworkError(error)}`, retryAfterMs: null };
      }
      if (error instanceof APIError && error.status !== undefined) {
        if (sentTokenFields && this.tokenState.status === 'unknown' && (error.status === 400 || error.status === 422)) {
          // Servers that reject the extra fields: drop them and try again.
          this.markTokensMissing(`it rejected return_token_ids: HTTP ${error.status}`);
          return { ok: false, retryable: true, error: `HTTP ${error.status}: ${error.message}`, retryAfterMs: 0 };
        }
        return {
          ok: false,
          retryable: isRetryableStatus(error.status),
          error: `HTTP ${error.status}: ${error.message.replace(/^\d{3}\s*/, '')}`,
          retryAfterMs: retryAfterMs(error.headers),
        };
      }
      return { ok: false, retryable: true, error: `reply cut off: ${describeNetworkError(error)}`, retryAfterMs: null };
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
      return { ok: false, retryable: true, error: `malformed reply: not JSON (starts with ${JSON.stringify(start)})`, retryAfterMs: null };
    }
    const parsed = ChatCompletionSchema.safeParse(json);
    if (!parsed.success) {
      return { ok: false, retryable: true, error: `malformed reply: ${firstIssue(parsed.error)}`, retryAfterMs: null };
    }
    const reply = parsed.data;
    if (reply.choices.length !== unit.n) {
      return { ok: false, retryable: true, error: `malformed reply: ${reply.choices.length} choices for n = ${unit.n}`, retryAfterMs: null };
    }
    if (sentTokenFields) this.learnTokenSupport(reply);
    const keepTokens = this.tokenState.status === 'supported';

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
    const weightVersion = reply.metadata?.weight_version;
    const policyVersion = weightVersion === undefined || weightVersion === null ? null : String(weightVersion);

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
        tokens: keepTokens ? r.tokens : null,
        policyVersion,
      })),
    };
  }
}
