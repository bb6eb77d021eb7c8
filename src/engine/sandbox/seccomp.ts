// The seccomp filter every bwrap sandbox gets (`bwrap --seccomp FD`): a
// classic BPF program, generated here without libseccomp so it can be read
// and tested. It denies what Flatpak's and Chromium's filters deny for
// untrusted code: the kernel keyring, new namespaces (nested user
// namespaces would let a candidate mount tmpfs past its limits), mounts,
// ptrace and cross-process memory access, bpf, perf, kernel modules and
// kexec, clock setting, userfaultfd, io_uring, NUMA policy, TTY input
// injection. Everything else is allowed, so ordinary Python/numpy runs.
// Where no cgroup holds a sandbox, it also denies the memory no process's
// RSS shows (memfds, SysV segments) and larger socket buffers, and makes
// setsid succeed without effect (one scheduling group per sandbox).

/** struct seccomp_data: nr at 0, arch at 4, args[i] at 16 + 8 i (little-endian on both supported architectures). */
const OFFSET_NR = 0;
const OFFSET_ARCH = 4;
const argLow = (index: number): number => 16 + 8 * index;

// BPF opcodes (linux/filter.h).
const LD_W_ABS = 0x20;
const JEQ_K = 0x15;
const JGE_K = 0x35;
const JSET_K = 0x45;
const RET_K = 0x06;

// Return values (linux/seccomp.h).
export const SECCOMP_RET_ALLOW = 0x7fff0000;
const SECCOMP_RET_ERRNO = 0x00050000;
export const EPERM = 1;
export const ENOSYS = 38;

export type SeccompArch = 'x86_64' | 'aarch64';

/** AUDIT_ARCH_* of linux/audit.h. */
export const AUDIT_ARCH: Readonly<Record<SeccompArch, number>> = { x86_64: 0xc000003e, aarch64: 0xc00000b7 };
/** x32 system calls on x86_64 carry this bit; none are allowed. */
export const X32_SYSCALL_BIT = 0x40000000;

/** Namespace flags of clone(2): CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET. */
export const CLONE_NAMESPACE_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000;
const TIOCSTI = 0x5412;
const TIOCLINUX = 0x541c;

/** System call numbers: [x86_64, aarch64]; null where the architecture has no such call. */
const SYSCALLS = {
  // The kernel keyring (a parent's session keyring holds ssh and desktop secrets).
  add_key: [248, 217],
  keyctl: [250, 219],
  request_key: [249, 218],
  // New namespaces and mounts (clone with namespace flags is checked on its argument below).
  unshare: [272, 97],
  setns: [308, 268],
  mount: [165, 40],
  umount2: [166, 39],
  pivot_root: [155, 41],
  chroot: [161, 51],
  open_tree: [428, 428],
  open_tree_attr: [467, 467],
  move_mount: [429, 429],
  fsopen: [430, 430],
  fsconfig: [431, 431],
  fsmount: [432, 432],
  fspick: [433, 433],
  mount_setattr: [442, 442],
  // Other processes' memory and the kernel's debugging interfaces.
  ptrace: [101, 117],
  process_vm_readv: [310, 270],
  process_vm_writev: [311, 271],
  process_madvise: [440, 440],
  kcmp: [312, 272],
  bpf: [321, 280],
  perf_event_open: [298, 241],
  userfaultfd: [323, 282],
  lookup_dcookie: [212, 18],
  fanotify_init: [300, 262],
  open_by_handle_at: [304, 265],
  name_to_handle_at: [303, 264],
  // io_uring runs operations outside this filter's view.
  io_uring_setup: [425, 425],
  io_uring_enter: [426, 426],
  io_uring_register: [427, 427],
  // Kernel modules, kexec, reboot, swap, accounting, quotas, the kernel log.
  init_module: [175, 105],
  finit_module: [313, 273],
  delete_module: [176, 106],
  create_module: [174, null],
  kexec_load: [246, 104],
  kexec_file_load: [320, 294],
  reboot: [169, 142],
  swapon: [167, 224],
  swapoff: [168, 225],
  acct: [163, 89],
  quotactl: [179, 60],
  quotactl_fd: [443, 443],
  syslog: [103, 116],
  uselib: [134, null],
  nfsservctl: [180, 42],
  vhangup: [153, 58],
  iopl: [172, null],
  ioperm: [173, null],
  // Clocks and host names.
  settimeofday: [164, 170],
  clock_settime: [227, 112],
  clock_adjtime: [305, 266],
  adjtimex: [159, 171],
  sethostname: [170, 161],
  setdomainname: [171, 162],
  // NUMA policy and page migration (Flatpak: "scary VM/NUMA ops").
  move_pages: [279, 239],
  mbind: [237, 235],
  get_mempolicy: [239, 236],
  set_mempolicy: [238, 237],
  set_mempolicy_home_node: [450, 450],
  migrate_pages: [256, 238],
} as const satisfies Record<string, readonly [number | null, number | null]>;

