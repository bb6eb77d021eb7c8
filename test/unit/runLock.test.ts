// One process runs a database at a time: a second run is refused naming the
// holder, and a lock whose process is gone (kill -9, a reused pid, a torn
// file) is taken over. Real processes, real lock files.
import * as assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runLockFile } from '../../src/engine/runFiles';
import { acquireRunLock, RunLockedError } from '../../src/engine/runLock';
import { runCli } from '../support/cli';
import { tempDir } from '../support/tempDirs';

const HOLDER = path.resolve(__dirname, '../support/holdRunLock.ts');
const TASK = path.resolve(__dirname, '../../tasks/circle-packing');

/** A child process holding the lock of dbFile; resolves once it says so. */
async function holdInAnotherProcess(dbFile: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', HOLDER, dbFile], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  child.stdout?.setEncoding('utf8');
  await new Promise<void>((resolve, reject) => {
    child.stdout?.on('data', (text: string) => {
      out += text;
      if (out.includes('held')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`the lock holder exited (${code}) before taking the lock`)));
  });
  return child;
}

describe('run lock', () => {
  let dir: string;
  let dbFile: string;
  const children: ChildProcess[] = [];
  beforeEach(() => {
    dir = tempDir('thetaevolve-lock-');
    dbFile = path.join(dir, 'run.sqlite');
  });
  afterEach(() => {
    for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });

  it('refuses a second run of the same database in this process, and gives it back on release', async () => {
    const lock = await acquireRunLock(dbFile);
    assert.ok(fs.existsSync(runLockFile(dbFile)));
    await assert.rejects(
      acquireRunLock(dbFile),
      (err: unknown) => err instanceof RunLockedError && /already being run by this process/.test(err.message),
    );
    await lock.release();
    assert.equal(fs.existsSync(runLockFile(dbFile)), false);
    const again = await acquireRunLock(dbFile);
    await again.release();
  });

  it('refuses while another process holds it, naming that process; takes it over after kill -9', async () => {
    const child = await holdInAnotherProcess(dbFile);
    children.push(child);
    await assert.rejects(
      acquireRunLock(dbFile),
      (err: unknown) => err instanceof RunLockedError && err.message.includes(`is being run by process ${child.pid} since `),
    );
    const exited = once(child, 'exit');
    child.kill('SIGKILL');
    await exited;
    const lock = await acquireRunLock(dbFile);
    assert.equal(JSON.parse(fs.readFileSync(runLockFile(dbFile), 'utf8')).pid, process.pid);
    await lock.release();
  });

  it('the CLI refuses a second run on one --db (exit 1 naming the holder) and writes nothing', async () => {
    const child = await holdInAnotherProcess(dbFile);
    children.push(child);
    const { code, stderr } = await runCli(
      ['run', TASK, '--sampler', 'mutate', '--steps', '1', '--batch', '1', '--samples', '1', '--db', dbFile],
      dir,
    );
    assert.equal(code, 1, stderr);
    assert.match(
      stderr,
      new RegExp(`run\\.sqlite is being run by process ${child.pid} since .*: stop that run first, or give another --db`),
    );
    assert.equal(fs.existsSync(dbFile), false);
  });

  it('takes over a lock whose pid now belongs to another, later process', async () => {
    // pid 1 runs, but it is not the holder this lock names (its start time differs).
    fs.writeFileSync(
      runLockFile(dbFile),
      JSON.stringify({ pid: 1, host: os.hostname(), startTicks: -5, since: '2026-01-01T00:00:00.000Z' }),
    );
    const lock = await acquireRunLock(dbFile);
    await lock.release();
  });

  it('takes over a torn lock file', async () => {
    fs.writeFileSync(runLockFile(dbFile), '{"pid": 12');
    const lock = await acquireRunLock(dbFile);
    await lock.release();
  });

  it("never guesses about another host's lock: refused, saying which file to delete", async () => {
    fs.writeFileSync(
      runLockFile(dbFile),
      JSON.stringify({ pid: 4242, host: 'gpu-node-7', startTicks: 1, since: '2026-01-01T00:00:00.000Z' }),
    );
    await assert.rejects(
      acquireRunLock(dbFile),
      (err: unknown) =>
        err instanceof RunLockedError &&
        err.message.includes('process 4242 on gpu-node-7') &&
        err.message.includes(`delete ${runLockFile(dbFile)}`),
    );
  });
});
