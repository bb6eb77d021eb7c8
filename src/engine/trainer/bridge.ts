// The RL trainer bridge: right before each step's database commit the B
// groups of n scored responses go into a durable spool beside the run
// database (spoolStep), held until the commit is done (afterCommit releases
// them), and a single delivery worker sends the released ones, oldest first,
// to the trainer (atropos or slime) with backoff through outages and
// restarts. A crash between spool and commit leaves groups of a step the
// database never committed: they are discarded when the bridge next opens
// the spool (the step is redone), so nothing committed is lost and nothing
// uncommitted is sent. A group leaves the spool only when it is safe for
// good: the trainer pulled it from its server's memory (atropos' queue,
// slime's buffer); what a restarted server lost unpulled is sent again, what
// it lost when its trainer may have pulled it first is counted lost. A group whose send may have reached the
// trainer is checked before it is sent again (where the protocol can tell).
// Only whole groups of n go out: a group a failed request left short is
// dropped with a warning and counted (trainers stall on short groups).
// Synchronous mode (the paper's) holds the next step until the trainer took
// a step (not when its queue holds less than its batch: it cannot); asynchronous mode lets sampling run at most trainer.maxStaleness
// policy versions ahead. Shared by the CLI and the extension's engine worker.
import type { Settings } from '../common/config';
import type { TokenSupport } from '../llm/endpointClient';
import { Notifier } from '../async/notifier';
import { RetryBudget, type BackoffOptions } from '../async/retryBudget';
import { sleep } from '../async/sleep';
import type { CommittedStep } from '../loop';
import { AtroposClient } from './atropos';
import { RetryableTrainerError, type Settlement, TrainerConfigError, type TrainerProtocol, type TrainerProtocolClient } from './protocol';
import { SlimeClient } from './slime';
import { namedPolicyVersion, rolloutGroupsOf, shortGroupWarning } from './rolloutGroups';
import { spoolDirOf, type SpooledGroup, TrainerSpool } from './spool';
import type { TrainerState } from './trainerState';
import { errorMessage } from '../common/errors';

export { TrainerConfigError } from './protocol';
export type { TrainerProtocol } from './protocol';
export { spoolDirOf } from './spool';
export { type TrainerState, trainerStateEvent, trainerStateLine, trainerSummary } from './trainerState';

export interface TrainerBridgeOptions {
  settings: Settings;
  /** The run database; the spool lives at `<dbFile>.trainer-spool/`. */
  dbFile: string;
  /** n: responses per group. */
  groupSize: number;
  /**
   * The database's last committed step when this bridge is made, before the
   * run commits anything (-1 for a database not yet created). Spooled groups
   * of later steps were spooled by an earlier process that died before their
   * commit: they are discarded when the spool opens. Left out, everything
   * spooled counts as committed (right only for callers that never use
   * spoolStep).
   */
  lastCommittedStep?: number;
  /** Shown to the trainer (atropos desired_name), e.g. "thetaevolve-circle-packing". */
  name: string;
  /** The endpoint's token support after its check(); null when there is no endpoint (offline mutate sampler). */
  tokenSupport: TokenSupport | null;
  onState?: (state: TrainerState) => void;
  /** Told once per problem worth a person's attention. */
  onWarning?: (message: string) => void;
  /** Trainer step polling while waiting (default 250 ms). */
  pollIntervalMs?: number;
  /** Retry backoff (default 250 ms doubling to 10 s). */
  backoff?: Partial<Pick<BackoffOptions, 'baseMs' | 'maxMs'>>;
  /** Per-request timeout (default 30 s). */
  requestTimeoutMs?: number;
  /**
   * The programs banned now (docs/algorithm.md section 11): a spooled group
   * prompted from one, or with one among its samples, is withheld, never
   * sent, even when it was spooled before the ban.
   */
  bannedIds?: () => ReadonlySet<string>;
}

