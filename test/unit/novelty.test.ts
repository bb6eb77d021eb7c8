// Novelty rejection (docs/algorithm.md section 12) with real parts: the
// OpenAI-compatible test server (its /v1/embeddings and scripted judge
// answers), the fixture task in the sandbox, the run database on disk. The
// test server's vectors are trigram bags: the quadratic task's children
// ("return 2" from "return 1") have cosine about 0.91 with their parent.
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from '../../src/cli/args';
import { RUN_SPEC } from '../../src/cli/commands';
import { settingsFromArgs } from '../../src/cli/settingsSources';
import { defaultSettings, parseSettings, type Settings } from '../../src/engine/common/config';
import type { EngineEvent, EvaluationFinishedEvent, StepCommittedEvent } from '../../src/engine/common/events';
import type { GenerationJob } from '../../src/engine/common/types';
import { loadSqlJs } from '../../src/engine/database/sqlite';
import { EndpointClient, endpointOptionsFromSettings } from '../../src/engine/llm/endpointClient';
import { type CommittedStep, EvolutionRun } from '../../src/engine/loop';
import { EmbeddingClient } from '../../src/engine/operators/novelty/embeddingClient';
import { judgedDifferent, judgeMessages } from '../../src/engine/operators/novelty/judge';
import { modelJudge } from '../../src/engine/operators/novelty/setup';
import { IslandMatrix, quantise } from '../../src/engine/operators/novelty/vectors';
import { Rng } from '../../src/engine/common/rng';
import { OPERATORS_META_KEY } from '../../src/engine/operators/recorded';
import { Evaluator, evaluatorOptionsFromSettings } from '../../src/engine/sandbox/evaluator';
import { loadTask, type Task } from '../../src/engine/task/task';
import { startTestServer, type TestServer } from '../server/openaiTestServer';
import { embedText } from '../server/testModel';
import { settingsBuilder } from '../support/settings';
import { tempDir } from '../support/tempDirs';
import { waitFor } from '../support/waitFor';

const ROOT = resolve(__dirname, '..', '..');
const FIXTURE = join(ROOT, 'test', 'fixtures', 'tasks', 'quadratic');
const base = settingsBuilder({ batchSize: 2, samplesPerPrompt: 3, evaluationConcurrency: 3, 'database.preset': 'small', seed: 5 });

interface RunOutcome {
  result: Awaited<ReturnType<EvolutionRun['run']>>;
  events: EngineEvent[];
  committed: StepCommittedEvent[];
  groups: CommittedStep[];
  /** Evaluations started after the starting program's: one per sandbox a child got. */
  childSandboxes: number;
  finished: EvaluationFinishedEvent[];
  warnings: string[];
}

async function runOnce(task: Task, s: Settings, dbFile: string, steps: number): Promise<RunOutcome> {
  const events: EngineEvent[] = [];
  const groups: CommittedStep[] = [];
  const evaluator = new Evaluator(task, evaluatorOptionsFromSettings(s));
  const run = new EvolutionRun({
    runId: 'novelty',
    task,
    settings: s,
    dbFile,
    source: new EndpointClient(endpointOptionsFromSettings(s, undefined)),
    evaluator,
    stepsThisInvocation: steps,
    onEvent: (e) => events.push(e),
    afterCommit: async (c) => {
      groups.push(c);
    },
  });
  const result = await run.run();
  await evaluator.close();
  return {
    result,
    events,
    groups,
    committed: events.filter((e): e is StepCommittedEvent => e.type === 'step_committed'),
    childSandboxes: events.filter((e) => e.type === 'evaluation_started' && e.step > 0).length,
    finished: events.filter((e): e is EvaluationFinishedEvent => e.type === 'evaluation_finished' && e.step > 0),
    warnings: events.flatMap((e) => (e.type === 'error' && !e.fatal ? [e.message] : [])),
  };
}

const sum = (committed: readonly StepCommittedEvent[], outcome: keyof StepCommittedEvent['counts']): number =>
  committed.reduce((n, e) => n + e.counts[outcome], 0);

async function tableRows(dbFile: string, sql: string): Promise<unknown[][]> {
  const SQL = await loadSqlJs();
  const file = new SQL.Database(readFileSync(dbFile));
  try {
    return file.exec(sql)[0]?.values ?? [];
  } finally {
    file.close();
  }
}

