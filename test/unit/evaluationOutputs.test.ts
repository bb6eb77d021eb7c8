// The whole output of failed evaluations, kept beside the run's database:
// a real run of the fixture task whose candidate fails after printing more
// than the evaluations terminal shows, and the step files' bounds.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { appendFileSync, existsSync, readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { gzipSync } from 'node:zlib';
import { parseSettings } from '../../src/engine/common/config';
import { reasonAboveOutput, reasonOneLine } from '../../src/engine/common/evaluationReason';
import type { EngineEvent, EvaluationFinishedEvent } from '../../src/engine/common/events';
import { EvaluationOutputWriter, listEvaluationOutputs, readEvaluationOutput, readStepOutputs } from '../../src/engine/evaluationOutputs';
import { EvolutionRun } from '../../src/engine/loop';
import { MutateSampler } from '../../src/engine/llm/mutateSampler';
import { evaluationOutputsDir } from '../../src/engine/runFiles';
import { Evaluator, evaluatorOptionsFromSettings } from '../../src/engine/sandbox/evaluator';
import { loadTask, type Task } from '../../src/engine/task/task';
import { tempDir } from '../support/tempDirs';

const FIXTURE = join(resolve(__dirname, '..', '..'), 'test', 'fixtures', 'tasks', 'quadratic');

/** Prints 40 lines to stderr (with escape sequences) and one to stdout, then raises: every child of it fails the same way. */
const FAILING = readFileSync(join(FIXTURE, '..', '..', 'programs', 'loud-failure.py'), 'utf8');

