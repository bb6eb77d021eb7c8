// Conformance of the bundled tasks: the published solutions in
// ../shared/reference give the objectives and validity its README lists,
// the evaluators reject malformed solutions, and every initial program
// evaluates ok in the sandbox near the paper's initial score.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Evaluator } from '../../src/engine/sandbox/evaluator';
import { scoreSolutionFile } from '../../src/engine/sandbox/trustedEvaluator';
import { loadTask, type Task } from '../../src/engine/task/task';
import type { EvaluationResult } from '../../src/engine/common/types';
import { tempDir } from '../support/tempDirs';

const REPO = join(__dirname, '../..');
const TASKS = join(REPO, 'tasks');
const REFERENCE = join(REPO, '../shared/reference');
const CIRCLE_TOLERANCES = [1e-6, 1e-7, 0] as const;

interface ReferenceEntry {
  name: string;
  list: unknown;
}

interface Expectation {
  file: string;
  name: string;
  n: number;
  objective: number;
  notes: string;
}

/** The "Expected objective values" table of the reference README. */
function readExpectations(): Expectation[] {
  const text = readFileSync(join(REFERENCE, 'README.md'), 'utf8');
  const rows: Expectation[] = [];
  let file = '';
  for (const line of text.split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    if (cells.length < 6 || !/^\d+$/.test(cells[3] ?? '') || !/^\d+\.\d+$/.test(cells[4] ?? '')) continue;
    if (cells[1]) file = (cells[1].split(/\s/)[0] ?? '').trim();
    rows.push({ file, name: cells[2] as string, n: Number(cells[3]), objective: Number(cells[4]), notes: cells[5] ?? '' });
  }
  return rows;
}

/**
 * Validity at a tolerance from notes like "valid at 1e-6, INVALID at 1e-7 and 0"
 * (valid at t implies valid at every larger t); null where the notes do not say.
 */
function validityAt(notes: string, tolerance: number): boolean | null {
  const [validPart, invalidPart = ''] = notes.split('INVALID');
  const numbers = (s: string | undefined): number[] => [...(s ?? '').matchAll(/\b(1e-\d+|0)\b/g)].map((m) => Number(m[1]));
  const valid = numbers(validPart);
  const invalid = numbers(invalidPart);
  if (valid.some((t) => t <= tolerance)) return true;
  if (invalid.some((t) => t >= tolerance)) return false;
  return null;
}

function circleSolution(name: string, list: unknown): { centers: number[][]; radii: number[] } {
  const rows = list as number[][];
  if (name.endsWith('-Formal')) {
    const [centers, radii] = list as [number[][], number[]];
    return { centers, radii };
  }
  return { centers: rows.map((r) => [r[0] as number, r[1] as number]), radii: rows.map((r) => r[2] as number) };
}

function relativeError(actual: number, expected: number): number {
  return Math.abs(actual - expected) / Math.abs(expected);
}

