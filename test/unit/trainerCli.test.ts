// `thetaevolve run --trainer URL --trainer-protocol atropos|slime` end to end:
// the CLI as a child process, the OpenAI-compatible test server as the
// endpoint and the protocol-faithful trainer servers, through outages,
// restarts and a SIGKILL mid-run followed by a resume with the same --db.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { ProgramDatabase } from '../../src/engine/database/programDatabase';
import { type AtroposTestServer, startAtroposTestServer } from '../server/atroposTestServer';
import { startTestServer, type TestServer } from '../server/openaiTestServer';
import { startSlimeTestServer, wholeSlimeGroups } from '../server/slimeTestServer';
import { tempDir } from '../support/tempDirs';

const ROOT = resolve(__dirname, '..', '..');
const FIXTURE = join(ROOT, 'test', 'fixtures', 'tasks', 'quadratic');

interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** The CLI as a child process (async: the servers live in this process). */
function runCli(args: string[], onStart?: (child: ChildProcess) => void): Promise<CliResult> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src/cli.ts'), 'run', FIXTURE, ...args], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolvePromise({ code, signal, stdout, stderr });
    });
    onStart?.(child);
  });
}

async function committedSteps(db: string): Promise<number[]> {
  const database = await ProgramDatabase.openReadOnly(db);
  try {
    return database.steps().map((s) => s.step);
  } finally {
    await database.close();
  }
}

function atroposGroupKeys(server: AtroposTestServer): string[] {
  return server.received.map((r) => String((r.data.group_overrides?.thetaevolve as Record<string, unknown>).group_key));
}

function expectedKeys(steps: number[], b: number): string[] {
  return steps.flatMap((s) => Array.from({ length: b }, (_, p) => `s${s}-p${p}`)).sort();
}

/** Each group exactly once, n sequences each, masks and logprobs aligned with the tokens. */
function assertAtroposGroups(server: AtroposTestServer, steps: number[], n: number, what: 'received' | 'pulled' = 'received'): void {
  const keys =
    what === 'received'
      ? atroposGroupKeys(server)
      : server.batches.flat().map((g) => String((g.group_overrides?.thetaevolve as Record<string, unknown>).group_key));
  assert.deepEqual([...keys].sort(), expectedKeys(steps, 2), `groups ${what}: ${keys.join(' ')}`);
  for (const { data } of server.received) {
    assert.equal(data.tokens.length, n);
    assert.equal(data.scores.length, n);
    assert.ok(data.inference_logprobs, 'logprobs from the endpoint travel along');
    data.tokens.forEach((tokens, i) => {
      const masks = data.masks[i] as number[];
      const logprobs = data.inference_logprobs?.[i] as number[];
      assert.equal(masks.length, tokens.length);
      assert.equal(logprobs.length, tokens.length);
      const start = masks.findIndex((m) => m !== -100);
      assert.ok(start > 0, 'prompt positions masked');
      tokens.forEach((t, j) => {
        assert.equal(masks[j], j < start ? -100 : t);
        assert.ok(j < start ? logprobs[j] === 1 : (logprobs[j] as number) <= 0);
      });
    });
  }
}

