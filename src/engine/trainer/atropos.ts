// The atropos protocol (NousResearch/atropos atroposlib/api/server.py): the
// environment registers with POST /register-env {max_token_length,
// desired_name, weight, group_size} -> {env_id, starting_step, ...} (or
// {status: "wait for trainer to start"} until the trainer polled /batch),
// posts one ScoredData per group to POST /scored_data, and reads the
// trainer's step from GET /status-env (the env id in a JSON body). The
// server keeps everything in memory: after a restart the env registers
// again. /scored_data has no idempotency key, so after an ambiguous failure
// GET /latest_example tells whether the group already arrived.
import { z } from 'zod';
import { describeReply, type HttpReply, JsonHttpClient, TransportError } from './http';
import { type DeliveryResult, RetryableTrainerError, TrainerConfigError, type TrainerProtocolClient } from './protocol';
import type { SpooledGroup, SpooledSample, TrainerSpool } from './spool';

/** Mask value of prompt positions (what the trainer's loss ignores). */
export const PROMPT_MASK = -100;
/** inference_logprobs value of prompt positions (atropos' ManagedServer convention: > 0 is impossible, so "masked"). */
export const PROMPT_LOGPROB = 1.0;

const RegisterReplySchema = z.object({
  status: z.string().optional(),
  env_id: z.number().int().min(0).optional(),
  starting_step: z.number().int().optional(),
});
const StatusReplySchema = z.object({ current_step: z.number().int(), queue_size: z.number().optional() });
const InfoReplySchema = z.object({ batch_size: z.number().int(), max_token_len: z.number().int().optional() });
const ScoredReplySchema = z.object({ status: z.string() });
const LatestExampleSchema = z.object({
  tokens: z.array(z.array(z.number())).optional(),
  scores: z.array(z.number()).optional(),
  group_overrides: z.record(z.string(), z.unknown()).nullish(),
});

export interface AtroposScoredData {
  tokens: number[][];
  masks: number[][];
  scores: number[];
  inference_logprobs?: number[][];
  messages: { role: string; content: string }[][];
  group_overrides: { thetaevolve: Record<string, unknown> };
  env_id: number | null;
}

/** The completion as the model wrote it: reasoning (when the server split it off) before the answer. */
export function assistantText(sample: Pick<SpooledSample, 'content' | 'reasoning'>): string {
  return sample.reasoning ? `<think>\n${sample.reasoning}\n</think>\n\n${sample.content}` : sample.content;
}

/**
 * One group as atropos ScoredData. Samples without token ids cannot be sent
 * (atropos trains on the ids) and are left out; inference_logprobs is sent
 * only when every sample has logprobs, aligned with tokens (1.0 on the prompt).
 */
export function atroposScoredData(group: SpooledGroup, envId: number | null): { payload: AtroposScoredData; left: SpooledSample[]; withoutTokens: number } {
  const left = group.samples.filter((s) => s.promptTokenIds !== null && s.completionTokenIds !== null);
  const withLogprobs = left.every((s) => s.completionLogprobs !== null && s.completionLogprobs.length === (s.completionTokenIds as number[]).length);
  const tokens: number[][] = [];
  const masks: number[][] = [];
  const logprobs: number[][] = [];
  for (const s of left) {
    const prompt = s.promptTokenIds as number[];
    const completion = s.completionTokenIds as number[];
    tokens.push([...prompt, ...completion]);
    masks.push([...prompt.map(() => PROMPT_MASK), ...completion]);
    if (withLogprobs) logprobs.push([...prompt.map(() => PROMPT_LOGPROB), ...(s.completionLogprobs as number[])]);
  }
  const payload: AtroposScoredData = {
    tokens,
    masks,
    scores: left.map((s) => s.reward),
    messages: left.map((s) => [...group.messages, { role: 'assistant', content: assistantText(s) }]),
    group_overrides: {
      thetaevolve: {
        group_uid: group.id,
        group_key: group.key,
        step: group.step,
        parent_id: group.parentId,
        policy_version: group.policyVersion,
        sample_indices: left.map((s) => s.index),
        raw_scores: left.map((s) => s.score),
        objectives: left.map((s) => s.objective),
        outcomes: left.map((s) => s.outcome),
        finish_reasons: left.map((s) => s.finishReason),
      },
    },
    env_id: envId,
  };
  if (withLogprobs && left.length > 0) payload.inference_logprobs = logprobs;
  return { payload, left, withoutTokens: group.samples.length - left.length };
}

function transport(error: unknown, what: string): never {
  if (error instanceof TransportError) throw new RetryableTrainerError(`${what}: ${error.message}`, error.ambiguous);
  throw error;
}

export interface AtroposOptions {
  url: string;
  groupSize: number;
  maxTokenLength: number;
  name: string;
  timeoutMs: number;
  /** Told once per problem worth a person's attention. */
  onWarning: (message: string) => void;
  /** Sequences one step of ours gives (B x n), to warn when the trainer's batch needs more. */
  sequencesPerStep: number;
}

export class AtroposClient implements TrainerProtocolClient {
  readonly protocol = 'atropos' as const;
  readonly hasStepSource = true;
  private readonly http: JsonHttpClient;
  private readonly options: AtroposOptions;
  private envId: number | null = null;
  private warnedBatch = false;
  private warnedTokens = false;

  constructor(options: AtroposOptions) {
    this.options = options;
    this.http = new JsonHttpClient(options.url, { timeoutMs: options.timeoutMs });
  }

