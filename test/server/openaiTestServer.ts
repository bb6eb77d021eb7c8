// An OpenAI-compatible HTTP server (node:http) for tests and the demo. It
// speaks /v1/models and /v1/chat/completions the way vLLM does (n, usage,
// finish_reason, reasoning_content / reasoning, return_token_ids with
// `prompt_token_ids` on the response and `token_ids` on each choice, logprobs
// in choices[i].logprobs.content[j]), answers with SEARCH/REPLACE edits of the
// program in the prompt, and injects faults by rate and/or by script.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { z } from 'zod';
import { Rng } from '../../src/engine/rng';
import { proposeAnswer, tokenId, tokenPieces, tokenize } from './testModel';

export const FAULT_KINDS = [
  'rate_limit', // 429 with Retry-After
  'server_error', // 500
  'reset', // connection destroyed without a reply
  'stall', // never replies (until the client gives up)
  'garbage', // 200 with a body that is not a chat completion
  'truncate', // a valid reply cut short: finish_reason "length"
  'no_diff', // a valid reply without a SEARCH/REPLACE block
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];
export type ScriptStep = FaultKind | 'ok';

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
  retryAfterSeconds?: number; // Retry-After of a 429 (default 1)
  retryAfterMs?: number | null; // also send `retry-after-ms` (OpenAI's header) when set
  reasoning?: ReasoningMode;
  supportsTokenIds?: boolean; // honour return_token_ids (default true)
  /** vLLM: prompt_token_ids on the response; SGLang: on each choice, only with return_prompt_token_ids. */
  tokenIdsStyle?: 'vllm' | 'sglang';
  weightVersion?: string | null; // SGLang-style metadata.weight_version
  apiKey?: string | null; // require `Authorization: Bearer <key>` when set
  maxModelLen?: number;
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
}

export interface TestServer {
  readonly baseURL: string; // http://host:port/v1
  readonly port: number;
  readonly counters: TestServerCounters;
  readonly requests: readonly ChatRequestRecord[];
  resetCounters(): void;
  close(): Promise<void>;
}

