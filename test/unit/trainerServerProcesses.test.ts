// The RL trainer bridge against trainer servers run as processes of their
// own: test/server/trainerMain.ts runs our atropos API server and slime
// rollout buffer (test/server/atroposTestServer.ts, slimeTestServer.ts, which
// keep the real servers' quirks: the /register wedge, exact batches, group
// release at group_size, /start_rollout rebuilding, nothing told of what the
// trainer pulled) on 127.0.0.1, with no simulated trainer inside. A restart
// is a kill (SIGKILL) and a start on the same port: whatever the server held
// is gone. The trainers' side is played here over HTTP as the real trainers
// do it (atropos: /register, then /batch polls; slime: /start_rollout once,
// /get_rollout_data).
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { request } from 'node:http';
import { join, resolve } from 'node:path';
import { parseSettings, type Settings } from '../../src/engine/common/config';
import type { CommittedStep, ScoredSample } from '../../src/engine/loop';
import { TrainerBridge, type TrainerState, trainerSummary } from '../../src/engine/trainer/bridge';
import { freePort } from '../support/freePort';
import { unmeasuredStepStatistics } from '../support/stepStatistics';
import { tempDir } from '../support/tempDirs';
import { waitFor } from '../support/waitFor';

const REPO = resolve(__dirname, '..', '..');
const TRAINER_MAIN = join(REPO, 'test', 'server', 'trainerMain.ts');
const N = 3;

interface Reply {
  status: number;
  json: unknown;
}

