// Fitting responses into the server's context window: the max_tokens a
// job's requests may ask for (thetaevolve.maxTokens, or what the context
// leaves after the prompt), and after a context-length refusal (HTTP 400)
// the smaller max_tokens to retry with, from the sizes the server names.
import type { ChatMessage, GenerationJob } from '../common/types';
import type { RetryBudget } from '../async/retryBudget';
import type { EndpointConnection } from './endpointConnection';
import type { ContextRejection } from './serverErrors';
import type { ServerProbe } from './serverProbe';

/** Most context-length refusals of one request answered with a smaller max_tokens. */
export const MAX_CONTEXT_RETRIES = 3;

/** What the user can change when a response does not fit the server's context. */
const CONTEXT_ADVICE =
  'lower thetaevolve.maxTokens, or start the server with a longer context (vLLM --max-model-len, SGLang --context-length)';

/** A prompt's token count: exact (the server's tokenizer or its own 400) or a conservative estimate. */
export interface PromptCount {
  tokens: number;
  exact: boolean;
}

/** Prompt token counts of one generate() call by job key (one count serves the job's n requests). */
export type PromptCounts = Map<string, Promise<PromptCount>>;

/**
 * An upper estimate of a chat prompt's tokens where the server cannot count
 * them: two bytes of UTF-8 per token (real tokenizers average three to four
 * on code and English) plus the chat template's tokens per message. A
 * context-length 400 then gives the exact count.
 */
export function estimatePromptTokens(messages: readonly ChatMessage[]): number {
  return messages.reduce((n, m) => n + Math.ceil(Buffer.byteLength(m.content, 'utf8') / 2) + 8, 8);
}

export class ContextBudget {
  /** The served model's context (max_model_len), from /v1/models or a context-length 400; null while unknown. */
  private contextLength: number | null = null;
  private capWarned = false;

  constructor(
    private readonly connection: EndpointConnection,
    private readonly probe: ServerProbe,
  ) {}

  /** The served model's context length (max_model_len) once known, else null. */
  get serverContextLength(): number | null {
    return this.contextLength;
  }

  /** The context the server lists for the model (null: it lists none, and what was learnt stays). */
  learnListedContext(contextLength: number | null): void {
    this.contextLength = contextLength ?? this.contextLength;
  }

  /**
   * The max_tokens a job's requests may ask for: thetaevolve.maxTokens, or
   * less where the server's context leaves less after the prompt (the one
   * token spare covers SGLang, which refuses prompt + max_tokens == context).
   * An error when the prompt alone fills the context.
   */
  async maxTokensFor(
    job: GenerationJob,
    model: string,
    counts: PromptCounts,
    signal: AbortSignal,
  ): Promise<{ maxTokens: number | null; error: string | null }> {
    const wanted = this.connection.options.maxTokens;
    const context = this.contextLength;
    if (context === null) return { maxTokens: wanted, error: null };
    let count = counts.get(job.key);
    if (!count) {
      const estimate = estimatePromptTokens(job.messages);
      if (estimate + wanted < context) return { maxTokens: wanted, error: null }; // fits even by the upper estimate
      count = this.probe
        .countPromptTokens(job.messages, model, signal)
        .then((exact) => (exact === null ? { tokens: estimate, exact: false } : { tokens: exact, exact: true }));
      counts.set(job.key, count);
    }
    const prompt = await count;
    const room = context - prompt.tokens - 1;
    if (room < 1) {
      // An estimate may be too high: let the server's own check decide.
      if (!prompt.exact) return { maxTokens: wanted, error: null };
      return {
        maxTokens: null,
        error:
          `the prompt (${prompt.tokens} tokens) leaves no room for a response in the server's context of ${context} tokens ` +
          `(max_model_len): start the server with a longer context (vLLM --max-model-len, SGLang --context-length); lowering thetaevolve.maxTokens cannot help`,
      };
    }
    if (room >= wanted) return { maxTokens: wanted, error: null };
    if (!this.capWarned) {
      this.capWarned = true;
      this.connection.warn(
        `The server's context (${context} tokens) leaves about ${room} tokens for a response after a ${prompt.tokens}-token prompt, ` +
          `less than thetaevolve.maxTokens (${wanted}): requests ask for what fits. To silence this, ${CONTEXT_ADVICE}.`,
      );
    }
    return { maxTokens: room, error: null };
  }

  /**
   * After a context-length refusal of a request that asked for `sent`
   * tokens: the smaller max_tokens to retry with (one retry taken from
   * `retries`), or the error to fail with, `refusal` followed by why not.
   */
  retryAfterRefusal(
    job: GenerationJob,
    counts: PromptCounts,
    rejection: ContextRejection,
    sent: number,
    retries: RetryBudget,
    refusal: string,
  ): { maxTokens: number; error: null } | { maxTokens: null; error: string } {
    const next = this.learnFromRefusal(job, counts, rejection, sent);
    if (next.room !== null && next.room < 1) {
      return {
        maxTokens: null,
        error: `${refusal} (the prompt alone fills the server's context: start the server with a longer context, vLLM --max-model-len, SGLang --context-length; lowering thetaevolve.maxTokens cannot help)`,
      };
    }
    if (!retries.canRetry || next.maxTokens === null || next.maxTokens >= sent) {
      return { maxTokens: null, error: `${refusal} (thetaevolve.maxTokens is ${this.connection.options.maxTokens}: ${CONTEXT_ADVICE})` };
    }
    retries.take();
    return { maxTokens: next.maxTokens, error: null };
  }

  /** What a context-length refusal teaches: the context, the prompt's exact count, and the max_tokens to try next (null: no better guess). */
  private learnFromRefusal(
    job: GenerationJob,
    counts: PromptCounts,
    rejection: ContextRejection,
    sent: number,
  ): { maxTokens: number | null; room: number | null } {
    if (rejection.contextLength !== null) this.contextLength = rejection.contextLength;
    const context = this.contextLength;
    if (rejection.promptTokens !== null) {
      counts.set(job.key, Promise.resolve({ tokens: rejection.promptTokens, exact: true }));
      if (context !== null) {
        const room = context - rejection.promptTokens - 1;
        return { maxTokens: room >= 1 ? room : null, room };
      }
    }
    const half = Math.floor(sent / 2);
    return { maxTokens: half >= 1 ? half : null, room: null };
  }
}