export class TrainerBridge {
  private readonly options: TrainerBridgeOptions;
  private readonly settings: Settings;
  private readonly protocol: TrainerProtocol;
  private readonly client: TrainerProtocolClient;
  private readonly closing = new AbortController();
  /** Settles started outside the worker (flush, afterCommit): close() waits for them. */
  private readonly settling = new Set<Promise<unknown>>();
  /** The last settle asked of the client: one at a time, or two would count the same pulled group twice. */
  private settleTail: Promise<unknown> = Promise.resolve();
  private readonly changed = new Notifier();
  private readonly backoff: BackoffOptions;
  private readonly pollIntervalMs: number;
  private enabled: boolean;
  private spool: TrainerSpool | null = null;
  private activation: Promise<void> | null = null;
  private worker: Promise<void> | null = null;
  /** Callers of whenIdle(), told when the delivery loop next has nothing it may send. */
  private idleWaiters: (() => void)[] = [];
  private connected = false;
  private trainerStep: number | null = null;
  /** Steps handed over that the trainer has not yet stepped for (staleness). */
  private stepsAhead = 0;
  /** The trainer step when the current evolution step began sampling (its policy version when the endpoint says none). */
  private samplingVersion: string | null = null;
  private lastAckedPolicyVersion: string | null = null;
  private sentGroups = 0;
  private rejectedGroups = 0;
  private droppedGroups = 0;
  private releasedGroups = 0;
  private resentGroups = 0;
  private lostGroups = 0;
  private waiting = false;
  /** The request to the trainer awaited past a few seconds, named for people (JsonHttpClient's onAwaiting). */
  private awaiting: string | null = null;
  private lastError: string | null = null;
  private lastEmitted = '';
  /** Groups whose last send may have reached the trainer. */
  private readonly inDoubt = new Set<string>();
  /** Spooled groups of steps after this one are held: their commit is not done yet. */
  private releasedStep = -1;
  /** The group the worker is delivering; it stays undelivered until the worker counted it. */
  private sending: string | null = null;
  private readonly warned = new Set<string>();

  constructor(options: TrainerBridgeOptions) {
    this.options = options;
    this.settings = options.settings;
    this.protocol = options.settings['trainer.protocol'];
    this.enabled = options.settings['trainer.enabled'];
    this.backoff = { baseMs: options.backoff?.baseMs ?? 250, maxMs: options.backoff?.maxMs ?? 10_000, maxRetryAfterMs: 60_000 };
    this.pollIntervalMs = options.pollIntervalMs ?? 250;
    const url = this.settings['trainer.url'].trim();
    const timeoutMs = options.requestTimeoutMs ?? this.settings['trainer.requestTimeoutSeconds'] * 1000;
    const onWarning = (message: string) => this.warn(message);
    const onAwaiting = (awaited: string | null) => {
      this.awaiting = awaited;
      this.emitState();
    };
    if (!url) {
      // Settings may be saved without a URL while the toggle is off; turning it on then fails clearly.
      this.client = new UnconfiguredClient(this.protocol);
    } else if (this.protocol === 'atropos') {
      this.client = new AtroposClient({
        url,
        groupSize: options.groupSize,
        maxTokenLength: this.settings.maxTokens,
        name: options.name,
        timeoutMs,
        onAwaiting,
        generationParams: { temperature: this.settings.temperature, top_p: this.settings.topP, max_tokens: this.settings.maxTokens },
        onWarning,
        sequencesPerStep: this.settings.batchSize * options.groupSize,
      });
    } else {
      this.client = new SlimeClient({
        url,
        groupSize: options.groupSize,
        endpoint: this.settings.sampler === 'llm' ? this.settings.endpoint : null,
        timeoutMs,
        onAwaiting,
        onWarning,
      });
    }
  }

