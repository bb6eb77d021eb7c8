// The slime rollout-buffer protocol (THUDM/slime slime_plugins/rollout_buffer
// buffer.py): one POST /buffer/write per response {uid, instance_id,
// messages, reward, extra_info} -> {success, message, data}; the slime
// trainer pulls whole groups (instance_id, n items) with POST
// /get_rollout_data and re-tokenises the messages. The buffer has no step
// counter: the policy version comes from the inference server (SGLang's
// GET /get_model_info weight_version, when the trainer tags its weight
// updates with one) when it offers one.
import { z } from 'zod';
import { assistantText } from './atropos';
import { describeReply, type HttpReply, JsonHttpClient, TransportError } from './http';
import { type DeliveryResult, RetryableTrainerError, type TrainerProtocolClient } from './protocol';
import type { SpooledGroup, SpooledSample, TrainerSpool } from './spool';

const WriteReplySchema = z.object({ success: z.boolean(), message: z.string().optional() });
const ModelInfoSchema = z.object({ weight_version: z.union([z.string(), z.number()]).nullish() });

export interface SlimeWrite {
  uid: string;
  instance_id: string;
  messages: { role: string; content: string }[];
  reward: number;
  extra_info: Record<string, string | number | boolean | null>;
}

/** Stable and unique uid of one response. */
export function slimeUid(group: SpooledGroup, sample: SpooledSample): string {
  return `${group.id}:${sample.index}`;
}

export function slimeWrite(group: SpooledGroup, sample: SpooledSample): SlimeWrite {
  return {
    uid: slimeUid(group, sample),
    instance_id: group.id,
    messages: [...group.messages, { role: 'assistant', content: assistantText(sample) }],
    reward: sample.reward,
    extra_info: {
      // slime marks a sample TRUNCATED when finish_reason is "length".
      finish_reason: sample.finishReason,
      truncated: sample.truncated,
      step: group.step,
      group_key: group.key,
      parent_id: group.parentId,
      sample_index: sample.index,
      raw_score: sample.score,
      objective: sample.objective,
      outcome: sample.outcome,
      policy_version: group.policyVersion,
      child_id: sample.childId,
      // slime's example picks the newest groups by this (seconds, as a string).
      timestamp: String(group.spooledAt / 1000),
    },
  };
}

/** Root of an OpenAI-compatible base URL (`http://host:30000/v1` -> `http://host:30000`). */
export function serverRootOf(endpoint: string): string {
  return endpoint.trim().replace(/\/+$/, '').replace(/\/v1$/, '');
}

export interface SlimeOptions {
  url: string;
  /** The inference server's base URL, asked for weight_version; null when there is none (offline sampler). */
  endpoint: string | null;
  timeoutMs: number;
  onWarning: (message: string) => void;
}

export class SlimeClient implements TrainerProtocolClient {
  readonly protocol = 'slime' as const;
  private readonly http: JsonHttpClient;
  private readonly modelInfo: JsonHttpClient | null;
  private stepSource = false;
  /** Non-numeric weight versions count as one step per change. */
  private lastVersion: string | null = null;
  private versionCount = 0;

  constructor(options: SlimeOptions) {
    this.http = new JsonHttpClient(options.url, { timeoutMs: options.timeoutMs });
    this.modelInfo = options.endpoint ? new JsonHttpClient(serverRootOf(options.endpoint), { timeoutMs: Math.min(options.timeoutMs, 10_000) }) : null;
  }

  get hasStepSource(): boolean {
    return this.stepSource;
  }

  private async call(client: JsonHttpClient, method: 'GET' | 'POST', path: string, body: unknown, signal: AbortSignal): Promise<HttpReply> {
    try {
      return await client.request(method, path, body, signal);
    } catch (error) {
      if (error instanceof TransportError) throw new RetryableTrainerError(`${method} ${path}: ${error.message}`, error.ambiguous);
      throw error;
    }
  }

  async connect(signal: AbortSignal): Promise<void> {
    if (this.modelInfo) {
      const version = await this.readWeightVersion(signal).catch(() => null);
      this.stepSource = version !== null;
    }
    // The buffer has no health route: any HTTP answer means it is up.
    await this.call(this.http, 'GET', '/', undefined, signal);
  }

  private async readWeightVersion(signal: AbortSignal): Promise<number | null> {
    if (!this.modelInfo) return null;
    const reply = await this.call(this.modelInfo, 'GET', '/get_model_info', undefined, signal);
    const parsed = reply.status === 200 ? ModelInfoSchema.safeParse(reply.json) : null;
    const raw = parsed?.success ? parsed.data.weight_version : null;
    if (raw === null || raw === undefined) return null;
    const text = String(raw);
    if (/^\d+$/.test(text)) return Number(text);
    if (text !== this.lastVersion) {
      if (this.lastVersion !== null) this.versionCount++;
      this.lastVersion = text;
    }
    return this.versionCount;
  }

  async deliver(group: SpooledGroup, spool: TrainerSpool, signal: AbortSignal): Promise<DeliveryResult> {
    for (const sample of group.samples) {
      const uid = slimeUid(group, sample);
      if (spool.isAcked(uid)) continue;
      const reply = await this.call(this.http, 'POST', '/buffer/write', slimeWrite(group, sample), signal);
      if (reply.status === 200) {
        const parsed = WriteReplySchema.safeParse(reply.json);
        if (!parsed.success) throw new RetryableTrainerError(`POST /buffer/write: unexpected reply ${describeReply(reply)}`, true);
        if (!parsed.data.success) return { kind: 'rejected', reason: `POST /buffer/write refused ${uid}: ${parsed.data.message ?? ''}` };
        await spool.ack([uid], { sync: false });
        continue;
      }
      if (reply.status >= 400 && reply.status < 500 && reply.status !== 404 && reply.status !== 408 && reply.status !== 429) {
        return { kind: 'rejected', reason: `POST /buffer/write (${uid}): ${describeReply(reply)}` };
      }
      throw new RetryableTrainerError(`POST /buffer/write: ${describeReply(reply)}`);
    }
    await spool.ack([group.id], { sync: true });
    return { kind: 'delivered' };
  }

  /** The buffer can only be read destructively: nothing to check. */
  async reconcile(): Promise<boolean> {
    return false;
  }

  async readStep(signal: AbortSignal): Promise<number | null> {
    if (!this.stepSource) return null;
    return this.readWeightVersion(signal);
  }

  close(): void {
    this.http.close();
    this.modelInfo?.close();
  }
}
