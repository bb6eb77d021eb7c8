// The atropos protocol (NousResearch/atropos atroposlib/api/server.py): the
// environment registers with POST /register-env {max_token_length,
// desired_name, weight, group_size} -> {env_id, starting_step, ...} (or
// {status: "wait for trainer to start"} until the trainer polled /batch),
// posts one ScoredData per group to POST /scored_data, and reads the
// trainer's step from GET /status-env (the env id in a JSON body). The
// server keeps everything in memory, which shapes what this client does:
// - A group the server acknowledged waits in its queue until the trainer
//   pulls it; a restart loses it. So it stays in the spool, marked with the
//   env id it was posted under, until /status-env's self_queue_size shows it
//   pulled (FIFO: our oldest waiting groups go first). A server that no
//   longer knows the env id restarted (env ids only grow on a server that
//   did not: a 500 for it, or our new registration getting the same or a
//   lower id, tells). Of what waited there, the trainer pulled, after our
//   last look, as many sequences as its step advanced times its batch size
//   (exact when only our groups were queued, and when the trainer resumes at
//   the step it reached); the rest was lost and is sent again.
// - A /scored_data that reaches a restarted server before its trainer's
//   /register creates the queue, after which /register never initialises and
//   /batch answers "Trainer not registered" forever. So no group is posted
//   under an env id the server has not confirmed (/status-env) since the last
//   failure, and after any failure the env registers again (which answers
//   "wait for trainer to start" until the trainer is there).
// - /status-env answers 500 also when every env is disconnected (a division
//   by zero), as after earlier runs of ours said goodbye: a 500 counts as a
//   restart only while a registration of ours is in place.
// - The server buffers groups of any other size than the registered
//   group_size and never batches them with full ones: only whole groups of n
//   go out.
// /scored_data has no idempotency key, so after an ambiguous failure GET
// /latest_example tells whether the group already arrived.
import { z } from 'zod';
import { describeReply, type HttpReply, type JsonHttpClient, trainerHttpClient, TransportError } from './http';
import {
  type DeliveryResult,
  RetryableTrainerError,
  type Settlement,
  TrainerConfigError,
  type TrainerProtocolClient,
  type TrainerQueue,
} from './protocol';
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
const StatusEnvReplySchema = z.object({
  current_step: z.number().int(),
  queue_size: z.number().int().optional(),
  self_queue_size: z.number().int().min(0).optional(),
});
const InfoReplySchema = z.object({ batch_size: z.number().int(), max_token_len: z.number().int().optional() });
const ScoredReplySchema = z.object({ status: z.string() });
const LatestExampleSchema = z.object({
  tokens: z.array(z.array(z.number())).optional(),
  scores: z.array(z.number()).optional(),
  group_overrides: z.record(z.string(), z.unknown()).nullish(),
  env_id: z.number().int().nullish(),
});

