// An OpenAI-compatible HTTP server (node:http) for tests and the demo. It
// speaks /v1/models, /v1/chat/completions and (vLLM modes) /tokenize the way
// the real servers do, per `mode` (n, usage, finish_reason, reasoning_content
// / reasoning, return_token_ids, logprobs in choices[i].logprobs.content[j],
// the end-of-sequence token, error bodies, context-length checks), answers
// with SEARCH/REPLACE edits of the program in the prompt, and injects faults
// by rate and/or by script. Where each shape comes from:
// - vLLM (current): vllm/entrypoints/openai/engine/protocol.py (ErrorResponse
//   {error: ErrorInfo}, ModelCard.max_model_len), .../chat_completion/
//   protocol.py (prompt_token_ids on the response, token_ids per choice),
//   .../engine/serving.py (the context-length 400, prompt + max_tokens >
//   max_model_len), .../api_server.py ScalingMiddleware (503 with `error` a
//   plain string), /tokenize in .../api_server.py (count, max_model_len).
// - vLLM <= 0.10.0 ('old-vllm'): vllm/entrypoints/openai/protocol.py
//   ErrorResponse {object: "error", message, type, param, code} at the top
//   level and serving_engine.py _validate_input ("... you requested T tokens
//   (P in the messages, O in the completion) ..."); no return_token_ids yet
//   (0.10.2), so no token ids.
// - SGLang: python/sglang/srt/entrypoints/openai/protocol.py ErrorResponse
//   (flat, object "error") built by serving_base.py create_error_response;
//   python/sglang/srt/managers/tokenizer_manager.py _validate_one_request
//   (rejects input + max_new_tokens >= context_len: one token stricter than
//   vLLM); serving_chat.py (prompt_token_ids per choice only with
//   return_prompt_token_ids, content "" rather than null, finish_reason
//   "abort" with HTTP 200 for a request aborted by pause_generation, and
//   metadata.weight_version, "default" until the trainer tags an update).
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { z } from 'zod';
import { Rng } from '../../src/engine/common/rng';
import { JUDGE_QUESTION_LINE } from '../../src/engine/operators/novelty/judge';
import { embeddingsAnswer } from './testEmbeddings';
import { proposeAnswer, tokenId, tokenPieces, tokenize } from './testModel';

export const FAULT_KINDS = [
  'rate_limit', // 429 (Retry-After only when retryAfterSeconds is set)
  'server_error', // 500
  'reset', // connection destroyed without a reply
  'stall', // never replies (until the client gives up)
  'garbage', // 200 with a body that is not a chat completion
  'truncate', // a valid reply cut short: finish_reason "length"
  'no_diff', // a valid reply without a SEARCH/REPLACE block
  'abort', // HTTP 200 with finish_reason "abort" (SGLang during a weight update)
  'unavailable', // 503 in the mode's shape (vLLM: `error` a plain string)
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];
export type ScriptStep = FaultKind | 'ok';

/** Which real server the stand-in imitates (see the header for the sources). */
export const SERVER_MODES = ['vllm', 'sglang', 'old-vllm'] as const;
export type ServerMode = (typeof SERVER_MODES)[number];

/** The end-of-sequence token a finished reply carries in token_ids, logprobs and usage (Qwen's <|im_end|>). */
export const EOS_TOKEN = { id: 151645, text: '<|im_end|>' } as const;

/** Where a reasoning model's thinking goes in the reply. */
export type ReasoningMode = 'none' | 'reasoning_content' | 'reasoning' | 'inline';

