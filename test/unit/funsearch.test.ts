// FunSearch specifications through `thetaevolve convert SPEC --inputs JSON`:
// two written here in FunSearch's format (test/fixtures/funsearch/: one with
// real decorators and tuple inputs, one with the decorators commented out, as
// FunSearch's notebooks have them) become task folders
// whose scores equal what FunSearch's evaluation gives: the @funsearch.run
// function called once per input, the scores reduced as FunSearch's
// _reduce_score (the last input) or its forks (mean, sum) do. The expected
// values come from running the specification directly with python3.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { loadTask } from '../../src/engine/task/task';
import { OUTCOME_PENALTY } from '../../src/engine/common/types';
import { runCli } from '../support/cli';
import { tempDir } from '../support/tempDirs';

const FIXTURES = resolve(__dirname, '../fixtures/funsearch');
/** Binary codes of a given length and distance: real decorators, tuple inputs. */
const CODES = join(FIXTURES, 'binary_code_spec.py');
/** Sum-free sets: decorators commented out, as FunSearch's notebooks have them. */
const SUM_FREE = join(FIXTURES, 'sum_free.py');
const PYTHON = '/usr/bin/python3';

interface EvaluateOut {
  status: string;
  score: number;
  objective: number | null;
  metrics: Record<string, unknown>;
  reason: string;
  protected: boolean;
}

/**
 * FunSearch's evaluation of a specification, done directly: its run function
 * on each input (a JSON list as a tuple, FunSearch's inputs being hashable),
 * the scores by input, reduced by `reduce` (FunSearch's _reduce_score takes the
 * score of the last input). `funsearch` is a plain no-op namespace here.
 */
function funSearchScore(spec: string, inputs: unknown[], reduce: 'last' | 'mean' | 'sum'): number {
  const script = [
    'import json, sys, types',
    'def as_input(v): return tuple(as_input(x) for x in v) if isinstance(v, list) else v',
    'funsearch = types.SimpleNamespace(run=lambda f: f, evolve=lambda f: f)',
    'namespace = {"funsearch": funsearch}',
    'exec(compile(open(sys.argv[1]).read(), sys.argv[1], "exec"), namespace)',
    'scores_per_test = {}',
    'for raw in json.loads(sys.argv[2]):',
    '    scores_per_test[as_input(raw)] = namespace["evaluate"](as_input(raw))',
    'scores = list(scores_per_test.values())',
    'reduced = {"last": scores_per_test[list(scores_per_test.keys())[-1]], "mean": sum(scores) / len(scores), "sum": sum(scores)}',
    'print(repr(float(reduced[sys.argv[3]])))',
  ].join('\n');
  return Number(execFileSync(PYTHON, ['-c', script, spec, JSON.stringify(inputs), reduce], { encoding: 'utf8' }).trim());
}

