// Reading replies of OpenAI-compatible servers: zod schemas for the fields we
// use (including the ones the SDK does not type: vLLM's `prompt_token_ids` /
// `token_ids`, `reasoning_content` / `reasoning`, SGLang's
// `metadata.weight_version`), and splitting reasoning from the answer.
import { z } from 'zod';
import { splitLeadingReasoning } from '../common/diff';
import type { TokenTrace } from '../common/types';

const TokenIds = z.array(z.number().int().nonnegative());

const ChoiceSchema = z.object({
  index: z.number().int().nonnegative().optional(),
  message: z.object({
    content: z.string().nullish(),
    reasoning_content: z.string().nullish(),
    reasoning: z.string().nullish(),
  }),
  finish_reason: z.string().nullish(),
  token_ids: TokenIds.nullish(),
  // SGLang puts the prompt ids on each choice; vLLM on the response.
  prompt_token_ids: TokenIds.nullish(),
  logprobs: z.object({ content: z.array(z.object({ logprob: z.number() })).nullish() }).nullish(),
});

export const ChatCompletionSchema = z.object({
  choices: z.array(ChoiceSchema).min(1),
  usage: z
    .object({
      prompt_tokens: z.number().int().nonnegative().nullish(),
      completion_tokens: z.number().int().nonnegative().nullish(),
    })
    .nullish(),
  prompt_token_ids: TokenIds.nullish(),
  metadata: z.object({ weight_version: z.union([z.string(), z.number()]).nullish() }).nullish(),
});
export type ChatCompletionReply = z.infer<typeof ChatCompletionSchema>;
export type ChatChoice = z.infer<typeof ChoiceSchema>;

export const ModelListSchema = z.object({
  // max_model_len: the context length vLLM's and SGLang's ModelCard list.
  data: z.array(z.object({ id: z.string().min(1), max_model_len: z.number().int().positive().nullish() })),
});

/** One choice, read: the answer, the reasoning, tokens. */
export interface ReadChoice {
  content: string;
  reasoning: string | null;
  finishReason: string;
  truncated: boolean;
  completionTokens: number | null; // from token ids when given
  tokens: TokenTrace | null;
}

/**
 * Separate reasoning from the answer: the server's reasoning field plus a
 * leading <think>...</think> (or a leading "...</think>" whose opening tag
 * was in the chat template, or an unclosed leading <think> of a truncated
 * reply). Any other <think> is part of the answer (docs/algorithm.md section 3:
 * inside a SEARCH/REPLACE section it is code).
 */
export function splitReasoning(content: string, reasoningField: string | null): { content: string; reasoning: string | null } {
  const parts: string[] = [];
  if (reasoningField && reasoningField.trim()) parts.push(reasoningField.trim());
  const { reasoning, answer } = splitLeadingReasoning(content);
  if (reasoning && reasoning.trim()) parts.push(reasoning.trim());
  return { content: answer.trim(), reasoning: parts.length > 0 ? parts.join('\n\n') : null };
}

/** Read one choice; promptTokenIds are the response's (vLLM) or the choice's (SGLang). */
export function readChoice(choice: ChatChoice, responsePromptIds: number[] | null): ReadChoice {
  const field = choice.message.reasoning_content ?? choice.message.reasoning ?? null;
  const { content, reasoning } = splitReasoning(choice.message.content ?? '', field);
  const finishReason = choice.finish_reason ?? 'unknown';
  const completionIds = choice.token_ids ?? null;
  const promptIds = choice.prompt_token_ids ?? responsePromptIds;
  let tokens: TokenTrace | null = null;
  // A trainer needs both sides; half a trace is no trace.
  if (completionIds && promptIds) {
    const logprobs = choice.logprobs?.content?.map((c) => c.logprob) ?? null;
    tokens = {
      promptTokenIds: promptIds,
      completionTokenIds: completionIds,
      // Only aligned logprobs are of use to a trainer.
      completionLogprobs: logprobs && logprobs.length === completionIds.length ? logprobs : null,
    };
  }
  return {
    content,
    reasoning,
    finishReason,
    truncated: finishReason === 'length',
    completionTokens: completionIds ? completionIds.length : null,
    tokens,
  };
}

/** Split `total` over `count` parts as evenly as integers allow (first parts get the remainder). */
export function splitEvenly(total: number, count: number): number[] {
  const base = Math.floor(total / count);
  const rest = total - base * count;
  return Array.from({ length: count }, (_, i) => base + (i < rest ? 1 : 0));
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
