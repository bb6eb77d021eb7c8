// bench novelty-step-cost: what novelty rejection (docs/algorithm.md section
// 12) adds to a paper-sized step (32 parents x 16 children) on a full
// database (10,000 live programs of ~3,000 characters, 10 islands): each
// child's EVOLVE-BLOCK embedded through the test server's /v1/embeddings
// (1,024 dimensions, batched) and compared with every program of its island
// (int8 matrix). Threshold 1, so both configurations evaluate the same
// children and the difference is the check alone. Both run real steps
// (EvolutionRun, the OpenAI-compatible test server over HTTP, evaluations of
// a fixed duration in 16 slots: a cheap step, so the ratio is an upper bound
// for real tasks), interleaved off/on in this one process on copies of one
// database, after one warm-up step each (the novelty copy's warm-up embeds
// the programs that have no vector yet: a one-time cost, printed).
// ratio = mean step time with novelty / without. The process's CPU time in
// each step (the in-process test server's included) is printed beside it:
// on a loaded machine the wall clock mostly measures the wait for a core.
import { copyFileSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { codeHash } from '../src/engine/codeHash';
import { parseSettings, type Settings } from '../src/engine/common/config';
import type { StepCommittedEvent } from '../src/engine/common/events';
import { Rng } from '../src/engine/common/rng';
import { type NewProgram, ProgramDatabase } from '../src/engine/database/programDatabase';
import { EndpointClient, endpointOptionsFromSettings } from '../src/engine/llm/endpointClient';
import { EvolutionRun } from '../src/engine/loop';
import { loadTask, type Task } from '../src/engine/task/task';
import { startTestServer } from '../test/server/openaiTestServer';
import { largeConfig, PARENTS_PER_STEP, CHILDREN_PER_PARENT } from '../test/unit/fixtures/database/fill';
import { REALISTIC_SHAPE, syntheticProgram } from '../test/unit/fixtures/database/programs';
import { FixedDurationEvaluator } from './support/fixedDurationEvaluator';

const SLOTS = 16;
const EVAL_MS = 150;
const LATENCY_MS = 1000;
const DIMENSIONS = 1024;
const ROUNDS = 3;

/** A synthetic program with its code inside EVOLVE-BLOCK markers, so the test server's edits apply. */
function markedProgram(rng: Rng, step: number, parentId: string | null): NewProgram {
  const program = syntheticProgram(rng, step, parentId, REALISTIC_SHAPE);
  const code = `# EVOLVE-BLOCK-START\n${program.code}\n# EVOLVE-BLOCK-END\n`;
  return { ...program, code, codeHash: codeHash(code, 'py') };
}

async function fullDatabase(file: string): Promise<void> {
  const rng = Rng.fromSeed(10_000);
  const config = largeConfig();
  const db = await ProgramDatabase.open(file, { config });
  await db.addInitial(markedProgram(rng, 0, null));
  while (db.size < config.populationSize) {
    const step = db.lastStep + 1;
    const children = db
      .sampleParents(PARENTS_PER_STEP)
      .flatMap((parent) => Array.from({ length: CHILDREN_PER_PARENT }, () => markedProgram(rng, step, parent.id)));
    await db.commitStep({ step, children, stats: null, engineState: null });
  }
  await db.close();
}

/** The process's CPU time in the step itself (step_started to its last evaluation's end), ms. */
let stepCpuMs = 0;

async function oneStep(task: Task, settings: Settings, dbFile: string): Promise<StepCommittedEvent> {
  let committed: StepCommittedEvent | null = null;
  let cpuAtStart: NodeJS.CpuUsage | null = null;
  const errors: string[] = [];
  const run = new EvolutionRun({
    runId: 'bench-novelty',
    task,
    settings,
    dbFile,
    source: new EndpointClient(endpointOptionsFromSettings(settings, undefined)),
    evaluator: new FixedDurationEvaluator(SLOTS, EVAL_MS),
    stepsThisInvocation: 1,
    onEvent: (e) => {
      if (e.type === 'step_started') cpuAtStart = process.cpuUsage();
      if (e.type === 'evaluation_finished' && cpuAtStart !== null) {
        const used = process.cpuUsage(cpuAtStart);
        stepCpuMs = (used.user + used.system) / 1000;
      }
      if (e.type === 'step_committed') committed = e;
      if (e.type === 'error') errors.push(e.message);
    },
  });
  const result = await run.run();
  if (result.reason !== 'steps_done' || committed === null)
    throw new Error(`the step did not commit: ${result.reason} ${errors.join('; ')}`);
  if (errors.length > 0) throw new Error(`the step warned: ${errors.join('; ')}`);
  return committed;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'thetaevolve-bench-novelty-'));
  const server = await startTestServer({ latencyMs: LATENCY_MS, embeddingDimensions: DIMENSIONS });
  try {
    const loaded = await loadTask(resolve(__dirname, '..', 'test', 'fixtures', 'tasks', 'quadratic'));
    // The synthetic programs are ~3,000 characters: longer than the fixture's own limit allows.
    const task: Task = { ...loaded, maxCodeLength: 100_000 };
    const base = join(dir, 'full.sqlite');
    await fullDatabase(base);
    const off = join(dir, 'off.sqlite');
    const on = join(dir, 'on.sqlite');
    copyFileSync(base, off);
    copyFileSync(base, on);
    const settings = (novelty: boolean): Settings =>
      parseSettings({
        endpoint: server.baseURL,
        batchSize: PARENTS_PER_STEP,
        samplesPerPrompt: CHILDREN_PER_PARENT,
        evaluationConcurrency: SLOTS,
        'database.preset': 'large',
        seed: 3,
        ...(novelty ? { 'novelty.enabled': true, 'novelty.threshold': 1 } : {}),
      });
    await oneStep(task, settings(false), off);
    const embeddedBefore = server.counters.embeddedTexts;
    const warm = await oneStep(task, settings(true), on);
    const warmEmbedded = server.counters.embeddedTexts - embeddedBefore;
    const offMs: number[] = [];
    const onMs: number[] = [];
    // The process's CPU time in each step too (the test server's included): on a loaded machine it says what the wall clock cannot.
    const offCpu: number[] = [];
    const onCpu: number[] = [];
    let requests = 0;
    let texts = 0;
    let evaluated = { off: 0, on: 0 };
    for (let round = 0; round < ROUNDS; round++) {
      const a = await oneStep(task, settings(false), off);
      offCpu.push(stepCpuMs);
      offMs.push(a.timings.totalMs);
      const before = { requests: server.counters.embeddingRequests, texts: server.counters.embeddedTexts };
      const b = await oneStep(task, settings(true), on);
      onCpu.push(stepCpuMs);
      onMs.push(b.timings.totalMs);
      requests += server.counters.embeddingRequests - before.requests;
      texts += server.counters.embeddedTexts - before.texts;
      evaluated = { off: evaluated.off + a.counts.valid, on: evaluated.on + b.counts.valid };
      if (b.counts.not_novel > 0) throw new Error('threshold 1 rejected a child: the two configurations would not evaluate alike');
    }
    const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
    const ratio = mean(onMs) / mean(offMs);
    const mb = (file: string): string => (statSync(file).size / 1e6).toFixed(1);
    console.log(
      `bench novelty-step-cost: ratio ${ratio.toFixed(3)} (target ≤ 1.10; step of ${PARENTS_PER_STEP * CHILDREN_PER_PARENT} children on 10,000 live programs, ` +
        `mean of ${ROUNDS} interleaved steps: with novelty ${mean(onMs).toFixed(0)} ms [${onMs.map((x) => x.toFixed(0)).join(', ')}], ` +
        `without ${mean(offMs).toFixed(0)} ms [${offMs.map((x) => x.toFixed(0)).join(', ')}]; evaluated ${evaluated.on} / ${evaluated.off}; ` +
        `process CPU in the step ${mean(onCpu).toFixed(0)} / ${mean(offCpu).toFixed(0)} ms; ` +
        `${texts} texts in ${requests} embedding requests; ${DIMENSIONS} dimensions, ${EVAL_MS} ms evaluations in ${SLOTS} slots, ${LATENCY_MS} ms generation latency)`,
    );
    console.log(
      `bench novelty-step-cost-warmup: ${warm.timings.totalMs.toFixed(0)} ms (the first novelty step: ${warmEmbedded} texts embedded, the island programs without a vector; once per run that turns novelty on)`,
    );
    console.log(
      `bench novelty-step-cost-file: ${mb(on)} MB with the vectors, ${mb(off)} MB without (int8, one byte a dimension per live program)`,
    );
  } finally {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
