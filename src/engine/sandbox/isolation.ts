// How candidates are isolated, and what that isolation is, as a value the
// CLI, the status bar and the dashboard show. On Linux: bubblewrap (bwrap)
// as an unprivileged user with every capability dropped, a seccomp filter,
// a size-capped scratch tmpfs and, where the host delegates one, a cgroup.
// Nothing else counts as a sandbox: weaker isolation (no bwrap, macOS's
// sandbox-exec, Windows) runs candidates only when the user allows it.
import { spawnSync } from 'node:child_process';
import { closeSync, lstatSync, mkdtempSync, openSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { type CgroupSupport, detectCgroup } from './cgroup';
import { hostSeccompArch, type SeccompArch, seccompFilterBytes } from './seccomp';
import { probeSeccompLauncher } from './seccompLauncher';
import { fallbackWithoutCgroup, type PidNamespaceTools, UNPRIVILEGED_ID, withPrivateTmpfs } from './rootNamespaces';
import { errorMessage } from '../common/errors';
import { firstExecutable } from '../executables';

/** bwrap: the full sandbox; sandbox-exec: macOS's profile; fallback: limits and a private folder only; none: Windows. */
export type IsolationKind = 'bwrap' | 'sandbox-exec' | 'fallback' | 'none';

/** Which isolation a run has, in fields (shown by `thetaevolve evaluate`, the status bar and the dashboard). */
export interface IsolationReport {
  kind: IsolationKind;
  layers: {
    /** Own mount, PID, network, IPC and user namespaces (bwrap). */
    namespaces: boolean;
    /** The candidate holds no capabilities and is not root on the host. */
    noCapabilities: boolean;
    /** The seccomp filter of seccomp.ts. */
    seccomp: boolean;
    /** Its own cgroup (v2, or v1 as root): memory and process limits for all its processes together, and an equal CPU share. */
    cgroup: boolean;
    /** The scratch directory is a size-capped tmpfs. */
    scratchSizeCap: boolean;
    /** No network at all. */
    noNetwork: boolean;
  };
  /** One line: "bwrap + seccomp + cgroup", or which layers are there and which are not. */
  summary: string;
  /** Each missing layer and why it is missing. */
  missing: string[];
  /** Weaker than the full sandbox: candidates run only when the user allows weaker isolation. */
  weak: boolean;
  /** Plain-language warning when isolation is weaker than the full sandbox (show it where a person sees it). */
  warning: string | null;
}

/** What the evaluator needs to run candidates the way the report says. */
export interface IsolationInfo extends IsolationReport {
  bwrapPath: string | null;
  /** util-linux prlimit, used to set the resource limits. */
  prlimitPath: string | null;
  /** When we run as root: the unprivileged user candidates (and bwrap itself) run as. */
  runAs: { uid: number; gid: number } | null;
  /** Whether bwrap understands --size (size-capped tmpfs). */
  tmpfsSizeOption: boolean;
  /** Whether bwrap understands --disable-userns (0.8+). */
  disableUsernsOption: boolean;
  /** The architecture of the seccomp filter; null: none. */
  seccompArch: SeccompArch | null;
  /** Fallback on Linux: the python3 that installs the seccomp filter before the candidate starts (seccompLauncher.ts); null: none. */
  seccompLauncher: string | null;
  /**
   * Whether a process-count limit can be set. Inside bwrap, kernels since
   * 5.14 count processes per user namespace, so the limit is per sandbox;
   * older ones count every process of the user.
   */
  processLimit: boolean;
  cgroup: CgroupSupport | null;
  /**
   * Fallback as root: util-linux unshare and setpriv, for a PID namespace
   * whose end kills every process in it; mount, where a mount namespace with
   * its own size-capped /tmp and /dev/shm works here (null: the host's).
   */
  pidNamespaceTools: PidNamespaceTools | null;
  /** As root with a cgroup: setpriv, to drop to the unprivileged user after entering it. */
  cgroupSetpriv: string | null;
  /** macOS: /usr/bin/sandbox-exec. */
  sandboxExecPath: string | null;
  /** Fallback: where evaluation folders are made (traversable by the candidate's user). */
  scratchBase: string;
}

/** Where the program and the working directory appear inside the bwrap sandbox. */
export const SANDBOX_PROGRAM_DIR = '/sandbox/program';
export const SANDBOX_WORK_DIR = '/sandbox/work';
/** Where a task's extra read-only folders appear (Task.sandboxReadOnlyDirs: /sandbox/ro/<name>). */
export const SANDBOX_READ_ONLY_ROOT = '/sandbox/ro';
/** The candidate's working directory (a tmpfs): what it may write in all, solution included. */
export const SANDBOX_WORK_BYTES = 256 * 1024 * 1024;
const SANDBOX_TMP_BYTES = 256 * 1024 * 1024;
const SANDBOX_SHM_BYTES = 64 * 1024 * 1024;
const PATH_INSIDE = '/usr/local/bin:/usr/bin:/bin';
/** The sandbox's tmpfs mounts (RAM): the working directory, /tmp and /dev/shm. */
export const SANDBOX_TMPFS_PATHS: readonly string[] = [SANDBOX_WORK_DIR, '/tmp', '/dev/shm'];
/** File descriptors of a bwrap child: 3 = --info-fd, 4 = --seccomp, 5 = the program (--ro-bind-data), 6 = the solution coming out. */
export const BWRAP_FD = { info: 3, seccomp: 4, program: 5, solution: 6 } as const;

export interface ResourceLimits {
  memoryLimitMb: number;
  /** RLIMIT_NPROC; null: not set. */
  processLimit: number | null;
  fileSizeLimitBytes: number;
  /** RLIMIT_NOFILE; absent: not set. Without a cgroup it bounds what socket buffers can hold (openFilesLimitWithoutCgroup). */
  openFilesLimit?: number;
  /** RLIMIT_CPU in seconds (per process); absent: not set. */
  cpuSeconds?: number;
}

/** Find an executable in the system folders first, then on PATH. */
export function findExecutable(name: string, pathVariable = process.env.PATH ?? ''): string | null {
  return firstExecutable(name, [
    '/usr/bin',
    '/bin',
    '/usr/local/bin',
    '/usr/sbin',
    '/sbin',
    ...pathVariable.split(delimiter).filter((d) => d.startsWith('/')),
  ]);
}

/**
 * What every process ThetaEvolve starts (candidate or evaluator) sees:
 * nothing inherited (no API keys, no tokens), single-threaded numeric
 * libraries because K evaluations share the machine.
 */
export function baseEnvironment(home: string): Record<string, string> {
  return {
    PATH: PATH_INSIDE,
    HOME: home,
    LANG: 'C.UTF-8',
    LC_ALL: 'C.UTF-8',
    PYTHONDONTWRITEBYTECODE: '1',
    OMP_NUM_THREADS: '1',
    OPENBLAS_NUM_THREADS: '1',
    MKL_NUM_THREADS: '1',
  };
}

/** The environment a candidate sees: the base one, its own temp dir, and a marker. */
export function candidateEnvironment(home: string, tmp: string): Record<string, string> {
  return { ...baseEnvironment(home), TMPDIR: tmp, THETAEVOLVE_SANDBOX: '1' };
}

/** Top-level system folders: real folders are bound read-only, merged-/usr symlinks recreated. */
function systemMounts(): string[] {
  const args: string[] = ['--ro-bind', '/usr', '/usr'];
  for (const path of ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32']) {
    try {
      const stats = lstatSync(path);
      if (stats.isSymbolicLink()) args.push('--symlink', readlinkSync(path), path);
      else if (stats.isDirectory()) args.push('--ro-bind', path, path);
    } catch {
      // Absent on this system.
    }
  }
  // Only what dynamic linking and numeric libraries need from /etc (Debian's
  // BLAS is chosen through /etc/alternatives); no passwd, no ssh, no certs.
  for (const path of ['/etc/alternatives', '/etc/ld.so.cache', '/etc/ld.so.conf', '/etc/ld.so.conf.d', '/etc/localtime']) {
    args.push('--ro-bind-try', path, path);
  }
  return args;
}

/**
 * The bwrap arguments before the command: every namespace unshared (user,
 * PID, network, IPC, UTS, cgroup), no nested user namespaces, every
 * capability dropped, the seccomp filter, read-only system, the program
 * read-only from a file descriptor, size-capped tmpfs for the working
 * directory, /tmp and /dev/shm, nothing of the host's files (no home, no
 * workspace, no temp folder), and a cleared environment. The child's file
 * descriptors are BWRAP_FD's.
 */
export function bwrapArguments(options: {
  programName: string;
  env: Readonly<Record<string, string>>;
  tmpfsSizeOption: boolean;
  disableUsernsOption: boolean;
  seccomp: boolean;
  /** Extra host folders bound read-only (a foreign task's folder and our wrapper); none for task.json tasks. */
  readOnlyDirs?: readonly { hostDir: string; sandboxDir: string }[];
  /**
   * A sandbox started before its candidate (warmPool.ts): the program
   * folder is a tmpfs of this size the launcher writes the program into,
   * instead of the program bound from BWRAP_FD.program at the start.
   */
  warmProgramBytes?: number;
  /** The run's Python prefixes, bound read-only at their own paths (interpreterBinds.ts); none where they lie in /usr. */
  pythonPrefixes?: readonly { hostDir: string; sandboxDir: string }[];
  /** Entries of those prefixes that are links (a venv's lib64 -> lib), made as the same links. */
  pythonPrefixLinks?: readonly { target: string; sandboxPath: string }[];
}): string[] {
  const sized = (bytes: number): string[] => (options.tmpfsSizeOption ? ['--size', String(bytes)] : []);
  const args = [
    '--unshare-all',
    '--unshare-user',
    ...(options.disableUsernsOption ? ['--disable-userns'] : []),
    '--cap-drop',
    'ALL',
    '--die-with-parent',
    '--new-session',
    '--hostname',
    'sandbox',
    ...systemMounts(),
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    ...sized(SANDBOX_SHM_BYTES),
    '--tmpfs',
    '/dev/shm',
    // bwrap's /dev is a tmpfs of its own: read-only, so files kept there cannot hold memory past the limit (its devices still work).
    '--remount-ro',
    '/dev',
    ...sized(SANDBOX_TMP_BYTES),
    '--tmpfs',
    '/tmp',
    ...sized(SANDBOX_WORK_BYTES),
    '--tmpfs',
    SANDBOX_WORK_DIR,
    ...(options.warmProgramBytes !== undefined
      ? [...sized(options.warmProgramBytes), '--tmpfs', SANDBOX_PROGRAM_DIR]
      : ['--ro-bind-data', String(BWRAP_FD.program), `${SANDBOX_PROGRAM_DIR}/${options.programName}`]),
    ...(options.readOnlyDirs ?? []).flatMap((d) => ['--ro-bind', d.hostDir, d.sandboxDir]),
    // After the tmpfs mounts: a prefix under /tmp (a venv in a temp folder) lands on the sandbox's own /tmp.
    ...(options.pythonPrefixes ?? []).flatMap((d) => ['--ro-bind', d.hostDir, d.sandboxDir]),
    ...(options.pythonPrefixLinks ?? []).flatMap((l) => ['--symlink', l.target, l.sandboxPath]),
    '--remount-ro',
    '/',
    '--chdir',
    SANDBOX_WORK_DIR,
    '--info-fd',
    String(BWRAP_FD.info),
    ...(options.seccomp ? ['--seccomp', String(BWRAP_FD.seccomp)] : []),
    '--clearenv',
  ];
  for (const [key, value] of Object.entries(options.env)) args.push('--setenv', key, value);
  return args;
}

/**
 * Inside bwrap: first check that the program the command starts (the
 * interpreter) is there and executable, else send M (missing) or P (not
 * executable) on fd 6 and exit 127: the sandbox cannot start it, which is
 * ours to fix, never the candidate's (a candidate cannot forge it: nothing
 * of it has run yet). Then say the sandbox is up (S on fd 6: bwrap failing
 * to set it up, a bind it cannot make, never gets this far, and that failure
 * is ours, not the candidate's), run the candidate ("$@", without the
 * solution descriptor), then kill whatever it left running in the sandbox
 * (nothing can change the file while it is read), then send one tag byte and
 * the file on fd 6: F + its first limit+1 bytes, N (no file), L (a symbolic
 * link, not followed), X (not a regular file); nothing more when the
 * candidate failed. Exits with the candidate's status.
 */
export const SANDBOX_STARTED_BYTE = 'S';
/** The tags the copy-out wrapper sends instead of S when the program it must start is not there (M) or not executable (P). */
export const SANDBOX_PROGRAM_MISSING_BYTE = 'M';
export const SANDBOX_PROGRAM_NOT_EXECUTABLE_BYTE = 'P';
const COPY_OUT_SCRIPT = [
  'file="$1"; limit="$2"; program="$3"; shift 3',
  `if [ -n "$program" ] && [ ! -x "$program" ]; then if [ -e "$program" ]; then printf ${SANDBOX_PROGRAM_NOT_EXECUTABLE_BYTE} >&6; else printf ${SANDBOX_PROGRAM_MISSING_BYTE} >&6; fi; exit 127; fi`,
  `printf ${SANDBOX_STARTED_BYTE} >&6`,
  '"$@" 6>&-',
  'status=$?',
  'kill -KILL -1 2>/dev/null',
  '[ $status -eq 0 ] || exit $status',
  'if [ -L "$file" ]; then printf L >&6',
  'elif [ ! -e "$file" ]; then printf N >&6',
  'elif [ ! -f "$file" ]; then printf X >&6',
  'else printf F >&6; exec head -c "$limit" "$file" >&6; fi',
].join('\n');

/**
 * The command bwrap runs: the copy-out wrapper around the candidate's
 * (limited) command; `program`: the absolute path the command starts (its
 * interpreter), checked before anything runs ('' or relative: not checked).
 */
export function copyOutCommand(solutionPath: string, maxBytes: number, command: readonly string[], program = ''): string[] {
  return ['/bin/sh', '-c', COPY_OUT_SCRIPT, 'sh', solutionPath, String(maxBytes + 1), program.startsWith('/') ? program : '', ...command];
}

/** Wrap a command so it runs under the resource limits (prlimit, else the shell's ulimit). */
export function limitedCommand(command: readonly string[], limits: ResourceLimits, prlimitPath: string | null): string[] {
  const memoryBytes = limits.memoryLimitMb * 1024 * 1024;
  if (prlimitPath) {
    return [
      prlimitPath,
      `--as=${memoryBytes}`,
      `--fsize=${limits.fileSizeLimitBytes}`,
      '--core=0',
      ...(limits.processLimit !== null ? [`--nproc=${limits.processLimit}`] : []),
      ...(limits.openFilesLimit !== undefined ? [`--nofile=${limits.openFilesLimit}`] : []),
      // SIGXCPU at the limit (it says why), SIGKILL a second later.
      ...(limits.cpuSeconds !== undefined ? [`--cpu=${limits.cpuSeconds}:${limits.cpuSeconds + 1}`] : []),
      '--',
      ...command,
    ];
  }
  const script = [
    `ulimit -v ${Math.floor(memoryBytes / 1024)}`,
    `ulimit -f ${Math.floor(limits.fileSizeLimitBytes / 512)}`,
    'ulimit -c 0',
    ...(limits.openFilesLimit !== undefined ? [`ulimit -n ${limits.openFilesLimit}`] : []),
    ...(limits.cpuSeconds !== undefined ? [`ulimit -t ${limits.cpuSeconds}`] : []),
    'exec "$@"',
  ].join(' && ');
  return ['/bin/sh', '-c', script, 'sh', ...command];
}

/**
 * macOS sandbox-exec profile: deny by default; reads of the system, the
 * program and the scratch folder; writes only to the scratch folder (and
 * /dev/null); no network. The folders come in as parameters
 * (`-D WORK_DIR=... -D PROGRAM_DIR=...`), so no path is ever quoted into it.
 */
export function sandboxExecProfile(): string {
  return [
    '(version 1)',
    '(deny default)',
    '(allow process-fork)',
    '(allow process-exec)',
    '(allow signal (target same-sandbox))',
    '(allow sysctl-read)',
    '(allow mach-lookup (global-name "com.apple.system.opendirectoryd.libinfo"))',
    '(allow file-read-metadata)',
    '(allow file-read*',
    '  (subpath "/usr") (subpath "/bin") (subpath "/System") (subpath "/Library/Frameworks")',
    '  (subpath "/Library/Developer/CommandLineTools") (subpath "/opt/homebrew") (subpath "/usr/local")',
    '  (subpath "/private/var/db/dyld") (subpath "/private/etc") (literal "/dev/null") (literal "/dev/urandom") (literal "/dev/random")',
    '  (subpath (param "PROGRAM_DIR")) (subpath (param "WORK_DIR")))',
    '(allow file-write* (subpath (param "WORK_DIR")) (literal "/dev/null"))',
    '(deny network*)',
    '',
  ].join('\n');
}

function isRoot(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

/** Processes a probe may have: the default limit of the evaluator. */
const PROBE_PROCESS_LIMIT = 256;

/** bwrap's features, from its --help. */
function bwrapFeatures(bwrapPath: string): { tmpfsSizeOption: boolean; disableUsernsOption: boolean } {
  const help = spawnSync(bwrapPath, ['--help'], { encoding: 'utf8', timeout: 5000 });
  const text = `${help.stdout ?? ''}${help.stderr ?? ''}`;
  return { tmpfsSizeOption: text.includes('--size'), disableUsernsOption: text.includes('--disable-userns') };
}

/** A read descriptor holding `data` (a deleted file), for spawnSync, which cannot feed extra pipes. */
function dataDescriptor(data: Buffer | string): number {
  const dir = mkdtempSync(join(tmpdir(), 'thetaevolve-probe-'));
  try {
    const path = join(dir, 'data');
    writeFileSync(path, data, { mode: 0o600 });
    return openSync(path, 'r');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Run a trivial program (that forks and writes a file) exactly as candidates run; null when it works, else why not. */
function probeBwrap(
  bwrapPath: string,
  prlimitPath: string | null,
  runAs: { uid: number; gid: number } | null,
  features: { tmpfsSizeOption: boolean; disableUsernsOption: boolean },
  seccompArch: SeccompArch | null,
  processLimit: number | null,
): string | null {
  const env = candidateEnvironment('/tmp', '/tmp');
  const command = copyOutCommand(
    'probe.txt',
    64,
    limitedCommand(
      ['/bin/sh', `${SANDBOX_PROGRAM_DIR}/probe.sh`],
      { memoryLimitMb: 512, processLimit, fileSizeLimitBytes: 1 << 20 },
      prlimitPath,
    ),
  );
  const args = [...bwrapArguments({ programName: 'probe.sh', env, ...features, seccomp: seccompArch !== null }), '--', ...command];
  const descriptors: number[] = [];
  try {
    descriptors.push(dataDescriptor(seccompArch ? seccompFilterBytes(seccompArch) : Buffer.alloc(0)));
    descriptors.push(dataDescriptor('echo sandbox-ok > probe.txt && /bin/cat probe.txt\n'));
    const result = spawnSync(bwrapPath, args, {
      cwd: '/',
      env: {},
      timeout: 15000,
      stdio: ['ignore', 'pipe', 'pipe', 'pipe', descriptors[0] as number, descriptors[1] as number, 'pipe'],
      ...(runAs ? { uid: runAs.uid, gid: runAs.gid } : {}),
    });
    if (result.error) return result.error.message;
    const stdout = result.stdout.toString('utf8');
    const copied = result.output[BWRAP_FD.solution]?.toString('utf8') ?? '';
    if (result.status === 0 && stdout.includes('sandbox-ok') && copied === `${SANDBOX_STARTED_BYTE}Fsandbox-ok\n`) return null;
    const why = (result.stderr.toString('utf8') || stdout).trim().split('\n')[0] ?? '';
    return why || `exit status ${String(result.status ?? result.signal)}, copied out ${JSON.stringify(copied.slice(0, 40))}`;
  } catch (err) {
    return errorMessage(err);
  } finally {
    for (const fd of descriptors) closeSync(fd);
  }
}

/** What holds the limits where no cgroup can be had (docs/guide.md "What each host mode guarantees"). */
const WITHOUT_CGROUP =
  "instead the memory of a sandbox's processes, their memfds and its tmpfs folders is summed every 50 ms (killed past the limit), " +
  'with RLIMIT per process as the floor; in bwrap /dev is read-only, memfds, SysV shared memory and larger socket buffers are refused ' +
  'and open files are capped, so queued datagrams hold at most about a third of the limit; setsid returns without making a session, ' +
  'so CPU is shared per sandbox where the kernel has autogroup on, else per process';

const FALLBACK_HOW =
  'candidates run in a private temporary folder, in their own process group with a wall-clock limit, memory and file-size limits and a cleared environment, ' +
  'but they can still read your files and use the network (and, when they run as your own user, read the environment of your other processes, where API keys often are)';

/** How to get the full sandbox, for messages. */
export const HOW_TO_GET_A_SANDBOX =
  'Install bubblewrap (Debian/Ubuntu: sudo apt install bubblewrap; Fedora: sudo dnf install bubblewrap). ' +
  'If it is installed but cannot start, unprivileged user namespaces are off: ask an administrator to allow them ' +
  '(sysctl kernel.unprivileged_userns_clone=1 or user.max_user_namespaces > 0; on Ubuntu 23.10+ an AppArmor profile that lets bwrap create user namespaces, ' +
  'or kernel.apparmor_restrict_unprivileged_userns=0).';

/** How to run with weaker isolation anyway, for messages. */
export const HOW_TO_ALLOW_WEAK =
  'To run candidates with weaker isolation anyway, allow it explicitly: thetaevolve evaluate/run --allow-weak-isolation, ' +
  'or the user setting thetaevolve.sandbox.allowWeakIsolation.';

export interface DetectOptions {
  /** 'fallback': behave as if bwrap were not installed (tests, or users who want it off). */
  preference?: 'auto' | 'fallback';
  /** 'off': behave as if no cgroup could be had (tests of the hosts that have none). */
  cgroup?: 'auto' | 'off';
}

let cached: IsolationInfo | null = null;

/** Detect the isolation once per process (`preference: 'fallback'` and `cgroup: 'off'` are never cached). */
export function detectIsolation(preference: 'auto' | 'fallback' = 'auto', cgroup: 'auto' | 'off' = 'auto'): IsolationInfo {
  if (preference === 'fallback' || cgroup === 'off') return probeIsolation({ preference, cgroup });
  cached ??= probeIsolation({ preference });
  return cached;
}

/** Fallback scratch folders must be traversable by the candidate's user: TMPDIR may be a 0700 mktemp folder. */
function traversableBase(runAs: { uid: number } | null): string {
  const candidates = [tmpdir(), '/tmp', '/var/tmp'];
  if (!runAs) return candidates[0] as string;
  const traversable = (path: string): boolean => {
    for (let dir = path; ; dir = dirname(dir)) {
      try {
        const stats = statSync(dir);
        if (!stats.isDirectory() || (stats.mode & 0o001) === 0) return false;
      } catch {
        return false;
      }
      if (dir === dirname(dir)) return true;
    }
  };
  return candidates.find(traversable) ?? '/tmp';
}

function summarise(kind: IsolationKind, layers: IsolationReport['layers'], cgroup: CgroupSupport | null = null): string {
  if (kind === 'none') return 'no isolation';
  const parts: string[] = [kind === 'fallback' ? 'no sandbox (limits and a private folder only)' : kind];
  if (layers.seccomp) parts.push('seccomp');
  if (layers.cgroup) parts.push(cgroup?.available ? `cgroup v${cgroup.version}` : 'cgroup');
  const absent = (['seccomp', 'cgroup'] as const).filter((layer) => !layers[layer] && kind === 'bwrap');
  return absent.length > 0 ? `${parts.join(' + ')} (no ${absent.join(', no ')})` : parts.join(' + ');
}

/** Detect the isolation afresh: the full sandbox when it can actually start here, else what is possible and why not more. */
export function probeIsolation(options: DetectOptions = {}): IsolationInfo {
  const prlimitPath = findExecutable('prlimit');
  const rootUser = isRoot();
  const runAs = rootUser ? { uid: UNPRIVILEGED_ID, gid: UNPRIVILEGED_ID } : null;
  const cgroup: CgroupSupport | null =
    process.platform !== 'linux' ? null : options.cgroup === 'off' ? { available: false, why: 'switched off' } : detectCgroup();
  const cgroupMissing = cgroup && !cgroup.available ? `cgroup: ${cgroup.why}; ${WITHOUT_CGROUP}` : null;
  const base = {
    prlimitPath,
    runAs,
    tmpfsSizeOption: false,
    disableUsernsOption: false,
    seccompArch: null,
    seccompLauncher: null,
    cgroup,
    pidNamespaceTools: null,
    sandboxExecPath: null,
    cgroupSetpriv: null,
    scratchBase: traversableBase(runAs),
  } satisfies Partial<IsolationInfo>;
  // As root, candidates run as nobody (no capabilities); as a user, they never had any.
  const noLayers: IsolationReport['layers'] = {
    namespaces: false,
    noCapabilities: true,
    seccomp: false,
    cgroup: false,
    scratchSizeCap: false,
    noNetwork: false,
  };

  if (process.platform === 'win32') {
    const missing = [
      'Windows has no sandbox ThetaEvolve can use: candidates run as you, with your files, your network and your environment',
    ];
    return {
      ...base,
      kind: 'none',
      layers: { ...noLayers, noCapabilities: false },
      summary: 'no isolation',
      missing,
      weak: true,
      warning:
        'Sandbox: on Windows there is NO isolation: a candidate can do anything you can. Run ThetaEvolve in WSL2 with bubblewrap for a sandbox.',
      bwrapPath: null,
      processLimit: false,
    };
  }
  if (process.platform === 'darwin') {
    const sandboxExecPath = findExecutable('sandbox-exec');
    const missing = [
      'bubblewrap does not exist on macOS: sandbox-exec denies network and writes outside the scratch folder, but there is no seccomp filter, no cgroup and no size cap',
    ];
    const layers = { ...noLayers, noNetwork: sandboxExecPath !== null };
    return {
      ...base,
      kind: sandboxExecPath ? 'sandbox-exec' : 'fallback',
      layers,
      summary: sandboxExecPath ? 'sandbox-exec (deny-by-default profile)' : summarise('fallback', layers),
      missing: sandboxExecPath ? missing : [...missing, 'sandbox-exec was not found'],
      weak: true,
      warning: sandboxExecPath
        ? 'Sandbox: macOS has no bubblewrap; candidates run under sandbox-exec with a deny-by-default profile (no network, writes only to their scratch folder), without the seccomp filter and per-sandbox limits of Linux.'
        : `Sandbox: sandbox-exec was not found, so ${FALLBACK_HOW}.`,
      bwrapPath: null,
      processLimit: false,
      sandboxExecPath,
    };
  }

  const fallback = (why: string): IsolationInfo => {
    const unshare = findExecutable('unshare');
    const setpriv = findExecutable('setpriv');
    const pidNamespaceTools =
      rootUser && unshare && setpriv
        ? withPrivateTmpfs({ unshare, setpriv, mount: null }, findExecutable('mount'), base.scratchBase)
        : null;
    // The same filter as in bwrap, installed by a launcher (seccompLauncher.ts) where python3 can.
    const arch = process.platform === 'linux' ? hostSeccompArch() : null;
    const python = arch ? findExecutable('python3') : null;
    const launcherProblem = !arch ? 'no filter for this platform' : !python ? 'python3 was not found' : probeSeccompLauncher(python, arch);
    const seccompLauncher = launcherProblem === null ? python : null;
    // As root, the shell that enters the cgroup is root: the PID namespace's setpriv drops to nobody after it.
    const layers = {
      ...noLayers,
      seccomp: seccompLauncher !== null,
      cgroup: cgroup?.available === true && (!rootUser || pidNamespaceTools !== null),
    };
    const missing = [why];
    if (launcherProblem !== null) missing.push(`seccomp: ${launcherProblem}, so candidates run without the filter`);
    if (cgroup && !cgroup.available) missing.push(`cgroup: ${cgroup.why}; ${fallbackWithoutCgroup(layers.seccomp, pidNamespaceTools)}`);
    return {
      ...base,
      kind: 'fallback',
      layers,
      summary: summarise('fallback', layers, cgroup),
      missing,
      weak: true,
      warning: `Sandbox: ${why}, so ${FALLBACK_HOW}. ${HOW_TO_GET_A_SANDBOX}`,
      bwrapPath: null,
      seccompArch: seccompLauncher ? arch : null,
      seccompLauncher,
      processLimit: rootUser && prlimitPath !== null,
      pidNamespaceTools,
    };
  };
  if (options.preference === 'fallback') return fallback('bubblewrap is switched off');
  if (process.platform !== 'linux') return fallback(`bubblewrap needs Linux (this is ${process.platform})`);
  const bwrapPath = findExecutable('bwrap');
  if (!bwrapPath) return fallback('bubblewrap (bwrap) is not installed');
  const features = bwrapFeatures(bwrapPath);
  const seccompArch = hostSeccompArch();
  const limited = prlimitPath !== null;
  let processLimit = limited;
  let problem = probeBwrap(bwrapPath, prlimitPath, runAs, features, seccompArch, limited ? PROBE_PROCESS_LIMIT : null);
  if (problem !== null && limited && probeBwrap(bwrapPath, prlimitPath, runAs, features, seccompArch, null) === null) {
    // An old kernel counts processes per user, not per sandbox.
    problem = null;
    processLimit = false;
  }
  // Never bwrap as root with capabilities: a candidate there is host root.
  if (problem !== null) return fallback(`bubblewrap is installed but cannot create a sandbox as an unprivileged user here (${problem})`);

  const missing: string[] = [];
  if (!seccompArch)
    missing.push(
      `seccomp: no filter for this architecture (${process.arch}); nested namespaces ${features.disableUsernsOption ? 'are still blocked by --disable-userns' : 'are not blocked'}`,
    );
  if (cgroupMissing) missing.push(cgroupMissing);
  if (cgroup?.available && !(cgroup.version === 2 ? cgroup.cpu : cgroup.dirs.cpu !== null))
    missing.push('cpu: the cgroup has no cpu controller, so CPU is shared per process rather than per sandbox');
  if (!features.tmpfsSizeOption)
    missing.push('scratch size cap: this bwrap has no --size (0.5+ has), so the scratch tmpfs is capped only by the kernel default');
  if (!processLimit)
    missing.push(
      'process limit: this kernel counts processes per user rather than per sandbox, so a fork bomb is stopped only by the time limit',
    );
  // As root, entering the cgroup needs root and bwrap needs the drop to nobody after it: setpriv does that.
  const setpriv = findExecutable('setpriv');
  if (cgroup?.available && runAs && !setpriv)
    missing.push(
      'cgroup: setpriv (util-linux) was not found, so the sandbox cannot enter its cgroup before dropping to the unprivileged user',
    );
  const layers = {
    namespaces: true,
    noCapabilities: true,
    seccomp: seccompArch !== null,
    cgroup: cgroup?.available === true && (runAs === null || setpriv !== null),
    scratchSizeCap: features.tmpfsSizeOption,
    noNetwork: true,
  };
  // Without the filter the keyring and the kernel's debugging and module interfaces are open: not a full sandbox.
  const weak = !layers.seccomp;
  return {
    ...base,
    ...features,
    kind: 'bwrap',
    layers,
    summary: summarise('bwrap', layers, cgroup),
    missing,
    weak,
    warning: weak ? `Sandbox: ${missing[0] ?? ''}` : null,
    bwrapPath,
    seccompArch,
    processLimit,
    cgroupSetpriv: layers.cgroup && runAs ? setpriv : null,
  };
}

/** The seccomp filter bytes for a sandbox of this isolation (null: none). */
export function seccompFilterFor(info: Pick<IsolationInfo, 'seccompArch' | 'layers'>): Buffer | null {
  return info.seccompArch ? seccompFilterBytes(info.seccompArch, { withoutCgroup: !info.layers.cgroup }) : null;
}

/**
 * RLIMIT_NOFILE where no cgroup counts socket buffers: each descriptor of a
 * datagram socket can keep about 0.3 MiB queued at the default buffer size
 * (larger buffers are refused), so this keeps what they can hold to about a
 * third of the memory limit; never fewer than 64 descriptors.
 */
export function openFilesLimitWithoutCgroup(memoryLimitMb: number): number {
  return Math.max(64, Math.min(65536, Math.floor(memoryLimitMb)));
}

/** Only the report's fields (what the evaluator exposes). */
export function isolationReport(info: IsolationInfo): IsolationReport {
  const { kind, layers, summary, missing, weak, warning } = info;
  return { kind, layers: { ...layers }, summary, missing: [...missing], weak, warning };
}