/** One JSON request (GET may carry a body, as atropos' /status-env wants). */
function call(url: string, method: 'GET' | 'POST', path: string, body?: unknown): Promise<Reply> {
  return new Promise((resolveReply, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = request(
      new URL(path, url),
      { method, headers: payload ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {} },
      (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => {
          let json: unknown = null;
          try {
            json = JSON.parse(text);
          } catch {
            json = text;
          }
          resolveReply({ status: res.statusCode ?? 0, json });
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** A trainer test server as a child process; ready once it prints its URL. */
class TrainerProcess {
  private child: ChildProcess | null = null;
  private output = '';
  readonly url: string;

  constructor(
    private readonly protocol: 'atropos' | 'slime',
    readonly port: number,
  ) {
    this.url = `http://127.0.0.1:${port}`;
  }

  async start(): Promise<void> {
    this.output = '';
    const child = spawn(process.execPath, ['--import', 'tsx', TRAINER_MAIN, '--protocol', this.protocol, '--port', String(this.port)], {
      cwd: REPO,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    const what = `the ${this.protocol} test server to listen on ${this.url}`;
    await new Promise<void>((resolveStarted, reject) => {
      const deadline = setTimeout(() => reject(new Error(`waited 30 s for ${what}:\n${this.output}`)), 30_000);
      const done = (error?: Error) => {
        clearTimeout(deadline);
        child.stdout?.off('data', onData);
        child.off('exit', onExit);
        if (error) reject(error);
        else resolveStarted();
      };
      const onData = () => {
        if (this.output.includes(`${this.url}\n`)) done();
      };
      const onExit = (code: number | null) => done(new Error(`${what}: it exited (${code}) first:\n${this.output}`));
      child.stdout?.on('data', (d: Buffer) => (this.output = (this.output + d.toString()).slice(-4000)));
      child.stderr?.on('data', (d: Buffer) => (this.output = (this.output + d.toString()).slice(-4000)));
      child.stdout?.on('data', onData);
      child.once('exit', onExit);
    });
  }

  async stop(): Promise<void> {
    const child = this.child;
    this.child = null;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await gone;
  }

  /** Kill and start again on the same port: everything in memory is gone. */
  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }
}

/** atropos' trainer side: /register, then /batch polls; the batches it pulled. */
class AtroposTrainer {
  readonly batches: { group_overrides?: { thetaevolve?: { group_key?: string } } }[][] = [];
  notRegisteredAfterRegister = 0;
  private timer: NodeJS.Timeout | null = null;
  /** One poll at a time, as a real trainer's loop: a poll still in flight when it stops would pull one more batch. */
  private polling: Promise<void> | null = null;
  constructor(
    private readonly url: string,
    private readonly batchSize: number,
    /** The step it starts (or resumes) at. */
    private step = 0,
  ) {}

  async register(): Promise<void> {
    await call(this.url, 'POST', '/register', {
      wandb_group: 'g',
      wandb_project: 'p',
      batch_size: this.batchSize,
      max_token_len: 4096,
      checkpoint_dir: '',
      save_checkpoint_interval: 0,
      starting_step: this.step,
      num_steps: 1000,
    });
    this.timer = setInterval(() => {
      this.polling ??= this.poll().finally(() => (this.polling = null));
    }, 20);
  }

  private async poll(): Promise<void> {
    const reply = await call(this.url, 'GET', '/batch').catch(() => null);
    const body = reply?.json as { status?: string; batch?: unknown[] | null } | undefined;
    if (body?.status === 'error') this.notRegisteredAfterRegister++;
    if (Array.isArray(body?.batch) && body.batch.length > 0) {
      this.batches.push(body.batch as AtroposTrainer['batches'][number]);
      this.step++;
    }
  }

  /** Stops polling; resolves once no poll is in flight, so nothing more is pulled after. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.polling;
  }

  keys(): string[] {
    return this.batches
      .flat()
      .map((g) => String(g.group_overrides?.thetaevolve?.group_key))
      .sort();
  }
}

function committedStep(step: number): CommittedStep {
  const groups = [0, 1].map((p) => {
    const samples: ScoredSample[] = Array.from({ length: N }, (_, i) => {
      const completion = [100 + step, 200 + i, 300 + p];
      return {
        index: i,
        outcome: 'valid' as const,
        score: 5 + i,
        objective: 5 + i,
        reward: 0.5 + i / 10,
        childId: `c${step}-${p}-${i}`,
        error: null,
        response: {
          ok: true as const,
          jobKey: `s${step}-p${p}`,
          index: i,
          latencyMs: 1,
          retries: 0,
          content: `answer ${i}`,
          reasoning: null,
          finishReason: 'stop',
          truncated: false,
          promptTokens: 3,
          completionTokens: 3,
          tokens: { promptTokenIds: [1, 2, 3 + p], completionTokenIds: completion, completionLogprobs: completion.map(() => -0.5) },
          policyVersion: null,
        },
      };
    });
    return {
      key: `s${step}-p${p}`,
      step,
      parentId: `parent-${p}`,
      messages: [{ role: 'user' as const, content: `improve ${p}` }],
      samples,
    };
  });
  return { step, stats: unmeasuredStepStatistics(step, 2 * N), groups };
}

describe('RL trainer bridge against atropos and slime test servers run as processes, killed and restarted', function () {
  this.timeout(60_000);
  let dir: string;
  const cleanups: (() => Promise<void> | void)[] = [];

  beforeEach(() => {
    dir = tempDir('thetaevolve-real-trainers-');
  });
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  function bridge(settings: Settings, warnings: string[], onState?: (state: TrainerState) => void): TrainerBridge {
    const b = new TrainerBridge({
      settings,
      onState,
      dbFile: join(dir, 'run.sqlite'),
      groupSize: N,
      name: 'thetaevolve-test',
      tokenSupport: { status: 'supported', logprobs: true, message: null },
      onWarning: (m) => warnings.push(m),
      pollIntervalMs: 20,
      backoff: { baseMs: 20, maxMs: 200 },
      requestTimeoutMs: 5_000,
    });
    cleanups.push(() => b.close());
    return b;
  }

  it('atropos: restarted with groups still queued and its trainer back late, it loses and duplicates nothing and is never wedged', async () => {
    const server = new TrainerProcess('atropos', await freePort());
    cleanups.push(() => server.stop());
    await server.start();
    assert.deepEqual((await call(server.url, 'GET', '/batch')).json, {
      status: 'error',
      message: 'Trainer not registered. Call /register first.',
      batch: [],
    });
    let trainer = new AtroposTrainer(server.url, 4 * N); // two steps per trainer batch: step 1 waits in the queue
    cleanups.push(() => trainer.stop());
    await trainer.register();
    const warnings: string[] = [];
    const b = bridge(
      parseSettings({
        batchSize: 2,
        samplesPerPrompt: N,
        'trainer.enabled': true,
        'trainer.url': server.url,
        'trainer.mode': 'async',
        'trainer.maxStaleness': 3,
      }),
      warnings,
    );
    await b.start(new AbortController().signal);
    await b.afterCommit(committedStep(1), new AbortController().signal);
    assert.equal(await b.flush(new AbortController().signal, 10_000), 0);
    assert.equal(b.state().queuedGroups, 2, 'queued in the server, not yet pulled');

    await trainer.stop();
    await server.restart();
    const late = new AtroposTrainer(server.url, 4 * N);
    cleanups.push(() => late.stop());
    // The trainer comes back 500 ms after the server: a post before its /register would wedge the server.
    const comeBack = setTimeout(() => void late.register(), 500);
    cleanups.push(() => clearTimeout(comeBack));
    await b.afterCommit(committedStep(2), new AbortController().signal);
    assert.equal(
      await b.flush(new AbortController().signal, 15_000, { pulled: true }),
      0,
      JSON.stringify({ warnings, state: b.state(), batches: late.keys(), errors: late.notRegisteredAfterRegister }),
    );
    trainer = late;
    assert.deepEqual(trainer.keys(), ['s1-p0', 's1-p1', 's2-p0', 's2-p1']);
    assert.equal(trainer.notRegisteredAfterRegister, 0, 'the server was never wedged');
    assert.ok(
      warnings.some((w) => w.includes('lost 2 queued group(s)')),
      warnings.join('\n'),
    );
  });

  it('atropos, sync: a server killed right after it acknowledged a step, before its trainer pulled it, gets the step again once; the run goes on to its last step', async () => {
    const server = new TrainerProcess('atropos', await freePort());
    cleanups.push(() => server.stop());
    await server.start();
    let trainer = new AtroposTrainer(server.url, 2 * N); // one trainer step per evolution step
    cleanups.push(() => trainer.stop());
    await trainer.register();
    const warnings: string[] = [];
    let onState: ((state: TrainerState) => void) | null = null;
    const b = bridge(
      parseSettings({ batchSize: 2, samplesPerPrompt: N, 'trainer.enabled': true, 'trainer.url': server.url, 'trainer.mode': 'sync' }),
      warnings,
      (state) => onState?.(state),
    );
    await b.start(new AbortController().signal);
    await b.afterCommit(committedStep(1), new AbortController().signal);
    assert.deepEqual(trainer.keys(), ['s1-p0', 's1-p1']);

    // The trainer is slow to poll: step 2 waits in the server's queue, and the server dies there.
    await trainer.stop();
    const acknowledged = new Promise<void>((resolveAck) => {
      onState = (state) => {
        if (state.queuedGroups === 2) resolveAck();
      };
    });
    const step2 = b.afterCommit(committedStep(2), new AbortController().signal);
    await acknowledged;
    onState = null;
    await server.restart();
    const back = new AtroposTrainer(server.url, 2 * N, 1); // it resumes at the step it reached
    cleanups.push(() => back.stop());
    await back.register();
    await step2;
    await b.afterCommit(committedStep(3), new AbortController().signal);
    await b.afterCommit(committedStep(4), new AbortController().signal);
    trainer = back;
    // The trainer polls on its own: with steps 3 and 4 queued together, atropos hands out the newest batch first
    // (its curr_batch is a stack), so step 3's comes one poll later.
    await waitFor(() => back.keys().length >= 6, { what: 'the restarted trainer to pull steps 2 to 4', deadlineMs: 20_000 });
    assert.deepEqual(
      trainer.keys(),
      ['s2-p0', 's2-p1', 's3-p0', 's3-p1', 's4-p0', 's4-p1'],
      JSON.stringify({ warnings, state: b.state() }),
    );
    assert.equal(b.state().trainerStep, 4);
    assert.ok(
      warnings.some((w) => w.includes('lost 2 queued group(s)')),
      warnings.join('\n'),
    );
    assert.ok(!warnings.some((w) => w.includes('syncTimeoutSeconds')), warnings.join('\n'));
  });

  /** What slime's trainer does once at its start: /start_rollout, which replaces the buffer (a background task: done once a whole group comes out). */
  async function startRollout(url: string): Promise<void> {
    assert.equal((await call(url, 'POST', '/start_rollout', { task_type: 'thetaevolve', num_repeat_per_sample: String(N) })).status, 200);
    for (let attempt = 0; ; attempt++) {
      assert.ok(attempt < 200, '/start_rollout never took effect');
      for (let i = 0; i < N; i++)
        await call(url, 'POST', '/buffer/write', {
          uid: `probe-${attempt}-${i}`,
          instance_id: -1 - attempt,
          messages: [],
          reward: 0,
          extra_info: {},
        });
      const probe = (await call(url, 'POST', '/get_rollout_data', {})).json as { success: boolean };
      if (probe.success) return;
    }
  }

  type BufferItem = { uid: string; instance_id: unknown; extra_info: { group_key: string } };

  /** slime's trainer pulling /get_rollout_data until it holds `groups` whole groups; the items it got. */
  async function pullGroups(url: string, groups: number): Promise<BufferItem[]> {
    const items: BufferItem[] = [];
    await waitFor(
      async () => {
        const read = (await call(url, 'POST', '/get_rollout_data', {})).json as { success: boolean; data: { data: BufferItem[] } };
        if (read.success) items.push(...read.data.data);
        return new Set(items.map((i) => i.instance_id)).size >= groups;
      },
      { what: `slime's trainer to pull ${groups} whole groups`, deadlineMs: 20_000, detail: () => JSON.stringify(items.map((i) => i.uid)) },
    );
    return items;
  }

  function slimeSettings(url: string): Settings {
    return parseSettings({
      batchSize: 2,
      samplesPerPrompt: N,
      sampler: 'mutate',
      'trainer.enabled': true,
      'trainer.url': url,
      'trainer.protocol': 'slime',
    });
  }

  it('slime: says what to configure while the group size is 16; the groups /start_rollout rebuilt away are written again under fresh numeric instance ids, and the trainer pulls every group whole once', async () => {
    const server = new TrainerProcess('slime', await freePort());
    cleanups.push(() => server.stop());
    await server.start();
    const warnings: string[] = [];
    const b = bridge(slimeSettings(server.url), warnings);
    await b.start(new AbortController().signal);
    await b.afterCommit(committedStep(1), new AbortController().signal);
    assert.equal(await b.flush(new AbortController().signal, 10_000), 0);
    assert.ok(
      warnings.some((w) => w.includes('releases none') && w.includes('--n-samples-per-prompt 3 --rollout-task-type thetaevolve')),
      warnings.join('\n'),
    );
    assert.equal(b.state().queuedGroups, 2, 'written, held by the buffer, not released');
    assert.equal(b.state().releasedGroups, 0);

    await startRollout(server.url); // replaces the buffer: step 1's writes are gone
    await b.afterCommit(committedStep(2), new AbortController().signal);
    assert.equal(await b.flush(new AbortController().signal, 10_000), 0);
    const items = await pullGroups(server.url, 4);
    const byInstance = new Map<unknown, BufferItem[]>();
    for (const item of items) byInstance.set(item.instance_id, [...(byInstance.get(item.instance_id) ?? []), item]);
    assert.ok(
      [...byInstance.keys()].every((id) => typeof id === 'number'),
      'slime reads instance_id into an int',
    );
    assert.deepEqual(
      [...byInstance.values()].map((group) => new Set(group.map((i) => i.uid)).size),
      [N, N, N, N],
    );
    assert.deepEqual([...byInstance.values()].map((group) => group[0]?.extra_info.group_key).sort(), ['s1-p0', 's1-p1', 's2-p0', 's2-p1']);
    assert.ok(
      warnings.some((w) => w.includes('restarted or rebuilt') && w.includes('2 group(s) it never released are written again')),
      warnings.join('\n'),
    );
    await waitFor(() => b.state().releasedGroups === 4, {
      what: 'the bridge to see the 4 groups released',
      detail: () => JSON.stringify(b.state()),
    });
    assert.deepEqual([b.state().resentGroups, b.state().lostGroups, b.state().queuedGroups], [2, 0, 0]);
    assert.match(trainerSummary(b.state()), /released \(pulled by the trainer\), 0 pending/);
  });

  it('slime: a buffer restarted (and rebuilt by the restarted trainer) before the trainer pulled a step: its groups are counted lost, never written twice; the next step is released', async () => {
    const server = new TrainerProcess('slime', await freePort());
    cleanups.push(() => server.stop());
    await server.start();
    await startRollout(server.url);
    const warnings: string[] = [];
    let onState: ((state: TrainerState) => void) | null = null;
    const b = bridge(slimeSettings(server.url), warnings, (state) => onState?.(state));
    await b.start(new AbortController().signal);
    await b.afterCommit(committedStep(1), new AbortController().signal);
    assert.equal(b.state().queuedGroups, 2);

    // The buffer dies: the bridge's next look at it is refused.
    const refused = new Promise<void>((resolveRefused) => {
      onState = (state) => {
        if (!state.connected) resolveRefused();
      };
    });
    await server.stop();
    await refused;
    onState = null;
    await server.start();
    await startRollout(server.url); // slime's trainer, restarted with it
    await b.afterCommit(committedStep(2), new AbortController().signal);
    assert.equal(await b.flush(new AbortController().signal, 10_000), 0);
    const items = await pullGroups(server.url, 2);
    assert.deepEqual([...new Set(items.map((i) => i.extra_info.group_key))].sort(), ['s2-p0', 's2-p1']);
    await waitFor(() => b.state().releasedGroups === 2, {
      what: 'the bridge to see step 2 released',
      detail: () => JSON.stringify(b.state()),
    });
    assert.deepEqual([b.state().lostGroups, b.state().resentGroups, b.state().queuedGroups, b.state().pendingGroups], [2, 0, 0, 0]);
    assert.ok(
      warnings.some((w) => w.includes('2 group(s) it had released to slime') && w.includes('counted lost, not written twice')),
      warnings.join('\n'),
    );
    assert.match(trainerSummary(b.state()), /2 released \(pulled by the trainer\), 0 pending, 2 lost/);
  });
});
