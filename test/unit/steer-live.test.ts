// `thetaevolve steer` on a live run: `thetaevolve run` runs against the test
// inference server in this process while a second process steers it; each
// request is queued and shows in the database (and the prompts) once the
// running loop takes it at its next step. And a request queued while another
// process holds a stopped run's lock is applied when the run resumes.
import * as assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import { main } from '../../src/cli';
import type { CliIO } from '../../src/cli/io';
import { ProgramDatabase } from '../../src/engine/database/programDatabase';
import { loadSqlJs } from '../../src/engine/database/sqlite';
import { steerInboxDir } from '../../src/engine/runFiles';
import { startTestServer, type TestServer } from '../server/openaiTestServer';
import { runCli } from '../support/cli';
import { tempDir } from '../support/tempDirs';
import { waitFor } from '../support/waitFor';

const ROOT = path.resolve(__dirname, '../..');
const TASK = path.join(ROOT, 'tasks/circle-packing');
const HOLDER = path.join(ROOT, 'test/support/holdRunLock.ts');
const GUIDANCE = 'Researcher guidance: try a hexagonal layout of the outer ring.';
const MINE = fs
  .readFileSync(path.join(TASK, 'initial.py'), 'utf8')
  .replace('    # Keep every centre a little inside the square.', '    centers = list(centers)  # researcher');

