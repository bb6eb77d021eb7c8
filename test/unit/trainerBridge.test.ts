// The RL trainer bridge against the protocol-faithful local trainer servers
// over real HTTP, with its spool on disk: payload shapes, exactly-once
// delivery through outages, restarts and ambiguous failures, sync and async
// holds, the toggle, refusals, and the spool's crash rules.
import assert from 'node:assert/strict';
import { appendFileSync, readFileSync } from 'node:fs';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Settings } from '../../src/engine/common/config';
import { EngineEventSchema } from '../../src/engine/common/events';
import type { CommittedStep, ScoredSample } from '../../src/engine/loop';
import {
  TrainerBridge,
  TrainerConfigError,
  type TrainerState,
  trainerStateEvent,
  trainerStateLine,
  trainerSummary,
} from '../../src/engine/trainer/bridge';
import { rolloutGroupsOf, shortGroupWarning } from '../../src/engine/trainer/rolloutGroups';
import { spoolDirOf, TrainerSpool } from '../../src/engine/trainer/spool';
import type { TokenSupport } from '../../src/engine/llm/endpointClient';
import type { Outcome } from '../../src/engine/common/types';
import { type AtroposTestServer, startAtroposTestServer } from '../server/atroposTestServer';
import type { DataFault } from '../server/faultyTrainerServer';
import { startSlimeTestServer, wholeSlimeGroups } from '../server/slimeTestServer';
import { settingsBuilder } from '../support/settings';
import { unmeasuredStepStatistics } from '../support/stepStatistics';
import { tempDir } from '../support/tempDirs';
import { waitFor } from '../support/waitFor';

const TOKENS: TokenSupport = { status: 'supported', logprobs: true, message: null };

const settings = settingsBuilder({ batchSize: 2, samplesPerPrompt: 3, 'trainer.enabled': true });

/** A committed step as the loop hands it over: B groups of n responses with token ids and logprobs. */
function committedStep(
  step: number,
  b = 2,
  n = 3,
  options: { policyVersion?: string | null; equalRewards?: boolean; badLogprob?: boolean; failed?: number[] } = {},
): CommittedStep {
  const groups = [];
  for (let p = 0; p < b; p++) {
    const samples: ScoredSample[] = [];
    for (let i = 0; i < n; i++) {
      if (options.failed?.includes(i)) {
        samples.push({
          index: i,
          outcome: 'request_failed',
          score: null,
          objective: null,
          reward: null,
          childId: null,
          response: null,
          error: 'HTTP 500',
        });
        continue;
      }
      const score = options.equalRewards ? -0.4 : 5 + step + p + i / 10;
      const outcome: Outcome = options.equalRewards ? 'no_diff' : 'valid';
      const prompt = [1, 2, 3, 4 + p];
      const completion = Array.from({ length: 2 + i }, (_, k) => 100 + step * 10 + k);
      samples.push({
        index: i,
        outcome,
        score,
        objective: options.equalRewards ? null : score,
        reward: options.equalRewards ? -0.4 : score / 10,
        childId: `c${step}-${p}-${i}`,
        error: null,
        response: {
          ok: true,
          jobKey: `s${step}-p${p}`,
          index: i,
          latencyMs: 5,
          retries: 0,
          content: `answer ${i}`,
          reasoning: i === 0 ? 'thinking first' : null,
          finishReason: i === n - 1 ? 'length' : 'stop',
          truncated: i === n - 1,
          promptTokens: prompt.length,
          completionTokens: completion.length,
          tokens: {
            promptTokenIds: prompt,
            completionTokenIds: completion,
            completionLogprobs: completion.map((_, k) => (options.badLogprob && k === 0 ? 0.5 : -0.1 * (k + 1))),
          },
          policyVersion: options.policyVersion ?? null,
        },
      });
    }
    groups.push({
      key: `s${step}-p${p}`,
      step,
      parentId: `parent-${p}`,
      messages: [
        { role: 'system' as const, content: 'sys' },
        { role: 'user' as const, content: `improve ${p}` },
      ],
      samples,
    });
  }
  return { step, stats: unmeasuredStepStatistics(step, b * n), groups };
}

/** The step as the loop hands it to beforeCommit: the children have no ids yet. */
function withoutChildIds(committed: CommittedStep): CommittedStep {
  return {
    ...committed,
    groups: committed.groups.map((g) => ({ ...g, samples: g.samples.map((sample) => ({ ...sample, childId: null })) })),
  };
}

function groupUids(server: AtroposTestServer): string[] {
  return server.received.flatMap((r) => {
    const ours = r.data.group_overrides?.thetaevolve as { group_uid: string } | undefined;
    return ours ? [ours.group_uid] : [];
  });
}

/** Group keys of what atropos' trainer pulled, in order within each batch. */
function pulledKeys(server: AtroposTestServer): string[] {
  return server.batches
    .flat()
    .map((g) => String((g.group_overrides?.thetaevolve as Record<string, unknown>).group_key))
    .sort();
}

