// What the server is and offers: the models it lists (and the one requests
// go to), the context it serves (max_model_len), whether it returns token
// ids and logprobs (vLLM's and SGLang's fields), and whether it counts
// prompt tokens at /tokenize (vLLM). A server that is unreachable or loading
// is waited for during the listing when the caller asks.
import { APIConnectionTimeoutError, APIError } from 'openai';
import { z } from 'zod';
import type { ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import type { ChatMessage } from '../common/types';
import { RetryBudget, backoffDelayMs } from '../async/retryBudget';
import { sleep } from '../async/sleep';
import { describeNetworkError, isUnreachableError, permanentAddressError } from '../networkErrors';
import { ChatCompletionSchema, ModelListSchema, type ChatCompletionReply } from './chatResponse';
import { ThetaEvolveError, zodIssueText } from '../common/errors';
import type { ServerCheckOptions } from '../common/types';
import { type EndpointConnection, PLACEHOLDER_API_KEY } from './endpointConnection';
import { isRetryableStatus, isUnavailableStatus } from './retryPolicy';
import { rejectsTokenFields } from './serverErrors';

export interface TokenSupport {
  /** unknown until check() probed or a reply told. */
  status: 'unknown' | 'supported' | 'missing' | 'not_requested';
  logprobs: boolean;
  /** Why they are missing, for people. */
  message: string | null;
}

/** The model the server serves that requests go to, and its context length when the listing gives it. */
export interface ServedModel {
  model: string;
  contextLength: number | null;
}

/** Nothing answers at the endpoint at all (connection refused, host not found), as opposed to a server that is loading. */
export class ServerUnreachableError extends ThetaEvolveError {
  override readonly name: string = 'ServerUnreachableError';
}

/** The endpoint's address can never be fetched (a blocked port, a scheme fetch does not speak): failed at once, never waited for. */
export class EndpointAddressError extends ServerUnreachableError {
  override readonly name = 'EndpointAddressError';
}

/** vLLM's /tokenize reply (the fields we read). */
const TokenizeReplySchema = z.object({ count: z.number().int().nonnegative() });

export class ServerProbe {
  private tokenState: TokenSupport;
  private askPromptIds = false;
  /** Whether the server counts prompt tokens at /tokenize (vLLM); null until tried. */
  private tokenizeOffered: boolean | null = null;

  constructor(private readonly connection: EndpointConnection) {
    this.tokenState = connection.options.requestTokenIds
      ? { status: 'unknown', logprobs: false, message: null }
      : { status: 'not_requested', logprobs: false, message: null };
  }

  get tokenSupport(): TokenSupport {
    return { ...this.tokenState };
  }

  /**
   * /v1/models reachable, the model present (or the only one). With
   * waitForServer, a server that is unreachable or loading is retried for
   * retrySeconds.
   */
  async servedModel(signal: AbortSignal | undefined, check: ServerCheckOptions): Promise<ServedModel> {
    const { baseURL, options } = this.connection;
    const models = await this.listModels(signal, check);
    const ids = models.map((m) => m.id);
    const wanted = options.model.trim();
    let model: string;
    if (wanted) {
      if (!ids.includes(wanted)) {
        throw new Error(
          ids.length === 0
            ? `The server at ${baseURL} lists no models; model "${wanted}" is not being served.`
            : `Model "${wanted}" is not served at ${baseURL}; it serves: ${ids.join(', ')}. Set thetaevolve.model to one of them.`,
        );
      }
      model = wanted;
    } else if (ids.length === 1) {
      model = ids[0] as string;
    } else if (ids.length === 0) {
      throw new Error(`The server at ${baseURL} lists no models at /models: is the model still loading?`);
    } else {
      throw new Error(`The server at ${baseURL} serves several models (${ids.join(', ')}): set thetaevolve.model to one of them.`);
    }
    return { model, contextLength: models.find((m) => m.id === model)?.max_model_len ?? null };
  }

  private async listModels(signal: AbortSignal | undefined, check: ServerCheckOptions): Promise<z.infer<typeof ModelListSchema>['data']> {
    const { baseURL, options } = this.connection;
    const waitForServer = check.waitForServer ?? false;
    const noServer = (detail: string, waited = waitForServer) =>
      new ServerUnreachableError(
        `No server at ${baseURL} (${detail}${waited ? `, for ${options.retrySeconds} s` : ''}): start \`vllm serve MODEL\` (or \`python -m sglang.launch_server --model-path MODEL\`) ` +
          `or set thetaevolve.endpoint to the server's base URL.`,
      );
    const timeout = Math.min(options.requestTimeoutMs, 15_000);
    const serverWait = new RetryBudget({ windowMs: options.retrySeconds * 1000, backoff: this.connection.backoff });
    serverWait.windowLeftMs(); // the window runs from the first try
    /** Wait before the next try when the server may still come; false when the window is over. */
    const waitForIt = async (reason: string): Promise<boolean> => {
      const left = serverWait.windowLeftMs();
      if (!waitForServer || left <= 0) return false;
      this.connection.setWaiting(true, reason);
      serverWait.take();
      if (!(await sleep(Math.min(left, serverWait.delayMs()), signal))) throw new Error('Health check aborted.');
      return true;
    };
    for (let attempt = 0; ; attempt++) {
      let text: string;
      // One deadline for the headers and the body: a server that sends headers and then stalls is no answer either.
      const deadline = AbortSignal.timeout(timeout);
      try {
        text = await this.connection.awaited(`GET ${baseURL}/models`, timeout, async () => {
          const answer = await this.connection.client.models
            .list({ signal: signal ? AbortSignal.any([signal, deadline]) : deadline, timeout, maxRetries: 0 })
            .asResponse();
          return answer.text();
        });
      } catch (error) {
        if (signal?.aborted) throw new Error('Health check aborted.');
        const unusable = permanentAddressError(error);
        if (unusable) {
          throw new EndpointAddressError(
            this.connection.redact(
              `${baseURL} cannot be reached (${describeNetworkError(error)}: ${unusable}): set thetaevolve.endpoint to the server's base URL.`,
            ),
          );
        }
        if (error instanceof APIError && error.status !== undefined && isUnavailableStatus(error.status)) {
          const reason = `HTTP ${error.status}: ${error.message.replace(/^\d{3}\s*/, '')}`;
          if (await waitForIt(reason)) continue;
          throw new Error(this.connection.redact(`The server at ${baseURL} is not ready (${reason}): is it still loading the model?`));
        }
        if (error instanceof APIError && error.status !== undefined) {
          const status = error.status;
          if (status === 401 || status === 403) {
            throw new Error(
              `The server at ${baseURL} refused the API key (HTTP ${status}): set it with "ThetaEvolve: Set API Key" or OPENAI_API_KEY.`,
            );
          }
          if (status === 404) {
            throw new Error(
              `${baseURL}/models was not found (HTTP 404): is the base URL right? It usually ends in /v1 (e.g. http://127.0.0.1:8000/v1).`,
            );
          }
          if (isRetryableStatus(status) && attempt < 2) {
            await sleep(backoffDelayMs(attempt + 1, this.connection.backoff), signal);
            continue;
          }
          throw new Error(this.connection.redact(`The server at ${baseURL} failed its health check (HTTP ${status}): ${error.message}`));
        }
        const reason =
          deadline.aborted || error instanceof APIConnectionTimeoutError
            ? `no whole answer within ${formatSeconds(timeout)} (thetaevolve.requestTimeoutSeconds, at most 15 s for this check)`
            : describeNetworkError(error);
        // Nothing listening, or no such host, at the very first try: said now, not after the whole window.
        if (check.unreachableFailsFast && attempt === 0 && isUnreachableError(error)) throw noServer(this.connection.redact(reason), false);
        if (await waitForIt(reason)) continue;
        throw noServer(this.connection.redact(reason));
      }
      this.connection.setWaiting(false, '');
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        throw new Error(
          `${baseURL}/models did not answer like an OpenAI-compatible server (the reply is not JSON): is the base URL right?`,
        );
      }
      const parsed = ModelListSchema.safeParse(json);
      if (!parsed.success) {
        throw new Error(`${baseURL}/models did not answer like an OpenAI-compatible server (${zodIssueText(parsed.error, '')}).`);
      }
      return parsed.data.data;
    }
  }

  markTokensMissing(reason: string): void {
    this.tokenState = {
      status: 'missing',
      logprobs: false,
      message:
        `${this.connection.baseURL} does not return token ids (${reason}): RL training through atropos needs them. ` +
        'Use vLLM >= 0.10.2 (return_token_ids) or a recent SGLang; samples are kept without token ids.',
    };
    this.connection.warn(this.tokenState.message as string);
  }

  /** Tiny requests that tell whether the server returns token ids and logprobs (a second one for SGLang's prompt ids). */
  async probeTokenIds(model: string, signal?: AbortSignal): Promise<void> {
    const { options } = this.connection;
    for (let probe = 0; probe < 2 && this.tokenState.status === 'unknown'; probe++) {
      const body: ChatCompletionCreateParamsNonStreaming & Record<string, unknown> = {
        model,
        messages: [{ role: 'user', content: 'Reply with OK.' }],
        max_tokens: 1,
        temperature: options.temperature,
        top_p: options.topP,
        seed: 0,
        ...this.tokenFields(),
      };
      const timeout = Math.min(options.requestTimeoutMs, 60_000);
      const deadline = AbortSignal.timeout(timeout);
      try {
        const replyText = await this.connection.awaited(
          `a one-token chat completion (POST ${this.connection.baseURL}/chat/completions, the token-id probe)`,
          timeout,
          async () => {
            const response = await this.connection.client.chat.completions
              .create(body, { signal: signal ? AbortSignal.any([signal, deadline]) : deadline, timeout, maxRetries: 0 })
              .asResponse();
            return response.text();
          },
        );
        const parsed = ChatCompletionSchema.safeParse(JSON.parse(replyText));
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
  tokenFields(): Record<string, boolean> {
    const fields: Record<string, boolean> = { logprobs: true, return_token_ids: true };
    if (this.askPromptIds) fields.return_prompt_token_ids = true;
    return fields;
  }

  /** The first reply that carried the token fields decides whether the server supports them. */
  learnTokenSupport(reply: ChatCompletionReply): void {
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
    this.tokenState = {
      status: 'supported',
      logprobs,
      message: logprobs ? null : `${this.connection.baseURL} returns token ids but no logprobs.`,
    };
    if (!logprobs) this.connection.warn(this.tokenState.message as string);
  }

  /** Whether requests carry the token fields (not yet known to be refused). */
  sendsTokenFields(): boolean {
    return this.tokenState.status === 'unknown' || this.tokenState.status === 'supported';
  }

  /** The prompt's token count from vLLM's /tokenize (beside /v1), or null where the server does not offer it. */
  async countPromptTokens(messages: readonly ChatMessage[], model: string, signal: AbortSignal): Promise<number | null> {
    if (this.tokenizeOffered === false) return null;
    const { baseURL, options } = this.connection;
    const url = `${baseURL.replace(/\/v1$/, '')}/tokenize`;
    try {
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${options.apiKey || PLACEHOLDER_API_KEY}` },
        body: JSON.stringify({ model, messages: messages.map((m) => ({ role: m.role, content: m.content })), add_generation_prompt: true }),
        signal: AbortSignal.any([signal, AbortSignal.timeout(Math.min(options.requestTimeoutMs, 15_000))]),
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
}

/** A wait as people read it: "15 s", "1.5 s". */
function formatSeconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(1))} s`;
}
