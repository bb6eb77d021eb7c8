// The dashboard's picture of the best solution: built from the solution file
// the loop keeps beside the run's database, for each bundled task family, and
// nothing for anything malformed (the candidate wrote that file).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { autoconvolution, MAX_STEP_POINTS, solutionPicture } from '../../src/dashboard/solutionPicture';
import { bestSolutionFile } from '../../src/engine/runFiles';
import { SolutionPictureSchema } from '../../src/protocol/dashboardMessages';
import { BestSolutionSchema } from '../../src/protocol/workerMessages';
import { tempDir } from '../support/tempDirs';

const ROOT = resolve(__dirname, '../..');

describe('dashboard: the picture of the best solution', () => {
  it('draws a packing, a step function with its autoconvolution, and a matrix; nothing for other or malformed files', () => {
    const circles = solutionPicture(
      JSON.stringify({
        centers: [
          [0.25, 0.25],
          [0.75, 0.75],
        ],
        radii: [0.25, 0.2],
      }),
    );
    assert.deepEqual(circles, {
      kind: 'circles',
      circles: [
        { x: 0.25, y: 0.25, r: 0.25 },
        { x: 0.75, y: 0.75, r: 0.2 },
      ],
    });
    const steps = solutionPicture(JSON.stringify({ heights: [1, 2, -1] }));
    assert.equal(steps?.kind, 'steps');
    // (f * f) of the non-negative part [1, 2, 0], with step width 1/3.
    assert.deepEqual(
      autoconvolution([1, 2, -1]).map((v) => Number(v.toFixed(6))),
      [1 / 3, 4 / 3, 4 / 3, 0, 0].map((v) => Number(v.toFixed(6))),
    );
    const long = solutionPicture(JSON.stringify({ heights: Array.from({ length: 10_000 }, (_, i) => Math.sin(i / 100) + 1) }));
    assert.ok(long?.kind === 'steps' && long.heights.length <= MAX_STEP_POINTS / 2 && long.autoconvolution.length <= MAX_STEP_POINTS);
    assert.equal(
      solutionPicture(
        JSON.stringify({
          matrix: [
            [1, -1],
            [-1, 1],
          ],
        }),
      )?.kind,
      'matrix',
    );
    for (const picture of [circles, steps, long]) SolutionPictureSchema.parse(picture);
    for (const text of [
      'not json',
      '[]',
      '{"x": 3}',
      '{"centers": [[0, "a"]], "radii": [1]}',
      '{"centers": [[0, 0]], "radii": []}',
      '{"heights": ["1"]}',
      '{"heights": []}',
    ]) {
      assert.equal(solutionPicture(text), undefined, text);
    }
  });

  it("the run keeps its best program's solution file beside the database (circle packing, offline sampler)", function () {
    this.timeout(120_000);
    const dir = tempDir('thetaevolve-best-solution-');
    const db = join(dir, 'run.sqlite');
    const run = spawnSync(
      process.execPath,
      [
        '--import',
        'tsx',
        join(ROOT, 'src/cli.ts'),
        'run',
        join(ROOT, 'tasks/circle-packing'),
        '--sampler',
        'mutate',
        '--steps',
        '1',
        '--batch',
        '2',
        '--samples',
        '2',
        '--db',
        db,
        '--set',
        'database.preset=small',
      ],
      {
        encoding: 'utf8',
        cwd: ROOT,
      },
    );
    assert.equal(run.status, 0, run.stderr);
    assert.ok(existsSync(bestSolutionFile(db)), 'the best solution is kept');
    const kept = BestSolutionSchema.parse(JSON.parse(readFileSync(bestSolutionFile(db), 'utf8')));
    const picture = solutionPicture(kept.solution);
    assert.equal(picture?.kind, 'circles');
    assert.equal(picture?.kind === 'circles' && picture.circles.length, 26);
    const best = spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'src/cli.ts'), 'db', db, '--json'], {
      encoding: 'utf8',
      cwd: ROOT,
    });
    assert.equal((JSON.parse(best.stdout) as { best: { id: string } }).best.id, kept.id, "the kept solution is the best program's");
  });
});
