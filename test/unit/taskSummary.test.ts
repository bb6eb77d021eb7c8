import assert from 'node:assert/strict';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Semaphore } from '../../src/engine/async/semaphore';
import { summarizeTaskFiles } from '../../src/engine/task/taskSummary';
import { tempDir } from '../support/tempDirs';

const BUNDLED = resolve(__dirname, '..', '..', 'tasks', 'circle-packing');

/** Heap in use after a full collection (V8's gc, exposed for this measure only). */
function heapAfterGc(): number {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
  return process.memoryUsage().heapUsed;
}

/** `count` copies of the bundled task, each with a starting program of `programBytes` (a long comment) and a limit that admits it. */
function taskFolders(count: number, programBytes: number): string[] {
  const root = tempDir('thetaevolve-summaries-');
  const program = readFileSync(join(BUNDLED, 'initial.py'), 'utf8');
  const padding = `# ${'x'.repeat(programBytes)}\n`;
  const files: string[] = [];
  for (let i = 0; i < count; i++) {
    const dir = join(root, `task-${i}`);
    cpSync(BUNDLED, dir, { recursive: true });
    const spec = JSON.parse(readFileSync(join(dir, 'task.json'), 'utf8')) as Record<string, unknown>;
    writeFileSync(join(dir, 'task.json'), JSON.stringify({ ...spec, name: `task-${i}`, maxCodeLength: programBytes + 100_000 }));
    writeFileSync(join(dir, 'initial.py'), padding + program);
    files.push(join(dir, 'task.json'));
  }
  return files;
}

describe('task summaries (what a task picker lists)', () => {
  it('summarises each task file in order, a broken one with the field it lacks', async () => {
    const [good] = taskFolders(1, 10);
    const broken = join(tempDir('thetaevolve-broken-task-'), 'task.json');
    writeFileSync(broken, JSON.stringify({ name: 'broken' }));
    const [first, second] = await summarizeTaskFiles([good!, broken]);
    assert.equal(first?.summary?.name, 'task-0');
    assert.equal(first?.summary?.direction, 'maximize');
    assert.equal(second?.summary, undefined);
    assert.match(second?.error ?? '', /field \w+/);
  });

  it('loads at most the semaphore capacity of folders at once', async () => {
    const limit = new Semaphore(3);
    const summaries = await summarizeTaskFiles(taskFolders(12, 10), limit);
    assert.equal(summaries.filter((s) => s.summary).length, 12);
    assert.ok(limit.maxHeld <= 3 && limit.maxHeld >= 2, `held ${limit.maxHeld} at once`);
  });

  it('keeps no program text: 40 folders with 2 MiB programs leave the heap about as it was', async () => {
    const files = taskFolders(40, 2 * 1024 * 1024);
    const before = heapAfterGc();
    const summaries = await summarizeTaskFiles(files);
    const retained = heapAfterGc() - before;
    assert.equal(summaries.filter((s) => s.summary).length, 40);
    // Keeping the programs would hold 40 x 2 MiB = 80 MiB.
    assert.ok(retained < 16 * 1024 * 1024, `the summaries hold ${(retained / 1024 / 1024).toFixed(1)} MiB`);
    assert.ok(!JSON.stringify(summaries).includes('xxxx'), 'no program text in a summary');
  });
});