describe('novelty rejection (novelty.*)', function () {
  this.timeout(180_000);
  let task: Task;
  let server: TestServer;
  let dir: string;
  before(async () => {
    task = await loadTask(FIXTURE);
  });
  beforeEach(async () => {
    dir = tempDir('thetaevolve-novelty-');
  });
  afterEach(async () => {
    await server?.close();
  });

  it('is off by default, reachable with --set, and refuses a threshold outside 0..1 naming the setting', async () => {
    const d = defaultSettings();
    assert.equal(d['novelty.enabled'], false);
    assert.equal(d['novelty.threshold'], 0.99);
    assert.equal(d['novelty.judge'], false);
    const s = settingsFromArgs(
      parseArgs(RUN_SPEC, [FIXTURE, '--set', 'novelty.enabled=true', '--set', 'novelty.threshold=0.9', '--set', 'novelty.judge=true']),
      dir,
    );
    assert.equal(s['novelty.enabled'], true);
    assert.equal(s['novelty.threshold'], 0.9);
    assert.equal(s['novelty.judge'], true);
    assert.throws(() => parseSettings({ 'novelty.threshold': 1.5 }), /thetaevolve\.novelty\.threshold/);
    // Off: nothing is embedded.
    server = await startTestServer({ latencyMs: 1 });
    const off = await runOnce(task, base({ endpoint: server.baseURL }), join(dir, 'off.sqlite'), 1);
    assert.equal(off.result.reason, 'steps_done');
    assert.equal(server.counters.embeddingRequests, 0);
    assert.equal(sum(off.committed, 'not_novel'), 0);
  });

  it('rejects near-duplicates of an island program before any sandbox starts: not_novel, the lazy penalty, counted, sent as rollouts', async () => {
    server = await startTestServer({ latencyMs: 1 });
    const s = base({ endpoint: server.baseURL, 'novelty.enabled': true, 'novelty.threshold': 0.85 });
    const { result, committed, childSandboxes, finished, groups } = await runOnce(task, s, join(dir, 'run.sqlite'), 2);
    assert.equal(result.reason, 'steps_done');
    const notNovel = sum(committed, 'not_novel');
    assert.ok(notNovel > 0, 'some children were not novel');
    // Every child that passed the early checks was too close to its island's programs: no sandbox started for any.
    assert.equal(childSandboxes, 0);
    assert.equal(notNovel + sum(committed, 'duplicate') + sum(committed, 'no_change') + sum(committed, 'no_diff'), 2 * 2 * 3);
    const rejected = finished.filter((e) => e.outcome === 'not_novel');
    assert.equal(rejected.length, notNovel);
    for (const e of rejected) {
      assert.equal(e.score, -0.3);
      assert.match(e.reason, /cosine similarity 0\.\d{4} with program \w+ of island \d+ \(thetaevolve\.novelty\.threshold 0\.85\)/);
    }
    // A model outcome: a rollout with the lazy penalty's reward.
    const samples = groups.flatMap((g) => g.groups.flatMap((group) => group.samples)).filter((x) => x.outcome === 'not_novel');
    assert.equal(samples.length, notNovel);
    for (const x of samples) assert.equal(x.reward, -0.3);
    // One embedding request for the island programs, then the children of a step arriving together share requests.
    assert.ok(server.counters.embeddingRequests < server.counters.embeddedTexts, JSON.stringify(server.counters));
    const meta = await tableRows(join(dir, 'run.sqlite'), "SELECT value FROM meta WHERE key = 'run_meta'");
    const recorded = (JSON.parse(String(meta[0]?.[0])) as Record<string, unknown>)[OPERATORS_META_KEY] as Record<string, unknown>;
    assert.equal(recorded['novelty.enabled'], true);
    assert.equal(recorded['novelty.threshold'], 0.85);
  });

  it('lets distinct children through to evaluation and stores one int8 vector per live program', async () => {
    server = await startTestServer({ latencyMs: 1 });
    const dbFile = join(dir, 'run.sqlite');
    const s = base({ endpoint: server.baseURL, 'novelty.enabled': true, 'novelty.threshold': 0.95 });
    const { result, committed, childSandboxes } = await runOnce(task, s, dbFile, 2);
    assert.equal(result.reason, 'steps_done');
    assert.equal(sum(committed, 'not_novel'), 0);
    assert.ok(childSandboxes > 0);
    const evaluated = ['valid', 'invalid_solution', 'no_solution', 'timeout'] as const;
    assert.equal(
      childSandboxes,
      evaluated.reduce((n, o) => n + sum(committed, o), 0),
    );
    const live = await tableRows(dbFile, 'SELECT DISTINCT code_hash FROM programs WHERE alive = 1');
    const stored = await tableRows(dbFile, 'SELECT code_hash, length(vector) FROM program_embeddings');
    assert.deepEqual(stored.map((r) => r[0]).sort(), live.map((r) => r[0]).sort());
    for (const r of stored) assert.equal(r[1], 256, 'one byte a dimension');
  });

  it("asks the run's model when a child is over the threshold: a YES lets that child be evaluated", async () => {
    server = await startTestServer({ latencyMs: 1, judgeAnswers: ['YES'] });
    const s = base({ endpoint: server.baseURL, 'novelty.enabled': true, 'novelty.threshold': 0.85, 'novelty.judge': true });
    const { committed, childSandboxes, finished } = await runOnce(task, s, join(dir, 'run.sqlite'), 1);
    const questions = server.counters.judgeQuestions;
    assert.ok(questions >= 2, `the judge was asked about each child over the threshold (${questions})`);
    assert.equal(childSandboxes, 1, 'only the child judged different was evaluated');
    assert.equal(sum(committed, 'not_novel'), questions - 1);
    for (const e of finished.filter((x) => x.outcome === 'not_novel'))
      assert.match(e.reason, /the judge did not find it meaningfully different/);
  });

  it("counts the judge's tokens and dollars in the run's spend (maxTotalTokens, maxCostUsd)", async () => {
    server = await startTestServer({ latencyMs: 1, judgeAnswers: ['NO'] });
    const priced = { name: 'test-model', pricePerMillionInput: 1, pricePerMillionOutput: 2 };
    const s = base({
      endpoint: server.baseURL,
      'novelty.enabled': true,
      'novelty.threshold': 0.85,
      'novelty.judge': true,
      models: [priced],
    });
    const dbFile = join(dir, 'run.sqlite');
    const { committed } = await runOnce(task, s, dbFile, 1);
    assert.ok(server.counters.judgeQuestions >= 1, 'the judge was asked');
    const step = committed[0] as StepCommittedEvent;
    assert.ok((step.costUsd ?? 0) > 0, 'the step is priced');
    // The judge's questions went out during the step: the run's spend holds them beside the step's own samples.
    assert.ok((step.runCostUsd ?? 0) > (step.costUsd ?? 0), `run cost ${step.runCostUsd} holds more than the step's ${step.costUsd}`);
    const state = (await tableRows(dbFile, "SELECT value FROM meta WHERE key = 'engine_state'"))[0]?.[0];
    const completionTokens = (JSON.parse(String(state)) as { completionTokens: number }).completionTokens;
    assert.ok(
      completionTokens > step.tokens.completion,
      `${completionTokens} tokens counted, the step's samples ${step.tokens.completion}`,
    );
  });

  it('resumes exactly: a run of 2 + 2 steps (the resume given no novelty settings) equals one of 4', async () => {
    server = await startTestServer({ latencyMs: 1 });
    const s = base({ endpoint: server.baseURL, 'novelty.enabled': true, 'novelty.threshold': 0.92 });
    const whole = join(dir, 'whole.sqlite');
    const split = join(dir, 'split.sqlite');
    const one = await runOnce(task, s, whole, 4);
    await runOnce(task, s, split, 2);
    const resumed = await runOnce(task, base({ endpoint: server.baseURL }), split, 2);
    assert.equal(resumed.result.lastStep, 4);
    const rows = (file: string) =>
      tableRows(file, 'SELECT id, parent_id, island, step, score, outcome, code_hash, alive FROM programs ORDER BY seq');
    assert.deepEqual(await rows(split), await rows(whole));
    const counts = async (file: string) =>
      (await tableRows(file, 'SELECT stats FROM steps ORDER BY step')).map((r) => (JSON.parse(String(r[0])) as { counts: unknown }).counts);
    assert.deepEqual(await counts(split), await counts(whole));
    assert.ok(sum(one.committed, 'not_novel') > 0 && sum(one.committed, 'valid') > 0, 'the run both rejected and evaluated children');
  });

  it("leaves no listener on the run's signal after its embedding requests (a run makes thousands)", async () => {
    server = await startTestServer({ latencyMs: 1 });
    const run = new AbortController();
    const listeners = (): number => getEventListeners(run.signal, 'abort').length;
    const before = listeners();
    // The model found by listing the server's (one more request), then requests one after another and side by side.
    const client = new EmbeddingClient({ baseURL: server.baseURL, model: '', apiKey: undefined, requestTimeoutMs: 10_000 });
    for (let i = 0; i < 12; i++) assert.equal((await client.embed([`def f():\n    return ${i}`], run.signal)).length, 1);
    await Promise.all(Array.from({ length: 8 }, (_, i) => client.embed([`x = ${i}`, `y = ${i}`], run.signal)));
    assert.equal(server.counters.embeddingRequests, 20);
    assert.equal(listeners(), before);
    // A failed request leaves none either; a stopped run's signal still stops a request.
    const down = new EmbeddingClient({ baseURL: 'http://127.0.0.1:9/v1', model: 'embedder', apiKey: undefined, requestTimeoutMs: 10_000 });
    await assert.rejects(down.embed(['x'], run.signal), /embedding server at http:\/\/127\.0\.0\.1:9\/v1 failed/);
    assert.equal(listeners(), before);
    run.abort();
    await assert.rejects(client.embed(['x'], run.signal), /failed/);
    assert.equal(server.counters.embeddingRequests, 20);
  });

  it("asks its judge questions side by side with one listener on the run's signal, none once they settle; the run's stop ends one in flight", async () => {
    // The first chat request never gets a reply: the judge question the stop ends.
    server = await startTestServer({ latencyMs: 20, script: ['stall'] });
    const client = new EndpointClient(endpointOptionsFromSettings(base({ endpoint: server.baseURL }), undefined));
    const job: GenerationJob = { key: 's1-p0', messages: [], n: 3, seed: 11, parentId: 'p', parentCode: '' };
    const messages = judgeMessages('def f():\n    return 1', 'def f():\n    return 2', 0.95);

    const stopped = new AbortController();
    const stoppedListeners = (): number => getEventListeners(stopped.signal, 'abort').length;
    const stoppedBefore = stoppedListeners();
    const inFlight = modelJudge(client, stopped.signal)(messages, { job, sampleIndex: 0 });
    await waitFor(() => server.counters.faults.stall === 1, { what: 'the judge question to reach the server (which holds it)' });
    stopped.abort(new Error('the run was stopped'));
    await assert.rejects(inFlight, /the run was stopped/);
    assert.equal(server.counters.completions, 0, 'the server never answered it');
    await waitFor(() => server.counters.clientAborts, { what: 'the server to see the request abandoned', until: (n) => n === 1 });
    assert.equal(stoppedListeners(), stoppedBefore);

    const run = new AbortController();
    const listeners = (): number => getEventListeners(run.signal, 'abort').length;
    const before = listeners();
    const judge = modelJudge(client, run.signal);
    // A step's children over the threshold are asked about at once: far more than Node's default of ten listeners.
    const questions = Array.from({ length: 30 }, (_, sampleIndex) => judge(messages, { job, sampleIndex }));
    assert.equal(listeners(), before + 1, 'one listener on the run signal for all the questions in flight');
    const answers = await Promise.all(questions);
    assert.equal(server.counters.judgeQuestions, 30);
    assert.deepEqual(
      answers.map((a) => [a.question.key, judgedDifferent(a.reply.content)]),
      answers.map((_, i) => [`s1-p0-novelty-${i}`, false]),
    );
    assert.equal(listeners(), before);
    // A question after the stop is not sent.
    run.abort();
    await assert.rejects(judge(messages, { job, sampleIndex: 30 }), /the run was stopped/);
    assert.equal(server.counters.chatRequests, 31);
    assert.equal(listeners(), before);
  });

  it('reads vectors as base64 float32 bytes, and as JSON numbers from a server that refuses base64: the same vectors', async () => {
    server = await startTestServer({ latencyMs: 1 });
    const floatsOnly = await startTestServer({ latencyMs: 1, embeddingsBase64: false });
    try {
      const texts = ['def choose():\n    return 1', 'import math\nprint(math.pi * 2)', 'x = [i * i for i in range(10)]'];
      const viaBase64 = await new EmbeddingClient({
        baseURL: server.baseURL,
        model: '',
        apiKey: undefined,
        requestTimeoutMs: 10_000,
      }).embed(texts);
      const client = new EmbeddingClient({ baseURL: floatsOnly.baseURL, model: 'test-model', apiKey: undefined, requestTimeoutMs: 10_000 });
      const viaNumbers = await client.embed(texts);
      assert.deepEqual(viaBase64, viaNumbers);
      assert.deepEqual(viaBase64[0], Float32Array.from(embedText(texts[0] as string)));
      assert.deepEqual(floatsOnly.counters.embeddingRequestsRefused, 1);
      // The refusal is remembered: the next request asks for numbers at once.
      await client.embed(texts);
      assert.deepEqual([floatsOnly.counters.embeddingRequestsRefused, floatsOnly.counters.embeddingRequests], [1, 2]);
      assert.deepEqual([server.counters.embeddingRequestsRefused, server.counters.embeddingRequests], [0, 1]);
    } finally {
      await floatsOnly.close();
    }
  });

  it('goes on when the embedding server is down: children are evaluated, never penalised, and the run says so once', async () => {
    server = await startTestServer({ latencyMs: 1 });
    const s = base({
      endpoint: server.baseURL,
      'novelty.enabled': true,
      'novelty.threshold': 0.85,
      // Nothing listens on port 9 (discard) here: connection refused.
      'novelty.embeddingEndpoint': 'http://127.0.0.1:9/v1',
      'novelty.embeddingModel': 'embedder',
    });
    const { result, committed, childSandboxes, warnings } = await runOnce(task, s, join(dir, 'run.sqlite'), 2);
    assert.equal(result.reason, 'steps_done');
    assert.equal(sum(committed, 'not_novel'), 0);
    assert.ok(childSandboxes > 0);
    const said = warnings.filter((w) => w.includes('novelty rejection'));
    assert.equal(said.length, 1, said.join('\n'));
    assert.match(said[0] as string, /embedding server at http:\/\/127\.0\.0\.1:9\/v1 failed.*evaluated without the novelty check/);
  });
});

