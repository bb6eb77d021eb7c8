// Temporary folders for tests, removed without a hand-written hook.
//
// Under mocha (unit tests): `tempDir(prefix)` makes a folder under the OS's
// temp folder. One made during a test or its beforeEach hooks is removed after
// that test, once every afterEach hook of the test's suites has run (they may
// still close databases or servers writing there). One made in a before hook
// or a describe body is removed when its top-level describe has finished.
// Mocha only: playwright and the in-host suite have no such root hooks.
import { chmodSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { removeTree } from '../../src/engine/sandbox/cleanup';

export interface TempDirOptions {
  /**
   * The folder's mode (mkdtemp makes it 0o700). 0o755 lets a sandboxed
   * program that runs as another user (the tests run as root) read it.
   */
  mode?: number;
}

function makeTempDir(prefix: string, options: TempDirOptions): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  if (options.mode !== undefined) chmodSync(dir, options.mode);
  return dir;
}

/** Removes each folder completely, permissions taken away or not; says what it could not remove. */
async function removeAll(dirs: string[]): Promise<void> {
  const problems: string[] = [];
  for (const dir of dirs.splice(0)) {
    const problem = await removeTree(dir);
    if (problem !== null) problems.push(problem);
  }
  // A warning, not a failure: a failing root hook would stop every later test.
  if (problems.length > 0) process.stderr.write(`test temp folders left behind: ${problems.join('; ')}\n`);
}

/** The top-level describe a test belongs to (the root suite's child). */
function topLevelSuite(test: Mocha.Runnable | undefined): Mocha.Suite | undefined {
  let suite = test?.parent;
  while (suite?.parent && !suite.parent.root) suite = suite.parent;
  return suite;
}

const forTest: string[] = [];
const unclaimed: string[] = [];
const forSuite = new Map<Mocha.Suite | undefined, string[]>();
let inTest = false;

/** A fresh folder under the OS's temp folder, removed automatically (see the top of this file). */
export function tempDir(prefix: string, options: TempDirOptions = {}): string {
  const dir = makeTempDir(prefix, options);
  (inTest ? forTest : unclaimed).push(dir);
  return dir;
}

// Root hooks (registered once, when the first test file imports this):
// root beforeEach runs before every suite's beforeEach, root afterEach after
// every suite's afterEach. Only where mocha's globals exist.
if (typeof beforeEach === 'function' && typeof afterEach === 'function' && typeof after === 'function') {
  beforeEach(async function (this: Mocha.Context) {
    const top = topLevelSuite(this.currentTest);
    // Top-level describes run one after another: any other one has finished, its after hooks included.
    for (const [suite, dirs] of forSuite) {
      if (suite === top) continue;
      forSuite.delete(suite);
      await removeAll(dirs);
    }
    // Made by before hooks (or describe bodies) since the last test: they belong to this test's file-level describe.
    if (unclaimed.length > 0) forSuite.set(top, [...(forSuite.get(top) ?? []), ...unclaimed.splice(0)]);
    inTest = true;
  });
  afterEach(async () => {
    inTest = false;
    await removeAll(forTest);
  });
  after(async () => {
    await removeAll([...[...forSuite.values()].flat(), ...unclaimed]);
    forSuite.clear();
  });
}