export type DeniedSyscall = keyof typeof SYSCALLS | 'clone3';

/**
 * Denied only where no cgroup holds the sandbox: a memfd filled with
 * write() or a detached SysV segment is memory no process's RSS shows
 * (shared memory through /dev/shm, a size-capped tmpfs, stays).
 */
const WITHOUT_CGROUP_DENIED = {
  memfd_create: [319, 279],
  memfd_secret: [447, 447],
  shmget: [29, 194],
} as const satisfies Record<string, readonly [number | null, number | null]>;
export const WITHOUT_CGROUP_SYSCALLS = Object.keys(WITHOUT_CGROUP_DENIED) as (keyof typeof WITHOUT_CGROUP_DENIED)[];

/**
 * setsid without a cgroup: a new session would be a new scheduling group
 * (autogroup) of its own, where the sandbox's one is its share of the CPU.
 * It returns 0 without effect (SECCOMP_RET_ERRNO with 0 skips the call and
 * returns 0), so ordinary code (Python's start_new_session=True) still runs;
 * the caller stays in its session and process group.
 */
const WITHOUT_CGROUP_NO_EFFECT = { setsid: [112, 157] } as const satisfies Record<string, readonly [number | null, number | null]>;

/** Calls checked on an argument rather than by number alone. */
const CONDITIONAL = { clone: [56, 220], clone3: [435, 435], ioctl: [16, 29], setsockopt: [54, 208] } as const;
const SOL_SOCKET = 1;
/** SO_SNDBUF, SO_RCVBUF, SO_SNDBUFFORCE, SO_RCVBUFFORCE: without a cgroup, queued datagrams are bounded by the default buffers. */
export const SOCKET_BUFFER_OPTIONS = [7, 8, 32, 33] as const;

/** The names the filter denies outright with EPERM (clone3 gets ENOSYS so libc falls back to clone, which is checked). */
export const DENIED_SYSCALLS: readonly (keyof typeof SYSCALLS)[] = Object.keys(SYSCALLS) as (keyof typeof SYSCALLS)[];

/** The number of a system call on an architecture (also for the calls checked on arguments); null when it has none. */
export function syscallNumber(
  name: DeniedSyscall | keyof typeof CONDITIONAL | keyof typeof WITHOUT_CGROUP_DENIED | keyof typeof WITHOUT_CGROUP_NO_EFFECT,
  arch: SeccompArch,
): number | null {
  const table: Record<string, readonly [number | null, number | null]> = {
    ...SYSCALLS,
    ...CONDITIONAL,
    ...WITHOUT_CGROUP_DENIED,
    ...WITHOUT_CGROUP_NO_EFFECT,
  };
  const entry = table[name];
  if (!entry) return null;
  return entry[arch === 'x86_64' ? 0 : 1];
}

/** The architecture of this Node process, when the filter supports it. */
export function hostSeccompArch(): SeccompArch | null {
  if (process.platform !== 'linux') return null;
  if (process.arch === 'x64') return 'x86_64';
  if (process.arch === 'arm64') return 'aarch64';
  return null;
}

export interface BpfInstruction {
  code: number;
  jt: number;
  jf: number;
  k: number;
}

const errno = (value: number): number => (SECCOMP_RET_ERRNO | value) >>> 0;

/** One instruction before assembly: jumps name labels further down ('next': the following instruction). */
type Line = { label?: string } & { code: number; k: number; jt?: string; jf?: string };

/** Resolve forward jumps to labels (BPF jumps only forward, at most 255 instructions). */
function assemble(lines: readonly Line[]): BpfInstruction[] {
  const at = new Map<string, number>();
  lines.forEach((line, i) => {
    if (line.label !== undefined) at.set(line.label, i);
  });
  return lines.map((line, i) => {
    const offset = (label: string | undefined): number => {
      if (label === undefined || label === 'next') return 0;
      const target = at.get(label);
      if (target === undefined) throw new Error(`seccomp: no label ${label}`);
      const distance = target - (i + 1);
      if (distance < 0 || distance > 255) throw new RangeError(`seccomp: jump to ${label} out of range (${distance})`);
      return distance;
    };
    return { code: line.code, jt: offset(line.jt), jf: offset(line.jf), k: line.k >>> 0 };
  });
}

