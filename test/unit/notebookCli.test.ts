// The CLI on a Jupyter notebook (docs/guide.md "Notebook cells"): `evaluate`
// and `run --program` take a .ipynb as its Python code cells, one script,
// evaluated in the real sandbox against the quadratic fixture task.
import assert from 'node:assert/strict';
import { cpSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { runCli } from '../support/cli';
import { notebookJson, QUADRATIC_NOTEBOOK, sourceLines } from '../support/notebook';
import { tempDir } from '../support/tempDirs';

const QUADRATIC = resolve(__dirname, '../fixtures/tasks/quadratic');

describe('the CLI on a notebook', function () {
  this.timeout(120_000);

  it('evaluate scores the notebook as the script of its code cells (IPython lines left out): x = 1 gives 10 - (1 - 3)^2', async () => {
    const dir = join(tempDir('thetaevolve-notebook-cli-', { mode: 0o755 }), 'quadratic');
    cpSync(QUADRATIC, dir, { recursive: true });
    writeFileSync(join(dir, 'q.ipynb'), notebookJson(QUADRATIC_NOTEBOOK));
    const { code, stdout, stderr } = await runCli(['evaluate', dir, join(dir, 'q.ipynb'), '--json'], dir);
    assert.equal(code, 0, stderr);
    const json = z.object({ status: z.string(), objective: z.number().nullable() }).passthrough().parse(JSON.parse(stdout));
    assert.equal(json.status, 'ok', stdout);
    assert.equal(json.objective, 6);
  });

  it('run refuses a notebook whose markers are split across cells, naming them, before anything starts', async () => {
    const dir = join(tempDir('thetaevolve-notebook-cli-', { mode: 0o755 }), 'quadratic');
    cpSync(QUADRATIC, dir, { recursive: true });
    writeFileSync(
      join(dir, 'split.ipynb'),
      notebookJson([
        { cell_type: 'code', source: sourceLines('# EVOLVE-BLOCK-START', 'x = 1') },
        { cell_type: 'code', source: sourceLines('# EVOLVE-BLOCK-END') },
      ]),
    );
    const db = join(dir, '..', 'run.sqlite');
    const { code, stderr } = await runCli(
      ['run', dir, '--program', join(dir, 'split.ipynb'), '--sampler', 'mutate', '--steps', '1', '--db', db],
      dir,
    );
    assert.notEqual(code, 0);
    assert.match(stderr, /split\.ipynb: the EVOLVE-BLOCK markers are split across cells 1 and 2: put both markers/);
  });
});