describe('FunSearch specifications (thetaevolve convert SPEC --inputs JSON)', function () {
  this.timeout(120_000);
  let scratch: string;
  before(function () {
    try {
      execFileSync(PYTHON, ['-c', 'import numpy, yaml'], { stdio: 'ignore' });
    } catch {
      this.skip(); // Reason: needs python3 with numpy and yaml (scripts/setup.sh installs them; CI has them).
    }
    scratch = tempDir('thetaevolve-funsearch-', { mode: 0o755 });
  });

  function outputDir(): string {
    const dir = mkdtempSync(join(scratch, 'out-'));
    chmodSync(dir, 0o755);
    return join(dir, 'task');
  }

  async function evaluateJson(dir: string, program: string): Promise<EvaluateOut> {
    const { code, stdout, stderr } = await runCli(['evaluate', dir, program, '--json'], scratch);
    assert.equal(code, 0, stderr);
    return JSON.parse(stdout) as EvaluateOut;
  }

  it("sum_free: the @funsearch.evolve function becomes the EVOLVE-BLOCK, the spec's text kept, scored as FunSearch scores it (last input), not protected", async () => {
    const dir = outputDir();
    const converted = await runCli(['convert', SUM_FREE, '--inputs', '[3, 4, 5]', '--output', dir], scratch);
    assert.equal(converted.code, 0, converted.stderr);
    assert.match(
      converted.stderr,
      /priority\(\) is the EVOLVE-BLOCK, and evaluate\(\) runs once per input in the sandbox with the candidate.*not protected/,
    );
    const program = readFileSync(join(dir, 'initial_program.py'), 'utf8');
    assert.equal(
      program.replace(/^# EVOLVE-BLOCK-(START|END)\n/gm, ''),
      readFileSync(SUM_FREE, 'utf8'),
      'the specification unchanged but the two markers',
    );
    assert.match(
      program,
      /# EVOLVE-BLOCK-START\n# @funsearch\.evolve\ndef priority\(k: int, n: int\) -> float:\n[\s\S]*return 0\.0\n# EVOLVE-BLOCK-END\n/,
    );
    const task = await loadTask(dir);
    assert.equal(task.layout, 'openevolve');
    assert.equal(task.evaluatorTrust, 'in-sandbox');
    assert.equal(task.runtimeLimitSec, 90, "FunSearch's 30 s per input");
    assert.match(task.metaInformation[0]?.text ?? '', /FunSearch specification \(sum_free\.py\)\. Improve the function `priority`/);

    const out = await evaluateJson(dir, join(dir, 'initial_program.py'));
    assert.equal(out.status, 'ok', JSON.stringify(out));
    assert.equal(out.protected, false);
    const expected = funSearchScore(SUM_FREE, [3, 4, 5], 'last');
    assert.ok(Math.abs((out.objective as number) - expected) <= 1e-9, `${out.objective} vs FunSearch's ${expected}`);
    assert.deepEqual(
      out.metrics,
      { 'evaluate(3)': 2, 'evaluate(4)': 2, 'evaluate(5)': 3 },
      'the odd numbers up to n, as the greedy takes them',
    );

    const run = await runCli(
      [
        'run',
        dir,
        '--sampler',
        'mutate',
        '--steps',
        '1',
        '--batch',
        '1',
        '--samples',
        '2',
        '--db',
        join(scratch, 'sum-free.sqlite'),
        '--json',
      ],
      scratch,
    );
    assert.equal(run.code, 0, run.stderr);
  });

  it('the binary-code spec (real decorators, tuple inputs as one argument): --reduce mean and sum equal the mean and sum of its scores', async () => {
    const inputs = [
      [6, 3],
      [7, 4],
    ];
    for (const reduce of ['mean', 'sum'] as const) {
      const dir = outputDir();
      const converted = await runCli(
        ['convert', CODES, '--inputs', JSON.stringify(inputs), '--reduce', reduce, '--output', dir, '--json'],
        scratch,
      );
      assert.equal(converted.code, 0, converted.stderr);
      assert.equal((JSON.parse(converted.stdout) as { protected: boolean }).protected, false);
      const out = await evaluateJson(dir, join(dir, 'initial_program.py'));
      assert.equal(out.status, 'ok', JSON.stringify(out));
      const expected = funSearchScore(CODES, inputs, reduce);
      assert.ok(Math.abs((out.objective as number) - expected) <= 1e-9, `${reduce}: ${out.objective} vs ${expected}`);
      assert.deepEqual(Object.keys(out.metrics), ['evaluate((6, 3))', 'evaluate((7, 4))']);
    }
  });

  it('a failing or non-numeric result on any input makes the candidate invalid, saying which input', async () => {
    const dir = outputDir();
    assert.equal((await runCli(['convert', SUM_FREE, '--inputs', '[3, 4]', '--output', dir], scratch)).code, 0);
    const original = readFileSync(join(dir, 'initial_program.py'), 'utf8');
    const failing = join(scratch, 'failing.py');
    writeFileSync(failing, original.replace('  return 0.0', '  if n == 4:\n    raise ValueError("too big")\n  return 0.0'));
    const failed = await evaluateJson(dir, failing);
    assert.equal(failed.status, 'invalid_solution', JSON.stringify(failed));
    assert.equal(failed.score, OUTCOME_PENALTY.invalid_solution);
    assert.match(failed.reason, /evaluate\(4\) raised ValueError\('too big'\)/);
    const textual = join(scratch, 'textual.py');
    writeFileSync(textual, original.replace('  return len(chosen)', '  return str(len(chosen))'));
    const notNumeric = await evaluateJson(dir, textual);
    assert.equal(notNumeric.status, 'invalid_solution');
    assert.match(notNumeric.reason, /evaluate\(3\) returned str, not an int or float score \(FunSearch's check\)/);
  });

  it('says what is missing: the inputs, a JSON array, a folder that is free; evaluate says to convert a spec first', async () => {
    const direct = await runCli(['evaluate', SUM_FREE, SUM_FREE], scratch);
    assert.equal(direct.code, 1);
    assert.match(
      direct.stderr,
      /a FunSearch specification, not a task: convert it first with thetaevolve convert .*sum_free\.py --inputs JSON/,
    );
    const noInputs = await runCli(['convert', SUM_FREE], scratch);
    assert.equal(noInputs.code, 2);
    assert.match(
      noInputs.stderr,
      /is a FunSearch specification: give the inputs its @funsearch\.run function is called with, e.g\. --inputs '\[8\]'/,
    );
    const notArray = await runCli(['convert', SUM_FREE, '--inputs', '8', '--output', outputDir()], scratch);
    assert.equal(notArray.code, 1);
    assert.match(notArray.stderr, /--inputs: must be a non-empty JSON array of inputs/);
    const badReduce = await runCli(['convert', SUM_FREE, '--inputs', '[3]', '--reduce', 'max'], scratch);
    assert.equal(badReduce.code, 2);
    assert.match(badReduce.stderr, /--reduce must be last, mean or sum/);
    const taken = await runCli(['convert', SUM_FREE, '--inputs', '[3]', '--output', FIXTURES], scratch);
    assert.equal(taken.code, 1);
    assert.match(taken.stderr, /already exists and is not empty: choose another folder with --output DIR/);
    const twoEvolved = join(scratch, 'two.py');
    writeFileSync(
      twoEvolved,
      '@funsearch.run\ndef evaluate(n):\n  return 1\n\n@funsearch.evolve\ndef a():\n  return 0\n\n@funsearch.evolve\ndef b():\n  return 0\n',
    );
    const two = await runCli(['convert', twoEvolved, '--inputs', '[1]', '--output', outputDir()], scratch);
    assert.equal(two.code, 1);
    assert.match(two.stderr, /needs exactly one function decorated @funsearch\.evolve \(found a, b\)/);
  });
});