  get registeredEnvId(): number | null {
    return this.envId;
  }

  private async call(method: 'GET' | 'POST', path: string, body: unknown, signal: AbortSignal): Promise<HttpReply> {
    try {
      return await this.http.request(method, path, body, signal);
    } catch (error) {
      return transport(error, `${method} ${path}`);
    }
  }

  async connect(signal: AbortSignal): Promise<void> {
    await this.register(signal);
    const info = await this.call('GET', '/info', undefined, signal).catch(() => null);
    const parsed = info && info.status === 200 ? InfoReplySchema.safeParse(info.json) : null;
    if (parsed?.success && parsed.data.batch_size > this.options.sequencesPerStep && !this.warnedBatch) {
      this.warnedBatch = true;
      this.options.onWarning(
        `the atropos trainer takes a step every ${parsed.data.batch_size} sequences but one evolution step gives ${this.options.sequencesPerStep} (B x n): ` +
          'in synchronous mode each step will wait for the trainer until trainer.syncTimeoutSeconds; match the trainer batch size to B x n.',
      );
    }
  }

  private async register(signal: AbortSignal): Promise<number> {
    const body = { max_token_length: this.options.maxTokenLength, desired_name: this.options.name, weight: 1.0, group_size: this.options.groupSize };
    const reply = await this.call('POST', '/register-env', body, signal);
    if (reply.status === 404 || reply.status === 405) {
      throw new TrainerConfigError(
        `${this.http.url('/register-env').href} answered ${describeReply(reply)}: is ${this.options.url} an atropos API server (\`run-api\`, default port 8000)?`,
      );
    }
    if (reply.status === 422 || reply.status === 400) throw new TrainerConfigError(`the atropos server refused our registration: ${describeReply(reply)}`);
    if (reply.status !== 200) throw new RetryableTrainerError(`POST /register-env: ${describeReply(reply)}`);
    const parsed = RegisterReplySchema.safeParse(reply.json);
    if (!parsed.success) throw new TrainerConfigError(`POST /register-env did not answer like an atropos API server: ${describeReply(reply)}`);
    if (parsed.data.env_id === undefined) {
      throw new RetryableTrainerError(`the atropos trainer has not started yet (register-env: ${parsed.data.status ?? 'no env_id'})`);
    }
    this.envId = parsed.data.env_id;
    return this.envId;
  }

  async deliver(group: SpooledGroup, spool: TrainerSpool, signal: AbortSignal): Promise<DeliveryResult> {
    const envId = this.envId ?? (await this.register(signal));
    const { payload, left, withoutTokens } = atroposScoredData(group, envId);
    if (withoutTokens > 0 && !this.warnedTokens) {
      this.warnedTokens = true;
      this.options.onWarning(`${withoutTokens} response(s) of group ${group.key} came without token ids and are left out of what atropos receives`);
    }
    if (left.length === 0) return { kind: 'rejected', reason: 'no response of the group has token ids' };
    const reply = await this.call('POST', '/scored_data', payload, signal);
    if (reply.status === 200) {
      if (!ScoredReplySchema.safeParse(reply.json).success) throw new RetryableTrainerError(`POST /scored_data: unexpected reply ${describeReply(reply)}`, true);
      await spool.ack([group.id], { sync: true });
      return { kind: 'delivered' };
    }
    if (reply.status >= 400 && reply.status < 500 && reply.status !== 404 && reply.status !== 408 && reply.status !== 429) {
      return { kind: 'rejected', reason: `POST /scored_data: ${describeReply(reply)}` };
    }
    throw new RetryableTrainerError(`POST /scored_data: ${describeReply(reply)}`);
  }

  async reconcile(group: SpooledGroup, signal: AbortSignal): Promise<boolean> {
    const reply = await this.call('GET', '/latest_example', undefined, signal);
    if (reply.status !== 200) throw new RetryableTrainerError(`GET /latest_example: ${describeReply(reply)}`);
    const parsed = LatestExampleSchema.safeParse(reply.json);
    if (!parsed.success) return false;
    const ours = parsed.data.group_overrides?.thetaevolve;
    if (typeof ours === 'object' && ours !== null && (ours as Record<string, unknown>).group_uid === group.id) return true;
    const { payload } = atroposScoredData(group, this.envId);
    return JSON.stringify(parsed.data.tokens) === JSON.stringify(payload.tokens) && JSON.stringify(parsed.data.scores) === JSON.stringify(payload.scores);
  }

  async readStep(signal: AbortSignal): Promise<number> {
    if (this.envId === null) await this.register(signal).catch((error: unknown) => {
      if (error instanceof TrainerConfigError) throw error;
    });
    if (this.envId !== null) {
      const reply = await this.call('GET', '/status-env', { env_id: this.envId }, signal);
      const parsed = reply.status === 200 ? StatusReplySchema.safeParse(reply.json) : null;
      if (parsed?.success) return parsed.data.current_step;
      // A restarted server no longer knows our env (500): register again on the next call.
      this.envId = null;
    }
    const reply = await this.call('GET', '/status', undefined, signal);
    const parsed = reply.status === 200 ? StatusReplySchema.safeParse(reply.json) : null;
    if (!parsed?.success) throw new RetryableTrainerError(`GET /status: ${describeReply(reply)}`);
    return parsed.data.current_step;
  }

  close(): void {
    this.http.close();
  }
}