  /**
   * Check the configuration and reach the trainer (atropos: register the
   * environment). Throws TrainerConfigError when the run must not start:
   * no URL, atropos without token ids from the endpoint, a URL that is not
   * that kind of server. An unreachable trainer is only a warning: rollouts
   * are spooled and sent when it comes up.
   */
  async start(signal: AbortSignal): Promise<void> {
    if (!this.enabled) {
      this.emitState();
      return;
    }
    this.checkConfiguration();
    this.activation ??= this.activate(signal);
    await this.activation;
  }

  private checkConfiguration(): void {
    if (!this.settings['trainer.url'].trim()) {
      throw new TrainerConfigError('the RL trainer is on but thetaevolve.trainer.url is empty');
    }
    if (this.protocol !== 'atropos') return;
    const support = this.options.tokenSupport;
    if (support === null) {
      throw new TrainerConfigError(
        'the atropos trainer needs the token ids of every response, and the offline mutate sampler has none: ' +
          'use an LLM endpoint that returns token ids (vLLM >= 0.10.2 or a recent SGLang), or the slime protocol (--trainer-protocol slime), which needs only messages',
      );
    }
    if (support.status === 'missing' || support.status === 'not_requested') {
      throw new TrainerConfigError(
        `the atropos trainer needs token ids from the endpoint, and ${support.message ?? 'the endpoint does not return them'}; ` +
          'refusing to send made-up tokens. Use vLLM >= 0.10.2 (return_token_ids) or a recent SGLang, or --trainer-protocol slime',
      );
    }
  }

  private async activate(signal: AbortSignal): Promise<void> {
    const spool = await TrainerSpool.open(spoolDirOf(this.options.dbFile));
    const committedBefore = this.options.lastCommittedStep;
    if (committedBefore !== undefined) {
      const uncommitted = spool.pending().filter((g) => g.step > committedBefore);
      if (uncommitted.length > 0) {
        await spool.discard(uncommitted.map((g) => g.id));
        const steps = [...new Set(uncommitted.map((g) => g.step))].join(', ');
        this.warn(
          `discarded ${uncommitted.length} spooled group(s) of step(s) ${steps}, which the database never committed (the run ended between spool and commit); the step is redone`,
        );
      }
    }
    const pending = spool.pending();
    // Without the database's word, what an earlier run spooled counts as committed.
    this.releasedStep = Math.max(this.releasedStep, committedBefore ?? pending.reduce((last, g) => Math.max(last, g.step), -1));
    this.spool = spool;
    // Delivery is one group at a time, so only the oldest pending group not
    // known to wait in the server's queue can have reached the trainer before
    // a crash cut its acknowledgement.
    const unposted = pending.find((g) => !this.client.awaitsTrainer(g, spool));
    if (unposted) this.inDoubt.add(unposted.id);
    // Said at once: reaching the trainer may take up to trainer.requestTimeoutSeconds.
    this.emitState();
    try {
      await this.client.connect(spool, signal);
      this.connected = true;
      this.lastError = null;
    } catch (error) {
      if (error instanceof TrainerConfigError) throw error;
      if (signal.aborted) throw error;
      this.connected = false;
      this.lastError = errorMessage(error);
      this.warn(
        `the trainer at ${this.settings['trainer.url']} is not ready (${this.lastError}); rollouts are spooled and sent once it is`,
      );
    }
    // Counted after connecting: it settled what the trainer pulled meanwhile (atropos).
    this.stepsAhead = new Set(spool.pending().map((g) => g.step)).size;
    if (this.connected) await this.pollStep(signal);
    this.samplingVersion = this.trainerStep === null ? null : String(this.trainerStep);
    if (!this.client.hasStepSource) {
      this.warn(
        this.settings['trainer.mode'] === 'sync'
          ? "the slime rollout buffer has no step counter and the inference server reports no weight_version (SGLang /get_model_info): synchronous mode waits only until the buffer holds each step's rollouts"
          : 'the slime rollout buffer has no step counter and the inference server reports no weight_version: the staleness bound (trainer.maxStaleness) cannot be enforced',
      );
    }
    if (pending.length > 0)
      this.warn(
        `${pending.length} group(s) from an earlier run of this database were not yet acknowledged by the trainer; sending them first`,
      );
    this.worker ??= this.deliveryLoop();
    this.emitState();
  }