const ContentPart = z.object({ type: z.string(), text: z.string().optional() });
const ChatRequest = z.object({
  model: z.string(),
  messages: z
    .array(z.object({ role: z.string(), content: z.union([z.string(), z.array(ContentPart), z.null()]) }))
    .min(1),
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

function sendError(res: ServerResponse, status: number, type: string, message: string, headers: Record<string, string> = {}): void {
  sendJson(res, status, { error: { message, type, param: null, code: status } }, headers);
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
  options: { reasoning: ReasoningMode; truncate: boolean; noDiff: boolean; tokenIds: boolean; logprobs: boolean },
): BuiltChoice {
  const proposal = proposeAnswer(options.noDiff ? '' : lastUser, seed);
  const answer = options.noDiff
    ? 'I reviewed the program; it already looks well tuned, so I suggest keeping it as it is.'
    : proposal.answer;
  const thinking = options.reasoning !== 'none';
  const generated = thinking ? `<think>\n${proposal.reasoning}\n</think>\n\n${answer}` : answer;
  const pieces = tokenPieces(generated);
  let limit = Math.min(maxTokens, pieces.length);
  if (options.truncate) limit = Math.min(limit, Math.max(1, Math.ceil(pieces.length / 2)));
  const kept = pieces.slice(0, limit);
  const finishReason = kept.length < pieces.length ? 'length' : 'stop';
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
      content = null;
    }
  }
  const message: Record<string, unknown> = { role: 'assistant', content, refusal: null, annotations: null, audio: null, function_call: null, tool_calls: [] };
  if (options.reasoning === 'reasoning_content') message.reasoning_content = reasoning;
  if (options.reasoning === 'reasoning') message.reasoning = reasoning;

  const rng = Rng.fromSeed((seed ^ 0x5bd1e995) >>> 0);
  const choice: Record<string, unknown> = {
    index,
    message,
    logprobs: options.logprobs
      ? {
          content: kept.map((piece) => ({
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
  if (options.tokenIds) choice.token_ids = kept.map(tokenId);
  return { choice, completionTokens: kept.length };
}

export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const models = options.models ?? ['test-model'];
  const faultKinds = options.faultKinds ?? FAULT_KINDS;
  const faultRng = Rng.fromSeed(options.faultSeed ?? 0);
  const latencyRng = Rng.fromSeed((options.faultSeed ?? 0) + 1);
  const script = options.script ?? [];
  const reasoningMode = options.reasoning ?? 'none';
  const supportsTokenIds = options.supportsTokenIds ?? true;
  const retryAfterSeconds = options.retryAfterSeconds ?? 1;
  let counters = emptyCounters();
  const records: ChatRequestRecord[] = [];
  let arrivals = 0;
  let completionCounter = 0;
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  let closing = false;

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
    const fault = nextFault();
    if (records.length < MAX_RECORDS) {
      records.push({
        model: body.model,
        n: body.n ?? 1,
        seed: body.seed ?? null,
        temperature: body.temperature ?? null,
        topP: body.top_p ?? null,
        maxTokens: body.max_tokens ?? body.max_completion_tokens ?? null,
        returnTokenIds: body.return_token_ids === true,
        returnPromptTokenIds: body.return_prompt_token_ids === true,
        logprobs: body.logprobs === true,
        authorization: req.headers.authorization ?? null,
        fault,
        extraFields: Object.keys(json as object).filter((k) => !KNOWN_FIELDS.has(k)),
      });
    }
    if (fault !== 'ok') counters.faults[fault]++;

    if (fault === 'rate_limit') {
      const headers: Record<string, string> = { 'retry-after': String(retryAfterSeconds) };
      if (options.retryAfterMs !== undefined && options.retryAfterMs !== null) headers['retry-after-ms'] = String(options.retryAfterMs);
      return sendError(res, 429, 'RateLimitError', 'Too many requests: the server is at capacity.', headers);
    }
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
    const maxTokens = body.max_tokens ?? body.max_completion_tokens ?? 16;
    const wantTokenIds = supportsTokenIds && body.return_token_ids === true;
    const choices: Record<string, unknown>[] = [];
    let completionTokens = 0;
    for (let i = 0; i < n; i++) {
      const built = buildChoice(i, lastUser ? textOf(lastUser.content) : '', seed + i, maxTokens, {
        reasoning: reasoningMode,
        truncate: fault === 'truncate',
        noDiff: fault === 'no_diff',
        tokenIds: wantTokenIds,
        logprobs: body.logprobs === true,
      });
      choices.push(built.choice);
      completionTokens += built.completionTokens;
    }
    const prompt =
      body.messages.map((m) => `<|im_start|>${m.role}\n${textOf(m.content)}<|im_end|>\n`).join('') + '<|im_start|>assistant\n';
    const promptIds = tokenize(prompt);
    const sglang = options.tokenIdsStyle === 'sglang';
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
      usage: {
        prompt_tokens: promptIds.length,
        total_tokens: promptIds.length + completionTokens,
        completion_tokens: completionTokens,
        prompt_tokens_details: null,
      },
    };
    if (!sglang) Object.assign(reply, { prompt_logprobs: null, prompt_token_ids: wantTokenIds ? promptIds : null, kv_transfer_params: null });
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
    if (options.apiKey && req.headers.authorization !== `Bearer ${options.apiKey}`) {
      req.resume();
      return sendError(res, 401, 'AuthenticationError', 'Invalid API key.');
    }
    if (req.method === 'GET' && url.pathname === '/v1/models') {
      counters.modelsRequests++;
      const created = Math.floor(Date.now() / 1000);
      return sendJson(res, 200, {
        object: 'list',
        data: models.map((id) => ({
          id,
          object: 'model',
          created,
          owned_by: 'vllm',
          root: id,
          parent: null,
          max_model_len: options.maxModelLen ?? 32768,
          permission: [],
        })),
      });
    }
    if (req.method === 'GET' && url.pathname === '/health') {
      res.writeHead(200);
      return void res.end();
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
    resetCounters() {
      const inFlight = counters.inFlight;
      counters = emptyCounters();
      counters.inFlight = inFlight;
      counters.maxInFlight = inFlight;
      records.length = 0;
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
