// Memory and CPU held where no process's RSS shows them, in every host mode
// the tests can reach: root with a cgroup (v2 delegated, or v1 on a hybrid
// host), root with bwrap but no cgroup, root without bwrap, and the CLI as
// an unprivileged user (bwrap without a cgroup). Each candidate tries to hold
// 200 MiB against a 64 MiB limit through one channel (files in /dev, a memfd
// filled with write(), a detached SysV segment, datagrams queued on
// socketpairs) and writes its solution only when it got all of it: a
// contained run never scores.
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
const OPTIONS: EvaluatorOptions = { concurrency: 2, memoryLimitMb: LIMIT_MB, outputLimitBytes: 16 * 1024, runtimeLimitSec: 10 };

const CHANNELS = ['dev', 'memfd', 'shm', 'socket'] as const;
type Channel = (typeof CHANNELS)[number];

/** A candidate that holds 200 MiB through one channel for a moment, then writes a solution; any failure on the way exits non-zero. */
function filler(channel: Channel): string {
  return (
    'import ctypes, os, socket, time\n' +
    'MiB = 1 << 20\n' +
    'block = b"\\x01" * MiB\n' +
    'held = []\n' +
    `kind = "${channel}"\n` +
    'if kind == "dev":\n' +
    '    with open("/dev/te-fill", "wb") as f:\n' +
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
  // Without bwrap /dev is the host's (not writable by the candidate's user): nothing to fill.
  const modes: { name: string; options: Partial<EvaluatorOptions>; rootOnly: boolean; channels: readonly Channel[] }[] = [
    { name: 'bwrap, cgroup where the host has one', options: {}, rootOnly: false, channels: CHANNELS },
    { name: 'bwrap without a cgroup', options: { cgroup: 'off' }, rootOnly: false, channels: CHANNELS },
    { name: 'no bwrap (allowed), as root with its cgroup', options: weak, rootOnly: true, channels: ['memfd', 'shm', 'socket'] },
    // Socket buffers are not held here (no seccomp to refuse larger ones): README, "What each host mode guarantees".
    {
      name: 'no bwrap (allowed), as root without a cgroup',
      options: { ...weak, cgroup: 'off' },
      rootOnly: true,
      channels: ['memfd', 'shm'],
    },
  ];
  for (const mode of modes) {
    it(`${mode.name}: ${mode.channels.join(', ')} cannot hold 200 MiB past a 64 MiB limit`, async function () {
      if (mode.rootOnly && !IS_ROOT) {
        console.log('      (skipped: without bwrap only root has a cgroup v1 or a private IPC namespace to offer)');
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
    } finally {
      await evaluator.close();
      await without.close();
    }
  });

  it('as an unprivileged user (bwrap, no cgroup on a hybrid host): the same channels are contained', async function () {
    const setpriv = findExecutable('setpriv');
    const built = join(REPO, 'dist', 'cli.js');
    if (!IS_ROOT || !setpriv) {
      console.log('      (skipped: running the CLI as another user needs root and setpriv, as CI has)');
      this.skip();
    }
    if (!existsSync(built)) throw new Error(`${built} is missing: run \`npm run build\` first (npm test does)`);
    const copy = tempDir('te-host-modes-user-', { mode: 0o755 });
    cpSync(join(REPO, 'dist'), join(copy, 'dist'), { recursive: true });
    cpSync(FIXTURE, join(copy, 'task'), { recursive: true });
    for (const channel of CHANNELS) {
      const program = join(copy, `${channel}.py`);
      await writeFile(program, filler(channel), { mode: 0o644 });
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
      ];
      const run = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolvePromise, reject) => {
        const child = spawn(setpriv as string, args, {
          cwd: copy,
          env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '/tmp', TMPDIR: '/tmp' },
        });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
        child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
        child.on('error', reject);
        child.on('close', (code) => resolvePromise({ code, stdout, stderr }));
      });
      const line = run.stdout.trim().split('\n').pop() ?? '';
      let result: { status: string; reason: string };
      try {
        result = JSON.parse(line) as { status: string; reason: string };
      } catch {
        throw new Error(`no JSON result (exit ${String(run.code)}): ${run.stdout}${run.stderr}`);
      }
      assertContained(result, `as a user, ${channel}`);
    }
  });

  it('gives each sandbox its own CPU share: a cgroup of its own where there is one, else one scheduling group it cannot multiply (no setsid)', async () => {
    for (const options of [{}, { cgroup: 'off' as const }]) {
      // Room under RLIMIT_AS for 8 threads (a stack and a malloc arena of 64 MiB each).
      const evaluator = new Evaluator(task, { ...OPTIONS, memoryLimitMb: 2048, ...options });
      try {
        // 8 busy threads (a process per thread would be the same), and a child trying to start a session of its own.
        const hog = evaluator.evaluate(
          'import os, threading, time\n' +
            'pid = os.fork()\n' +
            'if pid == 0:\n' +
            '    try:\n' +
            '        os.setsid()\n' +
            '        os._exit(0)\n' +
            '    except OSError:\n' +
            '        os._exit(1)\n' +
            '_, status = os.waitpid(pid, 0)\n' +
            'print("setsid", "allowed" if os.waitstatus_to_exitcode(status) == 0 else "refused", flush=True)\n' +
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
        if (!evaluator.isolation.layers.cgroup) assert.match(result.stdout, /setsid refused/);
      } finally {
        await evaluator.close();
      }
    }
  });
});