  /** The dashboard toggle. Off: nothing is sent or spooled, the spool is kept. Throws TrainerConfigError when it cannot be turned on. */
  setEnabled(enabled: boolean): void {
    if (enabled === this.enabled) return;
    if (enabled) {
      this.checkConfiguration();
      this.enabled = true;
      this.activation ??= this.activate(this.closing.signal).catch((error: unknown) => {
        this.lastError = errorMessage(error);
        this.enabled = false;
        this.activation = null;
        this.emitState();
      });
    } else {
      this.enabled = false;
    }
    this.changed.notify();
    this.emitState();
  }

  /** Whether RL is on, and the policy version that wrote a step's samples: what its responses name, else the trainer step they were sampled at. */
  policyOf(committed: CommittedStep): { rl: boolean; policyVersion: string | null } {
    if (!this.enabled) return { rl: false, policyVersion: null };
    return { rl: true, policyVersion: namedPolicyVersion(committed) ?? this.samplingVersion };
  }

  /** Whether each step is handed over before the next one generates (on, synchronous mode): the loop's steps may not overlap then. */
  holdsEachStep(): boolean {
    return this.enabled && this.settings['trainer.mode'] === 'sync';
  }

  state(): TrainerState {
    return {
      enabled: this.enabled,
      protocol: this.protocol,
      url: this.settings['trainer.url'],
      mode: this.settings['trainer.mode'],
      connected: this.connected,
      trainerStep: this.trainerStep,
      lastAckedPolicyVersion: this.lastAckedPolicyVersion,
      pendingGroups: this.releasedPending(),
      queuedGroups: this.queuedInServer(),
      sentGroups: this.sentGroups,
      rejectedGroups: this.rejectedGroups,
      droppedGroups: this.droppedGroups,
      releasedGroups: this.releasedGroups,
      resentGroups: this.resentGroups,
      lostGroups: this.lostGroups,
      waiting: this.waiting,
      awaiting: this.awaiting,
      lastError: this.lastError,
    };
  }

  private emitState(): void {
    const state = this.state();
    const text = JSON.stringify(state);
    if (text === this.lastEmitted) return;
    this.lastEmitted = text;
    this.options.onState?.(state);
  }

  private warn(message: string): void {
    if (this.warned.has(message)) return;
    this.warned.add(message);
    this.options.onWarning?.(message);
  }

  /** The groups of a committed step as they are spooled; groups short of n are dropped, and counted and told when `countDrops`. */
  private groupsOf(committed: CommittedStep, countDrops: boolean): SpooledGroup[] {
    const spool = this.spool as TrainerSpool;
    const { groups, short } = rolloutGroupsOf(committed, {
      protocol: this.protocol,
      groupSize: this.options.groupSize,
      filterEqualRewards: this.settings['trainer.filterEqualRewards'],
      runPrefix: spool.runPrefix,
      samplingVersion: this.samplingVersion,
      now: Date.now(),
    });
    if (countDrops) {
      for (const group of short) {
        this.droppedGroups++;
        this.warn(shortGroupWarning(group, { protocol: this.protocol, groupSize: this.options.groupSize }, this.droppedGroups));
      }
    }
    return groups;
  }

  /** Pending groups of committed steps (what the worker may send). */
  private releasedPending(): number {
    const spool = this.spool;
    if (!spool) return 0;
    let count = 0;
    for (const g of spool.pending()) if (g.step <= this.releasedStep && !this.client.awaitsTrainer(g, spool)) count++;
    return count;
  }

  /** Groups waiting in the trainer server's queue for its trainer. */
  private queuedInServer(): number {
    const spool = this.spool;
    if (!spool) return 0;
    let count = 0;
    for (const g of spool.pending()) if (this.client.awaitsTrainer(g, spool)) count++;
    return count;
  }