describe('evaluation outputs kept beside the database', function () {
  this.timeout(120_000);
  let task: Task;
  let dir: string;

  before(async () => {
    task = await loadTask(FIXTURE);
  });
  beforeEach(() => {
    dir = tempDir('thetaevolve-outputs-');
  });

  async function runSteps(startCode: string | undefined, steps: number): Promise<{ dbFile: string; finished: EvaluationFinishedEvent[] }> {
    const settings = parseSettings({ batchSize: 2, samplesPerPrompt: 2, evaluationConcurrency: 2, 'database.preset': 'small', seed: 3 });
    const dbFile = join(dir, 'run.sqlite');
    const evaluator = new Evaluator(task, evaluatorOptionsFromSettings(settings));
    const events: EngineEvent[] = [];
    try {
      await new EvolutionRun({
        runId: 'outputs',
        task,
        settings,
        dbFile,
        ...(startCode !== undefined ? { startCode } : {}),
        source: new MutateSampler({ seed: 3, language: 'py' }),
        evaluator,
        stepsThisInvocation: steps,
        onEvent: (e) => events.push(e),
      }).run();
    } finally {
      await evaluator.close();
    }
    return { dbFile, finished: events.filter((e): e is EvaluationFinishedEvent => e.type === 'evaluation_finished') };
  }

  it('keeps the whole output of each failed evaluation (the head the terminal leaves out too) and says so in its event', async () => {
    const { dbFile, finished } = await runSteps(FAILING, 2);
    const initial = finished.find((e) => e.jobKey === 'initial');
    assert.ok(initial, 'the starting program was evaluated');
    assert.equal(initial.outcome, 'no_solution');
    assert.equal(initial.outputKept, true);
    const kept = await readEvaluationOutput(dbFile, 0, 'initial', 0);
    assert.ok(kept, "the starting program's output is kept");
    assert.equal(kept.outcome, 'no_solution');
    assert.match(kept.stdout, /hello from stdout/);
    assert.match(kept.stderr, /stderr line 0\b/, "the first line, which the terminal's tail leaves out");
    assert.match(kept.stderr, /ZeroDivisionError: the end of the traceback/);
    assert.match(kept.reason, /exited with code 1/);

    const children = finished.filter((e) => e.jobKey !== 'initial' && e.outputKept === true);
    assert.ok(children.length >= 2, `failed children with kept outputs: ${children.length}`);
    for (const e of children) {
      const output = await readEvaluationOutput(dbFile, e.step, e.jobKey, e.sampleIndex);
      assert.ok(output, `the output of ${e.jobKey}#${e.sampleIndex} is kept`);
      assert.equal(output.outcome, e.outcome);
      assert.equal(output.reason, e.reason);
    }
    const listed = await listEvaluationOutputs(dbFile);
    assert.equal(listed.length, children.length + 1, 'one listed per failed evaluation');
    // One line per listed output (Open Evaluation Output's rows): the headline and the error line, not the marker.
    const row = reasonOneLine(listed.find((o) => o.jobKey === 'initial')?.reason ?? '');
    assert.match(row, /exited with code 1.*: ZeroDivisionError: the end of the traceback$/);
    assert.doesNotMatch(row, /ends with/);
    // The output document shows the reason above the whole stderr: one line there, so the traceback is printed once.
    const initialOutput = await readEvaluationOutput(dbFile, 0, 'initial', 0);
    assert.ok(initialOutput);
    assert.equal(reasonAboveOutput(initialOutput.reason, initialOutput.stderr), row);
    assert.equal(reasonAboveOutput(initialOutput.reason, ''), initialOutput.reason, 'without the stream, the whole reason');
    assert.deepEqual([...new Set(listed.map((o) => o.step))], [2, 1, 0], 'newest step first');
    assert.ok(listed.every((o) => o.bytes > 0));
  });

  it('keeps nothing for valid evaluations', async () => {
    const { dbFile, finished } = await runSteps(undefined, 1);
    const valid = finished.filter((e) => e.outcome === 'valid');
    assert.ok(valid.length > 0);
    assert.ok(valid.every((e) => e.outputKept === undefined));
    const keptFor = new Set((await listEvaluationOutputs(dbFile)).map((o) => `${o.jobKey}#${o.sampleIndex}`));
    for (const e of valid) assert.ok(!keptFor.has(`${e.jobKey}#${e.sampleIndex}`));
  });

  it('a redone step starts its file afresh, a member cut short by a crash is skipped, and the oldest steps go past the budget', async () => {
    const dbFile = join(dir, 'run.sqlite');
    const errors: string[] = [];
    const output = (step: number, sampleIndex: number, size = 10) => ({
      step,
      jobKey: `s${step}-p0`,
      sampleIndex,
      outcome: 'no_solution' as const,
      reason: 'r',
      stdout: '',
      stderr: 'x'.repeat(size),
    });
    const writer = new EvaluationOutputWriter(dbFile, (m) => errors.push(m), 40_000);
    await writer.startStep(1);
    await writer.add(output(1, 0));
    await writer.add(output(1, 1));
    // A crash mid-append: half a member at the end.
    const stepFile = join(evaluationOutputsDir(dbFile), 'step-1.jsonl.gz');
    const member = gzipSync(`${JSON.stringify(output(1, 2))}\n`);
    appendFileSync(stepFile, member.subarray(0, Math.floor(member.length / 2)));
    assert.deepEqual(
      (await readStepOutputs(dbFile, 1)).map((o) => o.sampleIndex),
      [0, 1],
    );
    // The step is redone (stopped, resumed): what its abandoned try kept goes.
    await writer.startStep(1);
    await writer.add(output(1, 5));
    assert.deepEqual(
      (await readStepOutputs(dbFile, 1)).map((o) => o.sampleIndex),
      [5],
    );
    // Incompressible output, about 30 KB per step, against a 40 KB budget: only the newest steps stay.
    for (const step of [2, 3, 4]) {
      await writer.startStep(step);
      await writer.add({ ...output(step, 0), stderr: randomBytes(22_500).toString('base64') });
    }
    await writer.flush();
    const steps = readdirSync(evaluationOutputsDir(dbFile)).sort();
    assert.ok(steps.includes('step-4.jsonl.gz'), 'the current step stays');
    assert.ok(!steps.includes('step-1.jsonl.gz') && !steps.includes('step-2.jsonl.gz'), `the oldest went: ${steps.join(', ')}`);
    assert.equal(await readEvaluationOutput(dbFile, 2, 's2-p0', 0), null);
    assert.deepEqual(errors, []);
    assert.ok(!existsSync(join(dir, 'nothing.sqlite.outputs')));
  });
});