export interface TestServerOptions {
  port?: number; // 0 (default): any free port
  host?: string; // default 127.0.0.1
  models?: string[]; // listed at /v1/models; default ['test-model']
  latencyMs?: number; // before each chat reply
  latencyJitterMs?: number; // plus uniform [0, jitter)
  faultRate?: number; // probability that a chat request gets a fault
  faultKinds?: readonly FaultKind[]; // which faults the rate draws from (default all)
  /** Chat request k (in arrival order) gets script[k]; after the script, the rate applies. */
  script?: readonly ScriptStep[];
  faultSeed?: number;
  retryAfterSeconds?: number; // Retry-After of a 429 (default: none, as vLLM and SGLang send none)
  retryAfterMs?: number | null; // also send `retry-after-ms` (OpenAI's header) when set
  reasoning?: ReasoningMode;
  supportsTokenIds?: boolean; // honour return_token_ids (default true)
  /** Which server's shapes (default vllm). */
  mode?: ServerMode;
  weightVersion?: string | null; // SGLang-style metadata.weight_version
  apiKey?: string | null; // require `Authorization: Bearer <key>` when set
  /** Told of every request as it arrives, with the key it carried (the request log of test/server/main.ts). */
  onRequest?: (entry: { method: string; path: string; authorization: string | null }) => void;
  /** The context length, listed at /v1/models and enforced like the mode's server (default 32768). */
  maxModelLen?: number;
  /** List max_model_len at /v1/models (default true; hosted APIs do not). */
  listsMaxModelLen?: boolean;
  /** Start in the loading phase: every request gets 503 until setLoading(false). */
  loading?: boolean;
  /** Models (of `models`) whose every answer has no edit: their children never improve (the bandit's bad arm). */
  noDiffModels?: readonly string[];
  /** Leave `usage` out of the replies (some hosted APIs and proxies): the client counts tokens from the text. */
  omitUsage?: boolean;
  /** /v1/models sends its headers and the start of its body, then nothing more (a wedged server or proxy). */
  modelsStallAfterHeaders?: boolean;
  /** Novelty judge question k (a chat request asking JUDGE_QUESTION_LINE) gets judgeAnswers[k]; after them, 'NO'. */
  judgeAnswers?: readonly ('YES' | 'NO')[];
  /** Answer /v1/embeddings (default true); false: 404, as a server without an embedding model. */
  embeddings?: boolean;
  /** Send embeddings as base64 when asked (default true, as vLLM); false: refuse base64 (400), as a server sending floats only. */
  embeddingsBase64?: boolean;
  /** Length of the embedding vectors (default 256). */
  embeddingDimensions?: number;
}

export interface TestServerCounters {
  requests: number;
  modelsRequests: number;
  chatRequests: number;
  /** 200 replies carrying choices (ok, truncate, no_diff). */
  completions: number;
  choices: number;
  faults: Record<FaultKind, number>;
  inFlight: number;
  /** Most chat requests being handled at once. */
  maxInFlight: number;
  /** Chat requests the client abandoned before the reply. */
  clientAborts: number;
  /** Requests answered 503 by the loading phase. */
  loadingRejections: number;
  /** Chat requests rejected for not fitting the context. */
  contextRejections: number;
  /** /v1/embeddings requests answered, and the texts they embedded. */
  embeddingRequests: number;
  embeddedTexts: number;
  /** /v1/embeddings requests answered with an error (a refused encoding, an unknown model). */
  embeddingRequestsRefused: number;
  /** Novelty judge questions answered. */
  judgeQuestions: number;
}

/** What the server saw of one chat request (for tests that check what was sent). */
export interface ChatRequestRecord {
  model: string;
  n: number;
  seed: number | null;
  temperature: number | null;
  topP: number | null;
  maxTokens: number | null;
  returnTokenIds: boolean;
  returnPromptTokenIds: boolean;
  logprobs: boolean;
  authorization: string | null;
  fault: ScriptStep;
  extraFields: string[];
  /** The text of the last user message (what the prompt asked). */
  userText: string;
}

