// A small JSON-over-HTTP client on node:http for the trainer protocols.
// Not fetch: atropos' GET /status-env reads its env id from a JSON body,
// which fetch refuses to send with GET. Failures are classified so the
// bridge knows whether a request may have reached the trainer (ambiguous)
// or surely did not (refused before anything was sent).
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { AWAITED_AFTER_MS, describeNetworkError } from '../networkErrors';
import { ThetaEvolveError } from '../common/errors';

export interface HttpReply {
  status: number;
  text: string;
  /** Parsed JSON, or undefined when the body is not JSON. */
  json: unknown;
}

/** The request failed below HTTP: refused, reset, timed out. */
export class TransportError extends ThetaEvolveError {
  override readonly name = 'TransportError';
  /** True when the whole request was written before the failure: the server may have acted on it. */
  readonly ambiguous: boolean;
  /** Nothing listens there (ECONNREFUSED): the server is down, and a server process that comes back starts empty. */
  readonly refused: boolean;
  constructor(message: string, ambiguous: boolean, options?: { cause?: unknown; refused?: boolean }) {
    super(message, options);
    this.ambiguous = ambiguous;
    this.refused = options?.refused ?? false;
  }
}

const MAX_REPLY_BYTES = 64 * 1024 * 1024;

export interface JsonHttpClientOptions {
  timeoutMs: number;
  /**
   * Told, AWAITED_AFTER_MS into a request without an answer, what is awaited
   * and where ("POST http://host:8000/scored_data: no answer for 5 s ..."),
   * and null once no request is awaited any more.
   */
  onAwaiting?: (awaited: string | null) => void;
  /** The setting whose value timeoutMs is, named in the awaited text. */
  timeoutSetting?: string;
}

/** The client a trainer bridge (atropos.ts, slime.ts) talks to its trainer with: it names thetaevolve.trainer.requestTimeoutSeconds when it waits. */
export function trainerHttpClient(options: {
  url: string;
  timeoutMs: number;
  onAwaiting?: (awaited: string | null) => void;
}): JsonHttpClient {
  return new JsonHttpClient(options.url, {
    timeoutMs: options.timeoutMs,
    onAwaiting: options.onAwaiting,
    timeoutSetting: 'thetaevolve.trainer.requestTimeoutSeconds',
  });
}

export class JsonHttpClient {
  private readonly base: URL;
  private readonly agent: HttpAgent;
  private readonly timeoutMs: number;
  private readonly options: JsonHttpClientOptions;
  /** Requests past AWAITED_AFTER_MS without an answer, oldest first: the first is the one named. */
  private readonly awaited: string[] = [];

  constructor(baseUrl: string, options: JsonHttpClientOptions) {
    this.options = options;
    this.base = new URL(baseUrl.trim().replace(/\/+$/, '') + '/');
    if (this.base.protocol !== 'http:' && this.base.protocol !== 'https:') {
      throw new Error(`trainer URL must start with http:// or https://, got ${baseUrl}`);
    }
    this.agent = this.base.protocol === 'https:' ? new HttpsAgent({ keepAlive: true }) : new HttpAgent({ keepAlive: true });
    this.timeoutMs = options.timeoutMs;
  }

  /** `path` is relative to the base URL (a base with a path prefix keeps it). */
  url(path: string): URL {
    return new URL(path.replace(/^\/+/, ''), this.base);
  }

  request(method: 'GET' | 'POST', path: string, body: unknown, signal: AbortSignal): Promise<HttpReply> {
    const url = this.url(path);
    const payload = body === undefined ? null : Buffer.from(JSON.stringify(body), 'utf8');
    return this.send(method, url, payload, signal, method === 'GET');
  }

  /**
   * One request; `retryStale` (GETs, which change nothing): a reset on a
   * kept-alive socket the server had already closed (uvicorn closes after an
   * error reply or an idle while) is sent once more on a fresh socket.
   */
  private send(method: 'GET' | 'POST', url: URL, payload: Buffer | null, signal: AbortSignal, retryStale: boolean): Promise<HttpReply> {
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise<HttpReply>((resolve, reject) => {
      if (signal.aborted) return reject(new TransportError('aborted', false));
      let written = false;
      let settled = false;
      let awaitedText: string | null = null;
      const awaitTimer = setTimeout(() => {
        awaitedText =
          `${method} ${url.href}: no answer for ${AWAITED_AFTER_MS / 1000} s (it gives up after ${Math.round(this.timeoutMs / 1000)} s` +
          `${this.options.timeoutSetting ? `, ${this.options.timeoutSetting}` : ''})`;
        this.setAwaited(awaitedText, true);
      }, AWAITED_AFTER_MS);
      const settleAwait = () => {
        clearTimeout(awaitTimer);
        if (awaitedText !== null) this.setAwaited(awaitedText, false);
      };
      const finish = (fn: () => void) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        settleAwait();
        signal.removeEventListener('abort', onAbort);
        fn();
      };
      const headers: Record<string, string | number> = { accept: 'application/json' };
      if (payload) {
        headers['content-type'] = 'application/json';
        headers['content-length'] = payload.length;
      }
      const req = send(url, { method, headers, agent: this.agent });
      const fail = (message: string, refused = false) => {
        finish(() => reject(new TransportError(message, written, { refused })));
        req.destroy();
      };
      const onAbort = () => fail('aborted');
      signal.addEventListener('abort', onAbort, { once: true });
      const timer = setTimeout(() => fail(`no reply within ${Math.round(this.timeoutMs / 1000)} s`), this.timeoutMs);
      req.on('finish', () => {
        written = true;
      });
      req.on('error', (error) => {
        const code = (error as { code?: unknown }).code;
        if (retryStale && code === 'ECONNRESET' && req.reusedSocket && !settled) {
          settled = true;
          clearTimeout(timer);
          settleAwait();
          signal.removeEventListener('abort', onAbort);
          resolve(this.send(method, url, payload, signal, false));
          return;
        }
        fail(describeNetworkError(error), code === 'ECONNREFUSED');
      });
      req.on('response', (res: IncomingMessage) => {
        // uvicorn closes the connection after an unhandled exception's 500: a
        // socket kept for reuse would reset the next request, and a POST is
        // never sent twice, so a server error's socket is not reused.
        if ((res.statusCode ?? 0) >= 500) req.shouldKeepAlive = false;
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size <= MAX_REPLY_BYTES) chunks.push(chunk);
        });
        res.on('error', (error) => fail(`reply cut off: ${describeNetworkError(error)}`));
        res.on('aborted', () => fail('reply cut off'));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = text ? JSON.parse(text) : undefined;
          } catch {
            json = undefined;
          }
          finish(() => resolve({ status: res.statusCode ?? 0, text, json }));
        });
      });
      req.end(payload ?? undefined);
    });
  }

  /** Add or remove one awaited request; the hook hears the oldest one still awaited, or null. */
  private setAwaited(text: string, awaited: boolean): void {
    const before = this.awaited[0] ?? null;
    if (awaited) this.awaited.push(text);
    else this.awaited.splice(this.awaited.indexOf(text), 1);
    const after = this.awaited[0] ?? null;
    if (after !== before) this.options.onAwaiting?.(after);
  }

  close(): void {
    this.agent.destroy();
  }
}

/** One line about a reply that was not what we wanted, for people. */
export function describeReply(reply: HttpReply): string {
  const text = reply.text.replace(/\s+/g, ' ').trim();
  return `HTTP ${reply.status}${text ? `: ${text.slice(0, 200)}` : ''}`;
}
