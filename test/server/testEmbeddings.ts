// The test server's /v1/embeddings, shaped as vLLM's
// (entrypoints/openai/protocol.py EmbeddingCompletionRequest and
// EmbeddingResponse): float vectors of the test model's embedText, one per
// input, in order; with encoding_format base64, each vector's float32
// little-endian bytes (as vLLM sends them), unless the server is made to
// refuse base64 (as a server sending floats only).
import { endianness } from 'node:os';
import { z } from 'zod';
import { embedText, tokenize } from './testModel';

const EmbeddingRequest = z.object({
  model: z.string(),
  input: z.union([z.string(), z.array(z.string()).min(1)]),
  encoding_format: z.enum(['float', 'base64']).nullish(),
});

export type EmbeddingsAnswer =
  { error: { status: number; type: string; message: string } } | { reply: Record<string, unknown>; texts: number };

/** The reply to one /v1/embeddings request body (null: unreadable), or the error to send. */
export function embeddingsAnswer(
  raw: Buffer | null,
  models: readonly string[],
  requestNumber: number,
  dimensions: number | undefined,
  base64 = true,
): EmbeddingsAnswer {
  let json: unknown = null;
  try {
    json = raw === null ? null : JSON.parse(raw.toString('utf8'));
  } catch {
    json = null;
  }
  const parsed = EmbeddingRequest.safeParse(json);
  if (!parsed.success)
    return { error: { status: 400, type: 'BadRequestError', message: 'Invalid request: send {model, input: string | string[]}.' } };
  const body = parsed.data;
  if (!models.includes(body.model))
    return { error: { status: 404, type: 'NotFoundError', message: `The model \`${body.model}\` does not exist.` } };
  if (body.encoding_format === 'base64' && !base64)
    return { error: { status: 400, type: 'BadRequestError', message: 'This test server sends float embeddings only.' } };
  const encode = (vector: number[]): number[] | string => {
    if (body.encoding_format !== 'base64') return vector;
    const floats = Float32Array.from(vector);
    if (endianness() === 'LE') return Buffer.from(floats.buffer).toString('base64');
    const bytes = Buffer.alloc(floats.length * 4);
    floats.forEach((x, i) => bytes.writeFloatLE(x, i * 4));
    return bytes.toString('base64');
  };
  const inputs = typeof body.input === 'string' ? [body.input] : body.input;
  const tokens = inputs.reduce((n, text) => n + tokenize(text).length, 0);
  return {
    texts: inputs.length,
    reply: {
      id: `embd-test-${requestNumber}`,
      object: 'list',
      created: Math.floor(Date.now() / 1000),
      model: body.model,
      data: inputs.map((text, index) => ({ index, object: 'embedding', embedding: encode(embedText(text, dimensions)) })),
      usage: { prompt_tokens: tokens, total_tokens: tokens, completion_tokens: 0, prompt_tokens_details: null },
    },
  };
}
