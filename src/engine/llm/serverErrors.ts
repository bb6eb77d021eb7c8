// What inference servers say when they refuse a request, read whatever the
// body's shape: OpenAI's and vLLM >= 0.10.1's {error: {message, type, code}},
// SGLang's and vLLM <= 0.10.0's flat {object: "error", message, type, code},
// vLLM's 503 {error: "plain string"}, FastAPI's {detail}. And the
// context-length 400 of each, with the numbers it gives.
import { z } from 'zod';

const Code = z.union([z.number(), z.string()]).nullish();
const NestedError = z.object({
  error: z.object({ message: z.unknown(), type: z.string().nullish(), code: Code, param: z.string().nullish() }),
});
const StringError = z.object({ error: z.string().min(1) });
const FlatError = z.object({ message: z.string().min(1), type: z.string().nullish(), code: Code, param: z.string().nullish() });
const DetailError = z.object({ detail: z.union([z.string().min(1), z.array(z.object({ msg: z.string() })).min(1)]) });

export interface ServerErrorInfo {
  message: string;
  type: string | null;
  code: number | string | null;
  param: string | null;
}

/** The error a reply body carries, in any of the shapes above; null when it carries none. */
export function serverErrorOf(body: unknown): ServerErrorInfo | null {
  const nested = NestedError.safeParse(body);
  if (nested.success) {
    const { message, type, code, param } = nested.data.error;
    const text = typeof message === 'string' ? message : message === undefined || message === null ? '' : JSON.stringify(message);
    return { message: text, type: type ?? null, code: code ?? null, param: param ?? null };
  }
  const plain = StringError.safeParse(body);
  if (plain.success) return { message: plain.data.error, type: null, code: null, param: null };
  const flat = FlatError.safeParse(body);
  if (flat.success)
    return { message: flat.data.message, type: flat.data.type ?? null, code: flat.data.code ?? null, param: flat.data.param ?? null };
  const detail = DetailError.safeParse(body);
  if (detail.success) {
    const d = detail.data.detail;
    return { message: typeof d === 'string' ? d : d.map((item) => item.msg).join('; '), type: null, code: null, param: null };
  }
  return null;
}

/**
 * The body in the nested shape the `openai` SDK reads (it takes only
 * `body.error` as an object, so a flat or string error would read
 * "status code (no body)"); bodies without an error pass unchanged.
 */
export function normalizedErrorBody(body: unknown): unknown {
  const info = serverErrorOf(body);
  return info ? { error: info } : body;
}

/** What a context-length refusal says; each number null when the message does not give it. */
export interface ContextRejection {
  contextLength: number | null;
  promptTokens: number | null;
}

const CONTEXT_WORDS = /context length|context window|max_model_len|maximum context/i;
const CONTEXT_LENGTH_PATTERNS = [/maximum context length (?:is|of) (\d+)/i, /context length \((\d+) tokens\)/i];
const PROMPT_TOKEN_PATTERNS = [
  /(\d+) in the messages/i, // vLLM <= 0.10.0
  /request has (\d+) input tokens/i, // vLLM, the prompt alone
  /prompt contains (?:at least )?(\d+) input tokens/i, // vLLM >= 0.19
  /and your request has (\d+) input tokens/i, // vLLM 0.10.x - 0.11
  /(\d+) tokens from the input messages/i, // SGLang
  /The input \((\d+) tokens\)/i, // SGLang, the prompt alone
  /requested (\d+) tokens in the messages/i, // vLLM <= 0.10.0, the prompt alone
];

function firstNumber(text: string, patterns: RegExp[]): number | null {
  for (const pattern of patterns) {
    const match = pattern.exec(text);
    if (match?.[1]) return Number.parseInt(match[1], 10);
  }
  return null;
}

/** The context-length refusal a 400's message describes, or null when it is about something else. */
export function contextRejectionOf(message: string): ContextRejection | null {
  if (!CONTEXT_WORDS.test(message)) return null;
  return { contextLength: firstNumber(message, CONTEXT_LENGTH_PATTERNS), promptTokens: firstNumber(message, PROMPT_TOKEN_PATTERNS) };
}

/** True when a refusal names the extra fields we send for RL (a server that does not accept them). */
export function rejectsTokenFields(message: string): boolean {
  return /return_token_ids|return_prompt_token_ids|logprobs/i.test(message);
}