describe('conformance: published reference solutions', function () {
  this.timeout(60000);
  let dir: string;
  const tasks: Record<string, Task> = {};

  before(async function () {
    if (!existsSync(join(REFERENCE, 'README.md'))) {
      console.log(`      (skipped: no reference solutions at ${REFERENCE}; they come with the project's shared folder)`);
      this.skip();
    }
    dir = tempDir('te-conformance-');
    for (const name of [
      'circle-packing',
      'circle-packing-strict',
      'first-autocorrelation',
      'second-autocorrelation',
      'third-autocorrelation',
    ]) {
      tasks[name] = await loadTask(join(TASKS, name));
    }
  });

  async function score(task: Task, solution: unknown, file = 'solution.json'): Promise<EvaluationResult> {
    const path = join(dir, file);
    await writeFile(path, JSON.stringify(solution));
    return scoreSolutionFile(task, path);
  }

  it('the README lists every reference solution', () => {
    const expectations = readExpectations();
    for (const file of [
      'CirclePacking',
      'FirstAutoCorrIneq',
      'SecondAutoCorrIneq',
      'SecondAutoCorrIneq_alphaevolve_v2_50k',
      'ThirdAutoCorrIneq',
    ]) {
      const entries = JSON.parse(readFileSync(join(REFERENCE, `${file}.json`), 'utf8')) as ReferenceEntry[];
      for (const entry of entries) {
        assert.ok(
          expectations.some((e) => e.file === file && e.name === entry.name),
          `${file} ${entry.name} is not in the README table`,
        );
      }
    }
    assert.ok(expectations.length >= 21);
  });

  it('circle packing: objectives to 1e-9 and validity at tolerances 1e-6, 1e-7 and 0', async () => {
    const task = tasks['circle-packing'] as Task;
    const strict = tasks['circle-packing-strict'] as Task;
    const entries = JSON.parse(readFileSync(join(REFERENCE, 'CirclePacking.json'), 'utf8')) as ReferenceEntry[];
    const expectations = readExpectations().filter((e) => e.file === 'CirclePacking');
    assert.equal(expectations.length, entries.length);
    for (const entry of entries) {
      const expected = expectations.find((e) => e.name === entry.name) as Expectation;
      const solution = circleSolution(entry.name, entry.list);
      assert.equal(solution.radii.length, expected.n);
      // Five evaluations of this solution side by side: three tolerances, then the two bundled tasks as they are.
      const [results, ownTask, ownStrict] = await Promise.all([
        Promise.all(
          CIRCLE_TOLERANCES.map((tolerance, i) =>
            score({ ...task, variables: { ...task.variables, tolerance } }, solution, `circles-${i}.json`),
          ),
        ),
        score(task, solution, 'circles-task.json'),
        score(strict, solution, 'circles-strict.json'),
      ]);
      CIRCLE_TOLERANCES.forEach((tolerance, i) => {
        const result = results[i] as EvaluationResult;
        const shouldBeValid = validityAt(expected.notes, tolerance);
        if (shouldBeValid === null) return; // the README does not say
        assert.equal(result.status, shouldBeValid ? 'ok' : 'invalid_solution', `${entry.name} at tolerance ${tolerance}: ${result.reason}`);
        if (shouldBeValid) {
          assert.ok(
            relativeError(result.objective as number, expected.objective) <= 1e-9,
            `${entry.name}: ${result.objective} vs ${expected.objective}`,
          );
          assert.equal(result.score, result.objective);
        } else {
          assert.equal(result.score, -0.1);
        }
      });
      // The bundled tasks' own tolerances: 1e-6 and exact.
      assert.equal(ownTask.status, validityAt(expected.notes, 1e-6) ? 'ok' : 'invalid_solution');
      assert.equal(ownStrict.status, validityAt(expected.notes, 0) ? 'ok' : 'invalid_solution');
    }
  });

  for (const [file, taskName] of [
    ['FirstAutoCorrIneq', 'first-autocorrelation'],
    ['SecondAutoCorrIneq', 'second-autocorrelation'],
    ['SecondAutoCorrIneq_alphaevolve_v2_50k', 'second-autocorrelation'],
    ['ThirdAutoCorrIneq', 'third-autocorrelation'],
  ] as const) {
    it(`${file}: every solution gives its listed objective to 1e-9 relative`, async () => {
      const task = tasks[taskName] as Task;
      const entries = JSON.parse(readFileSync(join(REFERENCE, `${file}.json`), 'utf8')) as ReferenceEntry[];
      const expectations = readExpectations();
      await Promise.all(
        entries.map(async (entry, i) => {
          const expected = expectations.find((e) => e.file === file && e.name === entry.name) as Expectation;
          const heights = entry.list as number[];
          assert.equal(heights.length, expected.n, `${entry.name} length`);
          const result = await score(task, { heights }, `heights-${i}.json`);
          assert.equal(result.status, 'ok', `${entry.name}: ${result.reason}`);
          const objective = result.objective as number;
          assert.ok(relativeError(objective, expected.objective) <= 1e-9, `${entry.name}: ${objective} vs ${expected.objective}`);
          assert.equal(result.score, task.direction === 'minimize' ? 1 / objective : objective);
        }),
      );
    });
  }
});