export interface TestServer {
  readonly baseURL: string; // http://host:port/v1
  readonly port: number;
  readonly counters: TestServerCounters;
  readonly requests: readonly ChatRequestRecord[];
  /** Prompt token counts of the /tokenize requests, in order. */
  readonly tokenizeRequests: readonly number[];
  /** Enter or leave the loading phase (503 to every request, as while weights load). */
  setLoading(loading: boolean): void;
  resetCounters(): void;
  close(): Promise<void>;
}

const ContentPart = z.object({ type: z.string(), text: z.string().optional() });
const ChatRequest = z.object({
  model: z.string(),
  messages: z.array(z.object({ role: z.string(), content: z.union([z.string(), z.array(ContentPart), z.null()]) })).min(1),
  n: z.number().int().min(1).max(1024).nullish(),
  seed: z.number().int().nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().gt(0).max(1).nullish(),
  max_tokens: z.number().int().min(1).nullish(),
  max_completion_tokens: z.number().int().min(1).nullish(),
  logprobs: z.boolean().nullish(),
  top_logprobs: z.number().int().min(0).max(20).nullish(),
  return_token_ids: z.boolean().nullish(),
  return_prompt_token_ids: z.boolean().nullish(),
  stream: z.boolean().nullish(),
});
type ChatRequest = z.infer<typeof ChatRequest>;
const KNOWN_FIELDS = new Set(Object.keys(ChatRequest.shape));

/** vLLM's /tokenize: a chat (messages) or a plain prompt. */
const TokenizeRequest = z.union([
  z.object({ model: z.string().optional(), messages: ChatRequest.shape.messages }),
  z.object({ model: z.string().optional(), prompt: z.string() }),
]);

const MAX_BODY_BYTES = 32 * 1024 * 1024;
const MAX_RECORDS = 100_000;

function emptyCounters(): TestServerCounters {
  return {
    requests: 0,
    modelsRequests: 0,
    chatRequests: 0,
    completions: 0,
    choices: 0,
    faults: Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])) as Record<FaultKind, number>,
    inFlight: 0,
    maxInFlight: 0,
    clientAborts: 0,
    loadingRejections: 0,
    contextRejections: 0,
    embeddingRequests: 0,
    embeddedTexts: 0,
    embeddingRequestsRefused: 0,
    judgeQuestions: 0,
  };
}

