// Reading what a SLURM job wrote back on the shared filesystem: capped, from the
// start or the end, and never through a link (another user could point one at
// a file of ours).
import assert from 'node:assert/strict';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readJobFile, readJobFileEnd } from '../../src/engine/evaluation/slurmStaging';
import { tempDir } from '../support/tempDirs';

describe('SLURM job files', () => {
  it('reads the first or the last maxBytes of a job file, all of a shorter one', async () => {
    const dir = tempDir('thetaevolve-jobfile-');
    const file = join(dir, 'out.log');
    writeFileSync(file, '0123456789');
    assert.equal(await readJobFile(file), '0123456789');
    assert.equal(await readJobFile(file, 4), '0123');
    assert.equal(await readJobFile(file, 4, 'end'), '6789');
    assert.equal(await readJobFileEnd(file, 4), '6789');
    assert.equal(await readJobFileEnd(file), '0123456789');
    assert.equal(await readJobFile(file, 100, 'end'), '0123456789');
  });

  it('gives null for a file that is not there, a folder, or a link (never followed)', async () => {
    const dir = tempDir('thetaevolve-jobfile-');
    const target = join(dir, 'secret');
    writeFileSync(target, 'not for the job');
    symlinkSync(target, join(dir, 'result.json'));
    mkdirSync(join(dir, 'folder'));
    for (const from of ['start', 'end'] as const) {
      assert.equal(await readJobFile(join(dir, 'missing'), 100, from), null);
      assert.equal(await readJobFile(join(dir, 'folder'), 100, from), null);
      assert.equal(await readJobFile(join(dir, 'result.json'), 100, from), null);
    }
  });
});
