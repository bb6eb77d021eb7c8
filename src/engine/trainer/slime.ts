// The slime rollout-buffer protocol (THUDM/slime slime_plugins/rollout_buffer
// buffer.py): one POST /buffer/write per response {uid, instance_id,
// messages, reward, extra_info} -> {success, message, data}; the slime
// trainer pulls whole groups (instance_id, at least group_size items) with
// POST /get_rollout_data and re-tokenises the messages. The buffer has no
// step counter: the policy version comes from the inference server (SGLang's
// GET /get_model_info weight_version, when the trainer tags its weight
// updates with one) when it offers one. What the real buffer does that
// shapes this client:
// - Everything is in memory, and a restarted buffer keeps the writes it got
//   since: a group cut by a failure would stay short forever. So a group is
//   written whole in one go, and after any failure written whole again under
//   a fresh instance_id (uid stays: duplicates are detectable by uid).
// - Its group size is 16 until slime's trainer calls /start_rollout (only
//   with a task_type that has a generator module), which replaces the buffer
//   (what it held is gone), and again after a restart (which empties it).
// - Nothing tells a writer what slime's trainer pulled. So a written group
//   stays in the spool, waiting under its instance_id, and the client looks
//   at the buffer (/get_rollout_data, writing back at once whatever it took)
//   right after each write and every poll while groups wait: a group seen
//   whole and then gone was released (pulled); a restart (a refused request)
//   or a rebuild (our groups come out whole after a look found them held) is
//   told apart from a pull, and what it emptied is written again when it
//   surely never left the buffer, or counted lost when slime may have pulled
//   it first (see look()). It also says what to configure when our groups
//   stay held.
// - slime reads instance_id into Sample.index (an int): it is a number.
import { randomInt } from 'node:crypto';
import { z } from 'zod';
import { assistantText } from './atropos';
import { describeReply, type HttpReply, JsonHttpClient, trainerHttpClient, TransportError } from './http';
import { type DeliveryResult, RetryableTrainerError, type Settlement, type TrainerProtocolClient } from './protocol';
import type { SpooledGroup, SpooledSample, TrainerSpool } from './spool';

/** How long items taken from the buffer by a look may take to go back, whatever stops the run. */
const RESTORE_TIMEOUT_MS = 10_000;

const WriteReplySchema = z.object({ success: z.boolean(), message: z.string().optional() });
const ModelInfoSchema = z.object({ weight_version: z.union([z.string(), z.number()]).nullish() });
const ReadReplySchema = z.object({
  success: z.boolean(),
  data: z.object({ data: z.array(z.looseObject({ instance_id: z.unknown() })) }).nullish(),
});

/** A buffer answering 500 this many times in a row to one group's writes refuses it (buffer.py answers 500 to what it cannot take). */
export const SLIME_MAX_SERVER_ERRORS = 5;
/** Probes in a row that found none of our whole groups before the group size is reported wrong. */
const EMPTY_PROBES_BEFORE_WARNING = 2;

export interface SlimeWrite {
  uid: string;
  /** The group key of this write attempt: slime reads it into Sample.index, an int. */
  instance_id: number;
  messages: { role: string; content: string }[];
  reward: number;
  extra_info: Record<string, string | number | boolean | null>;
}

/** Stable and unique uid of one response (the same in every attempt: duplicates are detectable). */
export function slimeUid(group: SpooledGroup, sample: SpooledSample): string {
  return `${group.id}:${sample.index}`;
}

/** A fresh instance_id for one attempt at writing a group: a positive integer JSON and Python both hold exactly. */
export function newInstanceId(): number {
  return randomInt(1, 2 ** 47);
}

