// What the parts of one endpoint client share (the server probe, the context
// budget, the request runner): the options, the SDK client that talks to the
// server, and the ways to tell people (warnings said once, the waiting
// status, the API key kept out of every message).
import OpenAI, { type APIError } from 'openai';
import type { SourceStatus } from '../common/types';
import { DEFAULT_BACKOFF, type BackoffOptions } from '../async/retryBudget';
import { normalizedErrorBody } from './serverErrors';
import { AWAITED_AFTER_MS } from '../networkErrors';

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

export class EndpointConnection {
  readonly baseURL: string;
  readonly backoff: BackoffOptions;
  readonly client: OpenAI;
  private readonly warned = new Set<string>();
  private waiting = false;
  private readonly statusListeners = new Set<(status: SourceStatus) => void>();

  constructor(readonly options: EndpointOptions) {
    this.baseURL = options.baseURL.trim().replace(/\/+$/, '');
    this.backoff = { ...DEFAULT_BACKOFF, ...options.backoff };
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

  addStatusListener(listener: (status: SourceStatus) => void): () => void {
    this.statusListeners.add(listener);
    return () => this.statusListeners.delete(listener);
  }

  /** Tell the status listeners when the server starts or stops being waited for. */
  setWaiting(waiting: boolean, reason: string): void {
    if (this.waiting === waiting) return;
    this.waiting = waiting;
    const message = waiting
      ? `waiting for the server at ${this.baseURL} (${this.redact(reason)}); retrying for up to ${this.options.retrySeconds} s (thetaevolve.serverRetrySeconds)`
      : `the server at ${this.baseURL} answers again`;
    for (const listener of this.statusListeners) listener({ waiting, message });
  }

  /**
   * Run `request`, and if it is still unanswered after AWAITED_AFTER_MS say
   * through the status listeners what is awaited and where (a server that
   * took the request and stays silent), until it settles.
   */
  async awaited<T>(what: string, limitMs: number, request: () => Promise<T>): Promise<T> {
    let announced = false;
    const timer = setTimeout(() => {
      if (this.waiting) return; // already said: the server is being waited for
      announced = true;
      this.waiting = true;
      const message = `awaiting the server at ${this.baseURL}: ${what} unanswered for ${AWAITED_AFTER_MS / 1000} s (it gives up after ${Math.round(limitMs / 1000)} s)`;
      for (const listener of this.statusListeners) listener({ waiting: true, message });
    }, AWAITED_AFTER_MS);
    try {
      return await request();
    } finally {
      clearTimeout(timer);
      if (announced && this.waiting) {
        this.waiting = false;
        for (const listener of this.statusListeners)
          listener({ waiting: false, message: `the server at ${this.baseURL} answered ${what}` });
      }
    }
  }

  redact(text: string): string {
    const key = this.options.apiKey;
    return key && key.length >= 4 ? text.split(key).join('***') : text;
  }

  warn(message: string): void {
    if (this.warned.has(message)) return;
    this.warned.add(message);
    this.options.onWarning?.(message);
  }
}
