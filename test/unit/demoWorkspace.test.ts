// `npm run demo`'s workspace as a first-time user meets it (issue 43 item 14):
// inside the clone, so marked for VS Code's git not to offer the clone's
// repository in every window; the guide says where its runs (any
// workspace's) are kept, as the code names them.
import { strict as assert } from 'node:assert';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { DEMO_WORKSPACE_SETTINGS, prepareDemoWorkspace } from '../../scripts/demoWorkspace';
import { DEFAULT_RUNS_DIRECTORY, runDatabaseFile, runIdStamp } from '../../src/engine/runFiles';
import { tempDir } from '../support/tempDirs';

const REPO_ROOT = resolve(__dirname, '..', '..');

describe("npm run demo's workspace", () => {
  it("holds the circle-packing task and settings that keep VS Code's git from offering the clone's repository", () => {
    const workspace = join(tempDir('thetaevolve-demo-'), '.demo', 'workspace');
    prepareDemoWorkspace(workspace, REPO_ROOT);
    assert.ok(existsSync(join(workspace, 'circle-packing', 'task.json')));
    const settings = JSON.parse(readFileSync(join(workspace, '.vscode', 'settings.json'), 'utf8')) as Record<string, unknown>;
    assert.deepEqual(settings, DEMO_WORKSPACE_SETTINGS);
    assert.equal(settings['git.openRepositoryInParentFolders'], 'never');
    // Run again (the demo's every start), the task the user edited is kept.
    prepareDemoWorkspace(workspace, REPO_ROOT);
    assert.ok(existsSync(join(workspace, 'circle-packing', 'initial.py')));
  });

  it("the guide says where run databases live, as the code names them, and where the demo's workspace is", () => {
    const guide = readFileSync(join(REPO_ROOT, 'docs', 'guide.md'), 'utf8');
    const section = (/## Where runs are kept\n([\s\S]*?)\n## /.exec(guide)?.[1] ?? '').replace(/\s+/g, ' ');
    assert.ok(section, 'docs/guide.md has "Where runs are kept"');
    assert.ok(section.includes(`\`${DEFAULT_RUNS_DIRECTORY}/\``), section);
    assert.ok(section.includes('`thetaevolve.runsDirectory`'), section);
    assert.ok(section.includes('`.demo/workspace/`'), section);
    // The file name the guide gives is the one a run gets.
    const named = /`<task>-YYYYMMDD-HHMMSS\.sqlite`/.test(section);
    assert.ok(named, section);
    const file = runDatabaseFile('/runs', runIdStamp('circle-packing', new Date('2026-11-28T19:30:05Z')));
    assert.equal(file, '/runs/circle-packing-20261128-193005.sqlite');
  });
});