function textOf(content: ChatRequest['messages'][number]['content']): string {
  if (typeof content === 'string') return content;
  if (content === null) return '';
  return content.map((p) => p.text ?? '').join('');
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

/**
 * An error reply in the mode's shape: vLLM >= 0.10.1 nests it under `error`
 * (engine/protocol.py ErrorResponse); SGLang and vLLM <= 0.10.0 send it flat
 * with object "error" (their protocol.py ErrorResponse).
 */
function errorBody(mode: ServerMode, status: number, type: string, message: string, param: string | null = null): Record<string, unknown> {
  if (mode === 'vllm') return { error: { message, type, param, code: status } };
  return { object: 'error', message, type, param, code: status };
}

/** The 503 of a server that cannot take requests now: vLLM's ScalingMiddleware sends `error` as a plain string. */
function unavailableBody(mode: ServerMode): Record<string, unknown> {
  if (mode === 'vllm') return { error: 'The model is currently scaling. Please try again later.' };
  return errorBody(mode, 503, 'ServiceUnavailableError', 'The server is not ready: the model is still loading.');
}

/** The context-length 400 of each server, word for word; null when the request fits. */
export function contextLengthError(
  mode: ServerMode,
  promptTokens: number,
  maxTokens: number | null,
  maxModelLen: number,
): { message: string; param: string | null } | null {
  if (mode === 'sglang') {
    // tokenizer_manager.py _validate_one_request: >= on both checks.
    if (promptTokens >= maxModelLen) {
      return {
        message: `The input (${promptTokens} tokens) is longer than the model's context length (${maxModelLen} tokens).`,
        param: null,
      };
    }
    if (maxTokens !== null && promptTokens + maxTokens >= maxModelLen) {
      return {
        message:
          `Requested token count exceeds the model's maximum context length of ${maxModelLen} tokens. ` +
          `You requested a total of ${promptTokens + maxTokens} tokens: ${promptTokens} tokens from the input messages and ` +
          `${maxTokens} tokens for the completion. Please reduce the number of tokens in the input messages or the completion to fit within the limit.`,
        param: null,
      };
    }
    return null;
  }
  if (mode === 'old-vllm') {
    // serving_engine.py _validate_input (<= 0.10.0).
    if (maxTokens === null) {
      if (promptTokens < maxModelLen) return null;
      return {
        message: `This model's maximum context length is ${maxModelLen} tokens. However, you requested ${promptTokens} tokens in the messages, Please reduce the length of the messages.`,
        param: null,
      };
    }
    if (promptTokens + maxTokens <= maxModelLen) return null;
    return {
      message:
        `This model's maximum context length is ${maxModelLen} tokens. However, you requested ${promptTokens + maxTokens} tokens ` +
        `(${promptTokens} in the messages, ${maxTokens} in the completion). Please reduce the length of the messages or completion.`,
      param: null,
    };
  }
  // engine/serving.py: a VLLMValidationError, whose text ends with its parameter and value.
  if (promptTokens >= maxModelLen) {
    return {
      message: `This model's maximum context length is ${maxModelLen} tokens. However, your request has ${promptTokens} input tokens. Please reduce the length of the input messages. (parameter=input_tokens, value=${promptTokens})`,
      param: 'input_tokens',
    };
  }
  if (maxTokens !== null && promptTokens + maxTokens > maxModelLen) {
    return {
      message:
        `This model's maximum context length is ${maxModelLen} tokens. However, you requested ${maxTokens} output tokens and your prompt ` +
        `contains at least ${promptTokens} input tokens, for a total of at least ${promptTokens + maxTokens} tokens. ` +
        `Please reduce the length of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=${promptTokens})`,
      param: 'input_tokens',
    };
  }
  return null;
}

/** The prompt as the stand-in's chat template renders it (what its token counts count). */
function renderPrompt(messages: { role: string; content: string }[]): string {
  return messages.map((m) => `<|im_start|>${m.role}\n${m.content}<|im_end|>\n`).join('') + '<|im_start|>assistant\n';
}

function readBody(req: IncomingMessage): Promise<Buffer | null> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    });
    req.on('end', () => resolve(size <= MAX_BODY_BYTES ? Buffer.concat(chunks) : null));
    req.on('error', () => resolve(null));
  });
}

interface BuiltChoice {
  choice: Record<string, unknown>;
  completionTokens: number;
}