describe('novelty rejection: vectors and the judge answer', () => {
  it('keeps cosine through the int8 form within 1e-3 and finds the closest program of an island', () => {
    const texts = ['def choose():\n    return 1', 'def choose():\n    return 2', 'import math\nprint(math.pi * 2)'];
    const vectors = texts.map((t) => Float32Array.from(embedText(t)));
    const cos = (a: ArrayLike<number>, b: ArrayLike<number>): number => {
      let dot = 0;
      let na = 0;
      let nb = 0;
      for (let i = 0; i < a.length; i++) {
        dot += (a[i] as number) * (b[i] as number);
        na += (a[i] as number) ** 2;
        nb += (b[i] as number) ** 2;
      }
      return dot / Math.sqrt(na * nb);
    };
    const matrix = new IslandMatrix([
      { id: 'a', vector: quantise(vectors[0] as Float32Array) },
      { id: 'c', vector: quantise(vectors[2] as Float32Array) },
    ]);
    const closest = matrix.closest(vectors[1] as Float32Array, -1);
    assert.equal(closest?.id, 'a');
    assert.ok(Math.abs((closest?.similarity ?? 0) - cos(vectors[0] as Float32Array, vectors[1] as Float32Array)) < 1e-3);
    assert.equal(new IslandMatrix([]).closest(vectors[0] as Float32Array, -1), null);
  });

  it('finds what a plain scan of every row finds, on random islands, near copies, and thresholds met exactly or exceeded by one ulp', () => {
    const rng = Rng.fromSeed(40);
    const gaussian = (): number => Math.sqrt(-2 * Math.log(1 - rng.next())) * Math.cos(2 * Math.PI * rng.next());
    /** The scan novelty rejection made before rows could be skipped: every row summed in full, the first best kept. */
    const plainScan = (rows: readonly Int8Array[], query: Float32Array, above: number): { index: number; similarity: number } | null => {
      let queryNorm = 0;
      for (const x of query) queryNorm += x * x;
      queryNorm = Math.sqrt(queryNorm);
      let best = -1;
      let bestSimilarity = Number.NEGATIVE_INFINITY;
      rows.forEach((row, r) => {
        let sum = 0;
        for (const x of row) sum += x * x;
        const norm = Math.fround(Math.sqrt(sum));
        if (norm === 0) return;
        let dot = 0;
        for (let i = 0; i < row.length; i++) dot += (query[i] as number) * (row[i] as number);
        const similarity = dot / (norm * queryNorm);
        if (similarity > bestSimilarity) {
          bestSimilarity = similarity;
          best = r;
        }
      });
      return best >= 0 && bestSimilarity > above ? { index: best, similarity: bestSimilarity } : null;
    };
    /** The largest double under x: a threshold the best row exceeds by the least a similarity can. */
    const justUnder = (x: number): number => {
      if (x === 0) return -Number.MIN_VALUE;
      const bits = new BigInt64Array(Float64Array.of(x).buffer);
      bits[0] = (bits[0] as bigint) + (x > 0 ? -1n : 1n);
      return new Float64Array(bits.buffer)[0] as number;
    };
    let found = 0;
    let exactlyAtThreshold = 0;
    let oneUlpAbove = 0;
    for (let trial = 0; trial < 60; trial++) {
      const dimensions = [1024, 256, 100, 7][trial % 4] as number;
      const base = Array.from({ length: 3 }, () => Float32Array.from({ length: dimensions }, gaussian));
      // Rows: random ones, near copies of a few base vectors (at several distances), a duplicate, an all-zero row.
      const rows: Int8Array[] = Array.from({ length: 150 }, (_, r) => {
        if (r % 37 === 5) return new Int8Array(dimensions);
        const near = base[r % 3] as Float32Array;
        const noise = r % 5 === 0 ? 0.05 * (r % 4) : r % 7 === 0 ? 0.5 : 10;
        return quantise(Float32Array.from(near, (x) => x + noise * gaussian()));
      });
      rows.push(rows[10] as Int8Array);
      const query = Float32Array.from(base[trial % 3] as Float32Array, (x) => x + 0.02 * gaussian());
      const matrix = new IslandMatrix(rows.map((vector, r) => ({ id: `p${r}`, vector })));
      const best = plainScan(rows, query, -1);
      const similarity = best?.similarity ?? 0;
      const thresholds = [-1, 0, 0.5, 0.9, 0.99, 0.999, 1, similarity, justUnder(similarity), Math.max(-1, similarity - 1e-12)];
      for (const threshold of thresholds) {
        const expected = plainScan(rows, query, threshold);
        const got = matrix.closest(query, threshold);
        assert.deepEqual(
          got,
          expected === null ? null : { id: `p${expected.index}`, similarity: expected.similarity },
          `trial ${trial}, threshold ${threshold}`,
        );
        if (expected !== null) found++;
        // The closest row exactly at the threshold is not above it: no row is found.
        if (best !== null && best.similarity === threshold && got === null) exactlyAtThreshold++;
        if (expected !== null && threshold === justUnder(expected.similarity)) oneUlpAbove++;
      }
    }
    assert.ok(
      found > 100 && exactlyAtThreshold >= 60 && oneUlpAbove >= 60,
      `${found} found, ${exactlyAtThreshold} with the closest exactly at the threshold, ${oneUlpAbove} one ulp above it`,
    );
  });

  it('counts a child exactly at the threshold as novel, one above it as a repeat (ShinkaEvolve: novel at or under it)', () => {
    // Cosines exact in floating point: (4, 3) . (3, 4) / 25 is the double 0.96 and a vector with itself is 1; the
    // 128-dimension pair puts each component in its own 64-dimension block, so the row's bound is checked at equality.
    const at = (dimensions: number, entries: [number, number][]): Int8Array => {
      const v = new Int8Array(dimensions);
      for (const [i, x] of entries) v[i] = x;
      return v;
    };
    for (const [row, query, cosine] of [
      [
        at(2, [
          [0, 4],
          [1, 3],
        ]),
        at(2, [
          [0, 3],
          [1, 4],
        ]),
        0.96,
      ],
      [
        at(128, [
          [0, 4],
          [64, 3],
        ]),
        at(128, [
          [0, 3],
          [64, 4],
        ]),
        0.96,
      ],
      [
        at(128, [
          [0, 4],
          [64, 3],
        ]),
        at(128, [
          [0, 4],
          [64, 3],
        ]),
        1,
      ],
    ] as const) {
      const matrix = new IslandMatrix([{ id: 'p', vector: row }]);
      const child = Float32Array.from(query);
      assert.equal(matrix.closest(child, cosine), null, `similarity ${cosine} at threshold ${cosine}`);
      assert.deepEqual(matrix.closest(child, cosine - 1e-9), { id: 'p', similarity: cosine });
    }
  });

  it('lets a child through only on a clear yes', () => {
    assert.equal(judgedDifferent('YES'), true);
    assert.equal(judgedDifferent('Yes, it uses another algorithm.'), true);
    assert.equal(judgedDifferent('NO'), false);
    assert.equal(judgedDifferent('<think>yes, maybe</think>\nNo.'), false);
    assert.equal(judgedDifferent('It is hard to say.'), false);
  });
});