function postRaw(url: string, path: string, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, url), { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('RL trainer bridge', function () {
  this.timeout(60_000);
  let dir: string;
  const cleanups: (() => Promise<void>)[] = [];

  beforeEach(() => {
    dir = tempDir('thetaevolve-trainer-');
  });
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  async function atropos(options: Parameters<typeof startAtroposTestServer>[0]) {
    const server = await startAtroposTestServer(options);
    cleanups.push(() => server.close());
    return server;
  }

  function bridge(s: Settings, extra: Partial<ConstructorParameters<typeof TrainerBridge>[0]> = {}) {
    const warnings: string[] = [];
    const states: TrainerState[] = [];
    const stateWaiters: { until: (st: TrainerState) => boolean; resolve: () => void }[] = [];
    const b = new TrainerBridge({
      settings: s,
      dbFile: join(dir, 'run.sqlite'),
      groupSize: s.samplesPerPrompt,
      name: 'thetaevolve-test',
      tokenSupport: TOKENS,
      pollIntervalMs: 20,
      backoff: { baseMs: 20, maxMs: 100 },
      requestTimeoutMs: 2_000,
      onWarning: (m) => warnings.push(m),
      onState: (st) => {
        states.push(st);
        for (const w of stateWaiters.filter((x) => x.until(st))) {
          stateWaiters.splice(stateWaiters.indexOf(w), 1);
          w.resolve();
        }
      },
      ...extra,
    });
    cleanups.push(() => b.close());
    /** Resolves once the bridge's state satisfies `until` (now, or at a later state change). */
    const stateWhere = (until: (st: TrainerState) => boolean): Promise<void> =>
      until(b.state()) ? Promise.resolve() : new Promise<void>((resolve) => stateWaiters.push({ until, resolve }));
    return { b, warnings, states, stateWhere };
  }

  describe('spool', () => {
    it('keeps pending groups across reopen, drops acknowledged ones, cuts a torn last line and truncates when drained', async () => {
      const spoolDir = join(dir, 'spool');
      const spool = await TrainerSpool.open(spoolDir);
      const prefix = spool.runPrefix;
      const g = (key: string, step: number) => ({
        id: `${prefix}:${key}`,
        key,
        step,
        parentId: 'p',
        policyVersion: '3',
        messages: [{ role: 'user' as const, content: 'x' }],
        samples: [],
        spooledAt: 1,
      });
      await spool.append([g('s1-p0', 1), g('s1-p1', 1)]);
      await spool.append([g('s1-p0', 1)]); // already there: skipped
      await spool.ack([`${prefix}:s1-p0`], { sync: true });
      await spool.close();
      appendFileSync(join(spoolDir, 'groups.jsonl'), '{"id":"torn'); // a crash mid-append

      const again = await TrainerSpool.open(spoolDir);
      assert.equal(again.runPrefix, prefix, 'the id prefix is stable across resumes');
      assert.deepEqual(
        again.pending().map((x) => x.key),
        ['s1-p1'],
      );
      await again.append([g('s2-p0', 2)]);
      assert.deepEqual(
        again.pending().map((x) => x.key),
        ['s1-p1', 's2-p0'],
      );
      await again.ack([`${prefix}:s1-p1`, `${prefix}:s2-p0`], { sync: true });
      assert.equal(again.pendingCount, 0);
      assert.equal(readFileSync(join(spoolDir, 'groups.jsonl'), 'utf8'), '', 'drained: truncated');
      assert.equal(readFileSync(join(spoolDir, 'acks.jsonl'), 'utf8'), '');
      await again.close();
    });

    it('compacts the logs while groups are pending, keeping the acknowledged responses of a partly sent group', async () => {
      const spoolDir = join(dir, 'compact');
      const spool = await TrainerSpool.open(spoolDir, 'run', { compactAfter: 2 });
      const g = (key: string) => ({
        id: `run:${key}`,
        key,
        step: 1,
        parentId: 'p',
        policyVersion: null,
        messages: [],
        samples: [],
        spooledAt: 1,
      });
      await spool.append([g('a'), g('b'), g('c'), g('d')]);
      await spool.ack(['run:c:0'], { sync: false }); // one response of c went out (slime)
      await spool.ack(['run:a'], { sync: true });
      await spool.ack(['run:b'], { sync: true }); // two acknowledged groups in the log: rewrite
      const lines = readFileSync(join(spoolDir, 'groups.jsonl'), 'utf8').trim().split('\n');
      assert.deepEqual(
        lines.map((l) => (JSON.parse(l) as { key: string }).key),
        ['c', 'd'],
      );
      assert.deepEqual(
        readFileSync(join(spoolDir, 'acks.jsonl'), 'utf8')
          .trim()
          .split('\n')
          .map((l) => (JSON.parse(l) as { ack: string }).ack),
        ['run:c:0'],
      );
      await spool.append([g('e')]); // appends go to the new file
      await spool.close();
      const again = await TrainerSpool.open(spoolDir);
      assert.deepEqual(
        again.pending().map((x) => x.key),
        ['c', 'd', 'e'],
      );
      assert.ok(again.isAcked('run:c:0'));
      await again.close();
    });

    it('keeps which env id a posted group waits under across compaction and reopen; a lost group is unmarked; an acknowledged one forgotten', async () => {
      const spoolDir = join(dir, 'posted');
      const spool = await TrainerSpool.open(spoolDir, 'run', { compactAfter: 1 });
      const g = (key: string) => ({
        id: `run:${key}`,
        key,
        step: 1,
        parentId: 'p',
        policyVersion: null,
        messages: [],
        samples: [],
        spooledAt: 1,
      });
      await spool.append([g('a'), g('b'), g('c')]);
      await spool.markPosted('run:a', 0);
      await spool.markPosted('run:b', 0);
      await spool.markPosted('run:c', 1);
      await spool.markPosted('run:b', null); // the server lost it
      await spool.ack(['run:a'], { sync: true }); // pulled: the log is compacted
      assert.equal(spool.postedEnv('run:a'), undefined);
      await spool.close();
      const again = await TrainerSpool.open(spoolDir);
      assert.deepEqual(
        again.pending().map((x) => [x.key, again.postedEnv(x.id)]),
        [
          ['b', undefined],
          ['c', 1],
        ],
      );
      await again.close();
    });
  });

  describe('atropos', () => {
    it('names within seconds the request a trainer took and never answers (what and where), long before its timeout', async () => {
      // A trainer that accepts the connection and the request, then stays silent.
      const silent = createServer(() => undefined);
      await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
      cleanups.push(async () => {
        silent.closeAllConnections();
        await new Promise<void>((resolve) => silent.close(() => resolve()));
      });
      const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
      const s = settings({ 'trainer.url': url, 'trainer.mode': 'sync' });
      const { b, stateWhere, states } = bridge(s, { requestTimeoutMs: 30_000 });
      const stop = new AbortController();
      let gaveUp = false;
      const starting = b.start(stop.signal).catch(() => (gaveUp = true));
      await stateWhere((st) => (st.awaiting ?? null) !== null);
      // Named while the request still waits: before its timeout gave up on it.
      assert.equal(gaveUp, false, 'named only once the request had timed out');
      const named = states.find((st) => st.awaiting);
      assert.ok(named);
      assert.match(
        named.awaiting ?? '',
        new RegExp(
          `^POST ${url}/register-env: no answer for 5 s \\(it gives up after 30 s, thetaevolve\\.trainer\\.requestTimeoutSeconds\\)$`,
        ),
      );
      // The CLI's line and the event carry it.
      assert.match(
        trainerStateLine(states[0] ?? null, named) ?? '',
        new RegExp(`^atropos trainer at ${url}: awaiting its answer to POST ${url}/register-env`),
      );
      assert.equal(EngineEventSchema.parse(trainerStateEvent(named)).type, 'trainer_state');
      stop.abort();
      await starting;
      // Once the request is over (aborted here), nothing is awaited any more.
      await stateWhere((st) => (st.awaiting ?? null) === null);
    });

    it('registers and sends one ScoredData per group with aligned tokens, masks, logprobs, shaped scores, raw scores and the policy version; sync waits for the trainer step', async () => {
      const server = await atropos({ trainer: { batchSize: 6 } });
      const s = settings({ 'trainer.url': server.url });
      const { b, states } = bridge(s);
      await b.start(new AbortController().signal);
      assert.equal(server.registrations.length, 1);
      assert.deepEqual(server.registrations[0], {
        max_token_length: s.maxTokens,
        desired_name: 'thetaevolve-test',
        weight: 1,
        group_size: 3,
      });
      await b.afterCommit(committedStep(1, 2, 3, { failed: [] }), new AbortController().signal);
      assert.equal(server.received.length, 2);
      assert.equal(server.currentStep, 1, 'sync: afterCommit returned after the trainer stepped');
      assert.equal(b.state().trainerStep, 1);
      const first = server.received[0]?.data;
      assert.ok(first);
      assert.equal(first.tokens.length, 3);
      assert.equal(first.env_id, 0);
      for (let i = 0; i < 3; i++) {
        const tokens = first.tokens[i] as number[];
        assert.deepEqual(tokens.slice(0, 4), [1, 2, 3, 4]);
        assert.deepEqual(first.masks[i], [-100, -100, -100, -100, ...tokens.slice(4)]);
        assert.equal(first.inference_logprobs?.[i]?.length, tokens.length);
        assert.deepEqual(first.inference_logprobs?.[i]?.slice(0, 4), [1, 1, 1, 1]);
      }
      assert.deepEqual(first.scores, [0.6, 0.61, 0.62]);
      const meta = first.group_overrides?.thetaevolve as Record<string, unknown>;
      assert.deepEqual(meta.raw_scores, [6, 6.1, 6.2]);
      assert.equal(meta.policy_version, '0', 'sampled with the trainer step seen at sampling time');
      assert.equal(meta.step, 1);
      assert.equal(meta.parent_id, 'parent-0');
      assert.equal(first.messages?.[0]?.at(-1)?.content, '<think>\nthinking first\n</think>\n\nanswer 0');
      assert.equal(b.state().lastAckedPolicyVersion, '0');
      // The next step was sampled with the trainer's new step; an endpoint version wins when given.
      await b.afterCommit(committedStep(2), new AbortController().signal);
      assert.equal((server.received[2]?.data.group_overrides?.thetaevolve as Record<string, unknown>).policy_version, '1');
      await b.afterCommit(committedStep(3, 2, 3, { policyVersion: 'w7' }), new AbortController().signal);
      assert.equal((server.received[4]?.data.group_overrides?.thetaevolve as Record<string, unknown>).policy_version, 'w7');
      const last = states.at(-1) as TrainerState;
      assert.equal(last.sentGroups, 6);
      assert.equal(last.pendingGroups, 0);
      assert.equal(EngineEventSchema.parse(trainerStateEvent(last)).type, 'trainer_state');
    });

    it('delivers every group exactly once through 503s, resets before and after storing, a down window and a restart that loses all state', async () => {
      const script: DataFault[] = ['unavailable', 'ok', 'reset', 'ok', 'reset_after_store', 'ok', 'unavailable', 'unavailable'];
      const server = await atropos({ trainer: { batchSize: 6 }, script });
      const { b } = bridge(settings({ 'trainer.url': server.url }));
      await b.start(new AbortController().signal);
      await b.afterCommit(committedStep(1), new AbortController().signal);
      await server.downFor(400);
      await b.afterCommit(committedStep(2), new AbortController().signal);
      await server.restart(200);
      await b.afterCommit(committedStep(3), new AbortController().signal);
      await b.afterCommit(committedStep(4), new AbortController().signal);
      const uids = groupUids(server);
      assert.equal(uids.length, 8, uids.join(' '));
      assert.equal(new Set(uids).size, 8, `duplicates: ${uids.join(' ')}`);
      assert.deepEqual(uids.map((u) => u.split(':')[1]).sort(), ['s1-p0', 's1-p1', 's2-p0', 's2-p1', 's3-p0', 's3-p1', 's4-p0', 's4-p1']);
      assert.ok(server.counters.latestExampleRequests >= 2, 'ambiguous failures were checked with /latest_example');
      assert.ok(server.registrations.length >= 2, 'registered again after the restart');
      assert.equal(server.received.filter((r) => r.epoch === 1).length, 4, 'steps 3 and 4 went to the restarted server');
      assert.equal(b.state().pendingGroups, 0);
    });

    it('registers again before posting to a restarted server whose trainer is not back yet (a post before its /register would wedge it); no stall', async () => {
      const server = await atropos({ trainer: { batchSize: 6, restartDelayMs: 500 } });
      const { b, warnings } = bridge(settings({ 'trainer.url': server.url, 'trainer.syncTimeoutSeconds': 8, temperature: 0.7 }));
      await b.start(new AbortController().signal);
      await b.afterCommit(committedStep(1), new AbortController().signal);
      await server.restart(0); // the trainer registers again only after 500 ms
      await b.afterCommit(committedStep(2), new AbortController().signal);
      assert.equal(server.notRegisteredBatches, 0, 'the server never answered "Trainer not registered"');
      // No stall: the sync timeout never ran out (it warns when it does).
      assert.ok(!warnings.some((w) => w.includes('did not take step')), warnings.join('\n'));
      assert.deepEqual(pulledKeys(server), ['s1-p0', 's1-p1', 's2-p0', 's2-p1']);
      assert.ok(
        server.received.every((r) => r.data.env_id !== null && r.data.generation_params?.temperature === 0.7),
        'generation_params.temperature goes along',
      );
      await b.close();
      assert.deepEqual(server.disconnects, [0], '/disconnect-env at the end, with the env id of the restarted server');
    });

    it('keeps a posted group until the trainer pulled it: a server restarted with groups still queued gets them again, nothing lost or pulled twice', async () => {
      const server = await atropos({ trainer: { batchSize: 12 } }); // two steps per batch: step 1 waits in the queue
      const { b, warnings } = bridge(settings({ 'trainer.url': server.url, 'trainer.mode': 'async', 'trainer.maxStaleness': 3 }));
      await b.start(new AbortController().signal);
      await b.afterCommit(committedStep(1), new AbortController().signal);
      assert.equal(await b.flush(new AbortController().signal, 5_000), 0);
      assert.equal(b.state().queuedGroups, 2, 'posted, not yet pulled: still spooled');
      assert.match(
        trainerSummary(b.state()),
        /2 group\(s\) sent, 0 released \(pulled by the trainer\), 0 pending, 2 queued for the trainer/,
      );
      await server.restart(100);
      await b.afterCommit(committedStep(2), new AbortController().signal);
      assert.equal(await b.flush(new AbortController().signal, 8_000, { pulled: true }), 0);
      assert.deepEqual(pulledKeys(server), ['s1-p0', 's1-p1', 's2-p0', 's2-p1']);
      assert.ok(
        warnings.some((w) => w.includes('lost 2 queued group(s)')),
        warnings.join('\n'),
      );
      assert.equal(
        new Set(
          server.received.map(
            (r) => r.data.group_overrides?.thetaevolve && (r.data.group_overrides.thetaevolve as Record<string, unknown>).group_key,
          ),
        ).size,
        4,
      );
    });

    it("a server restarted the instant its trainer pulled our groups: the trainer's step tells what it pulled, so nothing is sent twice", async () => {
      const server = await atropos({ trainer: { batchSize: 6 } });
      let restarted = false;
      server.onTrainerStep = (step) => {
        if (step === 1 && !restarted) {
          restarted = true;
          void server.restart(100); // the trainer comes back at step 1
        }
      };
      const { b, warnings } = bridge(settings({ 'trainer.url': server.url, 'trainer.mode': 'async', 'trainer.maxStaleness': 3 }));
      await b.start(new AbortController().signal);
      await b.afterCommit(committedStep(1), new AbortController().signal);
      assert.equal(await b.flush(new AbortController().signal, 8_000, { pulled: true }), 0);
      await b.afterCommit(committedStep(2), new AbortController().signal);
      assert.equal(await b.flush(new AbortController().signal, 8_000, { pulled: true }), 0);
      assert.ok(restarted);
      assert.deepEqual(pulledKeys(server), ['s1-p0', 's1-p1', 's2-p0', 's2-p1']);
      assert.ok(!warnings.some((w) => w.includes('lost')), warnings.join('\n'));
    });

    it("tags the first step with the trainer's starting step when the trainer came up late", async () => {
      const server = await atropos({ trainer: { batchSize: 6, startDelayMs: 400 } });
      const { b, warnings } = bridge(settings({ 'trainer.url': server.url, 'trainer.syncTimeoutSeconds': 8 }));
      await b.start(new AbortController().signal);
      assert.equal(b.state().connected, false);
      await b.afterCommit(committedStep(1), new AbortController().signal);
      assert.deepEqual(
        server.received.map((r) => (r.data.group_overrides?.thetaevolve as Record<string, unknown>).policy_version),
        ['0', '0'],
      );
      // The trainer's first step counts: the sync timeout never ran out (it warns when it does).
      assert.ok(!warnings.some((w) => w.includes('did not take step')), warnings.join('\n'));
    });

    it('sync mode goes on with a warning when the trainer does not step within the timeout; the groups are delivered', async () => {
      // The trainer polls /batch once at its start and then hangs: its queue holds a batch it never takes.
      const server = await atropos({ trainer: { batchSize: 6, pollMs: 3_600_000 } });
      const { b, warnings } = bridge(settings({ 'trainer.url': server.url, 'trainer.syncTimeoutSeconds': 1 }));
      await b.start(new AbortController().signal);
      const started = Date.now();
      await b.afterCommit(committedStep(1), new AbortController().signal);
      assert.ok(Date.now() - started >= 900);
      assert.equal(server.received.length, 2);
      assert.ok(
        warnings.some((w) => w.includes('did not take step 1') && w.includes('trainer step is still 0')),
        warnings.join('\n'),
      );
    });

    it('sync mode does not wait for a trainer step its queue cannot make (a batch larger than a step)', async () => {
      const server = await atropos({ trainer: { batchSize: 1000 } });
      const { b, warnings } = bridge(settings({ 'trainer.url': server.url }));
      await b.start(new AbortController().signal);
      await b.afterCommit(committedStep(1), new AbortController().signal);
      await b.afterCommit(committedStep(2), new AbortController().signal);
      assert.equal(server.received.length, 4);
      assert.equal(server.currentStep, 0);
      assert.ok(
        warnings.some((w) => w.includes('takes a step every 1000 sequences')),
        'warned at start that the batch needs more than a step gives',
      );
      assert.ok(
        warnings.some((w) => w.includes('its queue holds fewer') && w.includes('goes on without waiting')),
        warnings.join('\n'),
      );
      assert.ok(!warnings.some((w) => w.includes('syncTimeoutSeconds')), warnings.join('\n'));
    });

    it('sync mode: a step one of whose groups the trainer refused is not waited for (it cannot fill a batch); the next steps are, and every other group goes out once', async () => {
      const server = await atropos({ trainer: { batchSize: 6 }, script: ['invalid'] });
      const { b, warnings } = bridge(settings({ 'trainer.url': server.url }));
      await b.start(new AbortController().signal);
      for (const step of [1, 2, 3, 4]) await b.afterCommit(committedStep(step), new AbortController().signal);
      assert.equal(b.state().rejectedGroups, 1);
      assert.ok(
        warnings.some((w) => w.includes('refused group s1-p0')),
        warnings.join('\n'),
      );
      assert.equal(server.currentStep, 3, 'seven groups of 3 make three batches of 6');
      assert.deepEqual(
        groupUids(server)
          .map((u) => u.split(':')[1])
          .sort(),
        ['s1-p1', 's2-p0', 's2-p1', 's3-p0', 's3-p1', 's4-p0', 's4-p1'],
      );
      assert.ok(!warnings.some((w) => w.includes('syncTimeoutSeconds')), warnings.join('\n'));
    });

    it('async mode runs at most trainer.maxStaleness steps ahead of the trainer', async () => {
      const server = await atropos({ trainer: { batchSize: 6, pollMs: 1200, startDelayMs: 0 } });
      const { b } = bridge(settings({ 'trainer.url': server.url, 'trainer.mode': 'async', 'trainer.maxStaleness': 1 }));
      await b.start(new AbortController().signal);
      await b.afterCommit(committedStep(1), new AbortController().signal);
      // One step ahead is allowed: it did not wait for the trainer to step.
      assert.equal(server.currentStep, 0);
      await b.afterCommit(committedStep(2), new AbortController().signal);
      assert.ok(server.currentStep >= 1, 'two ahead: waited until the trainer took a step');
      assert.equal(await b.flush(new AbortController().signal, 5_000), 0);
      assert.equal(new Set(groupUids(server)).size, 4);
    });

    it('the toggle: off sends and spools nothing and keeps the spool; on again sends what was pending', async () => {
      const server = await atropos({ trainer: { batchSize: 6 } });
      const s = settings({ 'trainer.url': server.url, 'trainer.mode': 'async', 'trainer.maxStaleness': 5 });
      await server.goDown();
      const { b } = bridge(s);
      await b.start(new AbortController().signal);
      assert.equal(b.state().connected, false);
      await b.afterCommit(committedStep(1), new AbortController().signal);
      assert.equal(b.state().pendingGroups, 2);
      b.setEnabled(false);
      await b.afterCommit(committedStep(2), new AbortController().signal);
      await server.comeUp();
      // The delivery loop looked again with the server up, and had nothing it may send.
      await b.whenIdle();
      assert.equal(server.received.length, 0, 'nothing sent while off');
      assert.equal(b.state().pendingGroups, 2, 'the spool is kept');
      b.setEnabled(true);
      assert.equal(await b.flush(new AbortController().signal, 5_000), 0);
      assert.deepEqual(
        groupUids(server).map((u) => u.split(':')[1]),
        ['s1-p0', 's1-p1'],
      );
    });

    it('resends what a closed bridge left in the spool, checking first whether the trainer already holds the oldest', async () => {
      const server = await atropos({ trainer: { batchSize: 6 }, script: ['ok', 'hold_after_store'] });
      const s = settings({ 'trainer.url': server.url, 'trainer.syncTimeoutSeconds': 1 });
      const first = bridge(s, { requestTimeoutMs: 60_000 });
      await first.b.start(new AbortController().signal);
      const stop = new AbortController();
      const pending = first.b.afterCommit(committedStep(1), stop.signal);
      await waitFor(() => server.received.length >= 2, { what: 'the trainer to store both groups', deadlineMs: 20_000 });
      stop.abort();
      await pending;
      await first.b.close(); // as a crash: the second group is stored, its reply never came
      const second = bridge(s);
      await second.b.start(new AbortController().signal);
      assert.equal(await second.b.flush(new AbortController().signal, 5_000), 0);
      assert.deepEqual(
        groupUids(server).map((u) => u.split(':')[1]),
        ['s1-p0', 's1-p1'],
        'no duplicate',
      );
    });

    it('a step spooled before its commit and never committed (a crash in between) is discarded for good on reopen and never sent; its redo is sent once', async () => {
      const server = await atropos({ trainer: { batchSize: 6 } });
      const s = settings({ 'trainer.url': server.url });
      const first = bridge(s, { lastCommittedStep: 0 });
      await first.b.start(new AbortController().signal);
      await first.b.spoolStep(withoutChildIds(committedStep(1)), new AbortController().signal);
      await first.b.afterCommit(committedStep(1), new AbortController().signal);
      await first.b.spoolStep(withoutChildIds(committedStep(2)), new AbortController().signal);
      assert.equal(first.b.state().pendingGroups, 0, 'held groups are not pending for the trainer');
      assert.equal(await first.b.flush(new AbortController().signal, 300), 0);
      await first.b.whenIdle();
      await first.b.close(); // killed before step 2's database commit
      assert.deepEqual(
        groupUids(server).map((u) => u.split(':')[1]),
        ['s1-p0', 's1-p1'],
        'the held step was never sent',
      );
      const spoolDir = spoolDirOf(join(dir, 'run.sqlite'));
      assert.equal(readFileSync(join(spoolDir, 'groups.jsonl'), 'utf8').trim().split('\n').length, 2, 'step 2 was spooled durably');

      const second = bridge(s, { lastCommittedStep: 1 });
      await second.b.start(new AbortController().signal);
      assert.ok(
        second.warnings.some((w) => w.includes('discarded 2 spooled group(s) of step(s) 2')),
        second.warnings.join('\n'),
      );
      assert.equal(await second.b.flush(new AbortController().signal, 1_000), 0);
      await second.b.close();
      assert.equal(readFileSync(join(spoolDir, 'groups.jsonl'), 'utf8'), '', 'the discard rewrote the log');

      // Reopened without the database's word (everything spooled counts as committed): the discard stays.
      const third = bridge(s);
      await third.b.start(new AbortController().signal);
      assert.ok(!third.warnings.some((w) => w.includes('not yet acknowledged')), third.warnings.join('\n'));
      await third.b.whenIdle();
      assert.equal(server.received.length, 2, 'nothing resurrected');
      // The redo of step 2 has new content under the same group ids: that content is what goes out, once.
      const redo = committedStep(2);
      for (const g of redo.groups) for (const sample of g.samples) if (sample.reward !== null) sample.reward += 100;
      await third.b.spoolStep(withoutChildIds(redo), new AbortController().signal);
      await third.b.afterCommit(redo, new AbortController().signal);
      assert.equal(await third.b.flush(new AbortController().signal, 5_000), 0);
      const uids = groupUids(server);
      assert.deepEqual(
        uids.map((u) => u.split(':')[1]),
        ['s1-p0', 's1-p1', 's2-p0', 's2-p1'],
      );
      assert.ok((server.received[2]?.data.scores[0] ?? 0) > 100, 'the redone content, not the discarded one');
    });

    it('a step spooled before its commit and committed (a crash right after the commit) is sent exactly once after reopen', async () => {
      const server = await atropos({ trainer: { batchSize: 6 } });
      const s = settings({ 'trainer.url': server.url, 'trainer.mode': 'async', 'trainer.maxStaleness': 5 });
      const first = bridge(s, { lastCommittedStep: 0 });
      await first.b.start(new AbortController().signal);
      await server.goDown();
      await first.b.spoolStep(withoutChildIds(committedStep(1)), new AbortController().signal);
      await first.b.afterCommit(committedStep(1), new AbortController().signal);
      await first.b.spoolStep(withoutChildIds(committedStep(2)), new AbortController().signal);
      await server.comeUp(); // the worker retries step 1 and must stop at the held step 2
      assert.equal(await first.b.flush(new AbortController().signal, 5_000), 0);
      // The trainer pulled step 1's groups (the bridge saw it at /status-env), and step 2 is still held.
      await first.stateWhere((st) => (st.queuedGroups ?? 0) === 0);
      await first.b.whenIdle();
      await first.b.close(); // the database committed step 2; the process died before afterCommit
      assert.deepEqual(
        groupUids(server).map((u) => u.split(':')[1]),
        ['s1-p0', 's1-p1'],
        'step 2 held until released',
      );

      const second = bridge(s, { lastCommittedStep: 2 });
      await second.b.start(new AbortController().signal);
      assert.ok(
        second.warnings.some((w) => w.includes('2 group(s) from an earlier run')),
        second.warnings.join('\n'),
      );
      assert.ok(!second.warnings.some((w) => w.includes('discarded')));
      assert.equal(await second.b.flush(new AbortController().signal, 5_000), 0);
      await second.b.spoolStep(withoutChildIds(committedStep(3)), new AbortController().signal);
      await second.b.afterCommit(committedStep(3), new AbortController().signal);
      assert.equal(await second.b.flush(new AbortController().signal, 5_000), 0);
      await second.b.close();

      const third = bridge(s, { lastCommittedStep: 3 });
      await third.b.start(new AbortController().signal);
      await third.b.whenIdle();
      const uids = groupUids(server);
      assert.equal(new Set(uids).size, uids.length, `duplicates: ${uids.join(' ')}`);
      assert.deepEqual(
        uids.map((u) => u.split(':')[1]),
        ['s1-p0', 's1-p1', 's2-p0', 's2-p1', 's3-p0', 's3-p1'],
      );
    });

    it('refuses to start without token ids (offline sampler, or an endpoint that does not return them)', async () => {
      const server = await atropos({ trainer: { batchSize: 6 } });
      const s = settings({ 'trainer.url': server.url });
      await assert.rejects(
        bridge(s, { tokenSupport: null }).b.start(new AbortController().signal),
        (e: unknown) => e instanceof TrainerConfigError && /mutate sampler/.test(e.message),
      );
      const missing: TokenSupport = {
        status: 'missing',
        logprobs: false,
        message: 'http://x/v1 does not return token ids (replies carry no token_ids)',
      };
      await assert.rejects(
        bridge(s, { tokenSupport: missing }).b.start(new AbortController().signal),
        (e: unknown) => e instanceof TrainerConfigError && /made-up tokens/.test(e.message),
      );
      assert.equal(server.registrations.length, 0);
    });

    it('refuses a URL that is not an atropos server', async () => {
      const slime = await startSlimeTestServer({});
      cleanups.push(() => slime.close());
      await assert.rejects(
        bridge(settings({ 'trainer.url': slime.url })).b.start(new AbortController().signal),
        (e: unknown) => e instanceof TrainerConfigError && /atropos API server/.test(e.message),
      );
    });

    it('the test server takes wrong shapes as the real one does (recording the problem) and refuses only what its model cannot parse; the bridge keeps a refused group aside and goes on', async () => {
      const server = await atropos({ trainer: { batchSize: 3 }, script: ['ok', 'ok', 'ok', 'ok', 'invalid'] });
      assert.equal(await postRaw(server.url, '/scored_data', '{"tokens": [[1,2]], "masks": [[1]], "scores": [1]}'), 200);
      assert.equal(await postRaw(server.url, '/scored_data', '{"tokens": [[1,2]], "masks": [[-100,3]], "scores": [1]}'), 200);
      assert.equal(await postRaw(server.url, '/scored_data', '{"tokens": [[1,2]], "masks": [[-100,2]]}'), 422);
      assert.equal(await postRaw(server.url, '/scored_data', 'not json'), 422);
      assert.deepEqual(
        server.received.map((r) => r.problem),
        ['masks.0: mask length 1 != token length 2', 'masks.0.1: mask 3 is neither -100 nor the token 2'],
      );
      const { b, warnings } = bridge(settings({ 'trainer.url': server.url, 'trainer.mode': 'async', 'trainer.maxStaleness': 5 }));
      await b.start(new AbortController().signal);
      await b.afterCommit(committedStep(1, 1, 3), new AbortController().signal);
      await b.afterCommit(committedStep(2, 1, 3), new AbortController().signal);
      assert.equal(await b.flush(new AbortController().signal, 5_000), 0);
      assert.ok(
        server.received.slice(2).every((r) => r.problem === null),
        'what the bridge sends is well formed',
      );
      assert.equal(b.state().rejectedGroups, 1);
      assert.ok(warnings.some((w) => w.includes('refused group s1-p0')));
      assert.ok(readFileSync(join(spoolDirOf(join(dir, 'run.sqlite')), 'rejected.jsonl'), 'utf8').includes('s1-p0'));
      assert.equal(groupUids(server).at(-1)?.split(':')[1], 's2-p0');
    });

    it('drops a group a request failure left short of n (with a warning and a count) and, only when asked, groups whose rewards are all equal', async () => {
      const server = await atropos({ trainer: { batchSize: 3 } });
      const { b, warnings } = bridge(settings({ 'trainer.url': server.url, 'trainer.mode': 'async', 'trainer.maxStaleness': 9 }));
      await b.start(new AbortController().signal);
      await b.afterCommit(committedStep(1, 1, 3, { failed: [1] }), new AbortController().signal);
      await b.afterCommit(committedStep(2, 1, 3, { equalRewards: true }), new AbortController().signal);
      assert.equal(await b.flush(new AbortController().signal, 5_000), 0);
      assert.deepEqual(
        server.received.map((r) => r.data.tokens.length),
        [3],
        'only the whole group; equal-reward groups are sent by default',
      );
      assert.equal(b.state().droppedGroups, 1);
      assert.ok(
        warnings.some((w) => w.includes('group s1-p0 has 2 of its 3 responses (1 request(s) failed after retries): not sent')),
        warnings.join('\n'),
      );
      assert.match(trainerSummary(b.state()), /1 dropped \(short of n\)/);
      const filtered = bridge(
        settings({ 'trainer.url': server.url, 'trainer.mode': 'async', 'trainer.maxStaleness': 9, 'trainer.filterEqualRewards': true }),
        { dbFile: join(dir, 'other.sqlite') },
      );
      await filtered.b.start(new AbortController().signal);
      await filtered.b.afterCommit(committedStep(3, 1, 3, { equalRewards: true }), new AbortController().signal);
      assert.equal(await filtered.b.flush(new AbortController().signal, 5_000), 0);
      assert.equal(server.received.length, 1);
    });
  });

  describe('slime', () => {
    it('a group the trainer pulls before the look right after its writes is counted pulled, never written again when the buffer is away for a while', async () => {
      const server = await startSlimeTestServer({ groupSize: 3 });
      cleanups.push(() => server.close());
      // slime's trainer takes the first group between its last write and the writer's look (a quick poll).
      server.onStored = (index) => {
        if (index === 2) server.pullNow();
      };
      const { b } = bridge(
        settings({ 'trainer.url': server.url, 'trainer.protocol': 'slime', sampler: 'mutate', 'trainer.mode': 'async' }),
        {
          tokenSupport: null,
        },
      );
      await b.start(new AbortController().signal);
      await b.afterCommit(committedStep(1), new AbortController().signal);
      assert.equal(await b.flush(new AbortController().signal, 5_000), 0);
      // Refused requests: a restart as far as the writer can tell (what the buffer held may be gone).
      await server.downFor(300);
      await b.afterCommit(committedStep(2), new AbortController().signal);
      assert.equal(await b.flush(new AbortController().signal, 5_000), 0);
      server.pullNow();
      const pulled = server.pulled.map((items) => String(items[0]?.extra_info.group_key));
      assert.deepEqual([...pulled].sort(), ['s1-p0', 's1-p1', 's2-p0', 's2-p1'], 'every group pulled once');
      assert.equal(server.received.filter((r) => r.item.extra_info.group_key === 's1-p0').length, 3, 's1-p0 written once (3 responses)');
    });

    it('writes one item per response with a stable uid, a numeric instance_id per attempt, the reply with its reasoning, reward and extra_info; through faults every group ends up whole in the buffer exactly once', async () => {
      const server = await startSlimeTestServer({ groupSize: 3, script: ['unavailable', 'ok', 'reset', 'reset_after_store', 'ok'] });
      cleanups.push(() => server.close());
      const { b, warnings } = bridge(settings({ 'trainer.url': server.url, 'trainer.protocol': 'slime', sampler: 'mutate' }), {
        tokenSupport: null,
      });
      await b.start(new AbortController().signal);
      assert.ok(warnings.some((w) => w.includes('no step counter')));
      await b.afterCommit(committedStep(1), new AbortController().signal);
      await server.downFor(300);
      await b.afterCommit(committedStep(2), new AbortController().signal);
      // An attempt a failure cut stays short under its own instance_id (never released); every group is whole once.
      assert.deepEqual(wholeSlimeGroups(server, 3), ['s1-p0', 's1-p1', 's2-p0', 's2-p1']);
      assert.ok(
        server.received.every((r) => r.problem === null && typeof r.item.instance_id === 'number'),
        'slime reads instance_id into an int',
      );
      const item = [...server.held.values()].flat().find((i) => i.uid.endsWith(':s1-p0:0'));
      assert.ok(item);
      assert.equal(item.extra_info.group_uid, item.uid.replace(/:0$/, ''));
      assert.deepEqual(
        item.messages.map((m) => m.role),
        ['system', 'user', 'assistant'],
      );
      assert.equal(item.messages[2]?.content, '<think>\nthinking first\n</think>\n\nanswer 0');
      assert.equal(item.reward, 0.6);
      assert.equal(item.extra_info.raw_score, 6);
      assert.equal(item.extra_info.step, 1);
      assert.equal(item.extra_info.parent_id, 'parent-0');
      assert.equal(item.extra_info.finish_reason, 'stop');
      const truncated = server.received.find((r) => r.item.uid.endsWith(':s1-p0:2'))?.item;
      assert.equal(truncated?.extra_info.finish_reason, 'length');
    });

    it('a group an earlier run wrote and that left the buffer while no run watched is counted lost, not released and not written twice', async () => {
      const server = await startSlimeTestServer({ generators: ['thetaevolve'] });
      cleanups.push(() => server.close());
      const slime = settings({ 'trainer.url': server.url, 'trainer.protocol': 'slime', sampler: 'mutate', 'trainer.mode': 'async' });
      const first = bridge(slime, { tokenSupport: null });
      await first.b.start(new AbortController().signal);
      await first.b.afterCommit(committedStep(1), new AbortController().signal);
      assert.equal(await first.b.flush(new AbortController().signal, 5_000), 0);
      assert.equal(first.b.state().queuedGroups, 2, 'held by the buffer at its group size of 16');
      await first.b.close();
      // While no run watches: slime's trainer starts and its /start_rollout replaces the buffer.
      assert.equal(
        await postRaw(server.url, '/start_rollout', JSON.stringify({ task_type: 'thetaevolve', num_repeat_per_sample: '3' })),
        200,
      );
      const second = bridge(slime, { tokenSupport: null });
      await second.b.start(new AbortController().signal);
      await second.b.afterCommit(committedStep(2), new AbortController().signal);
      assert.equal(await second.b.flush(new AbortController().signal, 5_000), 0);
      await second.stateWhere((st) => st.lostGroups === 2); // the next poll reports what the look after a write learned
      assert.deepEqual(
        [second.b.state().lostGroups, second.b.state().releasedGroups, second.b.state().resentGroups, second.b.state().queuedGroups],
        [2, 0, 0, 2],
      );
      assert.ok(
        second.warnings.some((w) => w.includes('2 group(s) an earlier run of this database wrote') && w.includes('counted lost')),
        second.warnings.join('\n'),
      );
      assert.deepEqual(wholeSlimeGroups(server, 3), ['s2-p0', 's2-p1']);
    });

    it('tells exactly what to configure while the buffer keeps its default group size of 16 (or is back at it after a restart)', async () => {
      const server = await startSlimeTestServer({});
      cleanups.push(() => server.close());
      const { b, warnings } = bridge(
        settings({
          'trainer.url': server.url,
          'trainer.protocol': 'slime',
          sampler: 'mutate',
          'trainer.mode': 'async',
          'trainer.maxStaleness': 5,
        }),
        { tokenSupport: null },
      );
      await b.start(new AbortController().signal);
      await b.afterCommit(committedStep(1), new AbortController().signal);
      assert.equal(await b.flush(new AbortController().signal, 5_000), 0);
      const advice = warnings.find((w) => w.includes('releases none'));
      assert.ok(advice, warnings.join('\n'));
      assert.match(advice, /group size is larger than n = 3 \(16 until slime's trainer calls \/start_rollout/);
      assert.match(advice, /--n-samples-per-prompt 3 --rollout-task-type thetaevolve/);
      assert.match(advice, /TASK_TYPE = "thetaevolve"/);
      assert.equal([...server.held.values()].filter((items) => items.length === 3).length, 2, 'what it took to look was written back');
    });

    it('the test buffer keeps group size 16 for an unknown task_type; a known one replaces the buffer, dropping earlier writes; a restart is back at 16', async () => {
      const server = await startSlimeTestServer({ generators: ['thetaevolve'] });
      cleanups.push(() => server.close());
      const item = {
        uid: 'u',
        instance_id: 1,
        messages: [
          { role: 'user', content: 'q' },
          { role: 'assistant', content: 'a' },
        ],
        reward: 1,
        extra_info: {},
      };
      assert.equal(await postRaw(server.url, '/buffer/write', JSON.stringify(item)), 200);
      assert.equal(await postRaw(server.url, '/start_rollout', JSON.stringify({ task_type: 'math', num_repeat_per_sample: '3' })), 200);
      assert.equal(server.groupSize, 16);
      assert.equal(server.held.size, 1);
      assert.equal(
        await postRaw(server.url, '/start_rollout', JSON.stringify({ task_type: 'thetaevolve', num_repeat_per_sample: '3' })),
        200,
      );
      assert.equal(server.groupSize, 3);
      assert.equal(server.held.size, 0, 'the earlier write is gone');
      await server.restart(0);
      assert.equal(server.groupSize, 16);
    });

    it('a buffer killed in the middle of a group gets the whole group again under a new instance_id; a write answered 500 again and again is refused and reported', async () => {
      const server = await startSlimeTestServer({ groupSize: 3, script: ['ok', 'restart'] });
      cleanups.push(() => server.close());
      const { b, warnings } = bridge(
        settings({
          'trainer.url': server.url,
          'trainer.protocol': 'slime',
          sampler: 'mutate',
          'trainer.mode': 'async',
          'trainer.maxStaleness': 5,
        }),
        { tokenSupport: null },
      );
      await b.start(new AbortController().signal);
      await b.afterCommit(committedStep(1), new AbortController().signal);
      assert.equal(await b.flush(new AbortController().signal, 5_000), 0);
      assert.equal(server.epoch, 1);
      // The restarted buffer is back at 16: as slime's trainer would after its restart, set it again.
      assert.equal(
        await postRaw(server.url, '/start_rollout', JSON.stringify({ task_type: 'thetaevolve', num_repeat_per_sample: '3' })),
        200,
      );
      assert.deepEqual(wholeSlimeGroups(server, 3), ['s1-p0', 's1-p1']);
      assert.ok(
        [...server.held.values()].every((items) => items.length === 3),
        'no short group in the restarted buffer',
      );

      const failing = await startSlimeTestServer({ groupSize: 3, script: ['error', 'error', 'error', 'error', 'error'] });
      cleanups.push(() => failing.close());
      const other = bridge(
        settings({
          'trainer.url': failing.url,
          'trainer.protocol': 'slime',
          sampler: 'mutate',
          'trainer.mode': 'async',
          'trainer.maxStaleness': 5,
        }),
        { tokenSupport: null, dbFile: join(dir, 'other.sqlite') },
      );
      await other.b.start(new AbortController().signal);
      await other.b.afterCommit(committedStep(1), new AbortController().signal);
      assert.equal(await other.b.flush(new AbortController().signal, 5_000), 0);
      assert.equal(other.b.state().rejectedGroups, 1);
      assert.ok(
        other.warnings.some((w) => w.includes('answered HTTP 500 5 times in a row')),
        other.warnings.join('\n'),
      );
      assert.deepEqual(wholeSlimeGroups(failing, 3), ['s1-p1']);
      void warnings;
    });

    it("sync mode follows the inference server's weight_version when it reports one", async () => {
      const server = await startSlimeTestServer({ groupSize: 3, trainer: { batchGroups: 2, pollMs: 50 } });
      cleanups.push(() => server.close());
      // The model-info probe goes to the endpoint's root; here the test buffer plays SGLang's /get_model_info.
      const { b, warnings } = bridge(settings({ 'trainer.url': server.url, 'trainer.protocol': 'slime', endpoint: `${server.url}/v1` }), {
        tokenSupport: { status: 'not_requested', logprobs: false, message: null },
      });
      await b.start(new AbortController().signal);
      assert.ok(!warnings.some((w) => w.includes('no step counter')), warnings.join('\n'));
      await b.afterCommit(committedStep(1), new AbortController().signal);
      assert.equal(server.weightVersion, 1);
      assert.equal(b.state().trainerStep, 1);
      await b.afterCommit(committedStep(2), new AbortController().signal);
      assert.equal(b.state().trainerStep, 2);
      assert.equal(server.pulled.length, 4);
      assert.equal(server.received.filter((r) => r.item.extra_info.step === 2)[0]?.item.extra_info.policy_version, '1');
    });

    it('groups spooled before the commit go out with the child ids the commit gave them, also after a reopen', async () => {
      const server = await startSlimeTestServer({ groupSize: 3 });
      cleanups.push(() => server.close());
      const s = settings({
        'trainer.url': server.url,
        'trainer.protocol': 'slime',
        sampler: 'mutate',
        'trainer.mode': 'async',
        'trainer.maxStaleness': 5,
      });
      const first = bridge(s, { tokenSupport: null, lastCommittedStep: 0 });
      await first.b.start(new AbortController().signal);
      await server.goDown();
      await first.b.spoolStep(withoutChildIds(committedStep(1)), new AbortController().signal);
      await first.b.afterCommit(committedStep(1), new AbortController().signal);
      await first.b.close();
      await server.comeUp();
      const second = bridge(s, { tokenSupport: null, lastCommittedStep: 1 });
      await second.b.start(new AbortController().signal);
      await second.b.spoolStep(withoutChildIds(committedStep(2)), new AbortController().signal);
      await second.b.afterCommit(committedStep(2), new AbortController().signal);
      assert.equal(await second.b.flush(new AbortController().signal, 5_000), 0);
      const childIds = server.received.filter((r) => !r.repeat).map((r) => r.item.extra_info.child_id);
      assert.equal(childIds.length, 12);
      assert.deepEqual(childIds.slice(0, 3), ['c1-0-0', 'c1-0-1', 'c1-0-2']);
      assert.deepEqual(childIds.slice(9), ['c2-1-0', 'c2-1-1', 'c2-1-2']);
    });

    it('the test buffer takes any write with an instance_id (recording what is wrong with it) and answers 500 without one, as the real buffer', async () => {
      const server = await startSlimeTestServer({});
      cleanups.push(() => server.close());
      const ok = {
        uid: 'u',
        instance_id: 7,
        messages: [
          { role: 'user', content: 'q' },
          { role: 'assistant', content: 'a' },
        ],
        reward: 1,
        extra_info: {},
      };
      assert.equal(await postRaw(server.url, '/buffer/write', JSON.stringify(ok)), 200);
      assert.equal(await postRaw(server.url, '/buffer/write', JSON.stringify({ ...ok, uid: undefined })), 200);
      assert.equal(await postRaw(server.url, '/buffer/write', JSON.stringify({ ...ok, reward: 'high' })), 200);
      assert.equal(await postRaw(server.url, '/buffer/write', JSON.stringify({ ...ok, instance_id: undefined })), 500);
      assert.equal(await postRaw(server.url, '/buffer/write', '{'), 500);
      assert.deepEqual(
        server.received.map((r) => r.problem !== null),
        [false, true, true],
      );
      assert.equal(server.groupSize, 16, 'the real default until /start_rollout');
    });
  });
});

describe('trainer: rollout groups of a committed step', () => {
  const options = {
    protocol: 'atropos' as const,
    groupSize: 3,
    filterEqualRewards: false,
    runPrefix: 'run1',
    samplingVersion: '7',
    now: 1000,
  };

  it('spools whole groups, with the sampling version where the responses name none', () => {
    const { groups, short } = rolloutGroupsOf(committedStep(2), options);
    assert.deepEqual(short, []);
    assert.deepEqual(
      groups.map((g) => [g.id, g.step, g.policyVersion, g.samples.length, g.spooledAt]),
      [
        ['run1:s2-p0', 2, '7', 3, 1000],
        ['run1:s2-p1', 2, '7', 3, 1000],
      ],
    );
    assert.equal(rolloutGroupsOf(committedStep(2, 1, 3, { policyVersion: '9' }), options).groups[0]?.policyVersion, '9');
  });

  it('leaves out groups short of n, and says why', () => {
    const { groups, short } = rolloutGroupsOf(committedStep(1, 2, 3, { failed: [1] }), options);
    assert.deepEqual(groups, []);
    assert.deepEqual(short[0], { key: 's1-p0', usable: 2, responses: 2, failed: 1 });
    assert.equal(
      shortGroupWarning(short[0]!, options, 1),
      'group s1-p0 has 2 of its 3 responses (1 request(s) failed after retries): not sent, since a short group stalls the trainer (atropos buffers it, slime never releases it); 1 group(s) dropped so far',
    );
    const noIds = committedStep(1, 1, 3);
    noIds.groups[0]!.samples[0]!.response!.tokens = null;
    const atropos = rolloutGroupsOf(noIds, options).short[0]!;
    assert.match(shortGroupWarning(atropos, options, 2), /has 2 of its 3 responses with token ids: not sent/);
    assert.equal(rolloutGroupsOf(noIds, { ...options, protocol: 'slime' }).groups.length, 1);
  });

  it('leaves out equal-reward groups only when asked', () => {
    assert.equal(rolloutGroupsOf(committedStep(1, 2, 3, { equalRewards: true }), options).groups.length, 2);
    assert.equal(
      rolloutGroupsOf(committedStep(1, 2, 3, { equalRewards: true }), { ...options, filterEqualRewards: true }).groups.length,
      0,
    );
  });
});
