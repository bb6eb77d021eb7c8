// A second hostile corpus: the attacks that got out of the first sandbox on
// real hosts (root bwrap with capabilities, the parent's session keyring,
// nested user namespaces, memory summed over processes, trees deeper than
// PATH_MAX, a parent's environment and daemons without bwrap, escape
// sequences on a terminal). Each test forces its mode itself (an evaluator
// option, an environment variable of the CLI it starts, a parent process
// with a session keyring, the CLI as an unprivileged user) and checks from
// outside: files on the host, memory, keyring contents, scores, bytes shown.
// Kernel settings are only probed (opened for writing, never written).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { cpSync, existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { forDisplay } from '../../src/engine/common/displayText';
import { Evaluator, type EvaluatorOptions } from '../../src/engine/sandbox/evaluator';
import { findExecutable } from '../../src/engine/sandbox/isolation';
import { DENIED_SYSCALLS, hostSeccompArch, syscallNumber } from '../../src/engine/sandbox/seccomp';
import { loadTask, type Task } from '../../src/engine/task/task';
import { processesMatching } from '../fixtures/hostile/processes';
import { tempDir } from '../support/tempDirs';

const REPO = join(__dirname, '../..');
const FIXTURE = join(REPO, 'test/fixtures/hostile');
const MARKER = `te-containment-${process.pid}-${Date.now()}`;
const WRITE_VALUE = 'with open("solution.json", "w") as f:\n    f.write(\'{"value": 1}\')\n';
/** A candidate reports an escape by exiting with 9 and saying what it got on stderr. */
const ESCAPED = 'if got:\n    print("ESCAPED", got, file=sys.stderr)\n    raise SystemExit(9)\n';
const IS_ROOT = process.getuid?.() === 0;
// Warm interpreters as a run's evaluator has them (bwrap only): every case holds for a sandbox started ahead of need.
const OPTIONS: EvaluatorOptions = {
  concurrency: 2,
  memoryLimitMb: 1024,
  outputLimitBytes: 64 * 1024,
  runtimeLimitSec: 10,
  warmInterpreters: 'auto',
};

interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `thetaevolve ...` as a real process, with exactly this environment; `prefix` runs it through another program (setpriv, a keyring holder). */
function runCli(args: string[], env: Record<string, string>, prefix: string[] = []): Promise<CliRun> {
  const command = [...prefix, process.execPath, '--import', 'tsx', join(REPO, 'src/cli.ts'), ...args];
  return spawnCli(command, REPO, env);
}

/**
 * `thetaevolve ...` as the unprivileged user: the built CLI and the fixture
 * task from a copy everyone can read, since the checkout may sit below a
 * private (0700) folder that user cannot enter. Needs `npm run build`.
 */
function runCliAsUser(args: (fixture: string) => string[], env: Record<string, string>, asUser: string[]): Promise<CliRun> {
  const built = join(REPO, 'dist', 'cli.js');
  if (!existsSync(built)) throw new Error(`${built} is missing: run \`npm run build\` first (npm test does)`);
  const copy = tempDir('thetaevolve-as-user-', { mode: 0o755 });
  cpSync(join(REPO, 'dist'), join(copy, 'dist'), { recursive: true });
  cpSync(FIXTURE, join(copy, 'task'), { recursive: true });
  return spawnCli([...asUser, process.execPath, join(copy, 'dist', 'cli.js'), ...args(join(copy, 'task'))], copy, env);
}

function spawnCli(command: string[], cwd: string, env: Record<string, string>): Promise<CliRun> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command[0] as string, command.slice(1), { cwd, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => resolvePromise({ code, stdout, stderr }));
  });
}

function jsonResult(run: CliRun): { status: string; score: number; reason: string; metrics: Record<string, unknown> } {
  const line = run.stdout.trim().split('\n').pop() ?? '';
  try {
    return JSON.parse(line) as { status: string; score: number; reason: string; metrics: Record<string, unknown> };
  } catch {
    throw new Error(`no JSON result (exit ${String(run.code)}): ${run.stdout}${run.stderr}`);
  }
}

