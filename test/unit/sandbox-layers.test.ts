// The sandbox's layers as code: the seccomp filter run through a BPF
// interpreter (every decision, both architectures), the macOS profile,
// cgroup delegation detection, and the cleanup that no tree defeats.
import assert from 'node:assert/strict';
import { chmod, mkdir, readdir, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { detectCgroup } from '../../src/engine/sandbox/cgroup';
import { removeTree } from '../../src/engine/sandbox/cleanup';
import { sandboxExecProfile } from '../../src/engine/sandbox/isolation';
import { fallbackWithoutCgroup, pidNamespaceCommand } from '../../src/engine/sandbox/rootNamespaces';
import { tempDir } from '../support/tempDirs';
import {
  AUDIT_ARCH,
  type BpfInstruction,
  CLONE_NAMESPACE_FLAGS,
  DENIED_SYSCALLS,
  ENOSYS,
  EPERM,
  SECCOMP_RET_ALLOW,
  type SeccompArch,
  seccompFilterBytes,
  seccompProgram,
  SOCKET_BUFFER_OPTIONS,
  syscallNumber,
  WITHOUT_CGROUP_SYSCALLS,
  X32_SYSCALL_BIT,
} from '../../src/engine/sandbox/seccomp';

/** A classic-BPF interpreter for the instructions seccomp.ts emits, over struct seccomp_data. */
function runFilter(program: readonly BpfInstruction[], data: { nr: number; arch: number; args?: number[] }): number {
  const word = (offset: number): number => {
    if (offset === 0) return data.nr >>> 0;
    if (offset === 4) return data.arch >>> 0;
    const index = (offset - 16) / 8;
    assert.ok(Number.isInteger(index) && index >= 0 && index < 6, `load from offset ${offset}`);
    return (data.args?.[index] ?? 0) >>> 0;
  };
  let accumulator = 0;
  for (let pc = 0; pc < program.length;) {
    const ins = program[pc] as BpfInstruction;
    switch (ins.code) {
      case 0x20:
        accumulator = word(ins.k);
        pc++;
        break;
      case 0x15:
        pc += 1 + (accumulator === ins.k ? ins.jt : ins.jf);
        break;
      case 0x35:
        pc += 1 + (accumulator >= ins.k ? ins.jt : ins.jf);
        break;
      case 0x45:
        pc += 1 + ((accumulator & ins.k) !== 0 ? ins.jt : ins.jf);
        break;
      case 0x06:
        return ins.k;
      default:
        throw new Error(`unknown opcode ${ins.code}`);
    }
  }
  throw new Error('the filter ran off its end');
}

const errno = (value: number): number => (0x00050000 | value) >>> 0;

describe('sandbox layers: seccomp filter', () => {
  for (const arch of ['x86_64', 'aarch64'] as SeccompArch[]) {
    it(`${arch}: denies every listed call with EPERM, clone with namespace flags, TIOCSTI; clone3 gets ENOSYS; the rest runs`, () => {
      const program = seccompProgram(arch);
      const decide = (nr: number, args: number[] = []): number => runFilter(program, { nr, arch: AUDIT_ARCH[arch], args });
      let checked = 0;
      for (const name of DENIED_SYSCALLS) {
        const nr = syscallNumber(name, arch);
        if (nr === null) continue;
        assert.equal(decide(nr), errno(EPERM), `${name} (${nr})`);
        checked++;
      }
      assert.ok(checked > 50);
      for (const name of [
        'keyctl',
        'add_key',
        'request_key',
        'unshare',
        'setns',
        'mount',
        'umount2',
        'pivot_root',
        'ptrace',
        'bpf',
        'perf_event_open',
        'userfaultfd',
        'kexec_load',
        'init_module',
        'clock_settime',
      ] as const) {
        assert.ok(DENIED_SYSCALLS.includes(name), `${name} is on the list`);
      }
      const clone = syscallNumber('clone', arch) as number;
      assert.equal(decide(clone, [0x11]), SECCOMP_RET_ALLOW, 'fork-like clone');
      assert.equal(
        decide(clone, [0x003d0f00]),
        SECCOMP_RET_ALLOW,
        'thread-like clone (CLONE_VM|FS|FILES|SIGHAND|THREAD|SYSVSEM|SETTLS|PARENT_SETTID|CHILD_CLEARTID)',
      );
      for (let bit = 0; bit < 32; bit++) {
        const flag = (1 << bit) >>> 0;
        if ((CLONE_NAMESPACE_FLAGS & flag) !== 0)
          assert.equal(decide(clone, [flag | 0x11]), errno(EPERM), `clone with ${flag.toString(16)}`);
      }
      assert.equal(decide(syscallNumber('clone3', arch) as number), errno(ENOSYS));
      const ioctl = syscallNumber('ioctl', arch) as number;
      assert.equal(decide(ioctl, [1, 0x5412]), errno(EPERM), 'TIOCSTI');
      assert.equal(decide(ioctl, [1, 0x541c]), errno(EPERM), 'TIOCLINUX');
      assert.equal(decide(ioctl, [1, 0x5401]), SECCOMP_RET_ALLOW, 'TCGETS');
      for (const nr of arch === 'x86_64' ? [0, 1, 39, 57, 59, 60, 231] : [63, 64, 172, 220 + 1, 93, 94])
        assert.equal(decide(nr), SECCOMP_RET_ALLOW, `syscall ${nr}`);
      // Another ABI (i386 on x86_64, arm32 on aarch64) gets nothing.
      assert.equal(runFilter(program, { nr: 20, arch: 0x40000003 }), errno(EPERM));
      if (arch === 'x86_64') assert.equal(decide((X32_SYSCALL_BIT | 39) >>> 0), errno(EPERM), 'x32 getpid');
      const bytes = seccompFilterBytes(arch);
      assert.equal(bytes.length, program.length * 8);
      assert.equal(bytes.readUInt16LE(0), 0x20);
      assert.equal(bytes.readUInt32LE(12), AUDIT_ARCH[arch]);
    });
  }
});

describe('sandbox layers: seccomp filter without a cgroup', () => {
  for (const arch of ['x86_64', 'aarch64'] as SeccompArch[]) {
    it(`${arch}: memfds, SysV segments and larger socket buffers refused; setsid returns 0 without effect (only without a cgroup)`, () => {
      const without = seccompProgram(arch, { withoutCgroup: true });
      const withCgroup = seccompProgram(arch);
      const decide = (program: BpfInstruction[], nr: number, args: number[] = []): number =>
        runFilter(program, { nr, arch: AUDIT_ARCH[arch], args });
      for (const name of WITHOUT_CGROUP_SYSCALLS) {
        const nr = syscallNumber(name, arch) as number;
        assert.equal(decide(without, nr), errno(EPERM), name);
        assert.equal(decide(withCgroup, nr), SECCOMP_RET_ALLOW, `${name} with a cgroup`);
      }
      const setsid = syscallNumber('setsid', arch) as number;
      // SECCOMP_RET_ERRNO with 0: the kernel skips the call and returns 0, so start_new_session=True still works.
      assert.equal(decide(without, setsid), errno(0));
      assert.equal(decide(withCgroup, setsid), SECCOMP_RET_ALLOW);
      const setsockopt = syscallNumber('setsockopt', arch) as number;
      for (const option of SOCKET_BUFFER_OPTIONS) assert.equal(decide(without, setsockopt, [3, 1, option]), errno(EPERM), `SO ${option}`);
      assert.equal(decide(without, setsockopt, [3, 1, 2]), SECCOMP_RET_ALLOW, 'SO_REUSEADDR');
      assert.equal(decide(without, setsockopt, [3, 6, 7]), SECCOMP_RET_ALLOW, 'a TCP option numbered like SO_SNDBUF');
    });
  }
});

describe('sandbox layers: macOS profile and fallback commands', () => {
  it('sandbox-exec profile: deny by default, no network, writes only to the scratch folder, paths only as parameters', () => {
    const profile = sandboxExecProfile();
    assert.match(profile, /^\(version 1\)\n\(deny default\)/);
    assert.match(profile, /\(deny network\*\)/);
    const writes = profile.split('\n').filter((line) => line.includes('file-write'));
    assert.deepEqual(writes, ['(allow file-write* (subpath (param "WORK_DIR")) (literal "/dev/null"))']);
    assert.doesNotMatch(profile, /network-outbound|network\* \(allow|\(allow network/);
    assert.doesNotMatch(
      profile,
      /"\/Users|"\/home"|"\/private\/tmp|"\/private\/var\/folders|"\/Volumes/,
      'no user or temp folder is readable',
    );
    let depth = 0;
    for (const char of profile) {
      if (char === '(') depth++;
      if (char === ')') depth--;
      assert.ok(depth >= 0);
    }
    assert.equal(depth, 0, 'balanced parentheses');
  });

  it('fallback as root: a PID namespace and the drop to nobody with no capabilities', () => {
    const tools = { unshare: '/usr/bin/unshare', setpriv: '/usr/bin/setpriv', mount: null };
    const command = pidNamespaceCommand(['/usr/bin/python3', 'p.py'], tools, { sharedMemoryBytes: 64 << 20, keepDir: '/tmp/e' });
    assert.deepEqual(command.slice(0, 5), ['/usr/bin/unshare', '--pid', '--fork', '--kill-child', '--mount-proc']);
    for (const arg of ['--reuid=65534', '--regid=65534', '--clear-groups', '--inh-caps=-all', '--bounding-set=-all', '--no-new-privs'])
      assert.ok(command.includes(arg), arg);
    assert.deepEqual(command.slice(-2), ['/usr/bin/python3', 'p.py']);
    // SysV segments capped in the namespace (16384 pages), by root before the drop; no mount namespace without mount.
    assert.ok(!command.includes('--mount'));
    const setup = command.indexOf('sh');
    assert.match(command[setup - 1] ?? '', /kernel\/shmall/);
    assert.deepEqual(command.slice(setup + 1, setup + 6), ['16384', '', '67108864', '/tmp/e', '/usr/bin/setpriv']);
    // With mount: its own mount namespace, where the setup covers /tmp and /dev/shm.
    const withMount = pidNamespaceCommand(
      ['/bin/true'],
      { ...tools, mount: '/usr/bin/mount' },
      { sharedMemoryBytes: 64 << 20, keepDir: '/tmp/e' },
    );
    assert.ok(withMount.includes('--mount'));
    assert.match(withMount.join(' '), / sh 16384 \/usr\/bin\/mount 67108864 \/tmp\/e /);
  });
});

describe('sandbox layers: what the fallback says holds without a cgroup', () => {
  it('names the routes the filter and the root namespaces close, and those that stay open', () => {
    const root = { unshare: '/usr/bin/unshare', setpriv: '/usr/bin/setpriv', mount: '/usr/bin/mount' };
    assert.match(
      fallbackWithoutCgroup(true, root),
      /refuses memfds, SysV shared memory and larger socket buffers[^]*\/tmp and \/dev\/shm are tmpfs of its own/,
    );
    assert.match(fallbackWithoutCgroup(true, null), /RAM-backed host folders \(\/dev\/shm, a tmpfs \/tmp\) are not held/);
    assert.match(
      fallbackWithoutCgroup(false, { ...root, mount: null }),
      /datagrams queued on sockets are not held[^]*SysV segments are its own/,
    );
    assert.match(fallbackWithoutCgroup(false, null), /datagrams queued on sockets and detached SysV shared memory are not held/);
  });
});

describe('sandbox layers: cgroup delegation', () => {
  const v2Mount = '30 1 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw\n';
  it('says why not: cgroup v1 only, hybrid without controllers, not delegated, not writable', async () => {
    const v1Mount = '25 1 0:22 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n';
    const v1 = detectCgroup({ mountinfo: v1Mount, selfCgroup: '4:memory:/x\n', root: false });
    assert.deepEqual(v1, { available: false, why: 'no cgroup v2 hierarchy is mounted (cgroup v1 only)' });
    const root = tempDir('te-cgroup-');
    await mkdir(join(root, 'user.slice'));
    await writeFile(join(root, 'user.slice/cgroup.controllers'), 'cpu io memory pids\n');
    await writeFile(join(root, 'user.slice/cgroup.subtree_control'), 'cpu\n');
    const mountinfo = `30 1 0:26 / ${root} rw,nosuid shared:4 - cgroup2 cgroup2 rw\n`;
    const notPassed = detectCgroup({ mountinfo, selfCgroup: '0::/user.slice\n' });
    assert.equal(notPassed.available, false);
    assert.match(notPassed.available ? '' : notPassed.why, /does not pass the memory and pids controllers/);
    await writeFile(join(root, 'user.slice/cgroup.subtree_control'), 'cpu memory pids\n');
    assert.deepEqual(detectCgroup({ mountinfo, selfCgroup: '0::/user.slice\n' }), {
      available: true,
      version: 2,
      dir: join(root, 'user.slice'),
      cpu: true,
    });
    await writeFile(join(root, 'user.slice/cgroup.controllers'), 'cpu\n');
    const hybrid = detectCgroup({ mountinfo, selfCgroup: '0::/user.slice\n' });
    assert.match(hybrid.available ? '' : hybrid.why, /memory and pids controllers are not available/);
    assert.equal(detectCgroup({ mountinfo: v2Mount, selfCgroup: '1:name=systemd:/\n' }).available, false);
  });

  it('as root on a hybrid or v1-only host: the cgroup v1 memory, cpu and pids controllers where it can make children, else why not', async () => {
    const v1 = tempDir('te-cgroup-v1-');
    for (const controller of ['memory', 'cpu,cpuacct', 'pids']) await mkdir(join(v1, controller, 'ours'), { recursive: true });
    const mountinfo =
      `25 1 0:22 / ${join(v1, 'memory')} rw - cgroup cgroup rw,memory\n` +
      `26 1 0:23 / ${join(v1, 'cpu,cpuacct')} rw - cgroup cgroup rw,cpu,cpuacct\n` +
      `27 1 0:24 / ${join(v1, 'pids')} rw - cgroup cgroup rw,pids\n` +
      '28 1 0:25 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n';
    const selfCgroup = '5:pids:/ours\n4:memory:/ours\n2:cpu,cpuacct:/ours\n0::/\n';
    // No v2 controllers in a hybrid's unified hierarchy (its folder has no cgroup.controllers here): v1 as root, not as a user.
    assert.deepEqual(detectCgroup({ mountinfo, selfCgroup, root: true }), {
      available: true,
      version: 1,
      dirs: { memory: join(v1, 'memory/ours'), cpu: join(v1, 'cpu,cpuacct/ours'), pids: join(v1, 'pids/ours') },
    });
    assert.equal(detectCgroup({ mountinfo, selfCgroup, root: false }).available, false);
    const noMemory = detectCgroup({ mountinfo: mountinfo.split('\n').slice(1).join('\n'), selfCgroup, root: true });
    assert.match(noMemory.available ? '' : noMemory.why, /no cgroup v1 memory controller is mounted either/);
  });
});

describe('sandbox layers: cleanup', () => {
  it('removes a deep tree with permissions taken away, and never follows a link out of it', async () => {
    const base = tempDir('te-cleanup-');
    const victim = join(base, 'victim');
    await mkdir(victim, { mode: 0o750 });
    await writeFile(join(victim, 'keep.txt'), 'keep');
    const tree = join(base, 'tree');
    await mkdir(tree);
    // As deep as Node can build by path (the containment test has a candidate go past PATH_MAX).
    let path = tree;
    const name = 'd'.repeat(200);
    const levels: string[] = [];
    for (let i = 0; i < 30; i++) {
      if (path.length + name.length + 1 > 3800) break;
      path = join(path, name);
      await mkdir(path);
      levels.push(path);
    }
    await symlink(victim, join(path, 'link-to-victim'));
    await symlink(victim, join(tree, 'dir-link'));
    await writeFile(join(path, 'leaf'), 'x');
    for (const level of levels.reverse()) await chmod(level, 0o000);
    assert.equal(await removeTree(tree), null);
    await assert.rejects(stat(tree));
    assert.deepEqual(await readdir(victim), ['keep.txt']);
    assert.equal((await stat(victim)).mode & 0o777, 0o750, 'the link target was not chmod-ed');
    // A plain file and a missing path are fine too.
    await writeFile(join(base, 'file'), 'x');
    assert.equal(await removeTree(join(base, 'file')), null);
    assert.equal(await removeTree(join(base, 'missing')), null);
  });
});
