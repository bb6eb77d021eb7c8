// Nothing of a researcher's reaches an RL trainer (docs/algorithm.md section
// 11): a run steered while stopped (a program added, a program banned) goes
// on with the atropos or slime trainer test server, and every rollout sent is
// one of the model's samples (B groups of n per step, nothing more), none the
// researcher's program, none prompted from the banned program. (A prompt may
// show the researcher's program as its parent: the model's answer to it is
// the model's.)
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { ProgramDatabase } from '../../src/engine/database/programDatabase';
import { startAtroposTestServer } from '../server/atroposTestServer';
import { startTestServer, type TestServer } from '../server/openaiTestServer';
import { startSlimeTestServer } from '../server/slimeTestServer';
import { runCli } from '../support/cli';
import { tempDir } from '../support/tempDirs';

const ROOT = resolve(__dirname, '..', '..');
const FIXTURE = join(ROOT, 'test', 'fixtures', 'tasks', 'quadratic');
/** The researcher's program: the best x of the task, which the model's edits have not found. */
const MINE = fs.readFileSync(join(FIXTURE, 'initial.py'), 'utf8').replace('    return 1', '    return (6 + 0) / 2  # the researcher');
const B = 2;
const N = 2;

/** A rollout as both protocols carry it: its group, step, parent, its samples, and their child ids where sent. */
interface Rollout {
  groupKey: string;
  step: number;
  parentId: string;
  samples: number;
  childIds: (string | null)[] | null;
}