describe('sandbox: containment on every host mode', function () {
  this.timeout(60000);
  let task: Task;
  let evaluator: Evaluator;
  let dir: string;
  /** Candidate files the CLI reads (readable by the unprivileged user too). */
  let programs: string;

  before(async function () {
    if (process.platform !== 'linux' || findExecutable('bwrap') === null) {
      console.log('      (skipped: these tests need Linux with bubblewrap, as CI has)');
      this.skip();
    }
    const fixture = await loadTask(FIXTURE);
    task = { ...fixture, candidateCommand: [...fixture.candidateCommand, MARKER] };
    evaluator = new Evaluator(task, OPTIONS);
    dir = tempDir('te-containment-', { mode: 0o755 });
    programs = join(dir, 'programs');
    await mkdir(programs);
    await chmod(programs, 0o755);
  });
  after(async () => {
    await evaluator?.close();
  });
  afterEach(() => {
    assert.deepEqual(processesMatching(MARKER), [], 'a candidate process outlived its evaluation');
  });

  async function program(name: string, code: string): Promise<string> {
    const path = join(programs, name);
    await writeFile(path, code, { mode: 0o644 });
    return path;
  }

  it('reports its isolation as a value: bwrap + seccomp, no capabilities, and what is missing and why', () => {
    const isolation = evaluator.isolation;
    assert.equal(isolation.kind, 'bwrap', isolation.warning ?? '');
    assert.equal(isolation.weak, false);
    assert.equal(isolation.layers.namespaces, true);
    assert.equal(isolation.layers.noCapabilities, true);
    assert.equal(isolation.layers.seccomp, hostSeccompArch() !== null);
    assert.match(isolation.summary, /^bwrap \+ seccomp/);
    if (!isolation.layers.cgroup)
      assert.ok(
        isolation.missing.some((why) => why.startsWith('cgroup: ')),
        'a missing cgroup is said, with why',
      );
  });

  const CAPABILITY_PROBE =
    'import os, sys\n' +
    'got = []\n' +
    'status = open("/proc/self/status").read()\n' +
    'for field in ("CapEff", "CapPrm", "CapInh", "CapAmb"):\n' +
    '    value = int([l for l in status.splitlines() if l.startswith(field + ":")][0].split()[1], 16)\n' +
    '    if value != 0:\n' +
    '        got.append(f"{field} {value:x}")\n' +
    'uid_map = open("/proc/self/uid_map").read().split()\n' +
    'if os.getuid() == 0 and uid_map[1] == "0":\n' +
    '    got.append("uid 0 is host root: " + " ".join(uid_map))\n' +
    '# Opening for writing changes nothing; a write would. Never write.\n' +
    'for path in ("/proc/sys/kernel/core_pattern", "/proc/sys/kernel/modprobe", "/proc/sysrq-trigger", "/sys/kernel/uevent_helper"):\n' +
    '    try:\n' +
    '        os.close(os.open(path, os.O_WRONLY))\n' +
    '        got.append("writable: " + path)\n' +
    '    except OSError:\n' +
    '        pass\n' +
    ESCAPED +
    WRITE_VALUE;

  it('never runs bwrap as root with capabilities, also when TMPDIR is a 0700 folder (which made the old probe fall back to root bwrap)', async () => {
    const inProcess = await evaluator.evaluate(CAPABILITY_PROBE);
    assert.equal(inProcess.status, 'ok', inProcess.reason);
    const privateTmp = await mkdtemp(join(dir, 'tmp-0700-'));
    await chmod(privateTmp, 0o700);
    const probe = await program('capabilities.py', CAPABILITY_PROBE);
    const run = await runCli(['evaluate', FIXTURE, probe, '--json'], { TMPDIR: privateTmp, HOME: privateTmp });
    const result = jsonResult(run);
    assert.equal(result.status, 'ok', result.reason);
    assert.match(run.stderr, /isolation: bwrap \+ seccomp/);
  });

  it('keeps the parent session keyring out of reach: no read, no overwrite (a parent holding a session keyring)', async function () {
    const holder = await program(
      'keyring-holder.py',
      'import ctypes, json, subprocess, sys\n' +
        'libc = ctypes.CDLL(None, use_errno=True)\n' +
        'L = ctypes.c_long\n' +
        'SYS_add_key, SYS_keyctl = ' +
        `${syscallNumber('add_key', hostSeccompArch() ?? 'x86_64')}, ${syscallNumber('keyctl', hostSeccompArch() ?? 'x86_64')}\n` +
        '# KEYCTL_JOIN_SESSION_KEYRING: this process (and the CLI it starts) gets a fresh session keyring.\n' +
        'if libc.syscall(L(SYS_keyctl), L(1), b"te-containment") < 0:\n' +
        '    print(json.dumps({"unavailable": ctypes.get_errno()}))\n' +
        '    sys.exit(0)\n' +
        'key = libc.syscall(L(SYS_add_key), b"user", b"te-secret", b"host-secret-value", L(17), L(-3))\n' +
        'run = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n' +
        'buffer = ctypes.create_string_buffer(256)\n' +
        'n = libc.syscall(L(SYS_keyctl), L(11), L(key), buffer, L(256))\n' +
        'print(json.dumps({"code": run.returncode, "stdout": run.stdout, "stderr": run.stderr, "payload": buffer.raw[:max(n, 0)].decode()}))\n',
    );
    const arch = hostSeccompArch() ?? 'x86_64';
    const candidate = await program(
      'keyring.py',
      'import ctypes, sys\n' +
        'libc = ctypes.CDLL(None, use_errno=True)\n' +
        'L = ctypes.c_long\n' +
        `SYS_add_key, SYS_request_key, SYS_keyctl = ${syscallNumber('add_key', arch)}, ${syscallNumber('request_key', arch)}, ${syscallNumber('keyctl', arch)}\n` +
        'got = []\n' +
        'ring = libc.syscall(L(SYS_keyctl), L(0), L(-3), L(0))\n' +
        'if ring >= 0:\n' +
        '    got.append(f"session keyring {ring}")\n' +
        'key = libc.syscall(L(SYS_keyctl), L(10), L(-3), b"user", b"te-secret", L(0))\n' +
        'if key >= 0:\n' +
        '    buffer = ctypes.create_string_buffer(256)\n' +
        '    n = libc.syscall(L(SYS_keyctl), L(11), L(key), buffer, L(256))\n' +
        '    got.append(f"read {buffer.raw[:max(n, 0)]!r}")\n' +
        'if libc.syscall(L(SYS_add_key), b"user", b"te-secret", b"overwritten", L(11), L(-3)) >= 0:\n' +
        '    got.append("overwrote te-secret")\n' +
        'if libc.syscall(L(SYS_request_key), b"user", b"te-secret", None, L(0)) >= 0:\n' +
        '    got.append("request_key found te-secret")\n' +
        ESCAPED +
        WRITE_VALUE,
    );
    const python = '/usr/bin/python3';
    const run = await new Promise<CliRun>((resolvePromise, reject) => {
      const child = spawn(
        python,
        [holder, process.execPath, '--import', 'tsx', join(REPO, 'src/cli.ts'), 'evaluate', FIXTURE, candidate, '--json'],
        {
          cwd: REPO,
          env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir },
        },
      );
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
      child.on('error', reject);
      child.on('close', (code) => resolvePromise({ code, stdout, stderr }));
    });
    const report = JSON.parse(run.stdout.trim()) as { unavailable?: number; code: number; stdout: string; stderr: string; payload: string };
    if (report.unavailable !== undefined) {
      console.log(
        `      (skipped: this host refuses keyctl to the test itself, errno ${report.unavailable}, so there is no session keyring to attack)`,
      );
      this.skip();
    }
    const result = jsonResult({ code: report.code, stdout: report.stdout, stderr: report.stderr });
    assert.equal(result.status, 'ok', result.reason);
    assert.equal(report.payload, 'host-secret-value', 'the key in the parent keyring was changed');
  });

  it('refuses nested user namespaces, mounts and every denied call (EPERM; clone3 ENOSYS), and ordinary numpy, subprocess and multiprocessing work still runs', async function () {
    const arch = hostSeccompArch();
    if (!arch) {
      console.log(`      (skipped: no seccomp filter for ${process.arch})`);
      this.skip();
    }
    const denied = DENIED_SYSCALLS.map((name) => [name, syscallNumber(name, arch)] as const).filter(([, n]) => n !== null);
    const result = await evaluator.evaluate(
      'import ctypes, os, subprocess, sys\n' +
        'libc = ctypes.CDLL(None, use_errno=True)\n' +
        'L = ctypes.c_long\n' +
        'got = []\n' +
        'if libc.unshare(0x10000000 | 0x20000) == 0:\n' +
        '    got.append("unshare(CLONE_NEWUSER | CLONE_NEWNS)")\n' +
        'run = subprocess.run(["/usr/bin/unshare", "-Ur", "--mount", "/bin/sh", "-c", "mount -t tmpfs -o size=6g none /tmp && echo mounted"], capture_output=True, text=True)\n' +
        'if "mounted" in run.stdout:\n' +
        '    got.append("tmpfs mounted in a nested user namespace")\n' +
        `pid = libc.syscall(L(${syscallNumber('clone', arch as 'x86_64')}), L(0x10000000 | 17), L(0), L(0), L(0), L(0))\n` +
        'if pid == 0:\n' +
        '    os._exit(0)\n' +
        'if pid > 0:\n' +
        '    os.waitpid(pid, 0)\n' +
        '    got.append("clone(CLONE_NEWUSER)")\n' +
        `if libc.syscall(L(${syscallNumber('clone3', arch as 'x86_64')}), L(0), L(0)) != -1 or ctypes.get_errno() != 38:\n` +
        '    got.append("clone3 did not give ENOSYS")\n' +
        `for name, number in ${JSON.stringify(denied)}:\n` +
        '    # With null arguments: harmless even where the call is allowed; the filter answers before the kernel looks at them.\n' +
        '    if libc.syscall(L(number), L(0), L(0), L(0), L(0), L(0)) != -1 or ctypes.get_errno() != 1:\n' +
        '        got.append(f"{name} not denied (errno {ctypes.get_errno()})")\n' +
        'import numpy, multiprocessing\n' +
        'if abs(numpy.linalg.det(numpy.eye(3) * 2) - 8) > 1e-9:\n' +
        '    got.append("numpy broken")\n' +
        'if subprocess.run(["/bin/echo", "ok"], capture_output=True, text=True).stdout != "ok\\n":\n' +
        '    got.append("subprocess broken")\n' +
        'with multiprocessing.Pool(2) as pool:\n' +
        '    if pool.map(abs, [-1, -2]) != [1, 2]:\n' +
        '        got.append("multiprocessing broken")\n' +
        ESCAPED +
        WRITE_VALUE,
    );
    assert.equal(result.status, 'ok', result.reason);
  });

  it('limits memory per sandbox, not per process: three processes of 300 MiB, or files in the scratch tmpfs, under a 512 MiB limit are stopped', async () => {
    const small = new Evaluator(task, { ...OPTIONS, memoryLimitMb: 512 });
    try {
      const started = performance.now();
      const result = await small.evaluate(
        'import os, time\n' +
          'children = []\n' +
          'for _ in range(3):\n' +
          '    pid = os.fork()\n' +
          '    if pid == 0:\n' +
          '        hog = bytearray(b"\\x01") * (300 * 1024 * 1024)\n' +
          '        time.sleep(600)\n' +
          '        os._exit(0)\n' +
          '    children.append(pid)\n' +
          'for pid in children:\n' +
          '    os.waitpid(pid, 0)\n' +
          WRITE_VALUE,
      );
      assert.equal(result.status, 'no_solution', `${result.status}: ${result.reason}`);
      assert.match(result.reason, /together held more than 512 MiB/);
      // The children would sleep 10 minutes: a minute means they were stopped, not waited for.
      assert.ok(performance.now() - started < 60_000, 'stopped before the children were done');
      // The scratch folders are RAM too: files there count with the processes' memory.
      const files = await small.evaluate(
        'import time\n' +
          'block = b"\\x01" * (1024 * 1024)\n' +
          'for path in ("/sandbox/work/a", "/tmp/b"):\n' +
          '    with open(path, "wb") as f:\n' +
          '        for _ in range(200):\n' +
          '            f.write(block)\n' +
          'hog = bytearray(b"\\x01") * (150 * 1024 * 1024)\n' +
          'time.sleep(8)\n' +
          WRITE_VALUE,
      );
      assert.equal(files.status, 'no_solution', `${files.status}: ${files.reason}`);
      assert.match(files.reason, /together held more than 512 MiB/);
    } finally {
      await small.close();
    }
  });

  /** A tree deeper than PATH_MAX, with permissions taken away on the way back up. */
  const DEEP_TREE =
    'import os\n' +
    'name = "d" * 200\n' +
    'for _ in range(30):\n' +
    '    os.mkdir(name)\n' +
    '    os.chdir(name)\n' +
    'open("leaf", "w").write("x" * 1000)\n' +
    'for _ in range(30):\n' +
    '    os.chdir("..")\n' +
    '    os.chmod(name, 0)\n' +
    WRITE_VALUE;

  it('leaves nothing on disk: a tree deeper than PATH_MAX, with and without bwrap', async () => {
    const scratch = await mkdtemp(join(dir, 'scratch-'));
    await chmod(scratch, 0o755);
    const sandboxed = new Evaluator(task, { ...OPTIONS, scratchDir: scratch });
    const weak = new Evaluator(task, { ...OPTIONS, scratchDir: scratch, isolation: 'fallback', allowWeakIsolation: true });
    try {
      for (const each of [sandboxed, weak]) {
        const result = await each.evaluate(DEEP_TREE);
        assert.equal(result.status, 'ok', `${each.isolation.kind}: ${result.reason}`);
        assert.deepEqual(await readdir(scratch), [], `${each.isolation.kind} left files behind`);
        assert.deepEqual(each.cleanupFailures, []);
      }
    } finally {
      await sandboxed.close();
      await weak.close();
    }
  });

  it('without bwrap (allowed), the parent environment cannot be read and a double-forked daemon dies with its run', async function () {
    if (!IS_ROOT) {
      console.log('      (skipped: the fallback separates the candidate by uid only when the tests run as root, as CI does)');
      this.skip();
    }
    const secret = `sk-te-parent-${process.pid}`;
    const reader = await program(
      'environ.py',
      'import os, sys\n' +
        'got = []\n' +
        'for pid in [str(os.getppid())] + [p for p in os.listdir("/proc") if p.isdigit()]:\n' +
        '    try:\n' +
        `        if b"${secret}" in open(f"/proc/{pid}/environ", "rb").read():\n` +
        '            got.append(pid)\n' +
        '    except OSError:\n' +
        '        pass\n' +
        ESCAPED +
        WRITE_VALUE,
    );
    const run = await runCli(['evaluate', FIXTURE, reader, '--json', '--allow-weak-isolation'], {
      THETAEVOLVE_ISOLATION: 'fallback',
      OPENAI_API_KEY: secret,
      HOME: dir,
    });
    const result = jsonResult(run);
    assert.equal(result.status, 'ok', result.reason);
    assert.match(run.stderr, /can still read your files/, 'the weaker isolation is said');

    // A daemon that would rewrite later candidates' solutions.
    const weak = new Evaluator(task, { ...OPTIONS, isolation: 'fallback', allowWeakIsolation: true });
    try {
      const daemon = await weak.evaluate(
        // It spares its own solution (a write racing the host's read would fail this run, not the later one's).
        'import glob, os, time\n' +
          'own = os.path.realpath("solution.json")\n' +
          'if os.fork() == 0:\n' +
          '    os.setsid()\n' +
          '    if os.fork() == 0:\n' +
          '        for _ in range(600):\n' +
          '            for path in glob.glob("/tmp/thetaevolve-eval-*/work/solution.json") + glob.glob("/var/tmp/thetaevolve-eval-*/work/solution.json"):\n' +
          '                try:\n' +
          '                    if os.path.realpath(path) != own:\n' +
          '                        open(path, "w").write(\'{"value": 99}\')\n' +
          '                except OSError:\n' +
          '                    pass\n' +
          '            time.sleep(0.01)\n' +
          '    os._exit(0)\n' +
          WRITE_VALUE,
      );
      assert.equal(daemon.status, 'ok', daemon.reason);
      assert.deepEqual(processesMatching(MARKER), [], 'the daemon outlived its run');
      const honest = await weak.evaluate(
        'import time\ntime.sleep(0.3)\nwith open("solution.json", "w") as f:\n    f.write(\'{"value": 2.5}\')\n',
      );
      assert.equal(honest.score, 2.5);
    } finally {
      await weak.close();
    }
  });

  it('refuses to run anything without a sandbox unless allowed, and says how to get one (also as a non-root user)', async () => {
    const marker = join(dir, 'ran-without-consent');
    const writer = await program('writer.py', `open(${JSON.stringify(marker)}, "w").write("ran")\n${WRITE_VALUE}`);
    assert.throws(
      () => new Evaluator(task, { ...OPTIONS, isolation: 'fallback' }),
      /No sandbox for candidate programs here[\s\S]*apt install bubblewrap[\s\S]*--allow-weak-isolation/,
    );
    const refused = await runCli(['evaluate', FIXTURE, writer, '--json'], { THETAEVOLVE_ISOLATION: 'fallback', HOME: dir });
    assert.equal(refused.code, 1, refused.stdout + refused.stderr);
    assert.equal(refused.stdout, '');
    assert.match(refused.stderr, /bubblewrap/);
    const setpriv = findExecutable('setpriv');
    if (IS_ROOT && setpriv) {
      const asUser = [setpriv, '--reuid=65534', '--regid=65534', '--clear-groups', '--'];
      const userRefused = await runCliAsUser(
        (fixture) => ['evaluate', fixture, writer, '--json'],
        { THETAEVOLVE_ISOLATION: 'fallback', HOME: '/tmp', TMPDIR: '/tmp' },
        asUser,
      );
      assert.equal(userRefused.code, 1, userRefused.stdout + userRefused.stderr);
      // As a user, with bwrap: the sandbox works and the CLI's own environment stays out of reach.
      const secret = `sk-te-user-${process.pid}`;
      const reader = await program(
        'user-environ.py',
        `import glob\ngot = [p for p in glob.glob("/proc/*/environ") if b"${secret}" in open(p, "rb").read()]\nimport sys\n${ESCAPED}${WRITE_VALUE}`,
      );
      const user = await runCliAsUser(
        (fixture) => ['evaluate', fixture, reader, '--json'],
        { OPENAI_API_KEY: secret, HOME: '/tmp', TMPDIR: '/tmp' },
        asUser,
      );
      assert.equal(jsonResult(user).status, 'ok', user.stdout + user.stderr);
    }
    await assert.rejects(stat(marker), 'a candidate ran without consent');
  });

  it('as a non-root user without bwrap (allowed): a double-forked daemon is found by its evaluation marker and killed, and the warning names what is not protected', async function () {
    const setpriv = findExecutable('setpriv');
    if (!IS_ROOT || !setpriv) {
      console.log('      (skipped: running the CLI as another user needs root and setpriv, as CI has)');
      this.skip();
    }
    const daemonMarker = `${MARKER}-user-daemon`;
    const daemon = await program(
      'user-daemon.py',
      'import os\n' +
        'if os.fork() == 0:\n' +
        '    os.setsid()\n' +
        '    if os.fork() == 0:\n' +
        `        os.execv("/bin/sh", ["sh", "-c", "sleep 30", "${daemonMarker}"])\n` +
        '    os._exit(0)\n' +
        WRITE_VALUE,
    );
    const run = await runCliAsUser(
      (fixture) => ['evaluate', fixture, daemon, '--json', '--allow-weak-isolation'],
      { THETAEVOLVE_ISOLATION: 'fallback', HOME: '/tmp', TMPDIR: '/tmp' },
      [setpriv as string, '--reuid=65534', '--regid=65534', '--clear-groups', '--'],
    );
    assert.equal(jsonResult(run).status, 'ok', run.stdout + run.stderr);
    assert.match(run.stderr, /read the environment of your other processes/);
    assert.deepEqual(processesMatching(daemonMarker), [], 'the daemon outlived its run');
  });

  it('strips control characters from what a person sees; --json stays exact', async () => {
    const painter = await program(
      'painter.py',
      'import sys\n' +
        'sys.stdout.write("\\x1b[2K\\r\\x1b[1Astatus     ok\\nscore      2.9999\\n")\n' +
        'sys.stderr.write("\\x1b]0;owned\\x07\\x1b[2K\\rstatus     ok\\u009b31m\\x00boom\\n")\n' +
        'raise SystemExit(3)\n',
    );
    const text = await runCli(['evaluate', FIXTURE, painter], { HOME: dir });
    assert.equal(text.code, 0, text.stderr);
    assert.equal(forDisplay(text.stdout), text.stdout, `a control character reached the terminal: ${JSON.stringify(text.stdout)}`);
    assert.match(text.stdout, /status\s+no_solution/);
    assert.match(text.stdout, /boom/);
    const json = jsonResult(await runCli(['evaluate', FIXTURE, painter, '--json'], { HOME: dir }));
    assert.ok(json.reason.includes('\u001b]0;owned\u0007'), 'the JSON reason is the exact text');
    assert.equal(forDisplay('a\tb\nc\r\u001b[31md\u009be\u007f'), 'a\tb\nc[31mde');
  });
});