  /**
   * The loop's beforeCommit hook: durably spool the step's groups (child ids
   * still null) and hold them until afterCommit says the step is committed.
   * Held groups of an earlier step whose commit failed are dropped first.
   */
  async spoolStep(committed: CommittedStep, signal: AbortSignal): Promise<void> {
    if (!this.enabled) return;
    if (!this.activation) await this.start(signal);
    await this.activation;
    const spool = this.spool;
    if (!spool || !this.enabled) return;
    const stale = spool.pending().filter((g) => g.step > this.releasedStep);
    if (stale.length > 0) await spool.discard(stale.map((g) => g.id));
    await this.learnSamplingVersion(signal);
    await spool.append(this.groupsOf(committed, false));
  }

  /**
   * A step sampled before any trainer step was known (the trainer came up
   * late) was sampled with the weights the trainer starts from: its step now,
   * as long as nothing of ours was handed over since.
   */
  private async learnSamplingVersion(signal: AbortSignal): Promise<void> {
    if (this.samplingVersion !== null || !this.client.hasStepSource) return;
    if (this.stepsAhead > 0 || (this.spool?.pendingCount ?? 0) > 0) return;
    // Briefly: an unreachable trainer must not hold up the step's commit.
    await this.pollStep(AbortSignal.any([signal, AbortSignal.timeout(2_000)]));
    if (this.trainerStep !== null) this.samplingVersion = String(this.trainerStep);
  }

  /**
   * The loop's afterCommit hook: release the step's groups (spooling them
   * first when spoolStep did not) to the delivery worker, and hold the next
   * step as the mode says (synchronous: until the groups are acknowledged and
   * the trainer stepped, or trainer.syncTimeoutSeconds with a warning;
   * asynchronous: while sampling is more than trainer.maxStaleness versions
   * ahead).
   */
  async afterCommit(committed: CommittedStep, signal: AbortSignal): Promise<void> {
    let groups: SpooledGroup[];
    const droppedBefore = this.droppedGroups;
    try {
      if (!this.enabled) return;
      if (!this.activation) await this.start(signal);
      await this.activation;
      const spool = this.spool;
      if (!spool || !this.enabled) return;
      await this.learnSamplingVersion(signal);
      groups = this.groupsOf(committed, true);
      await spool.append(groups);
      await spool.setChildIds(groups.map((g) => ({ id: g.id, childIds: g.samples.map((s) => s.childId) })));
    } finally {
      // The step is committed whatever happens here: what it spooled must never be taken for a stale step.
      this.releasedStep = Math.max(this.releasedStep, committed.step);
    }
    // A step short of whole groups may not fill a trainer batch: it is handed over, but no trainer step is owed for it.
    const whole = this.droppedGroups === droppedBefore;
    if (groups.length > 0 && whole) this.stepsAhead++;
    this.changed.notify();
    this.emitState();
    if (groups.length > 0) await this.holdForTrainer(committed.step, groups, whole, signal);
    this.samplingVersion = this.trainerStep === null ? this.samplingVersion : String(this.trainerStep);
    this.emitState();
  }