describe('conformance: evaluators reject what they must', function () {
  this.timeout(60000);
  let dir: string;
  before(() => {
    dir = tempDir('te-evaluators-');
  });

  let files = 0;
  async function check(taskName: string, content: string, status: EvaluationResult['status'], reason: RegExp): Promise<EvaluationResult> {
    const task = await loadTask(join(TASKS, taskName));
    const path = join(dir, `${taskName}-${files++}.json`);
    await writeFile(path, content);
    const result = await scoreSolutionFile(task, path);
    assert.equal(result.status, status, `${taskName} ${content.slice(0, 80)}: ${result.reason}`);
    assert.match(result.reason, reason);
    return result;
  }

  it('circle packing', async () => {
    const grid = Array.from({ length: 26 }, (_, i) => [0.1 + 0.16 * (i % 6), 0.1 + 0.16 * Math.floor(i / 6)]);
    const radii = Array.from({ length: 26 }, () => 0.05);
    await Promise.all([
      check('circle-packing', JSON.stringify({ centers: grid, radii }), 'ok', /^$/),
      check('circle-packing', JSON.stringify({ centers: grid.slice(1), radii }), 'invalid_solution', /26 \[x, y\] pairs/),
      check('circle-packing', JSON.stringify({ centers: grid, radii: [-0.01, ...radii.slice(1)] }), 'invalid_solution', /negative radius/),
      check(
        'circle-packing',
        JSON.stringify({ centers: grid, radii: [0.2, ...radii.slice(1)] }),
        'invalid_solution',
        /not inside the unit square|overlap/,
      ),
      check('circle-packing', JSON.stringify({ centers: grid, radii: [true, ...radii.slice(1)] }), 'invalid_solution', /not a number/),
      check('circle-packing', '[1, 2', 'no_solution', /not readable JSON/),
    ]);
  });

  it('autocorrelation inequalities', async () => {
    const [single, negative] = await Promise.all([
      check('first-autocorrelation', '{"heights": [3]}', 'ok', /^$/),
      check('third-autocorrelation', '{"heights": [1, -0.25, 1]}', 'ok', /^$/),
      check('first-autocorrelation', '{"heights": [1, -0.5, 1]}', 'invalid_solution', /non-negative/),
      check('first-autocorrelation', '{"heights": [0, 0]}', 'invalid_solution', /sum/),
      check('first-autocorrelation', '{"heights": [1, Infinity]}', 'invalid_solution', /NaN or infinite/),
      check('first-autocorrelation', '{"heights": []}', 'invalid_solution', /empty/),
      check('first-autocorrelation', '{"heights": [1e400]}', 'invalid_solution', /NaN or infinite|too large/),
      check('second-autocorrelation', '{"heights": [0, 0, 0]}', 'invalid_solution', /zero everywhere/),
      check('second-autocorrelation', '{"heights": [1, -1]}', 'invalid_solution', /non-negative/),
      check('second-autocorrelation', '{"values": [1]}', 'invalid_solution', /"heights"/),
      check('third-autocorrelation', '{"heights": [1, -1]}', 'invalid_solution', /sum/),
    ]);
    assert.equal(single.objective, 2); // 2 * 1 * 9 / 9
    assert.ok((negative.objective as number) > 0);
  });

  it('hadamard-29: exact determinants', async () => {
    const n = 29;
    // J - 2I has eigenvalues 27 (once) and -2 (28 times): |det| = 27 * 2^28.
    const jMinus2I = Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j) => (i === j ? -1 : 1)));
    const result = await check('hadamard-29', JSON.stringify({ matrix: jMinus2I }), 'ok', /^$/);
    assert.equal(result.metrics.abs_determinant, String(27n * 2n ** 28n));
    assert.equal(result.objective, 27 / (7 ** 12 * 342));
    await check(
      'hadamard-29',
      JSON.stringify({ matrix: Array.from({ length: n }, () => Array(n).fill(1)) }),
      'invalid_solution',
      /singular/,
    );
    await check(
      'hadamard-29',
      JSON.stringify({ matrix: [[2, ...Array(n - 1).fill(1)], ...jMinus2I.slice(1)] }),
      'invalid_solution',
      /\+1 or -1/,
    );
    await check('hadamard-29', JSON.stringify({ matrix: jMinus2I.slice(1) }), 'invalid_solution', /29 rows/);
  });
});

describe('conformance: initial programs', function () {
  // The first autocorrelation program solves linear programmes for ~10 s.
  this.timeout(120000);
  this.slow(30000);

  // Paper initial scores (algorithm.md section 7) and how close ours must be.
  const expected: Record<string, { objective: number; within: number }> = {
    'circle-packing': { objective: 0.9598, within: 0.01 },
    'circle-packing-strict': { objective: 0.9598, within: 0.01 },
    'first-autocorrelation': { objective: 1.5214, within: 0.01 },
    'second-autocorrelation': { objective: 0.9055, within: 0.01 },
    'third-autocorrelation': { objective: 3.1586, within: 0.02 },
    'hadamard-29': { objective: 0.1433, within: 0.001 },
  };

  it("each evaluates ok in the sandbox, near the paper's initial score", async () => {
    const results = await Promise.all(
      Object.keys(expected).map(async (name) => {
        const task = await loadTask(join(TASKS, name));
        const evaluator = new Evaluator(task, { concurrency: 1, memoryLimitMb: 4096, outputLimitBytes: 65536 });
        try {
          return { name, task, result: await evaluator.evaluate(task.initialProgram) };
        } finally {
          await evaluator.close();
        }
      }),
    );
    for (const { name, task, result } of results) {
      const want = expected[name] as { objective: number; within: number };
      assert.equal(result.status, 'ok', `${name}: ${result.reason}\n${result.stderr}`);
      const objective = result.objective as number;
      assert.ok(Math.abs(objective - want.objective) <= want.within, `${name}: initial objective ${objective}, paper ${want.objective}`);
      assert.equal(result.score, task.direction === 'minimize' ? 1 / objective : objective);
      assert.ok((result.metrics.runtime_seconds as number) < task.runtimeLimitSec);
    }
  });
});