/** `thetaevolve steer` in a second process (run from the repository, where tsx resolves: give absolute paths). */
function steerInAnotherProcess(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src/cli.ts'), 'steer', ...args], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

async function readDb<T>(file: string, read: (db: ProgramDatabase) => T): Promise<T | null> {
  if (!fs.existsSync(file)) return null;
  const db = await ProgramDatabase.openReadOnly(file);
  try {
    return read(db);
  } finally {
    await db.close();
  }
}

const QueuedSchema = z.object({ kind: z.string(), queued: z.literal(true) });

describe('thetaevolve steer (live run)', function () {
  this.timeout(180_000);
  let server: TestServer | undefined;
  const children: ChildProcess[] = [];
  afterEach(async () => {
    for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await server?.close();
    server = undefined;
  });

  it('a second process steers a running `run`: guidance, a program and a ban take effect at the next step', async () => {
    const dir = tempDir('thetaevolve-steer-live-');
    const db = path.join(dir, 'run.sqlite');
    fs.writeFileSync(path.join(dir, 'guidance.txt'), GUIDANCE);
    fs.writeFileSync(path.join(dir, 'mine.py'), MINE);
    server = await startTestServer({ latencyMs: 1 });
    const stop = new AbortController();
    let stderr = '';
    const io: CliIO = {
      stdout: () => undefined,
      stderr: (t) => void (stderr += t),
      stderrIsTTY: false,
      signal: stop.signal,
      cwd: dir,
      env: {},
    };
    const running = main(
      ['run', TASK, '--endpoint', server.baseURL, '--steps', '1000', '--batch', '2', '--samples', '2', '--db', db, '--json'],
      io,
    );
    const detail = (): string => stderr;
    try {
      await waitFor(() => readDb(db, (file) => file.lastStep >= 1), { what: 'the run to commit step 1', detail });

      const before = server.requests.length;
      const guidance = await steerInAnotherProcess([db, '--guidance', path.join(dir, 'guidance.txt'), '--json']);
      assert.equal(guidance.code, 0, guidance.stderr);
      assert.deepEqual(QueuedSchema.parse(JSON.parse(guidance.stdout)), { kind: 'guidance', queued: true });
      assert.ok(!server.requests.slice(0, before).some((r) => r.userText.includes(GUIDANCE)));
      const history = await waitFor(() => readDb(db, (file) => file.guidanceHistory()), {
        what: 'the guidance to be recorded',
        until: (h) => (h?.length ?? 0) === 1,
        detail,
      });
      assert.equal(history?.[0]?.text, GUIDANCE);
      await waitFor(() => server?.requests.some((r) => r.userText.includes(`# Guidance from the researcher\n${GUIDANCE}`)), {
        what: 'a prompt with the guidance',
        detail,
      });

      const added = await steerInAnotherProcess([db, '--add', path.join(dir, 'mine.py'), '--note', 'live', '--json']);
      assert.equal(added.code, 0, added.stderr);
      assert.deepEqual(QueuedSchema.parse(JSON.parse(added.stdout)), { kind: 'add', queued: true });
      const researcher = await waitFor(() => readDb(db, (file) => file.origins().researcher), {
        what: "the researcher's program to enter",
        until: (n) => n === 1,
        detail,
      });
      assert.equal(researcher, 1);

      const bestId = await readDb(db, (file) => file.best()?.id ?? null);
      assert.ok(bestId);
      const banned = await steerInAnotherProcess([db, '--ban', bestId, '--json']);
      assert.equal(banned.code, 0, banned.stderr);
      const banStep = await waitFor(
        () => readDb(db, (file) => file.steeringLog().find((e) => e.kind === 'ban' && e.id === bestId)?.step ?? null),
        { what: 'the ban to be recorded', detail },
      );
      // Refused on the live run too, with the database unchanged: an unknown id.
      const unknown = await steerInAnotherProcess([db, '--pin', 'zzzz']);
      assert.equal(unknown.code, 1);
      assert.match(unknown.stderr, /no program zzzz/);
      await waitFor(() => readDb(db, (file) => file.lastStep), {
        what: 'two steps after the ban',
        until: (step) => step !== null && banStep !== null && step >= banStep + 1,
        detail,
      });
      stop.abort();
      assert.equal(await running, 0, stderr);
      assert.match(stderr, /steer at step \d+: guidance set\n/);
      assert.doesNotMatch(stderr, /from step/, 'the step is named once');
      assert.match(stderr, /steer at step \d+: added program/);
      assert.deepEqual(fs.readdirSync(steerInboxDir(db)), []);
      // No program of a step from the ban on has the banned program as its parent.
      const SQL = await loadSqlJs();
      const raw = new SQL.Database(fs.readFileSync(db));
      const parents = (
        raw.exec(`SELECT parent_id FROM programs WHERE origin = 'model' AND step >= ${Number(banStep)}`)[0]?.values ?? []
      ).map(([parent]) => parent);
      raw.close();
      assert.ok(parents.length > 0);
      assert.ok(!parents.includes(bestId), `a child of the banned ${bestId}`);
    } finally {
      stop.abort();
      await running.catch(() => undefined);
    }
  });

  it('a request queued while the run is held elsewhere is applied when the run resumes', async () => {
    const dir = tempDir('thetaevolve-steer-queued-');
    const db = path.join(dir, 'run.sqlite');
    fs.writeFileSync(path.join(dir, 'guidance.txt'), GUIDANCE);
    const first = await runCli(['run', TASK, '--sampler', 'mutate', '--steps', '1', '--batch', '2', '--samples', '2', '--db', db], dir);
    assert.equal(first.code, 0, first.stderr);
    const holder = spawn(process.execPath, ['--import', 'tsx', HOLDER, db], { stdio: ['pipe', 'pipe', 'inherit'] });
    children.push(holder);
    let out = '';
    holder.stdout?.setEncoding('utf8');
    await new Promise<void>((resolve, reject) => {
      holder.stdout?.on('data', (text: string) => {
        out += text;
        if (out.includes('held')) resolve();
      });
      holder.once('exit', (code) => reject(new Error(`the lock holder exited (${code}) before taking the lock`)));
    });
    const queued = await runCli(['steer', db, '--guidance', 'guidance.txt', '--json'], dir);
    assert.equal(queued.code, 0, queued.stderr);
    assert.deepEqual(JSON.parse(queued.stdout), { kind: 'guidance', queued: true });
    const [requestFile] = fs.readdirSync(steerInboxDir(db));
    assert.ok(requestFile);
    const requestText = fs.readFileSync(path.join(steerInboxDir(db), requestFile), 'utf8');
    holder.stdin?.end();
    await new Promise<void>((resolve) => holder.once('exit', () => resolve()));
    const resumed = await runCli(['run', TASK, '--sampler', 'mutate', '--steps', '1', '--batch', '2', '--samples', '2', '--db', db], dir);
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.deepEqual(await readDb(db, (file) => file.guidanceHistory()), [{ step: 2, text: GUIDANCE, by: 'researcher' }]);
    assert.deepEqual(fs.readdirSync(steerInboxDir(db)), []);

    // A crash right after the request was applied, before its file was removed: the resumed run does not apply it again.
    fs.writeFileSync(path.join(steerInboxDir(db), requestFile), requestText);
    const again = await runCli(['run', TASK, '--sampler', 'mutate', '--steps', '1', '--batch', '2', '--samples', '2', '--db', db], dir);
    assert.equal(again.code, 0, again.stderr);
    assert.deepEqual(await readDb(db, (file) => file.guidanceHistory()), [{ step: 2, text: GUIDANCE, by: 'researcher' }]);
    assert.deepEqual(await readDb(db, (file) => file.lastStep), 3);
    assert.deepEqual(fs.readdirSync(steerInboxDir(db)), []);
  });
});