  private async holdForTrainer(step: number, groups: SpooledGroup[], owesStep: boolean, signal: AbortSignal): Promise<void> {
    const spool = this.spool as TrainerSpool;
    const sync = this.settings['trainer.mode'] === 'sync';
    const staleness = sync ? 0 : this.settings['trainer.maxStaleness'];
    const deadline = sync ? Date.now() + this.settings['trainer.syncTimeoutSeconds'] * 1000 : Number.POSITIVE_INFINITY;
    this.waiting = true;
    this.emitState();
    try {
      for (;;) {
        if (signal.aborted || this.closing.signal.aborted || !this.enabled) return;
        const delivered = groups.every((g) => this.handedOver(g));
        const stepped = this.stepsAhead <= 0 || !owesStep;
        if (sync ? delivered && (stepped || !this.client.hasStepSource) : this.stepsAhead <= staleness || !this.client.hasStepSource) {
          if (sync) await this.settleNow(signal);
          return;
        }
        if (Date.now() >= deadline) {
          const left = groups.filter((g) => !this.handedOver(g)).length;
          const queued = groups.filter((g) => this.handedOver(g) && spool.isPending(g.id)).length;
          this.warn(
            `the trainer did not take step ${step} within trainer.syncTimeoutSeconds (${this.settings['trainer.syncTimeoutSeconds']} s): ` +
              (left > 0
                ? `${left} of its ${groups.length} group(s) are still undelivered (${this.lastError ?? 'no reply'}; they stay spooled and are retried)`
                : `${queued > 0 ? `${queued} of its group(s) wait in the trainer server's queue and ` : ''}the trainer step is still ${this.trainerStep ?? 'unknown'}`) +
              '; going on with the current policy',
          );
          this.stepsAhead = 0;
          return;
        }
        if (delivered || !sync) await this.pollStep(signal);
        if (sync ? delivered && (this.stepsAhead <= 0 || !owesStep) : this.stepsAhead <= staleness) {
          // The trainer stepped: learn now which queued groups it pulled, so a server restart right after cannot make them look lost.
          if (sync) await this.settleNow(signal);
          return;
        }
        if (await this.trainerCannotStep(signal)) {
          // Waiting would last until the deadline for nothing: what it needs comes only with the next step's groups.
          this.stepsAhead = 0;
          return;
        }
        await this.changed.wait(Math.min(this.pollIntervalMs, deadline - Date.now()), [signal, this.closing.signal]);
      }
    } finally {
      this.waiting = false;
      this.emitState();
    }
  }

  /**
   * Everything released is handed over and the trainer's queue holds fewer
   * sequences than its batch (a group refused, or filtered, or a batch larger
   * than a step): the trainer cannot take a step until more groups come, so
   * the wait for one ends now, said once.
   */
  private async trainerCannotStep(signal: AbortSignal): Promise<boolean> {
    if (this.sending !== null || this.releasedPending() > 0) return false;
    let queue;
    try {
      queue = await this.client.readQueue(anySignal(signal, this.closing.signal));
    } catch {
      return false; // unknown: keep waiting (the deadline still holds)
    }
    // A step read in the same look that moved on: the trainer stepped after all.
    if (queue === null || queue.step !== this.trainerStep || queue.queuedSequences >= queue.batchSize) return false;
    // Fewer of ours than we handed over: the server lost some (a restart a settle has yet to see); they are sent again first.
    if (queue.ownGroups < this.queuedInServer()) return false;
    this.warn(
      `the trainer at ${this.settings['trainer.url']} takes a step every ${queue.batchSize} sequences and its queue holds fewer ` +
        "(groups refused, dropped or filtered, or a batch larger than one step's B x n); " +
        'it cannot step until more groups come, so the run goes on without waiting for it',
    );
    return true;
  }

  private async settleNow(signal: AbortSignal): Promise<void> {
    const spool = this.spool as TrainerSpool;
    if (!spool.pending().some((g) => this.client.awaitsTrainer(g, spool))) return;
    const settling = this.settleOnce(spool, anySignal(signal, this.closing.signal)).catch(() => null);
    // close() waits for it: a look puts back what it took from the trainer's buffer before the client closes.
    this.settling.add(settling);
    const settled = await settling.finally(() => this.settling.delete(settling));
    if (settled) this.counted(settled);
    this.emitState();
  }

  /** One settle of the client at a time (the worker's polls and flush's looks would otherwise overlap). */
  private settleOnce(spool: TrainerSpool, signal: AbortSignal): Promise<Settlement> {
    const next = this.settleTail.then(
      () => this.client.settle(spool, signal),
      () => this.client.settle(spool, signal),
    );
    this.settleTail = next.catch(() => undefined);
    return next;
  }

  /** The trainer (or its server's queue) has the group. */
  private handedOver(group: SpooledGroup): boolean {
    const spool = this.spool as TrainerSpool;
    return this.sending !== group.id && (!spool.isPending(group.id) || this.client.awaitsTrainer(group, spool));
  }

  private async pollStep(signal: AbortSignal): Promise<void> {
    if (!this.client.hasStepSource) return;
    try {
      const step = await this.client.readStep(anySignal(signal, this.closing.signal));
      this.connected = true;
      if (step !== null) this.observeStep(step);
    } catch (error) {
      if (signal.aborted || this.closing.signal.aborted) return;
      this.connected = false;
      this.lastError = errorMessage(error);
    }
    this.emitState();
  }

  private observeStep(step: number): void {
    // A trainer first seen late counts its steps from where it started.
    const before = this.trainerStep ?? this.client.startingStep;
    if (before !== null && step > before) {
      this.stepsAhead = Math.max(0, this.stepsAhead - (step - before));
    }
    // A step that went back is a restarted trainer: the new counter is the baseline.
    this.trainerStep = step;
    this.changed.notify();
  }

  /**
   * Resolves the next time the delivery loop has nothing it may send (all
   * handed over, held back, or the bridge off): what a caller waits on to
   * see that nothing more goes out, instead of a clock.
   */
  whenIdle(): Promise<void> {
    if (!this.worker || this.closing.signal.aborted) return Promise.resolve();
    const idle = new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    this.changed.notify();
    return idle;
  }

  /** The worker: oldest pending group first, backoff on failure, until close(). */
  private async deliveryLoop(): Promise<void> {
    const signal = this.closing.signal;
    const failures = new RetryBudget({ backoff: this.backoff });
    let settledAt = 0;
    while (!signal.aborted) {
      const spool = this.spool;
      const client = this.client;
      const pending = this.enabled && spool ? spool.pending() : [];
      const waitingInServer = spool !== null && pending.some((g) => client.awaitsTrainer(g, spool));
      if (spool && waitingInServer && Date.now() - settledAt >= this.pollIntervalMs) {
        settledAt = Date.now();
        try {
          this.counted(await this.settleOnce(spool, signal));
        } catch (error) {
          if (signal.aborted) break;
          this.connected = false;
          this.lastError = errorMessage(error);
          this.emitState();
        }
        continue;
      }
      // Steps are spooled in order: the first group not yet handed over, if its step is committed.
      const first = spool ? pending.find((g) => !client.awaitsTrainer(g, spool)) : undefined;
      const next = first && first.step <= this.releasedStep ? first : undefined;
      if (!spool || !next) {
        for (const resolve of this.idleWaiters.splice(0)) resolve();
        await this.changed.wait(waitingInServer ? Math.max(1, settledAt + this.pollIntervalMs - Date.now()) : 60_000, [signal]);
        continue;
      }
      if (this.holdsBanned(next)) {
        await spool.discard([next.id]);
        this.inDoubt.delete(next.id);
        this.droppedGroups++;
        this.warn(
          `withheld group ${next.key} of step ${next.step}: a program it holds was banned after it was spooled, and a banned program is never in a rollout again (${this.droppedGroups} dropped so far)`,
        );
        this.changed.notify();
        this.emitState();
        continue;
      }
      this.sending = next.id;
      try {
        if (this.inDoubt.has(next.id)) {
          const held = await client.reconcile(next, spool, signal);
          this.inDoubt.delete(next.id);
          if (held) {
            this.delivered(next);
            failures.reset();
            continue;
          }
        }
        const result = await this.client.deliver(next, spool, signal);
        if (result.kind === 'rejected') {
          await spool.reject(next, result.reason);
          this.rejectedGroups++;
          this.lastError = result.reason;
          this.warn(`the trainer refused group ${next.key} (kept in ${spool.dir}/rejected.jsonl): ${result.reason}`);
        } else {
          this.delivered(next);
        }
        failures.reset();
        this.connected = true;
      } catch (error) {
        if (signal.aborted) break;
        failures.take();
        this.connected = false;
        this.lastError = errorMessage(error);
        if (error instanceof RetryableTrainerError && error.ambiguous) this.inDoubt.add(next.id);
        this.emitState();
        await sleep(failures.delayMs(), signal);
        continue;
      } finally {
        this.sending = null;
        this.changed.notify();
        this.emitState();
      }
    }
  }

  /** Whether the group was prompted from a program banned now, or has one among its samples. */
  private holdsBanned(group: SpooledGroup): boolean {
    const banned = this.options.bannedIds?.();
    if (!banned || banned.size === 0) return false;
    return banned.has(group.parentId) || group.samples.some((s) => s.childId !== null && banned.has(s.childId));
  }

  /** Count what a settle learned of the groups waiting in the trainer server. */
  private counted(settled: Settlement): void {
    if (settled.pulled + settled.resent + settled.lost === 0) return;
    this.releasedGroups += settled.pulled;
    this.resentGroups += settled.resent;
    this.lostGroups += settled.lost;
    this.changed.notify();
    this.emitState();
  }

  private delivered(group: SpooledGroup): void {
    this.sentGroups++;
    this.lastAckedPolicyVersion = group.policyVersion;
    if (this.lastError !== null && this.connected) this.lastError = null;
  }

  /**
   * Wait until every spooled group is handed to the trainer (with `pulled`:
   * and pulled by it from the server's queue), `timeoutMs` passes or
   * `signal` aborts; resolves with the groups left.
   */
  async flush(signal: AbortSignal, timeoutMs: number, options: { pulled?: boolean } = {}): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    const left = () => this.releasedPending() + (options.pulled ? this.queuedInServer() : 0);
    while (
      this.enabled &&
      this.spool &&
      (left() > 0 || this.sending !== null) &&
      !signal.aborted &&
      !this.closing.signal.aborted &&
      Date.now() < deadline
    ) {
      await this.changed.wait(Math.min(this.pollIntervalMs, deadline - Date.now()), [signal, this.closing.signal]);
    }
    return left();
  }