function buildChoice(
  index: number,
  lastUser: string,
  seed: number,
  maxTokens: number,
  options: {
    mode: ServerMode;
    reasoning: ReasoningMode;
    truncate: boolean;
    noDiff: boolean;
    abort: boolean;
    tokenIds: boolean;
    logprobs: boolean;
    /** The whole answer (a novelty judge's YES or NO) instead of an edit. */
    answer?: string;
  },
): BuiltChoice {
  const proposal = proposeAnswer(options.noDiff ? '' : lastUser, seed);
  const answer =
    options.answer ??
    (options.noDiff ? 'I reviewed the program; it already looks well tuned, so I suggest keeping it as it is.' : proposal.answer);
  const thinking = options.reasoning !== 'none';
  const generated = thinking ? `<think>\n${proposal.reasoning}\n</think>\n\n${answer}` : answer;
  const pieces = tokenPieces(generated);
  // The model's tokens are the text's pieces and then the end-of-sequence
  // token: a reply that ends on its own carries it in token_ids, logprobs and
  // usage (the text leaves it out); one cut at max_tokens never reaches it.
  let limit = Math.min(maxTokens, pieces.length + 1);
  if (options.truncate || options.abort) limit = Math.min(limit, Math.max(1, Math.ceil(pieces.length / 2)));
  const kept = pieces.slice(0, limit);
  const reachedEos = limit > pieces.length;
  const finishReason = options.abort ? 'abort' : reachedEos ? 'stop' : 'length';
  const text = kept.join('');

  let content: string | null = text;
  let reasoning: string | null = null;
  if (thinking && options.reasoning !== 'inline') {
    // What a reasoning parser does: thinking out of the content.
    const close = text.indexOf('</think>');
    const open = text.startsWith('<think>') ? '<think>'.length : 0;
    if (close >= 0) {
      reasoning = text.slice(open, close).trim();
      content = text.slice(close + '</think>'.length).replace(/^\s+/, '');
    } else {
      reasoning = text.slice(open).trim();
      // vLLM leaves no content null; SGLang's serving_chat.py sends "".
      content = options.mode === 'sglang' ? '' : null;
    }
  }
  const message: Record<string, unknown> = {
    role: 'assistant',
    content,
    refusal: null,
    annotations: null,
    audio: null,
    function_call: null,
    tool_calls: [],
  };
  if (options.reasoning === 'reasoning_content') message.reasoning_content = reasoning;
  if (options.reasoning === 'reasoning') message.reasoning = reasoning;

  const tokens = reachedEos ? [...kept, EOS_TOKEN.text] : kept;
  const rng = Rng.fromSeed((seed ^ 0x5bd1e995) >>> 0);
  const choice: Record<string, unknown> = {
    index,
    message,
    logprobs: options.logprobs
      ? {
          content: tokens.map((piece) => ({
            token: piece,
            logprob: -Math.round(rng.next() ** 2 * 3 * 1e4) / 1e4,
            bytes: [...Buffer.from(piece, 'utf8')],
            top_logprobs: [],
          })),
        }
      : null,
    finish_reason: finishReason,
    stop_reason: null,
  };
  if (options.tokenIds) choice.token_ids = tokens.map((piece) => (piece === EOS_TOKEN.text ? EOS_TOKEN.id : tokenId(piece)));
  return { choice, completionTokens: tokens.length };
}

