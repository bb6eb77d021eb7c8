// The trusted evaluator runs outside the sandbox but under limits of its own,
// and a solution cannot make it (or the decoder of a converted OpenEvolve
// folder) allocate much: a bundled task refuses a padded solution over its
// size cap before its evaluator runs, an evaluator pushed past its memory
// limit by a solution penalises the candidate, and an array type other than
// numbers and booleans is an invalid solution, refused before anything is
// built from it.
import assert from 'node:assert/strict';
import { chmodSync, cpSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { scoreSolutionFile } from '../../src/engine/sandbox/trustedEvaluator';
import { convertForeignTask } from '../../src/engine/task/convert';
import { loadTask } from '../../src/engine/task/task';
import { tempDir } from '../support/tempDirs';

const REPO = join(__dirname, '../..');

describe('trusted evaluator: its own limits, and solutions that would blow it up', function () {
  this.timeout(60000);
  let dir: string;
  before(() => {
    dir = tempDir('te-trusted-limits-');
  });

  it('a bundled task refuses a 16 MiB solution padded with {} before its evaluator runs (no_solution, its size cap named)', async () => {
    const task = await loadTask(join(REPO, 'tasks/circle-packing'));
    assert.ok(task.solutionMaxBytes <= 1024 * 1024, `circle-packing's cap is ${task.solutionMaxBytes} bytes`);
    const centers = Array.from({ length: 26 }, (_, i) => [0.1 + 0.03 * i, 0.5]);
    const honest = JSON.stringify({ centers, radii: centers.map(() => 0.001) });
    const padding = Array.from({ length: (16 * 1024 * 1024 - honest.length) / 3 }, () => '{}').join(',');
    const file = join(dir, 'padded.json');
    await writeFile(file, `${honest.slice(0, -1)},"pad":[${padding}]}`);
    const result = await scoreSolutionFile(task, file);
    assert.equal(result.status, 'no_solution', result.reason);
    assert.match(result.reason, /solution\.json is 16\.0 MiB, over the 64 KiB limit/);
    // The same solution without the padding scores: the cap, not the content, refused it.
    await writeFile(file, honest);
    assert.equal((await scoreSolutionFile(task, file)).status, 'ok');
  });

  /** A task.json task whose evaluator allocates (and touches) as many MiB as the solution's "alloc" says, and reports its own limits. */
  async function allocatingTask(): Promise<string> {
    const taskDir = join(dir, 'allocating');
    cpSync(join(REPO, 'test/fixtures/hostile'), taskDir, { recursive: true });
    await writeFile(
      join(taskDir, 'evaluate.py'),
      'import json, resource, sys\n' +
        'solution = json.load(open(sys.argv[1]))\n' +
        'hog = bytearray(b"\\x01") * (solution.get("alloc", 0) * 1024 * 1024)\n' +
        'cpu = resource.getrlimit(resource.RLIMIT_CPU)[0]\n' +
        'address_space = resource.getrlimit(resource.RLIMIT_AS)[0]\n' +
        'print(json.dumps({"valid": True, "objective": solution["value"], "metrics": {"cpu_limit": cpu, "as_limit_mib": address_space >> 20}}))\n',
    );
    return taskDir;
  }

  it('runs under RLIMIT_CPU of its time limit and the memory limit; a solution that pushes it past that memory is invalid (the candidate’s), not a crash of ours', async () => {
    const task = await loadTask(await allocatingTask());
    const file = join(dir, 'alloc.json');
    await writeFile(file, JSON.stringify({ value: 2 }));
    const small = await scoreSolutionFile(task, file, { memoryLimitMb: 128 });
    assert.equal(small.status, 'ok', small.reason);
    assert.equal(small.metrics.cpu_limit, Math.ceil(task.evaluatorTimeLimitSec));
    assert.equal(small.metrics.as_limit_mib, 128);
    await writeFile(file, JSON.stringify({ value: 2, alloc: 400 }));
    const blown = await scoreSolutionFile(task, file, { memoryLimitMb: 128 });
    assert.equal(blown.status, 'invalid_solution', `${blown.status}: ${blown.reason}`);
    assert.match(blown.reason, /made the trusted evaluator exceed its memory limit \(128 MiB\)/);
    assert.equal(blown.metrics.evaluator_limit, true);
  });

  it("a converted OpenEvolve folder refuses an array type other than numbers and booleans (a 277-byte 'U20000000') as an invalid solution, allocating nothing", async () => {
    const copy = tempDir('te-trusted-convert-', { mode: 0o755 });
    cpSync(join(REPO, 'test/fixtures/openevolve/triangle_area'), copy, { recursive: true });
    chmodSync(copy, 0o755);
    await convertForeignTask(copy);
    const task = await loadTask(copy);
    const file = join(dir, 'dtype.json');
    const hostile = {
      triangle_points: {
        __ndarray__: [
          ['a', 'b'],
          ['c', 'd'],
        ],
        dtype: 'U20000000',
      },
    };
    await writeFile(file, JSON.stringify(hostile));
    // A limit well below what the array would take (about 600 MiB): refused before numpy sees it, not stopped by the limit.
    const result = await scoreSolutionFile(task, file, { memoryLimitMb: 256 });
    assert.equal(result.status, 'invalid_solution', `${result.status}: ${result.reason}`);
    assert.match(result.reason, /array type "U20000000"/);
    assert.equal(result.metrics.evaluator_limit, undefined, 'refused, not stopped by the memory limit');
    // A numeric array of the same values' shape still goes through to the evaluator.
    const points = Array.from({ length: 9 }, (_, i) => [0.05 + 0.1 * i, ((i * 4) % 9) / 9]);
    await writeFile(file, JSON.stringify({ triangle_points: { __ndarray__: points, dtype: 'float64' } }));
    const numeric = await scoreSolutionFile(task, file, { memoryLimitMb: 1024 });
    assert.doesNotMatch(numeric.reason, /array type/);
    assert.notEqual(numeric.status, 'evaluation_failed', numeric.reason);
  });
});