  /** Stop the worker and close the spool; what is unsent stays spooled for the next run of this database. */
  async close(): Promise<void> {
    this.closing.abort();
    this.changed.notify();
    await this.activation?.catch(() => undefined);
    await this.worker;
    await Promise.allSettled([...this.settling]);
    for (const resolve of this.idleWaiters.splice(0)) resolve();
    // The run is over: tell the trainer (atropos /disconnect-env), briefly.
    if (this.connected) await this.client.disconnect(AbortSignal.timeout(2_000)).catch(() => undefined);
    this.client.close();
    await this.spool?.close();
  }
}

function anySignal(a: AbortSignal, b: AbortSignal): AbortSignal {
  return AbortSignal.any([a, b]);
}

/** Stands in while no URL is set; the bridge refuses to turn on before it is used. */
class UnconfiguredClient implements TrainerProtocolClient {
  readonly hasStepSource = false;
  readonly startingStep = null;
  constructor(readonly protocol: TrainerProtocol) {}
  async connect(): Promise<void> {
    throw new TrainerConfigError('no trainer URL is set (thetaevolve.trainer.url)');
  }
  async deliver(): Promise<never> {
    throw new RetryableTrainerError('no trainer URL is set (thetaevolve.trainer.url)');
  }
  async reconcile(): Promise<boolean> {
    return false;
  }
  awaitsTrainer(): boolean {
    return false;
  }
  async settle(): Promise<Settlement> {
    return { pulled: 0, resent: 0, lost: 0 };
  }
  async readStep(): Promise<null> {
    return null;
  }
  async readQueue(): Promise<null> {
    return null;
  }
  async disconnect(): Promise<void> {}
  close(): void {}
}