export function slimeWrite(group: SpooledGroup, sample: SpooledSample, instanceId: number): SlimeWrite {
  return {
    uid: slimeUid(group, sample),
    instance_id: instanceId,
    messages: [...group.messages, { role: 'assistant', content: assistantText(sample) }],
    reward: sample.reward,
    extra_info: {
      // slime marks a sample TRUNCATED when finish_reason is "length".
      finish_reason: sample.finishReason,
      truncated: sample.truncated,
      group_uid: group.id,
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

/** What to configure so slime's buffer releases groups of n, for people. */
export function slimeGroupSizeAdvice(n: number): string {
  return (
    `start slime with --n-samples-per-prompt ${n} --rollout-task-type thetaevolve, put a generator module slime_plugins/rollout_buffer/generator/thetaevolve_generator.py ` +
    '(TASK_TYPE = "thetaevolve" and a run_rollout(data) that just returns) beside buffer.py, start slime\'s trainer before this run, and restart it whenever the buffer restarts (ThetaEvolve docs/guide.md, "Training the model while it evolves (RL)")'
  );
}

export interface SlimeOptions {
  url: string;
  /** n: responses per group. */
  groupSize: number;
  /** The inference server's base URL, asked for weight_version; null when there is none (offline sampler). */
  endpoint: string | null;
  timeoutMs: number;
  /** What request to the trainer (or the inference server) is awaited past a few seconds, and null once none is (JsonHttpClientOptions). */
  onAwaiting?: (awaited: string | null) => void;
  onWarning: (message: string) => void;
}

export class SlimeClient implements TrainerProtocolClient {
  readonly protocol = 'slime' as const;
  private readonly options: SlimeOptions;
  private readonly http: JsonHttpClient;
  private readonly modelInfo: JsonHttpClient | null;
  private stepSource = false;
  readonly startingStep = null;
  /** Non-numeric weight versions count as one step per change. */
  private lastVersion: string | null = null;
  private versionCount = 0;
  /** HTTP 500 answers in a row to a group's writes. */
  private readonly serverErrors = new Map<string, number>();
  /**
   * Whether the buffer's group size lets our whole groups out: true once a
   * look found one of ours whole, false when the look right after writing a
   * whole group found none of ours (16 before slime's /start_rollout and
   * after a restart), null before any look.
   */
  private sizeFits: boolean | null = null;
  private emptyProbes = 0;
  /** Waiting groups a look found whole in the buffer (releasable to slime's trainer); the others wait unseen. */
  private readonly seen = new Set<string>();
  /** Waiting groups the look right after their writes found held at a group size that did not fit: surely never pulled. */
  private readonly held = new Set<string>();
  /**
   * Waiting groups the look right after their writes missed before the group
   * size was known: held at a size that does not fit, or pulled at once by a
   * quick trainer. A second look after a write that misses too says the
   * former (held); one that finds ours whole, the latter (released).
   */
  private readonly unconfirmed = new Set<string>();
  /** A request to the buffer was refused since the last look (nothing listened): it may have restarted, losing what it held. */
  private restartSuspected = false;
  /** What looks made after a write learned, for the next settle() to report. */
  private unreported: Settlement = { pulled: 0, resent: 0, lost: 0 };
  /** instance_ids of groups one of whose items may or may not have been written back (the write's reply was lost). */
  private readonly doubtful = new Set<number>();
  private turn: Promise<unknown> = Promise.resolve();
  /** Items a look took from the buffer that are not written back yet. */
  private toRestore: Record<string, unknown>[] = [];

  constructor(options: SlimeOptions) {
    this.options = options;
    this.http = trainerHttpClient(options);
    this.modelInfo = options.endpoint
      ? new JsonHttpClient(serverRootOf(options.endpoint), { timeoutMs: Math.min(options.timeoutMs, 10_000) })
      : null;
  }

  get hasStepSource(): boolean {
    return this.stepSource;
  }

  private async call(client: JsonHttpClient, method: 'GET' | 'POST', path: string, body: unknown, signal: AbortSignal): Promise<HttpReply> {
    try {
      return await client.request(method, path, body, signal);
    } catch (error) {
      if (error instanceof TransportError) {
        if (client === this.http && error.refused) this.restartSuspected = true;
        throw new RetryableTrainerError(`${method} ${path}: ${error.message}`, error.ambiguous);
      }
      throw error;
    }
  }

  async connect(_spool: TrainerSpool, signal: AbortSignal): Promise<void> {
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

  /** One write; throws RetryableTrainerError, or returns why the buffer refused it for good. */
  private async write(item: unknown, what: string, groupId: string | null, signal: AbortSignal): Promise<string | null> {
    const reply = await this.call(this.http, 'POST', '/buffer/write', item, signal);
    if (reply.status === 200) {
      const parsed = WriteReplySchema.safeParse(reply.json);
      if (!parsed.success) throw new RetryableTrainerError(`POST /buffer/write: unexpected reply ${describeReply(reply)}`, true);
      if (!parsed.data.success) return `POST /buffer/write refused ${what}: ${parsed.data.message ?? ''}`;
      return null;
    }
    if (reply.status >= 400 && reply.status < 500 && reply.status !== 404 && reply.status !== 408 && reply.status !== 429) {
      return `POST /buffer/write (${what}): ${describeReply(reply)}`;
    }
    if (reply.status === 500 && groupId !== null) {
      const count = (this.serverErrors.get(groupId) ?? 0) + 1;
      this.serverErrors.set(groupId, count);
      if (count >= SLIME_MAX_SERVER_ERRORS)
        return `POST /buffer/write (${what}) answered HTTP 500 ${count} times in a row, last ${describeReply(reply)}`;
    }
    throw new RetryableTrainerError(`POST /buffer/write: ${describeReply(reply)}`);
  }

  /** One exchange with the buffer at a time (a delivery, a look): two write-backs of the same taken item would put it in twice. */
  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.turn.then(fn, fn);
    this.turn = next.catch(() => undefined);
    return next;
  }

  deliver(group: SpooledGroup, spool: TrainerSpool, signal: AbortSignal): Promise<DeliveryResult> {
    return this.exclusive(() => this.deliverNow(group, spool, signal));
  }

  private async deliverNow(group: SpooledGroup, spool: TrainerSpool, signal: AbortSignal): Promise<DeliveryResult> {
    await this.restore();
    if (group.samples.length !== this.options.groupSize) {
      return {
        kind: 'rejected',
        reason: `group ${group.key} has ${group.samples.length} response(s), not n = ${this.options.groupSize}: the buffer would hold it forever`,
      };
    }
    // Every attempt writes the whole group under its own instance_id: what an interrupted attempt left stays short and is never released.
    const instanceId = newInstanceId();
    for (const sample of group.samples) {
      const refused = await this.write(slimeWrite(group, sample, instanceId), slimeUid(group, sample), group.id, signal);
      if (refused !== null) {
        this.serverErrors.delete(group.id);
        return { kind: 'rejected', reason: refused };
      }
    }
    this.serverErrors.delete(group.id);
    // Acknowledged writes are in the buffer, not yet with slime's trainer: the group waits under its instance_id until a look sees it gone.
    await spool.markPosted(group.id, instanceId);
    this.seen.delete(group.id);
    this.held.delete(group.id);
    this.unconfirmed.delete(group.id);
    const learned = await this.look(spool, signal, group.id).catch(() => null);
    if (learned) this.unreported = addSettlements(this.unreported, learned);
    return { kind: 'delivered' };
  }

  /**
   * One look at the buffer: take what it releases and write it back at once
   * (it can only be read destructively), then say what became of our waiting
   * groups. Whole in it: releasable (and the group size fits). Seen whole
   * before and gone now: slime's trainer pulled it (released), unless the
   * buffer was replaced meanwhile. Replaced means a restart (a request failed
   * below HTTP since the last look) or a rebuild (/start_rollout: our groups
   * come out whole again after a look right after a write found none); it
   * empties the buffer, so a group never seen releasable is surely not
   * pulled and is written again under a fresh instance_id, while one seen
   * releasable may have reached slime's trainer first and is counted lost,
   * never written twice. `justWritten`: the group whose writes just went in.
   */
  private async look(spool: TrainerSpool, signal: AbortSignal, justWritten: string | null): Promise<Settlement> {
    // Not on the caller's signal either: a read aborted after the buffer gave its items out would lose them.
    if (signal.aborted) throw new RetryableTrainerError('stopped before looking at the buffer');
    const reply = await this.call(this.http, 'POST', '/get_rollout_data', {}, AbortSignal.timeout(RESTORE_TIMEOUT_MS));
    const parsed = reply.status === 200 ? ReadReplySchema.safeParse(reply.json) : null;
    if (!parsed?.success) throw new RetryableTrainerError(`POST /get_rollout_data: ${describeReply(reply)}`);
    const items = parsed.data.success ? (parsed.data.data?.data ?? []) : [];
    this.toRestore.push(...items);
    await this.restore();
    const waiting = new Map<number, SpooledGroup>();
    for (const g of spool.pending()) {
      const instanceId = spool.postedEnv(g.id);
      if (instanceId !== undefined) waiting.set(instanceId, g);
    }
    const sizes = new Map<number, number>();
    for (const item of items) {
      if (typeof item.instance_id === 'number' && waiting.has(item.instance_id))
        sizes.set(item.instance_id, (sizes.get(item.instance_id) ?? 0) + 1);
    }
    const n = this.options.groupSize;
    if ([...sizes.values()].some((size) => size < n)) {
      this.options.onWarning(
        `the slime rollout buffer at ${this.options.url} releases groups before all ${n} responses are in: its group size is smaller than n = ${n}; ${slimeGroupSizeAdvice(n)}`,
      );
    }
    const whole = new Set([...sizes].filter(([, size]) => size >= n).map(([id]) => (waiting.get(id) as SpooledGroup).id));
    const fittedBefore = this.sizeFits;
    const restarted = this.restartSuspected;
    this.restartSuspected = false;
    // A restarted buffer is back at group size 16. Once it fits, a look that misses a group just written means slime's trainer was quicker.
    if (restarted) this.sizeFits = null;
    if (justWritten !== null) this.emptyProbes = whole.size > 0 ? 0 : this.emptyProbes + 1;
    if (whole.size > 0) this.sizeFits = true;
    // One miss may be a quick trainer (it polls often); misses in a row mean the size does not fit.
    else if (justWritten !== null && this.sizeFits !== true && this.emptyProbes >= EMPTY_PROBES_BEFORE_WARNING) this.sizeFits = false;
    const replaced = restarted || (fittedBefore === false && this.sizeFits === true);
    const result: Settlement = { pulled: 0, resent: 0, lost: 0 };
    const released: string[] = [];
    const lost: string[] = [];
    const unwatched: string[] = [];
    for (const [instanceId, g] of waiting) {
      if (this.doubtful.delete(instanceId) && !whole.has(g.id)) {
        // A write-back of it may have been lost: the copy in the buffer is short and never released, so it is written again.
        this.seen.delete(g.id);
        await spool.markPosted(g.id, null);
        result.resent++;
      } else if (whole.has(g.id)) {
        this.seen.add(g.id);
        this.held.delete(g.id);
        this.unconfirmed.delete(g.id);
      } else if (g.id === justWritten) {
        // Unseen right after its writes: held at a group size that does not fit, or (the size fitting before) already pulled by slime's trainer.
        if (this.sizeFits === true) this.seen.add(g.id);
        else if (this.sizeFits === false) this.held.add(g.id);
        else this.unconfirmed.add(g.id);
      } else if (this.unconfirmed.has(g.id)) {
        // Missed once before the size was known: the size found fitting since says a quick trainer pulled it, not fitting
        // says it is held; a buffer replaced meanwhile may have handed it out first: lost, never written twice.
        if (replaced) {
          this.unconfirmed.delete(g.id);
          lost.push(g.id);
        } else if (this.sizeFits === true) {
          this.unconfirmed.delete(g.id);
          released.push(g.id);
        } else if (this.sizeFits === false) {
          this.unconfirmed.delete(g.id);
          this.held.add(g.id);
        }
      } else if (this.seen.delete(g.id)) {
        (replaced ? lost : released).push(g.id);
      } else if (this.held.has(g.id)) {
        if (replaced) {
          this.held.delete(g.id);
          await spool.markPosted(g.id, null);
          result.resent++;
        }
      } else if (replaced || this.sizeFits === true) {
        // Written by an earlier process of this run and gone while none watched: pulled or lost, nobody can tell; not written twice.
        unwatched.push(g.id);
      }
    }
    lost.push(...unwatched);
    if (released.length + lost.length > 0) await spool.ack([...released, ...lost], { sync: true });
    result.pulled = released.length;
    result.lost = lost.length;
    if (unwatched.length > 0) {
      this.options.onWarning(
        `${unwatched.length} group(s) an earlier run of this database wrote to the slime rollout buffer at ${this.options.url} are no longer in it: ` +
          "slime's trainer may have pulled them or a restart lost them, which nothing tells; counted lost, not written twice",
      );
    }
    if (replaced && (result.resent > 0 || result.lost > unwatched.length)) {
      this.options.onWarning(
        `the slime rollout buffer at ${this.options.url} was restarted or rebuilt (/start_rollout) and lost what it held: ` +
          (result.resent > 0 ? `${result.resent} group(s) it never released are written again under fresh instance ids` : '') +
          (result.resent > 0 && result.lost > unwatched.length ? '; ' : '') +
          (result.lost > unwatched.length
            ? `${result.lost - unwatched.length} group(s) it had released to slime's trainer may have been pulled before, so they are counted lost, not written twice`
            : ''),
      );
    }
    if (justWritten !== null) this.warnAboutGroupSize(whole.size > 0);
    return result;
  }

  /** Looks right after a write that found none of our groups whole, twice in a row (look() counts them): the buffer waits for more than n. */
  private warnAboutGroupSize(foundOurs: boolean): void {
    if (foundOurs) return;
    const n = this.options.groupSize;
    if (this.emptyProbes >= EMPTY_PROBES_BEFORE_WARNING) {
      this.options.onWarning(
        `the slime rollout buffer at ${this.options.url} holds our whole groups of ${n} but releases none: its group size is larger than n = ${n} ` +
          `(16 until slime's trainer calls /start_rollout, and again after the buffer restarts); ${slimeGroupSizeAdvice(n)}`,
      );
    }
  }

  /** Write back what a probe took, oldest first. */
  /**
   * Write back what a look took from the buffer. Not on the caller's signal:
   * a run that stops mid-look must still put back what it took (slime's
   * trainer would never see it otherwise), within RESTORE_TIMEOUT_MS.
   */
  private async restore(): Promise<void> {
    while (this.toRestore.length > 0) {
      const item = this.toRestore[0] as Record<string, unknown>;
      let refused: string | null;
      try {
        refused = await this.write(item, 'an item written back after a look at the buffer', null, AbortSignal.timeout(RESTORE_TIMEOUT_MS));
      } catch (error) {
        // It may be in the buffer already: never written twice (a group with a response twice). The next look tells whether its group is whole.
        if (error instanceof RetryableTrainerError && error.ambiguous) {
          this.toRestore.shift();
          if (typeof item.instance_id === 'number') this.doubtful.add(item.instance_id);
        }
        throw error;
      }
      if (refused !== null) this.options.onWarning(`could not write back an item taken from the slime buffer: ${refused}`);
      this.toRestore.shift();
    }
  }

  /** The buffer can only be read destructively: nothing to check. */
  async reconcile(): Promise<boolean> {
    return false;
  }

  /** Written whole, waiting in the buffer until a look sees slime's trainer pulled it. */
  awaitsTrainer(group: SpooledGroup, spool: TrainerSpool): boolean {
    return spool.postedEnv(group.id) !== undefined;
  }

  settle(spool: TrainerSpool, signal: AbortSignal): Promise<Settlement> {
    return this.exclusive(async () => {
      await this.restore();
      const learned = addSettlements(this.unreported, await this.look(spool, signal, null));
      this.unreported = { pulled: 0, resent: 0, lost: 0 };
      return learned;
    });
  }

  async readStep(signal: AbortSignal): Promise<number | null> {
    if (!this.stepSource) return null;
    return this.readWeightVersion(signal);
  }

  /** The buffer tells nothing of slime's batch. */
  async readQueue(): Promise<null> {
    return null;
  }

  async disconnect(): Promise<void> {}

  close(): void {
    this.http.close();
    this.modelInfo?.close();
  }
}

function addSettlements(a: Settlement, b: Settlement): Settlement {
  return { pulled: a.pulled + b.pulled, resent: a.resent + b.resent, lost: a.lost + b.lost };
}