export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const models = options.models ?? ['test-model'];
  const mode: ServerMode = options.mode ?? 'vllm';
  const maxModelLen = options.maxModelLen ?? 32768;
  const faultKinds = options.faultKinds ?? FAULT_KINDS;
  const faultRng = Rng.fromSeed(options.faultSeed ?? 0);
  const latencyRng = Rng.fromSeed((options.faultSeed ?? 0) + 1);
  const script = options.script ?? [];
  const reasoningMode = options.reasoning ?? 'none';
  const supportsTokenIds = options.supportsTokenIds ?? true;
  let counters = emptyCounters();
  const records: ChatRequestRecord[] = [];
  const tokenizeRecords: number[] = [];
  let loading = options.loading ?? false;
  let arrivals = 0;
  let completionCounter = 0;
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  let closing = false;

  const sendError = (
    res: ServerResponse,
    status: number,
    type: string,
    message: string,
    headers: Record<string, string> = {},
    param: string | null = null,
  ) => sendJson(res, status, errorBody(mode, status, type, message, param), headers);

  const delay = (ms: number) =>
    new Promise<void>((resolve) => {
      if (ms <= 0) return resolve();
      const t = setTimeout(() => {
        timers.delete(t);
        resolve();
      }, ms);
      timers.add(t);
    });

  function nextFault(): ScriptStep {
    const k = arrivals++;
    if (k < script.length) return script[k] as ScriptStep;
    const rate = options.faultRate ?? 0;
    if (rate > 0 && faultKinds.length > 0 && faultRng.next() < rate) return faultRng.pick(faultKinds);
    return 'ok';
  }

  async function handleTokenize(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    let json: unknown = null;
    try {
      json = raw === null ? null : JSON.parse(raw.toString('utf8'));
    } catch {
      json = null;
    }
    const parsed = TokenizeRequest.safeParse(json);
    if (!parsed.success) return sendError(res, 400, 'BadRequestError', 'Invalid request: send {model, messages} or {model, prompt}.');
    const text =
      'messages' in parsed.data
        ? renderPrompt(parsed.data.messages.map((m) => ({ role: m.role, content: textOf(m.content) })))
        : parsed.data.prompt;
    const ids = tokenize(text);
    tokenizeRecords.push(ids.length);
    sendJson(res, 200, { count: ids.length, max_model_len: maxModelLen, tokens: ids, token_strs: null });
  }

  async function handleEmbeddings(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    const answer = embeddingsAnswer(
      raw,
      models,
      counters.embeddingRequests + 1,
      options.embeddingDimensions,
      options.embeddingsBase64 ?? true,
    );
    if ('error' in answer) {
      counters.embeddingRequestsRefused++;
      return sendError(res, answer.error.status, answer.error.type, answer.error.message);
    }
    counters.embeddingRequests++;
    counters.embeddedTexts += answer.texts;
    sendJson(res, 200, answer.reply);
  }

  async function handleChat(req: IncomingMessage, res: ServerResponse): Promise<void> {
    counters.chatRequests++;
    counters.inFlight++;
    counters.maxInFlight = Math.max(counters.maxInFlight, counters.inFlight);
    let finished = false;
    let resetByUs = false;
    const done = () => {
      if (finished) return;
      finished = true;
      counters.inFlight--;
    };
    res.on('finish', done);
    res.on('close', () => {
      if (!res.writableFinished && !resetByUs && !closing) counters.clientAborts++;
      done();
    });

    const raw = await readBody(req);
    if (raw === null) return sendError(res, 413, 'BadRequestError', 'Request body too large or unreadable.');
    let json: unknown;
    try {
      json = JSON.parse(raw.toString('utf8'));
    } catch {
      return sendError(res, 400, 'BadRequestError', 'Request body is not valid JSON.');
    }
    const parsed = ChatRequest.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      return sendError(res, 400, 'BadRequestError', `Invalid request: ${issue?.path.join('.') ?? ''} ${issue?.message ?? ''}`.trim());
    }
    const body = parsed.data;
    if (body.stream) return sendError(res, 400, 'BadRequestError', 'The test server does not stream; send stream: false.');
    if (!models.includes(body.model)) {
      return sendError(res, 404, 'NotFoundError', `The model \`${body.model}\` does not exist.`);
    }
    const promptIds = tokenize(renderPrompt(body.messages.map((m) => ({ role: m.role, content: textOf(m.content) }))));
    const requestedMaxTokens = body.max_tokens ?? body.max_completion_tokens ?? null;
    const tooLong = contextLengthError(mode, promptIds.length, requestedMaxTokens, maxModelLen);
    const fault = tooLong ? 'ok' : nextFault();
    if (records.length < MAX_RECORDS) {
      records.push({
        model: body.model,
        n: body.n ?? 1,
        seed: body.seed ?? null,
        temperature: body.temperature ?? null,
        topP: body.top_p ?? null,
        maxTokens: requestedMaxTokens,
        returnTokenIds: body.return_token_ids === true,
        returnPromptTokenIds: body.return_prompt_token_ids === true,
        logprobs: body.logprobs === true,
        authorization: req.headers.authorization ?? null,
        fault,
        extraFields: Object.keys(json as object).filter((k) => !KNOWN_FIELDS.has(k)),
        userText: textOf([...body.messages].reverse().find((m) => m.role === 'user')?.content ?? null),
      });
    }
    if (tooLong) {
      counters.contextRejections++;
      return sendError(res, 400, 'BadRequestError', tooLong.message, {}, tooLong.param);
    }
    if (fault !== 'ok') counters.faults[fault]++;

    if (fault === 'rate_limit') {
      // Neither vLLM nor SGLang sends Retry-After; a proxy in front may.
      const headers: Record<string, string> = {};
      if (options.retryAfterSeconds !== undefined) headers['retry-after'] = String(options.retryAfterSeconds);
      if (options.retryAfterMs !== undefined && options.retryAfterMs !== null) headers['retry-after-ms'] = String(options.retryAfterMs);
      return sendError(res, 429, 'RateLimitError', 'Too many requests: the server is at capacity.', headers);
    }
    if (fault === 'unavailable') return sendJson(res, 503, unavailableBody(mode));
    if (fault === 'stall') return; // the reply never comes; the socket closes when the client gives up
    if (fault === 'reset') {
      resetByUs = true;
      req.socket.destroy();
      return;
    }

    const jitter = options.latencyJitterMs ? latencyRng.next() * options.latencyJitterMs : 0;
    await delay((options.latencyMs ?? 0) + jitter);
    if (closing || res.destroyed) return;

    if (fault === 'server_error') return sendError(res, 500, 'InternalServerError', 'The engine hit an internal error.');
    if (fault === 'garbage') {
      const variant = faultRng.int(3);
      if (variant === 0) {
        const text = '{"id":"chatcmpl-garbage","object":"chat.completion","choices":[{"index":0,"message":{"role":"assist';
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
        return void res.end(text);
      }
      if (variant === 1) {
        const text = '<html><body><h1>502 Bad Gateway</h1></body></html>';
        res.writeHead(200, { 'content-type': 'text/html', 'content-length': Buffer.byteLength(text) });
        return void res.end(text);
      }
      return sendJson(res, 200, { object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: 42 } }] });
    }

    const n = body.n ?? 1;
    const seed = body.seed ?? Math.floor(Math.random() * 2 ** 31);
    const lastUser = [...body.messages].reverse().find((m) => m.role === 'user');
    // Without max_tokens both servers generate up to what the context leaves.
    const maxTokens = requestedMaxTokens ?? maxModelLen - promptIds.length - (mode === 'sglang' ? 1 : 0);
    // return_token_ids came with vLLM 0.10.2: older servers ignore the field (extra fields are allowed).
    const wantTokenIds = supportsTokenIds && mode !== 'old-vllm' && body.return_token_ids === true;
    const choices: Record<string, unknown>[] = [];
    let completionTokens = 0;
    const judged = lastUser !== undefined && textOf(lastUser.content).includes(JUDGE_QUESTION_LINE);
    for (let i = 0; i < n; i++) {
      // Counted first: `judgeAnswers?.[counters.judgeQuestions++]` would skip the count when no answers are scripted.
      const question = judged ? counters.judgeQuestions++ : -1;
      const judgeAnswer = judged ? (options.judgeAnswers?.[question] ?? 'NO') : undefined;
      const built = buildChoice(i, lastUser ? textOf(lastUser.content) : '', seed + i, maxTokens, {
        ...(judgeAnswer !== undefined ? { answer: judgeAnswer } : {}),
        mode,
        reasoning: reasoningMode,
        truncate: fault === 'truncate',
        noDiff: fault === 'no_diff' || (options.noDiffModels ?? []).includes(body.model),
        abort: fault === 'abort',
        tokenIds: wantTokenIds,
        logprobs: body.logprobs === true,
      });
      choices.push(built.choice);
      completionTokens += built.completionTokens;
    }
    const sglang = mode === 'sglang';
    if (sglang && wantTokenIds && body.return_prompt_token_ids === true) {
      for (const choice of choices) choice.prompt_token_ids = promptIds;
    }
    const reply: Record<string, unknown> = {
      id: `chatcmpl-test-${++completionCounter}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: body.model,
      choices,
      service_tier: null,
      system_fingerprint: null,
      usage: options.omitUsage
        ? null
        : {
            prompt_tokens: promptIds.length,
            total_tokens: promptIds.length + completionTokens,
            completion_tokens: completionTokens,
            prompt_tokens_details: null,
          },
    };
    if (mode === 'vllm')
      Object.assign(reply, { prompt_logprobs: null, prompt_token_ids: wantTokenIds ? promptIds : null, kv_transfer_params: null });
    if (mode === 'old-vllm') Object.assign(reply, { prompt_logprobs: null, kv_transfer_params: null });
    if (options.weightVersion !== undefined && options.weightVersion !== null) {
      reply.metadata = { weight_version: options.weightVersion };
    }
    counters.completions++;
    counters.choices += n;
    sendJson(res, 200, reply);
  }

  const server = createServer((req, res) => {
    counters.requests++;
    const url = new URL(req.url ?? '/', 'http://localhost');
    options.onRequest?.({ method: req.method ?? '', path: url.pathname, authorization: req.headers.authorization ?? null });
    if (options.apiKey && req.headers.authorization !== `Bearer ${options.apiKey}`) {
      req.resume();
      return sendError(res, 401, 'AuthenticationError', 'Invalid API key.');
    }
    if (loading) {
      counters.loadingRejections++;
      req.resume();
      return sendJson(res, 503, unavailableBody(mode));
    }
    if (req.method === 'GET' && url.pathname === '/v1/models') {
      counters.modelsRequests++;
      if (options.modelsStallAfterHeaders) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"object": "list", "data": [');
        return; // the body never ends: the client's deadline must
      }
      const created = Math.floor(Date.now() / 1000);
      return sendJson(res, 200, {
        object: 'list',
        data: models.map((id) => ({
          id,
          object: 'model',
          created,
          owned_by: mode === 'sglang' ? 'sglang' : 'vllm',
          root: id,
          parent: null,
          ...(options.listsMaxModelLen === false ? {} : { max_model_len: maxModelLen }),
          permission: [],
        })),
      });
    }
    if (req.method === 'GET' && url.pathname === '/health') {
      res.writeHead(200);
      return void res.end();
    }
    if (req.method === 'POST' && url.pathname === '/tokenize' && mode !== 'sglang') {
      handleTokenize(req, res).catch((error: unknown) => {
        if (!res.headersSent && !res.destroyed) sendError(res, 500, 'InternalServerError', String(error));
      });
      return;
    }
    if (req.method === 'POST' && url.pathname === '/v1/embeddings' && options.embeddings !== false) {
      handleEmbeddings(req, res).catch((error: unknown) => {
        if (!res.headersSent && !res.destroyed) sendError(res, 500, 'InternalServerError', String(error));
      });
      return;
    }
    if (req.method === 'POST' && url.pathname === '/v1/chat/completions') {
      handleChat(req, res).catch((error: unknown) => {
        if (!res.headersSent && !res.destroyed) sendError(res, 500, 'InternalServerError', String(error));
      });
      return;
    }
    req.resume();
    sendError(res, 404, 'NotFoundError', `No route ${req.method ?? ''} ${url.pathname}.`);
  });
  server.keepAliveTimeout = 30_000;
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = options.host ?? '127.0.0.1';
  const hostInUrl = host.includes(':') ? `[${host}]` : host;

  return {
    baseURL: `http://${hostInUrl}:${address.port}/v1`,
    port: address.port,
    get counters() {
      return counters;
    },
    get requests() {
      return records;
    },
    get tokenizeRequests() {
      return tokenizeRecords;
    },
    setLoading(on: boolean) {
      loading = on;
    },
    resetCounters() {
      const inFlight = counters.inFlight;
      counters = emptyCounters();
      counters.inFlight = inFlight;
      counters.maxInFlight = inFlight;
      records.length = 0;
      tokenizeRecords.length = 0;
    },
    close() {
      closing = true;
      for (const t of timers) clearTimeout(t);
      timers.clear();
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      });
    },
  };
}