export interface AtroposScoredData {
  tokens: number[][];
  masks: number[][];
  scores: number[];
  inference_logprobs?: number[][];
  messages: { role: string; content: string }[][];
  /** How the responses were sampled (atropos' trainers assume temperature 1.0 when it is missing). */
  generation_params: Record<string, number>;
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
export function atroposScoredData(
  group: SpooledGroup,
  envId: number | null,
  generationParams: Record<string, number> = {},
  startingStep: number | null = null,
): { payload: AtroposScoredData; left: SpooledSample[]; withoutTokens: number } {
  const left = group.samples.filter((s) => s.promptTokenIds !== null && s.completionTokenIds !== null);
  const withLogprobs = left.every(
    (s) => s.completionLogprobs !== null && s.completionLogprobs.length === (s.completionTokenIds as number[]).length,
  );
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
    generation_params: generationParams,
    group_overrides: {
      thetaevolve: {
        group_uid: group.id,
        group_key: group.key,
        step: group.step,
        parent_id: group.parentId,
        // Sampled before any trainer step was known: the weights the trainer started from.
        policy_version: group.policyVersion ?? (startingStep === null ? null : String(startingStep)),
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
  /** What request to the trainer (or the inference server) is awaited past a few seconds, and null once none is (JsonHttpClientOptions). */
  onAwaiting?: (awaited: string | null) => void;
  /** Sent with every group as generation_params (temperature, top_p, max_tokens). */
  generationParams: Record<string, number>;
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
  /** Our registration as the server last confirmed it; null after any failure (register again before posting). */
  private envId: number | null = null;
  /** Nothing was posted under envId yet: groups waiting under the same id are from before it (the server restarted and handed the id out again). */
  private freshEnv = false;
  /** The groups posted under earlier registrations were settled since envId was handed out (a failed settle must run again before any post). */
  private settledSinceRegistering = true;
  /** starting_step of the first registration: the policy of groups sampled before any trainer step was known. */
  startingStep: number | null = null;
  private warnedBatch = false;
  private warnedTokens = false;
  /** What /status-env last said per env id with groups waiting: the trainer step, and whether the queue held only ours. */
  private readonly lastSeen = new Map<number, { step: number; onlyOurs: boolean }>();

  constructor(options: AtroposOptions) {
    this.options = options;
    this.http = trainerHttpClient(options);
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

  async connect(spool: TrainerSpool, signal: AbortSignal): Promise<void> {
    await this.ensureRegistered(spool, signal);
    const info = await this.call('GET', '/info', undefined, signal).catch(() => null);
    const parsed = info && info.status === 200 ? InfoReplySchema.safeParse(info.json) : null;
    if (parsed?.success && parsed.data.batch_size > this.options.sequencesPerStep && !this.warnedBatch) {
      this.warnedBatch = true;
      this.options.onWarning(
        `the atropos trainer takes a step every ${parsed.data.batch_size} sequences but one evolution step gives ${this.options.sequencesPerStep} (B x n): ` +
          'synchronous mode cannot wait for a trainer step after each of ours (the run goes on while the queue fills a batch); match the trainer batch size to B x n.',
      );
    }
  }

  private async register(signal: AbortSignal): Promise<number> {
    const body = {
      max_token_length: this.options.maxTokenLength,
      desired_name: this.options.name,
      weight: 1.0,
      group_size: this.options.groupSize,
    };
    const reply = await this.call('POST', '/register-env', body, signal);
    if (reply.status === 404 || reply.status === 405) {
      throw new TrainerConfigError(
        `${this.http.url('/register-env').href} answered ${describeReply(reply)}: is ${this.options.url} an atropos API server (\`run-api\`, default port 8000)?`,
      );
    }
    if (reply.status === 422 || reply.status === 400)
      throw new TrainerConfigError(`the atropos server refused our registration: ${describeReply(reply)}`);
    if (reply.status !== 200) throw new RetryableTrainerError(`POST /register-env: ${describeReply(reply)}`);
    const parsed = RegisterReplySchema.safeParse(reply.json);
    if (!parsed.success)
      throw new TrainerConfigError(`POST /register-env did not answer like an atropos API server: ${describeReply(reply)}`);
    if (parsed.data.env_id === undefined) {
      throw new RetryableTrainerError(`the atropos trainer has not started yet (register-env: ${parsed.data.status ?? 'no env_id'})`);
    }
    this.envId = parsed.data.env_id;
    this.freshEnv = true;
    this.settledSinceRegistering = false;
    this.startingStep ??= parsed.data.starting_step ?? null;
    return this.envId;
  }

  /**
   * Our env id, confirmed by the server now (/status-env); when it is not
   * (first use, a failure, a restarted server), register again and settle
   * the groups posted under earlier registrations before anything is posted
   * under the new one (a restarted server may hand out an old id again).
   */
  private async ensureRegistered(spool: TrainerSpool, signal: AbortSignal): Promise<number> {
    if (this.envId !== null) {
      const reply = await this.call('GET', '/status-env', { env_id: this.envId }, signal);
      if (reply.status === 200 && StatusEnvReplySchema.safeParse(reply.json).success) {
        if (!this.settledSinceRegistering) await this.settleAfterRegistering(spool, signal);
        return this.envId;
      }
      this.envId = null;
    }
    const envId = await this.register(signal);
    await this.settleAfterRegistering(spool, signal);
    return envId;
  }

  /** Settle what waited under earlier registrations, before anything is posted under the new one (whose id may be an old one again). */
  private async settleAfterRegistering(spool: TrainerSpool, signal: AbortSignal): Promise<void> {
    await this.settle(spool, signal);
    this.settledSinceRegistering = true;
  }

  async deliver(group: SpooledGroup, spool: TrainerSpool, signal: AbortSignal): Promise<DeliveryResult> {
    const { left, withoutTokens } = atroposScoredData(group, null);
    if (withoutTokens > 0 && !this.warnedTokens) {
      this.warnedTokens = true;
      this.options.onWarning(
        `${withoutTokens} response(s) of group ${group.key} came without token ids; atropos needs whole groups with token ids, so the group is not sent`,
      );
    }
    if (left.length !== this.options.groupSize) {
      return {
        kind: 'rejected',
        reason: `group ${group.key} has ${left.length} response(s) with token ids, not the ${this.options.groupSize} (n) atropos registered: the server would buffer it forever`,
      };
    }
    const envId = await this.ensureRegistered(spool, signal);
    const { payload } = atroposScoredData(group, envId, this.options.generationParams, this.startingStep);
    let reply: HttpReply;
    try {
      reply = await this.call('POST', '/scored_data', payload, signal);
    } catch (error) {
      this.envId = null;
      throw error;
    }
    if (reply.status === 200) {
      if (!ScoredReplySchema.safeParse(reply.json).success) {
        this.envId = null;
        throw new RetryableTrainerError(`POST /scored_data: unexpected reply ${describeReply(reply)}`, true);
      }
      await spool.markPosted(group.id, envId);
      if (envId === this.envId) this.freshEnv = false;
      return { kind: 'delivered' };
    }
    this.envId = null;
    if (reply.status >= 400 && reply.status < 500 && reply.status !== 404 && reply.status !== 408 && reply.status !== 429) {
      return { kind: 'rejected', reason: `POST /scored_data: ${describeReply(reply)}` };
    }
    throw new RetryableTrainerError(`POST /scored_data: ${describeReply(reply)}`);
  }

  async reconcile(group: SpooledGroup, spool: TrainerSpool, signal: AbortSignal): Promise<boolean> {
    const reply = await this.call('GET', '/latest_example', undefined, signal);
    if (reply.status !== 200) throw new RetryableTrainerError(`GET /latest_example: ${describeReply(reply)}`);
    const parsed = LatestExampleSchema.safeParse(reply.json);
    if (!parsed.success) return false;
    const ours = parsed.data.group_overrides?.thetaevolve;
    const held =
      (typeof ours === 'object' && ours !== null && (ours as Record<string, unknown>).group_uid === group.id) ||
      JSON.stringify(parsed.data.tokens) === JSON.stringify(atroposScoredData(group, null).payload.tokens);
    const envId = parsed.data.env_id;
    if (!held || envId === null || envId === undefined) return false;
    await spool.markPosted(group.id, envId);
    if (envId === this.envId) this.freshEnv = false;
    return true;
  }

  awaitsTrainer(group: SpooledGroup, spool: TrainerSpool): boolean {
    return spool.postedEnv(group.id) !== undefined;
  }

  async settle(spool: TrainerSpool, signal: AbortSignal): Promise<Settlement> {
    const byEnv = new Map<number, SpooledGroup[]>();
    for (const g of spool.pending()) {
      const env = spool.postedEnv(g.id);
      if (env === undefined) continue;
      byEnv.set(env, [...(byEnv.get(env) ?? []), g]);
    }
    const result: Settlement = { pulled: 0, resent: 0, lost: 0 };
    for (const [env, waiting] of byEnv) {
      if (this.envId !== null && (env > this.envId || (env === this.envId && this.freshEnv))) {
        // Our newest registration got this id or a lower one: the server restarted since these were posted.
        await this.restarted(env, waiting, spool, signal, result);
        continue;
      }
      const reply = await this.call('GET', '/status-env', { env_id: env }, signal);
      if (reply.status === 200) {
        const parsed = StatusEnvReplySchema.safeParse(reply.json);
        if (!parsed.success) throw new RetryableTrainerError(`GET /status-env: unexpected reply ${describeReply(reply)}`);
        // The queue is FIFO: of our groups waiting under this env id, the oldest went first.
        const stillQueued = parsed.data.self_queue_size ?? waiting.length;
        const pulled = waiting.slice(0, Math.max(0, waiting.length - stillQueued));
        if (pulled.length > 0)
          await spool.ack(
            pulled.map((g) => g.id),
            { sync: true },
          );
        result.pulled += pulled.length;
        this.lastSeen.set(env, { step: parsed.data.current_step, onlyOurs: parsed.data.queue_size === parsed.data.self_queue_size });
      } else if (reply.status === 500) {
        // An env id the server does not know (IndexError, AttributeError: it restarted), or every env
        // disconnected (ZeroDivisionError): with a registration of ours in place, only the first.
        const current = this.envId ?? (await this.register(signal));
        if (env < current) throw new RetryableTrainerError(`GET /status-env for env ${env}: ${describeReply(reply)}`);
        if (env === current && !this.freshEnv) this.envId = null;
        await this.restarted(env, waiting, spool, signal, result);
      } else {
        throw new RetryableTrainerError(`GET /status-env: ${describeReply(reply)}`);
      }
    }
    return result;
  }

  /** The server restarted: acknowledge what its trainer pulled before, mark the rest for sending again. */
  private async restarted(
    env: number,
    waiting: SpooledGroup[],
    spool: TrainerSpool,
    signal: AbortSignal,
    result: Settlement,
  ): Promise<void> {
    const pulledBefore = await this.pulledBeforeRestart(env, signal);
    const pulled = waiting.slice(0, pulledBefore);
    const lost = waiting.slice(pulledBefore);
    if (pulled.length > 0)
      await spool.ack(
        pulled.map((g) => g.id),
        { sync: true },
      );
    for (const g of lost) await spool.markPosted(g.id, null);
    this.lastSeen.delete(env);
    result.pulled += pulled.length;
    result.resent += lost.length;
    if (lost.length > 0)
      this.options.onWarning(
        `the atropos API server no longer knows env ${env} (it restarted) and lost ${lost.length} queued group(s) the trainer had not pulled; sending them again`,
      );
  }

  /**
   * After a restart: how many of the groups that waited under `env` its
   * trainer pulled since our last look, from how far its step advanced
   * (it registers again at the step it reached). Unknown (0: send them all
   * again) unless only our groups were queued then.
   */
  private async pulledBeforeRestart(env: number, signal: AbortSignal): Promise<number> {
    const seen = this.lastSeen.get(env);
    if (!seen?.onlyOurs) return 0;
    const info = await this.call('GET', '/info', undefined, signal);
    const parsedInfo = info.status === 200 ? InfoReplySchema.safeParse(info.json) : null;
    if (!parsedInfo?.success) throw new RetryableTrainerError(`GET /info: ${describeReply(info)}`);
    if (parsedInfo.data.batch_size < 0)
      throw new RetryableTrainerError(
        'the atropos API server restarted; waiting for its trainer to register again to learn what it pulled before',
      );
    const status = await this.call('GET', '/status', undefined, signal);
    const parsed = status.status === 200 ? StatusReplySchema.safeParse(status.json) : null;
    if (!parsed?.success) throw new RetryableTrainerError(`GET /status: ${describeReply(status)}`);
    return Math.max(0, Math.floor(((parsed.data.current_step - seen.step) * parsedInfo.data.batch_size) / this.options.groupSize));
  }

  async readStep(signal: AbortSignal): Promise<number | null> {
    if (this.envId !== null) {
      const reply = await this.call('GET', '/status-env', { env_id: this.envId }, signal);
      const parsed = reply.status === 200 ? StatusReplySchema.safeParse(reply.json) : null;
      if (parsed?.success) return parsed.data.current_step;
      // A restarted server no longer knows our env (500): register again before the next post.
      this.envId = null;
    }
    // Before a trainer registered, /status answers step 0 whatever the trainer will start from: unknown.
    const info = await this.call('GET', '/info', undefined, signal);
    const infoParsed = info.status === 200 ? InfoReplySchema.safeParse(info.json) : null;
    if (infoParsed?.success && infoParsed.data.batch_size < 0) return null;
    const reply = await this.call('GET', '/status', undefined, signal);
    const parsed = reply.status === 200 ? StatusReplySchema.safeParse(reply.json) : null;
    if (!parsed?.success) throw new RetryableTrainerError(`GET /status: ${describeReply(reply)}`);
    return parsed.data.current_step;
  }

  async readQueue(signal: AbortSignal): Promise<TrainerQueue | null> {
    if (this.envId === null) return null;
    const info = await this.call('GET', '/info', undefined, signal);
    const infoParsed = info.status === 200 ? InfoReplySchema.safeParse(info.json) : null;
    if (!infoParsed?.success || infoParsed.data.batch_size <= 0) return null;
    const reply = await this.call('GET', '/status-env', { env_id: this.envId }, signal);
    const parsed = reply.status === 200 ? StatusEnvReplySchema.safeParse(reply.json) : null;
    if (!parsed?.success || parsed.data.queue_size === undefined || parsed.data.self_queue_size === undefined) return null;
    // queue_size counts groups of our size (other environments' sequences packed into them).
    return {
      step: parsed.data.current_step,
      queuedSequences: parsed.data.queue_size * this.options.groupSize,
      ownGroups: parsed.data.self_queue_size,
      batchSize: infoParsed.data.batch_size,
    };
  }

  async disconnect(signal: AbortSignal): Promise<void> {
    if (this.envId === null) return;
    await this.call('POST', '/disconnect-env', { env_id: this.envId }, signal).catch(() => undefined);
    this.envId = null;
  }

  close(): void {
    this.http.close();
  }
}
