// Where a release folder's `openevolve.modular_utils` comes from (issue 51
// item 4): only the release checkout around the folder (up to the first
// ancestor holding openevolve_adapted/), never a package planted higher up
// (/tmp/openevolve), and never one someone else can change.
import assert from 'node:assert/strict';
import { chmodSync, chownSync, cpSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { releasePackageNear } from '../../src/engine/task/releaseTasks';
import { loadTask } from '../../src/engine/task/task';
import { tempDir } from '../support/tempDirs';

const TINY = resolve(__dirname, '../fixtures/release/tiny_sum');
const STAND_IN = resolve(__dirname, '../../src/engine/task/foreign/openevolve');
const CONTROLLER = 'modular_utils/evaluation_controller.py';

/** An `openevolve` package at `dir` (ours, copied): what the search looks for. */
function plantPackage(dir: string): void {
  cpSync(STAND_IN, dir, { recursive: true, filter: (src) => !src.includes('__pycache__') });
}

describe("release folders: the release's openevolve package", () => {
  it('a package planted above the folder, outside any release checkout (/tmp/openevolve), is not used', async () => {
    // base stands for /tmp: anyone could have made base/openevolve.
    const base = tempDir('te-release-planted-');
    plantPackage(join(base, 'openevolve'));
    const folder = join(base, 'downloads', 'tiny_sum');
    cpSync(TINY, folder, { recursive: true });
    assert.equal(await releasePackageNear(folder), null);
    const task = await loadTask(folder);
    assert.match(task.notices.join('\n'), /ThetaEvolve's stand-in \(no release checkout around the folder/);
    assert.equal(task.sandboxReadOnlyDirs.releasePackage, undefined, 'nothing of the planted package reaches the sandbox');
  });

  it('above the checkout root is not searched either; inside it, the checkout’s own package is', async () => {
    const base = tempDir('te-release-root-');
    plantPackage(join(base, 'openevolve'));
    const root = join(base, 'ThetaEvolve');
    const folder = join(root, 'openevolve_adapted', 'examples', 'tiny_sum');
    cpSync(TINY, folder, { recursive: true });
    assert.equal(await releasePackageNear(folder), null, 'the checkout holds no package: the one above it is not used');
    plantPackage(join(root, 'openevolve_adapted', 'openevolve'));
    assert.equal(await releasePackageNear(folder), join(root, 'openevolve_adapted', 'openevolve'));
  });

  it('a package others can change is passed over: a group- or world-writable file or folder, or another user’s file', async () => {
    const root = tempDir('te-release-writable-');
    const pkg = join(root, 'openevolve_adapted', 'openevolve');
    const folder = join(root, 'openevolve_adapted', 'examples', 'tiny_sum');
    cpSync(TINY, folder, { recursive: true });
    plantPackage(pkg);
    chmodSync(join(pkg, CONTROLLER), 0o644);
    chmodSync(join(pkg, 'modular_utils'), 0o755);
    assert.equal(await releasePackageNear(folder), pkg);
    chmodSync(join(pkg, CONTROLLER), 0o666);
    assert.equal(await releasePackageNear(folder), null, 'a world-writable module');
    chmodSync(join(pkg, CONTROLLER), 0o644);
    chmodSync(join(pkg, 'modular_utils'), 0o775);
    assert.equal(await releasePackageNear(folder), null, 'a group-writable folder');
    chmodSync(join(pkg, 'modular_utils'), 0o755);
    mkdirSync(join(pkg, 'extra'), { mode: 0o755 });
    writeFileSync(join(pkg, 'extra', 'hook.py'), '', { mode: 0o644 });
    assert.equal(await releasePackageNear(folder), pkg);
    if (process.getuid?.() === 0) {
      // Root can give a file away: as another (non-root) user's file it is theirs to change.
      chownSync(join(pkg, 'extra', 'hook.py'), 65534, 65534);
      assert.equal(await releasePackageNear(folder), null, "another user's file");
    }
  });
});
