// What the loop benches share: the quadratic fixture task against the
// project's OpenAI-compatible test server, with a scratch folder for the run
// databases; and a run of the loop whose every evaluation takes a fixed time
// in a fixed number of slots (fixedDurationEvaluator.ts), so that a step is
// the engine's own work and its waits.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Settings } from '../../src/engine/common/config';
import type { EngineEvent } from '../../src/engine/common/events';
import type { ResponseSource } from '../../src/engine/common/types';
import { EvolutionRun } from '../../src/engine/loop';
import { loadTask, type Task } from '../../src/engine/task/task';
import { startTestServer, type TestServerOptions } from '../../test/server/openaiTestServer';
import { FixedDurationEvaluator } from './fixedDurationEvaluator';

export interface LoopBench {
  task: Task;
  /** The test server's. */
  baseURL: string;
  /** A scratch folder, removed afterwards. */
  dir: string;
}

/** Runs `body` with the quadratic task, a test server started with `server` and a scratch folder named `dirPrefix...`; closes both after. */
export async function withLoopBench(
  server: TestServerOptions,
  dirPrefix: string,
  body: (bench: LoopBench) => Promise<void>,
): Promise<void> {
  const task = await loadTask(resolve(__dirname, '..', '..', 'test', 'fixtures', 'tasks', 'quadratic'));
  const testServer = await startTestServer(server);
  const dir = mkdtempSync(join(tmpdir(), dirPrefix));
  try {
    await body({ task, baseURL: testServer.baseURL, dir });
  } finally {
    await testServer.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export interface FixedEvaluationRun {
  runId: string;
  task: Task;
  settings: Settings;
  dbFile: string;
  source: ResponseSource;
  /** What each evaluation takes (in settings.evaluationConcurrency slots). */
  evaluationMs: number;
  steps: number;
}

/** Runs `steps` steps (no target: the run never stops early on its score); the run's events, in order. Throws when it ends otherwise. */
export async function runWithFixedEvaluations(spec: FixedEvaluationRun): Promise<EngineEvent[]> {
  const events: EngineEvent[] = [];
  const run = new EvolutionRun({
    runId: spec.runId,
    task: { ...spec.task, targetValue: null },
    settings: spec.settings,
    dbFile: spec.dbFile,
    source: spec.source,
    evaluator: new FixedDurationEvaluator(spec.settings.evaluationConcurrency, spec.evaluationMs),
    stepsThisInvocation: spec.steps,
    onEvent: (e) => events.push(e),
  });
  const result = await run.run();
  if (result.reason !== 'steps_done') throw new Error(`the run ${spec.runId} ended ${result.reason}`);
  return events;
}