describe('thetaevolve run with the RL trainer bridge (CLI)', function () {
  this.timeout(120_000);
  let dir: string;
  let endpoint: TestServer;
  const closers: (() => Promise<void>)[] = [];

  beforeEach(async () => {
    dir = tempDir('thetaevolve-trainer-cli-');
    endpoint = await startTestServer({});
    closers.push(() => endpoint.close());
  });
  afterEach(async () => {
    for (const c of closers.splice(0).reverse()) await c();
  });

  const common = (db: string, steps: number) => ['--steps', String(steps), '--batch', '2', '--samples', '2', '--db', db, '--json'];

  it('atropos: every group delivered exactly once through 503s, resets, a down window and a restart; group sizes, masks and logprobs right', async () => {
    const server = await startAtroposTestServer({
      trainer: { batchSize: 4 },
      script: ['unavailable', 'reset', 'ok', 'reset_after_store', 'ok', 'down'],
    });
    closers.push(() => server.close());
    let restarted = false;
    // Restart while the first group of step 2 waits in the server's queue (the trainer pulls only whole batches of 4): it is lost and must be sent again.
    server.onScoredData = () => {
      const queued = server.received.filter(
        (r) => r.epoch === 0 && String((r.data.group_overrides?.thetaevolve as Record<string, unknown>).group_key).startsWith('s2-'),
      );
      if (!restarted && server.currentStep === 1 && queued.length === 1) {
        restarted = true;
        void server.restart(200);
      }
    };
    const db = join(dir, 'atropos.sqlite');
    const result = await runCli([
      '--endpoint',
      endpoint.baseURL,
      '--trainer',
      server.url,
      '--trainer-protocol',
      'atropos',
      ...common(db, 3),
    ]);
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(
      result.stdout
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { step: number }).step),
      [1, 2, 3],
    );
    assert.ok(restarted, 'the trainer restarted mid-run');
    assert.ok(server.registrations.length >= 2, 'the environment registered again after the restart');
    assert.ok(
      server.received.some((r) => r.epoch === 1),
      'groups went to the restarted server',
    );
    assertAtroposGroups(server, await committedSteps(db), 2, 'pulled');
    assert.match(result.stderr, /lost 1 queued group\(s\) the trainer had not pulled; sending them again/);
    assert.match(result.stderr, /trainer: atropos connected, step \d+, 7 group\(s\) sent, 6 released \(pulled by the trainer\), 0 pending/);
  });

  it('slime: every response delivered exactly once through 503s, resets, a down window and a restart', async () => {
    const script = ['unavailable', 'ok', 'reset', 'ok', 'unavailable', 'unavailable', 'ok', 'ok', 'down', 'ok', 'ok', 'restart'] as const;
    const server = await startSlimeTestServer({ groupSize: 2, trainer: { batchGroups: 2 }, script });
    closers.push(() => server.close());
    const db = join(dir, 'slime.sqlite');
    const result = await runCli(['--endpoint', endpoint.baseURL, '--trainer', server.url, '--trainer-protocol', 'slime', ...common(db, 3)]);
    assert.equal(result.code, 0, result.stderr);
    assert.ok(server.epoch === 1, 'the buffer restarted mid-run');
    // Every group went into the buffer whole (attempts a failure cut stay short under their own instance_id, never released).
    const expected = expectedKeys(await committedSteps(db), 2);
    const written = new Map<unknown, Set<string>>();
    for (const { item } of server.received) written.set(item.instance_id, (written.get(item.instance_id) ?? new Set()).add(item.uid));
    const wholeWritten = [...written.entries()]
      .filter(([, uids]) => uids.size === 2)
      .map(([id]) => String(server.received.find((r) => r.item.instance_id === id)?.item.extra_info.group_key));
    assert.deepEqual([...new Set(wholeWritten)].sort(), expected);
    // The trainer got whole groups only, none twice; what the restarted buffer held unpulled is gone with it (slime cannot say what it handed out).
    const got = wholeSlimeGroups(server, 2);
    assert.equal(new Set(got).size, got.length, `a group twice: ${got.join(' ')}`);
    assert.ok(got.every((k) => expected.includes(k)));
    assert.ok(server.pulled.every((items) => items.length === 2));
    for (const { item } of server.received) {
      assert.equal(item.messages.at(-1)?.role, 'assistant');
      assert.equal(typeof item.extra_info.raw_score, 'number');
      assert.equal(typeof item.extra_info.finish_reason, 'string');
    }
  });

  it("atropos: SIGKILL mid-run, rerun with the same --db: the trainer holds every committed step's groups exactly once", async () => {
    // The first group of step 2 is stored, its reply held; the CLI dies before it hears back.
    const server = await startAtroposTestServer({ trainer: { batchSize: 4 }, script: ['ok', 'ok', 'hold_after_store'] });
    closers.push(() => server.close());
    const db = join(dir, 'crash.sqlite');
    let child: ChildProcess | null = null;
    server.onScoredData = (index) => {
      // Stored, and its reply held for good: the CLI dies before it hears back.
      if (index === 2) child?.kill('SIGKILL');
    };
    const args = ['--endpoint', endpoint.baseURL, '--trainer', server.url, '--trainer-protocol', 'atropos'];
    const first = await runCli([...args, ...common(db, 3)], (c) => (child = c));
    assert.equal(first.signal, 'SIGKILL', first.stderr);
    assert.deepEqual(await committedSteps(db), [1, 2]);
    assert.equal(server.received.length, 3);
    const second = await runCli([...args, ...common(db, 1)]);
    assert.equal(second.code, 0, second.stderr);
    assert.match(second.stderr, /were not yet acknowledged by the trainer; sending them first/);
    assert.deepEqual(await committedSteps(db), [1, 2, 3]);
    assertAtroposGroups(server, [1, 2, 3], 2);
  });

  it("slime: SIGKILL mid-run, rerun with the same --db: every committed step's responses exactly once", async () => {
    const server = await startSlimeTestServer({ groupSize: 2 });
    closers.push(() => server.close());
    const db = join(dir, 'crash-slime.sqlite');
    let child: ChildProcess | null = null;
    let killed = false;
    // Killed in the middle of group s2-p0: its second write never gets stored.
    server.onWrite = () => {
      if (killed || !server.received.some((r) => r.item.extra_info.group_key === 's2-p0')) return undefined;
      killed = true;
      child?.kill('SIGKILL');
      return 'hold_before_store';
    };
    const args = ['--sampler', 'mutate', '--trainer', server.url, '--trainer-protocol', 'slime'];
    const first = await runCli([...args, ...common(db, 3)], (c) => (child = c));
    assert.equal(first.signal, 'SIGKILL', first.stderr);
    assert.deepEqual(await committedSteps(db), [1, 2]);
    const second = await runCli([...args, ...common(db, 1)]);
    assert.equal(second.code, 0, second.stderr);
    assert.deepEqual(wholeSlimeGroups(server, 2), expectedKeys([1, 2, 3], 2));
  });

  it('refuses atropos without token ids (the offline sampler, an endpoint without return_token_ids); slime with the offline sampler runs', async () => {
    const server = await startAtroposTestServer({ trainer: { batchSize: 4 } });
    closers.push(() => server.close());
    const mutate = await runCli([
      '--sampler',
      'mutate',
      '--trainer',
      server.url,
      '--trainer-protocol',
      'atropos',
      ...common(join(dir, 'a.sqlite'), 1),
    ]);
    assert.equal(mutate.code, 1);
    assert.match(mutate.stderr, /atropos trainer needs the token ids .* offline mutate sampler has none.*--trainer-protocol slime/);
    const noTokens = await startTestServer({ supportsTokenIds: false });
    closers.push(() => noTokens.close());
    const plain = await runCli(['--endpoint', noTokens.baseURL, '--trainer', server.url, ...common(join(dir, 'b.sqlite'), 1)]);
    assert.equal(plain.code, 1);
    assert.match(plain.stderr, /needs token ids from the endpoint.*does not return token ids.*refusing to send made-up tokens/);
    assert.equal(server.registrations.length, 0);
    assert.equal(server.received.length, 0);

    const slime = await startSlimeTestServer({ groupSize: 2 });
    closers.push(() => slime.close());
    const ok = await runCli([
      '--sampler',
      'mutate',
      '--trainer',
      slime.url,
      '--trainer-protocol',
      'slime',
      ...common(join(dir, 'c.sqlite'), 1),
    ]);
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal(slime.received.filter((r) => !r.repeat).length, 4);
  });
});