/**
 * The filter as BPF instructions: check the architecture (any other ABI,
 * e.g. i386 through int 0x80, gets EPERM for everything), load the number,
 * one JEQ per denied call jumping to a shared EPERM return, then the calls
 * checked on an argument, then ALLOW.
 */
export function seccompProgram(arch: SeccompArch, options: SeccompOptions = {}): BpfInstruction[] {
  const names = [...DENIED_SYSCALLS, ...(options.withoutCgroup ? WITHOUT_CGROUP_SYSCALLS : [])];
  const denied = names.map((name) => syscallNumber(name, arch)).filter((n): n is number => n !== null);
  const lines: Line[] = [
    { code: LD_W_ABS, k: OFFSET_ARCH },
    { code: JEQ_K, k: AUDIT_ARCH[arch], jf: 'eperm' },
    { code: LD_W_ABS, k: OFFSET_NR },
  ];
  if (arch === 'x86_64') lines.push({ code: JGE_K, k: X32_SYSCALL_BIT, jt: 'eperm' });
  for (const nr of denied) lines.push({ code: JEQ_K, k: nr, jt: 'eperm' });
  if (options.withoutCgroup) lines.push({ code: JEQ_K, k: syscallNumber('setsid', arch) as number, jt: 'noeffect' });
  lines.push(
    // seccomp cannot read clone3's flags (they are in memory): ENOSYS makes libc use clone, checked below.
    { code: JEQ_K, k: syscallNumber('clone3', arch) as number, jt: 'enosys' },
    { code: JEQ_K, k: syscallNumber('clone', arch) as number, jt: 'clone' },
    { code: JEQ_K, k: syscallNumber('ioctl', arch) as number, jt: 'ioctl' },
    ...(options.withoutCgroup ? [{ code: JEQ_K, k: syscallNumber('setsockopt', arch) as number, jt: 'setsockopt' }] : []),
    { label: 'allow', code: RET_K, k: SECCOMP_RET_ALLOW },
    { label: 'eperm', code: RET_K, k: errno(EPERM) },
    { label: 'enosys', code: RET_K, k: errno(ENOSYS) },
    { label: 'noeffect', code: RET_K, k: errno(0) },
    // clone's flags are argument 0 on both architectures; the namespace flags are in its low 32 bits.
    { label: 'clone', code: LD_W_ABS, k: argLow(0) },
    { code: JSET_K, k: CLONE_NAMESPACE_FLAGS, jt: 'eperm2' },
    { code: RET_K, k: SECCOMP_RET_ALLOW },
    // The kernel compares ioctl requests as 32-bit numbers.
    { label: 'ioctl', code: LD_W_ABS, k: argLow(1) },
    { code: JEQ_K, k: TIOCSTI, jt: 'eperm2' },
    { code: JEQ_K, k: TIOCLINUX, jt: 'eperm2' },
    { code: RET_K, k: SECCOMP_RET_ALLOW },
  );
  if (options.withoutCgroup) {
    lines.push(
      // setsockopt(fd, level, optname, ...): level and optname are ints.
      { label: 'setsockopt', code: LD_W_ABS, k: argLow(1) },
      { code: JEQ_K, k: SOL_SOCKET, jf: 'allow2' },
      { code: LD_W_ABS, k: argLow(2) },
      ...SOCKET_BUFFER_OPTIONS.map((option) => ({ code: JEQ_K, k: option, jt: 'eperm2' })),
      { label: 'allow2', code: RET_K, k: SECCOMP_RET_ALLOW },
    );
  }
  lines.push({ label: 'eperm2', code: RET_K, k: errno(EPERM) });
  return assemble(lines);
}

export interface SeccompOptions {
  /** No cgroup holds the sandbox: deny WITHOUT_CGROUP_SYSCALLS and larger socket buffers too, and make setsid a no-op. */
  withoutCgroup?: boolean;
}

/** The filter in the binary form bwrap reads from `--seccomp FD` (struct sock_filter[], 8 bytes each, little-endian). */
export function seccompFilterBytes(arch: SeccompArch, options: SeccompOptions = {}): Buffer {
  const program = seccompProgram(arch, options);
  const bytes = Buffer.alloc(program.length * 8);
  program.forEach((ins, i) => {
    bytes.writeUInt16LE(ins.code, i * 8);
    bytes.writeUInt8(ins.jt, i * 8 + 2);
    bytes.writeUInt8(ins.jf, i * 8 + 3);
    bytes.writeUInt32LE(ins.k >>> 0, i * 8 + 4);
  });
  return bytes;
}