describe("steering and the RL trainer: nothing of the researcher's in a rollout", function () {
  this.timeout(120_000);
  let dir: string;
  let endpoint: TestServer;
  let task: string;
  const closers: (() => Promise<void>)[] = [];

  beforeEach(async () => {
    dir = tempDir('thetaevolve-steer-trainer-');
    fs.writeFileSync(join(dir, 'mine.py'), MINE);
    // The task in the folder steer runs from: a run's task folder elsewhere is refused (a database is data).
    task = join(dir, 'quadratic');
    fs.cpSync(FIXTURE, task, { recursive: true });
    endpoint = await startTestServer({});
    closers.push(() => endpoint.close());
  });
  afterEach(async () => {
    for (const c of closers.splice(0).reverse()) await c();
  });

  /** One step with the trainer, steer (add, ban) while stopped, two more steps: the rollouts sent, the ids steered. */
  async function steeredRun(
    protocol: 'atropos' | 'slime',
    url: string,
    rollouts: () => Rollout[],
  ): Promise<{ rollouts: Rollout[]; researcherId: string; bannedId: string; banStep: number; db: string }> {
    const db = join(dir, `${protocol}.sqlite`);
    const run = (steps: number) =>
      runCli(
        [
          'run',
          task,
          '--endpoint',
          endpoint.baseURL,
          '--trainer',
          url,
          '--trainer-protocol',
          protocol,
          '--steps',
          String(steps),
          '--batch',
          String(B),
          '--samples',
          String(N),
          '--db',
          db,
          '--json',
        ],
        dir,
      );
    const first = await run(1);
    assert.equal(first.code, 0, first.stderr);
    const added = await runCli(['steer', db, '--add', 'mine.py', '--json'], dir);
    assert.equal(added.code, 0, added.stderr);
    const researcherId = z.object({ id: z.string() }).parse(JSON.parse(added.stdout)).id;
    const banned = await runCli(['steer', db, '--ban', '0', '--json'], dir);
    assert.equal(banned.code, 0, banned.stderr);
    const banStep = z.object({ step: z.number() }).parse(JSON.parse(banned.stdout)).step;
    const rest = await run(2);
    assert.equal(rest.code, 0, rest.stderr);
    return { rollouts: rollouts(), researcherId, bannedId: '0', banStep, db };
  }

  async function assertNothingOfTheResearcher(result: Awaited<ReturnType<typeof steeredRun>>): Promise<void> {
    const { rollouts, researcherId, bannedId, banStep, db } = result;
    const database = await ProgramDatabase.openReadOnly(db);
    const steps = database.steps().map((s) => s.step);
    const researcher = database.get(researcherId);
    await database.close();
    assert.deepEqual(steps, [1, 2, 3]);
    assert.equal(researcher?.origin, 'researcher');
    // Exactly the model's groups: B per step, n samples each, nothing more.
    assert.deepEqual(
      rollouts.map((r) => r.groupKey).sort(),
      steps.flatMap((s) => Array.from({ length: B }, (_, p) => `s${s}-p${p}`)).sort(),
    );
    for (const rollout of rollouts) {
      assert.equal(rollout.samples, N);
      if (rollout.childIds)
        assert.ok(!rollout.childIds.includes(researcherId), `the researcher's program as a sample of ${rollout.groupKey}`);
      if (rollout.step >= banStep) assert.notEqual(rollout.parentId, bannedId, `a rollout prompted from the banned ${bannedId}`);
    }
  }

  it('a group spooled before a ban is never delivered after it (asynchronous mode, the trainer away meanwhile)', async () => {
    const db = join(dir, 'withheld.sqlite');
    const run = (url: string) =>
      runCli(
        ['run', task, '--endpoint', endpoint.baseURL, '--trainer', url, '--trainer-protocol', 'atropos', '--steps', '1'].concat([
          '--batch',
          String(B),
          '--samples',
          String(N),
          '--db',
          db,
          '--set',
          'trainer.mode=async',
          '--set',
          'trainer.syncTimeoutSeconds=1',
        ]),
        dir,
      );
    // Step 1 with no trainer listening: its groups (all prompted from the starting program or its island copies) stay spooled.
    const first = await run('http://127.0.0.1:1');
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stderr, /still spooled/);
    const banned = await runCli(['steer', db, '--ban', '0', '--json'], dir);
    assert.equal(banned.code, 0, banned.stderr);
    const bannedIds = z.object({ ids: z.array(z.string()) }).parse(JSON.parse(banned.stdout)).ids;
    const server = await startAtroposTestServer({ trainer: { batchSize: 4 } });
    closers.push(() => server.close());
    const second = await run(server.url);
    assert.equal(second.code, 0, second.stderr);
    assert.match(second.stderr, /withheld group s1-p\d/);
    const sent = server.received.map(({ data }) => (data.group_overrides?.thetaevolve as Record<string, unknown>) ?? {});
    assert.deepEqual(
      sent.map((ours) => Number(ours.step)),
      Array.from({ length: B }, () => 2),
      "only step 2's groups: step 1's were prompted from the banned program",
    );
    for (const ours of sent) assert.ok(!bannedIds.includes(String(ours.parent_id)));
  });

  it('atropos', async () => {
    const server = await startAtroposTestServer({ trainer: { batchSize: 4 } });
    closers.push(() => server.close());
    const result = await steeredRun('atropos', server.url, () =>
      server.received.map(({ data }) => {
        const ours = data.group_overrides?.thetaevolve as Record<string, unknown>;
        return {
          groupKey: String(ours.group_key),
          step: Number(ours.step),
          parentId: String(ours.parent_id),
          samples: data.scores.length,
          childIds: null,
        };
      }),
    );
    await assertNothingOfTheResearcher(result);
  });

  it('slime', async () => {
    const server = await startSlimeTestServer({ groupSize: N, trainer: { batchGroups: 2 } });
    closers.push(() => server.close());
    const result = await steeredRun('slime', server.url, () => {
      // A response written again (after an uncertain write) counts once: by its uid.
      const groups = new Map<string, { rollout: Rollout; uids: Set<string> }>();
      for (const { item } of server.received) {
        const key = String(item.extra_info.group_key);
        const group = groups.get(key) ?? {
          rollout: {
            groupKey: key,
            step: Number(item.extra_info.step),
            parentId: String(item.extra_info.parent_id),
            samples: 0,
            childIds: [],
          },
          uids: new Set<string>(),
        };
        groups.set(key, group);
        if (group.uids.has(item.uid)) continue;
        group.uids.add(item.uid);
        group.rollout.samples++;
        group.rollout.childIds?.push(item.extra_info.child_id === null ? null : String(item.extra_info.child_id));
      }
      return [...groups.values()].map((g) => g.rollout);
    });
    await assertNothingOfTheResearcher(result);
  });
});
