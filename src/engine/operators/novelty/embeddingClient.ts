// Novelty rejection's embeddings (docs/algorithm.md section 12): the code is
// embedded through an OpenAI-compatible `/v1/embeddings` (vLLM and SGLang
// serve it for embedding models) with the `openai` client; the reply is
// checked before any number of it is used. Every failure is an
// EmbeddingEndpointError naming the server: infrastructure, never the model's.
import { endianness } from 'node:os';
import OpenAI from 'openai';
import { z } from 'zod';
import { errorMessage, firstZodIssue, ThetaEvolveError } from '../../common/errors';
import { PLACEHOLDER_API_KEY } from '../../llm/endpointConnection';

/** The embedding server failed or answered something unusable. */
export class EmbeddingEndpointError extends ThetaEvolveError {
  override readonly name = 'EmbeddingEndpointError';
}

/** Whether float32 bytes in memory are little-endian, as base64 embeddings are (then they are copied as they are). */
const LITTLE_ENDIAN = endianness() === 'LE';

/** Longest vector taken. */
const MAX_DIMENSIONS = 65536;

/** The reply's shape; each vector's numbers are checked while copied (a step's reply holds half a million). */
const EmbeddingReply = z.object({
  data: z
    .array(
      z.object({
        index: z.number().int().min(0),
        embedding: z.union([
          z.custom<unknown[]>((v) => Array.isArray(v) && v.length > 0 && v.length <= MAX_DIMENSIONS, 'a list of 1 to 65536 numbers'),
          // encoding_format base64: the float32 values' little-endian bytes.
          z
            .string()
            .min(1)
            .max(Math.ceil((MAX_DIMENSIONS * 4) / 3) * 4),
        ]),
      }),
    )
    .min(1),
});

/** The vector as float32, or null when an entry is no finite number (or the bytes are no whole float32s). */
function floatVector(values: readonly unknown[] | string): Float32Array | null {
  if (typeof values === 'string') {
    const bytes = Buffer.from(values, 'base64');
    if (bytes.length === 0 || bytes.length % 4 !== 0) return null;
    const out = new Float32Array(bytes.length / 4);
    if (LITTLE_ENDIAN) new Uint8Array(out.buffer).set(bytes);
    else for (let i = 0; i < out.length; i++) out[i] = bytes.readFloatLE(i * 4);
    for (let i = 0; i < out.length; i++) if (!Number.isFinite(out[i] as number)) return null;
    return out;
  }
  const out = new Float32Array(values.length);
  for (let i = 0; i < values.length; i++) {
    const x = values[i];
    if (typeof x !== 'number' || !Number.isFinite(x)) return null;
    out[i] = x;
  }
  return out;
}

/** The server refused the request itself (an encoding it does not send), as against failing. */
function refused(err: unknown): boolean {
  return err instanceof OpenAI.APIError && (err.status === 400 || err.status === 422);
}
const ModelList = z.object({ data: z.array(z.object({ id: z.string() })) });

export interface EmbeddingClientOptions {
  baseURL: string;
  /** '' = the only model the server lists. */
  model: string;
  /** Sent only to the run's own endpoint (the caller decides). */
  apiKey: string | undefined;
  requestTimeoutMs: number;
}

export class EmbeddingClient {
  readonly baseURL: string;
  private readonly client: OpenAI;
  private model: string;
  /**
   * Vectors are asked for as base64 (float32 bytes: a quarter of the JSON numbers' size, read without parsing them,
   * the same values), and as JSON numbers from a server that refuses base64, for the rest of the run.
   */
  private base64 = true;

  constructor(options: EmbeddingClientOptions) {
    this.baseURL = options.baseURL.trim().replace(/\/+$/, '');
    this.model = options.model;
    this.client = new OpenAI({
      baseURL: this.baseURL,
      apiKey: options.apiKey || PLACEHOLDER_API_KEY,
      organization: null,
      project: null,
      maxRetries: 1,
      timeout: options.requestTimeoutMs,
      logLevel: 'off',
    });
  }

  /** One vector per text, in order, from one request. */
  async embed(texts: readonly string[], signal?: AbortSignal): Promise<Float32Array[]> {
    if (texts.length === 0) return [];
    let reply: unknown;
    // The SDK adds an abort listener to the signal it is given and never removes it: it gets one of this request's own,
    // linked to the caller's only while the request runs (the run's signal outlives thousands of requests).
    const request = new AbortController();
    const abort = (): void => request.abort(signal?.reason);
    if (signal?.aborted) abort();
    else signal?.addEventListener('abort', abort, { once: true });
    try {
      const model = await this.resolveModel(request.signal);
      // The encoding always named: the SDK decodes base64 itself only when none is.
      const ask = (encoding: 'base64' | 'float'): Promise<unknown> =>
        this.client.embeddings.create({ model, input: [...texts], encoding_format: encoding }, { signal: request.signal });
      try {
        try {
          reply = await ask(this.base64 ? 'base64' : 'float');
        } catch (err) {
          if (!this.base64 || !refused(err)) throw err;
          reply = await ask('float');
          this.base64 = false;
        }
      } catch (err) {
        throw new EmbeddingEndpointError(`the embedding server at ${this.baseURL} failed: ${errorMessage(err)}`, { cause: err });
      }
    } finally {
      signal?.removeEventListener('abort', abort);
    }
    const parsed = EmbeddingReply.safeParse(reply);
    if (!parsed.success) {
      const { path, message } = firstZodIssue(parsed.error, 'reply');
      throw new EmbeddingEndpointError(`the embedding server at ${this.baseURL} sent an unusable reply (${path}: ${message})`);
    }
    const out: (Float32Array | undefined)[] = new Array(texts.length);
    for (const item of parsed.data.data) {
      const vector = floatVector(item.embedding);
      if (vector === null)
        throw new EmbeddingEndpointError(
          `the embedding server at ${this.baseURL} sent a vector holding something other than finite numbers`,
        );
      if (item.index < texts.length) out[item.index] = vector;
    }
    const dimensions = out[0]?.length;
    if (out.some((v) => v === undefined || v.length !== dimensions))
      throw new EmbeddingEndpointError(
        `the embedding server at ${this.baseURL} sent ${parsed.data.data.length} vector(s) for ${texts.length} text(s), or vectors of different lengths`,
      );
    return out as Float32Array[];
  }

  private async resolveModel(signal?: AbortSignal): Promise<string> {
    if (this.model !== '') return this.model;
    let listed: string[];
    try {
      const parsed = ModelList.parse(await this.client.models.list({ signal }).then((page) => ({ data: page.data })));
      listed = parsed.data.map((m) => m.id);
    } catch (err) {
      throw new EmbeddingEndpointError(`the embedding server at ${this.baseURL} did not list its models: ${errorMessage(err)}`, {
        cause: err,
      });
    }
    if (listed.length !== 1)
      throw new EmbeddingEndpointError(
        `the embedding server at ${this.baseURL} lists ${listed.length === 0 ? 'no model' : listed.join(', ')}: set thetaevolve.novelty.embeddingModel`,
      );
    this.model = listed[0] as string;
    return this.model;
  }
}
