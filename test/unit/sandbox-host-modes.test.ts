// Memory and CPU held where no process's RSS shows them, in every host mode
// the tests can reach: root with a cgroup (v2 delegated, or v1 on a hybrid
// host), root with bwrap but no cgroup, root without bwrap, and the CLI as
// an unprivileged user (bwrap without a cgroup, and without bwrap). Each
// candidate tries to hold 200 MiB against a 64 MiB limit through one channel
// (files in /dev, /dev/shm or /tmp, a memfd filled with write(), a detached
// SysV segment, datagrams queued on socketpairs) and writes its solution
// only when it got all of it: a contained run never scores.
import assert from 'node:assert/strict';
import { cpSync, existsSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { Evaluator, type EvaluatorOptions } from '../../src/engine/sandbox/evaluator';
import { findExecutable } from '../../src/engine/sandbox/isolation';
import { loadTask, type Task } from '../../src/engine/task/task';
import { processesMatching } from '../fixtures/hostile/processes';
import { waitFor } from '../support/waitFor';
import { tempDir } from '../support/tempDirs';

const REPO = join(__dirname, '../..');
const FIXTURE = join(REPO, 'test/fixtures/hostile');
const IS_ROOT = process.getuid?.() === 0;
const LIMIT_MB = 64;
// Warm interpreters as a run's evaluator has them (bwrap only): every case holds for a sandbox started ahead of need.
const OPTIONS: EvaluatorOptions = {
  concurrency: 2,
  memoryLimitMb: LIMIT_MB,
  outputLimitBytes: 16 * 1024,
  runtimeLimitSec: 10,
  warmInterpreters: 'auto',
};

const CHANNELS = ['dev', 'memfd', 'shm', 'socket', 'devshm', 'tmp'] as const;
type Channel = (typeof CHANNELS)[number];

/** A candidate that holds 200 MiB through one channel for a moment, then writes a solution; any failure on the way exits non-zero. */
function filler(channel: Channel): string {
  return (
    'import ctypes, os, socket, time\n' +
    'MiB = 1 << 20\n' +
    'block = b"\\x01" * MiB\n' +
    'held = []\n' +
    `kind = "${channel}"\n` +
    'if kind in ("dev", "devshm", "tmp"):\n' +
    '    with open({"dev": "/dev", "devshm": "/dev/shm", "tmp": "/tmp"}[kind] + "/te-fill-%d" % os.getpid(), "wb") as f:\n' +
    '        for _ in range(200):\n' +
    '            f.write(block)\n' +
    'elif kind == "memfd":\n' +
    '    fd = os.memfd_create("te-fill")\n' +
    '    for _ in range(200):\n' +
    '        os.write(fd, block)\n' +
    '    held.append(fd)\n' +
    'elif kind == "shm":\n' +
    '    libc = ctypes.CDLL(None, use_errno=True)\n' +
    '    libc.shmat.restype = ctypes.c_void_p\n' +
    "    for _ in range(10):  # 20 MiB at a time, each detached: past any per-process limit, in no process's memory\n" +
    '        shmid = libc.shmget(0, ctypes.c_size_t(20 * MiB), 0o1600)\n' +
    '        if shmid < 0:\n' +
    '            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))\n' +
    '        addr = libc.shmat(shmid, None, 0)\n' +
    '        if addr is None or addr == ctypes.c_void_p(-1).value:\n' +
    '            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))\n' +
    '        for i in range(20):\n' +
    '            ctypes.memset(addr + i * MiB, 1, MiB)\n' +
    '        libc.shmdt(ctypes.c_void_p(addr))\n' +
    'elif kind == "socket":\n' +
    '    total = 0\n' +
    '    while total < 200 * MiB:\n' +
    '        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)\n' +
    '        try:\n' +
    '            a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 * MiB)\n' +
    '        except OSError:\n' +
    '            pass\n' +
    '        a.setblocking(False)\n' +
    '        try:\n' +
    '            while total < 200 * MiB:\n' +
    '                a.send(block[:100000])\n' +
    '                total += 100000\n' +
    '        except BlockingIOError:\n' +
    '            pass\n' +
    '        a.close()  # the queued datagrams keep it alive\n' +
    '        held.append(b)\n' +
    'time.sleep(1)\n' +
    'with open("solution.json", "w") as f:\n' +
    '    f.write(\'{"value": 1}\')\n'
  );
}

/** Ordinary code starting a child in a new session, and whether it got one. */
const NEW_SESSION_PROGRAM =
  'import os, subprocess, sys\n' +
  'p = subprocess.Popen([sys.executable, "-c", "import os; print(os.getsid(0))"], start_new_session=True, stdout=subprocess.PIPE)\n' +
  'sid = int(p.communicate()[0])\n' +
  'print("session", "same" if sid == os.getsid(0) else "new")\n' +
  'with open("solution.json", "w") as f:\n' +
  '    f.write(\'{"value": 1}\')\n';

/** Contained: never scored, and stopped for memory or refused the channel (the reason says which). */
function assertContained(result: { status: string; reason: string }, what: string): void {
  assert.equal(result.status, 'no_solution', `${what}: held 200 MiB against a ${LIMIT_MB} MiB limit and scored (${result.reason})`);
  assert.match(
    result.reason,
    /held more than 64 MiB|Read-only file system|Operation not permitted|Too many open files|No space left on device|killed by SIGKILL/,
    `${what}: ${result.reason}`,
  );
}

describe('sandbox: memory no process shows, and CPU, in every host mode', function () {
  this.timeout(120000);
  let task: Task;
  const marker = `te-host-modes-${process.pid}`;

  before(async function () {
    if (process.platform !== 'linux' || findExecutable('bwrap') === null) {
      console.log('      (skipped: these tests need Linux with bubblewrap, as CI has)');
      this.skip();
    }
    const fixture = await loadTask(FIXTURE);
    task = { ...fixture, candidateCommand: [...fixture.candidateCommand, marker] };
  });
  afterEach(() => {
    assert.deepEqual(processesMatching(marker), [], 'a candidate process outlived its evaluation');
  });

  const weak = { isolation: 'fallback', allowWeakIsolation: true } as const;
  const WITHOUT_BWRAP_AS_ROOT: readonly Channel[] = ['memfd', 'shm', 'socket', 'devshm', 'tmp'];
  // Without bwrap /dev is the host's (not writable by the candidate's user): nothing to fill.
  /** who: which user the tests must run as to reach the mode (the CLI test below runs the user's mode as nobody when the tests run as root). */
  const modes: { name: string; options: Partial<EvaluatorOptions>; who: 'any' | 'root' | 'user'; channels: readonly Channel[] }[] = [
    { name: 'bwrap, cgroup where the host has one', options: {}, who: 'any', channels: CHANNELS },
    { name: 'bwrap without a cgroup', options: { cgroup: 'off' }, who: 'any', channels: CHANNELS },
    { name: 'no bwrap (allowed), as root with its cgroup', options: weak, who: 'root', channels: WITHOUT_BWRAP_AS_ROOT },
    // The seccomp launcher refuses memfds, SysV segments and larger socket buffers; /tmp and /dev/shm are tmpfs of its own.
    {
      name: 'no bwrap (allowed), as root without a cgroup',
      options: { ...weak, cgroup: 'off' },
      who: 'root',
      channels: WITHOUT_BWRAP_AS_ROOT,
    },
    // As a user, files in RAM-backed host folders are not held: docs/guide.md "What each host mode guarantees".
    {
      name: 'no bwrap (allowed), as a user without a cgroup',
      options: { ...weak, cgroup: 'off' },
      who: 'user',
      channels: ['memfd', 'shm', 'socket'],
    },
  ];
  for (const mode of modes) {
    it(`${mode.name}: ${mode.channels.join(', ')} cannot hold 200 MiB past a 64 MiB limit`, async function () {
      if ((mode.who === 'root' && !IS_ROOT) || (mode.who === 'user' && IS_ROOT)) {
        console.log(
          `      (skipped: this mode is reached as ${mode.who === 'root' ? 'root' : 'a user (as root: the CLI test below runs it as nobody)'})`,
        );
        this.skip();
      }
      const evaluator = new Evaluator(task, { ...OPTIONS, ...mode.options });
      try {
        if (mode.options.cgroup === 'off') assert.doesNotMatch(evaluator.isolation.summary, /cgroup v/);
        for (const channel of mode.channels) {
          assertContained(await evaluator.evaluate(filler(channel)), `${evaluator.isolation.summary}, ${channel}`);
        }
        // An honest candidate still runs in this mode.
        const honest = await evaluator.evaluate('with open("solution.json", "w") as f:\n    f.write(\'{"value": 2}\')\n');
        assert.equal(honest.status, 'ok', honest.reason);
      } finally {
        await evaluator.close();
      }
    });
  }

  it('says which mode a run has: a cgroup and its version where the host lends one (root on a hybrid host: v1), else why not and what holds instead', async () => {
    const evaluator = new Evaluator(task, OPTIONS);
    const without = new Evaluator(task, { ...OPTIONS, cgroup: 'off' });
    try {
      if (evaluator.isolation.layers.cgroup) assert.match(evaluator.isolation.summary, /\+ cgroup v[12]$/);
      else assert.ok(evaluator.isolation.missing.some((why) => why.startsWith('cgroup: ')));
      const mountinfo = readFileSync('/proc/self/mountinfo', 'utf8');
      const hybridRoot = IS_ROOT && / - cgroup cgroup [^\n]*\bmemory\b/.test(mountinfo);
      if (hybridRoot)
        assert.equal(evaluator.isolation.layers.cgroup, true, `root on a host with cgroup v1 memory: ${evaluator.isolation.summary}`);
      assert.match(without.isolation.summary, /\(no cgroup\)/);
      const why = without.isolation.missing.find((line) => line.startsWith('cgroup: ')) ?? '';
      assert.match(why, /\/dev is read-only, memfds, SysV shared memory and larger socket buffers are refused/);
      // Without bwrap the same filter, through the launcher; as root also a /tmp and /dev/shm of its own.
      const weakWithout = new Evaluator(task, { ...OPTIONS, ...weak, cgroup: 'off' });
      await weakWithout.close();
      assert.match(weakWithout.isolation.summary, /^no sandbox \(limits and a private folder only\) \+ seccomp$/);
      assert.equal(weakWithout.isolation.layers.seccomp, true);
      const weakWhy = weakWithout.isolation.missing.find((line) => line.startsWith('cgroup: ')) ?? '';
      assert.match(weakWhy, /the seccomp filter refuses memfds, SysV shared memory and larger socket buffers/);
      assert.match(weakWhy, /setsid returns without making a session/);
      assert.match(
        weakWhy,
        IS_ROOT ? /its \/tmp and \/dev\/shm are tmpfs of its own/ : /RAM-backed host folders \(\/dev\/shm, a tmpfs \/tmp\) are not held/,
      );
    } finally {
      await evaluator.close();
      await without.close();
    }
  });

  /** `thetaevolve evaluate --json` of a built copy, run as nobody (setpriv): its result. */
  async function evaluateAsUser(
    copy: string,
    program: string,
    code: string,
    extra: { env?: Record<string, string>; args?: string[] } = {},
  ) {
    await writeFile(program, code, { mode: 0o644 });
    const args = [
      '--reuid=65534',
      '--regid=65534',
      '--clear-groups',
      '--',
      process.execPath,
      join(copy, 'dist', 'cli.js'),
      'evaluate',
      join(copy, 'task'),
      program,
      '--json',
      '--set',
      `sandbox.memoryLimitMb=${LIMIT_MB}`,
      ...(extra.args ?? []),
    ];
    const run = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolvePromise, reject) => {
      const child = spawn(findExecutable('setpriv') as string, args, {
        cwd: copy,
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '/tmp', TMPDIR: '/tmp', ...extra.env },
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
      child.on('error', reject);
      child.on('close', (exit) => resolvePromise({ code: exit, stdout, stderr }));
    });
    const line = run.stdout.trim().split('\n').pop() ?? '';
    try {
      return JSON.parse(line) as { status: string; reason: string; stdout?: string };
    } catch {
      throw new Error(`no JSON result (exit ${String(run.code)}): ${run.stdout}${run.stderr}`);
    }
  }

  /** A copy of the built CLI and the fixture task that nobody can read; skips where the CLI cannot run as another user. */
  function userCopy(context: Mocha.Context): string {
    const built = join(REPO, 'dist', 'cli.js');
    if (!IS_ROOT || !findExecutable('setpriv')) {
      console.log('      (skipped: running the CLI as another user needs root and setpriv, as CI has)');
      context.skip();
    }
    if (!existsSync(built)) throw new Error(`${built} is missing: run \`npm run build\` first (npm test does)`);
    const copy = tempDir('te-host-modes-user-', { mode: 0o755 });
    cpSync(join(REPO, 'dist'), join(copy, 'dist'), { recursive: true });
    cpSync(FIXTURE, join(copy, 'task'), { recursive: true });
    return copy;
  }

  it('as an unprivileged user (bwrap, no cgroup on a hybrid host): the same channels are contained', async function () {
    const copy = userCopy(this);
    for (const channel of CHANNELS) {
      assertContained(await evaluateAsUser(copy, join(copy, `${channel}.py`), filler(channel)), `as a user, ${channel}`);
    }
  });

  it('as an unprivileged user without bwrap (allowed): memfds, SysV segments and socket buffers are contained by the seccomp launcher', async function () {
    const copy = userCopy(this);
    // Files in RAM-backed host folders are not held here: docs/guide.md "What each host mode guarantees".
    const weakArgs = { env: { THETAEVOLVE_ISOLATION: 'fallback' }, args: ['--allow-weak-isolation'] };
    for (const channel of ['memfd', 'shm', 'socket'] as const) {
      const result = await evaluateAsUser(copy, join(copy, `${channel}.py`), filler(channel), weakArgs);
      assertContained(result, `as a user without bwrap, ${channel}`);
    }
    const honest = await evaluateAsUser(copy, join(copy, 'session.py'), NEW_SESSION_PROGRAM, weakArgs);
    assert.equal(honest.status, 'ok', honest.reason);
  });

  it('without a cgroup, start_new_session=True still runs (setsid returns without making a session); with one, it makes one', async () => {
    const modes: Partial<EvaluatorOptions>[] = [{ cgroup: 'off' }, {}];
    if (IS_ROOT) modes.push({ ...weak, cgroup: 'off' });
    for (const options of modes) {
      const evaluator = new Evaluator(task, { ...OPTIONS, ...options });
      try {
        const result = await evaluator.evaluate(NEW_SESSION_PROGRAM);
        assert.equal(result.status, 'ok', `${evaluator.isolation.summary}: ${result.reason}`);
        assert.match(result.stdout ?? '', evaluator.isolation.layers.cgroup ? /session new/ : /session same/, evaluator.isolation.summary);
      } finally {
        await evaluator.close();
      }
    }
  });

  it('without bwrap, a candidate command that cannot start is ours (evaluation_failed, never scored), and the launcher says so', async () => {
    const evaluator = new Evaluator({ ...task, candidateCommand: ['/nonexistent/python3', '{program}'] }, { ...OPTIONS, ...weak });
    try {
      const result = await evaluator.evaluate('print(1)\n');
      assert.equal(result.status, 'evaluation_failed', result.reason);
      assert.equal(result.metrics.sandbox_failed, true);
      assert.match(result.reason, /the sandbox cannot start \/nonexistent\/python3: it does not exist/);
    } finally {
      await evaluator.close();
    }
  });

  it('gives each sandbox its own CPU share: a cgroup of its own where there is one, else one scheduling group it cannot multiply (setsid without effect)', async () => {
    const modes: Partial<EvaluatorOptions>[] = [{}, { cgroup: 'off' }];
    if (IS_ROOT) modes.push({ ...weak, cgroup: 'off' });
    for (const options of modes) {
      // Room under RLIMIT_AS for 8 threads (a stack and a malloc arena of 64 MiB each).
      const evaluator = new Evaluator(task, { ...OPTIONS, memoryLimitMb: 2048, ...options });
      try {
        // 8 busy threads (a process per thread would be the same), and a child trying to start a session of its own.
        const hog = evaluator.evaluate(
          'import os, threading, time\n' +
            'session = os.getsid(0)\n' +
            'pid = os.fork()\n' +
            'if pid == 0:\n' +
            '    os.setsid()\n' +
            '    os._exit(0 if os.getsid(0) != session else 1)\n' +
            '_, status = os.waitpid(pid, 0)\n' +
            'print("setsid", "made a session" if os.waitstatus_to_exitcode(status) == 0 else "without effect", flush=True)\n' +
            'def spin():\n' +
            '    end = time.time() + 30\n' +
            '    while time.time() < end:\n' +
            '        pass\n' +
            'for _ in range(8):\n' +
            '    threading.Thread(target=spin, daemon=True).start()\n' +
            'time.sleep(30)\n',
        );
        const pids = await waitFor(
          () => {
            const found = processesMatching(marker).filter((pid) => {
              try {
                return readFileSync(`/proc/${pid}/status`, 'utf8').includes('Threads:\t9');
              } catch {
                return false;
              }
            });
            return found;
          },
          { what: 'the busy candidate to be running', until: (found) => found.length > 0 },
        );
        const pid = pids[0] as number;
        const cgroups = readFileSync(`/proc/${pid}/cgroup`, 'utf8');
        if (evaluator.isolation.layers.cgroup) {
          // v2: the unified line; v1: the cpu hierarchy's line. Either names the sandbox's own group.
          const v2 = evaluator.isolation.summary.includes('cgroup v2');
          const cpuLine = cgroups.split('\n').find((l) => (v2 ? /^0::/.test(l) : /^\d+:[^:]*\bcpu\b[^:]*:/.test(l))) ?? '';
          assert.match(cpuLine, /thetaevolve-\d+-\d+/, `the candidate is in no CPU group of its own: ${cgroups}`);
        } else if (existsSync('/proc/self/autogroup')) {
          const autogroup = readFileSync(`/proc/${pid}/autogroup`, 'utf8');
          assert.notEqual(autogroup, readFileSync('/proc/self/autogroup', 'utf8'), 'the sandbox shares our scheduling group');
        }
        evaluator.close().catch(() => undefined);
        const result = await hog;
        // Printed before the threads started, so before we looked.
        if (!evaluator.isolation.layers.cgroup) assert.match(result.stdout, /setsid without effect/);
      } finally {
        await evaluator.close();
      }
    }
  });
});
