// How candidates are isolated: bubblewrap (bwrap) where it works, otherwise
// the strongest fallback available (own process group, resource limits,
// cleared environment, private directory), with one plain warning.
import { spawnSync } from 'node:child_process';
import { accessSync, chmodSync, chownSync, constants, lstatSync, mkdirSync, mkdtempSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';

export type IsolationKind = 'bwrap' | 'fallback';

export interface IsolationInfo {
  kind: IsolationKind;
  /** Plain-language warning when isolation is weaker than bwrap's (show it once). */
  warning: string | null;
  bwrapPath: string | null;
  /** util-linux prlimit, used to set the resource limits. */
  prlimitPath: string | null;
  /** When we run as root: the unprivileged user candidates run as (so process limits apply). */
  runAs: { uid: number; gid: number } | null;
  /** Whether bwrap understands --size (size-capped tmpfs). */
  tmpfsSizeOption: boolean;
  /**
   * Whether a process-count limit can be set inside bwrap. Kernels since
   * 5.14 count processes per user namespace, so the limit is per sandbox;
   * older ones count every process of the user, and a limit could stop a
   * busy desktop user's candidates from starting at all.
   */
  processLimit: boolean;
}

/** Where the program and the working directory appear inside the bwrap sandbox. */
export const SANDBOX_PROGRAM_DIR = '/sandbox/program';
export const SANDBOX_WORK_DIR = '/sandbox/work';
/** Where a task's extra read-only folders appear (Task.sandboxReadOnlyDirs: /sandbox/ro/<name>). */
export const SANDBOX_READ_ONLY_ROOT = '/sandbox/ro';
/** nobody/nogroup: whom candidates run as when ThetaEvolve itself runs as root. */
const UNPRIVILEGED_ID = 65534;
const SANDBOX_TMP_BYTES = 256 * 1024 * 1024;
const SANDBOX_SHM_BYTES = 64 * 1024 * 1024;
const PATH_INSIDE = '/usr/local/bin:/usr/bin:/bin';

export interface ResourceLimits {
  memoryLimitMb: number;
  /** RLIMIT_NPROC; null: not set. */
  processLimit: number | null;
  fileSizeLimitBytes: number;
}

/** Find an executable in the system folders first, then on PATH. */
export function findExecutable(name: string, pathVariable = process.env.PATH ?? ''): string | null {
  const dirs = ['/usr/bin', '/bin', '/usr/local/bin', '/usr/sbin', '/sbin', ...pathVariable.split(delimiter).filter((d) => d.startsWith('/'))];
  for (const dir of dirs) {
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not here.
    }
  }
  return null;
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
 * PID, network, IPC, UTS, cgroup), read-only system, private /tmp, the
 * program read-only and the working directory read-write, nothing else of
 * the host (no home, no workspace), and a cleared environment.
 */
export function bwrapArguments(options: {
  programDir: string;
  workDir: string;
  env: Readonly<Record<string, string>>;
  tmpfsSizeOption: boolean;
  /** Extra host folders bound read-only (a foreign task's folder and our wrapper); none for task.json tasks. */
  readOnlyDirs?: readonly { hostDir: string; sandboxDir: string }[];
}): string[] {
  const sized = (bytes: number): string[] => (options.tmpfsSizeOption ? ['--size', String(bytes)] : []);
  const args = [
    '--unshare-all',
    '--die-with-parent',
    '--new-session',
    '--hostname', 'sandbox',
    ...systemMounts(),
    '--proc', '/proc',
    '--dev', '/dev',
    ...sized(SANDBOX_SHM_BYTES), '--tmpfs', '/dev/shm',
    ...sized(SANDBOX_TMP_BYTES), '--tmpfs', '/tmp',
    '--ro-bind', options.programDir, SANDBOX_PROGRAM_DIR,
    ...(options.readOnlyDirs ?? []).flatMap((d) => ['--ro-bind', d.hostDir, d.sandboxDir]),
    '--bind', options.workDir, SANDBOX_WORK_DIR,
    '--remount-ro', '/',
    '--chdir', SANDBOX_WORK_DIR,
    '--clearenv',
  ];
  for (const [key, value] of Object.entries(options.env)) args.push('--setenv', key, value);
  return args;
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
      '--',
      ...command,
    ];
  }
  const script = [
    `ulimit -v ${Math.floor(memoryBytes / 1024)}`,
    `ulimit -f ${Math.floor(limits.fileSizeLimitBytes / 512)}`,
    'ulimit -c 0',
    'exec "$@"',
  ].join(' && ');
  return ['/bin/sh', '-c', script, 'sh', ...command];
}

function isRoot(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

/** Processes a probe may have: the default limit of the evaluator. */
const PROBE_PROCESS_LIMIT = 256;

/** Run a trivial program (that forks) exactly as candidates run; null when it works, else why not. */
function probeBwrap(
  bwrapPath: string,
  prlimitPath: string | null,
  runAs: { uid: number; gid: number } | null,
  tmpfsSizeOption: boolean,
  processLimit: number | null,
): string | null {
  const root = mkdtempSync(join(tmpdir(), 'thetaevolve-probe-'));
  try {
    const programDir = join(root, 'program');
    const workDir = join(root, 'work');
    mkdirSync(programDir);
    mkdirSync(workDir);
    if (runAs) {
      chmodSync(root, 0o711);
      chmodSync(programDir, 0o755);
      chownSync(workDir, runAs.uid, runAs.gid);
    }
    const env = candidateEnvironment('/tmp', '/tmp');
    const command = limitedCommand(
      ['/bin/sh', '-c', 'echo sandbox-ok > probe.txt && /bin/cat probe.txt'],
      { memoryLimitMb: 512, processLimit, fileSizeLimitBytes: 1 << 20 },
      prlimitPath,
    );
    const result = spawnSync(bwrapPath, [...bwrapArguments({ programDir, workDir, env, tmpfsSizeOption }), '--', ...command], {
      cwd: root,
      env: {},
      encoding: 'utf8',
      timeout: 15000,
      ...(runAs ? { uid: runAs.uid, gid: runAs.gid } : {}),
    });
    if (result.error) return result.error.message;
    if (result.status === 0 && result.stdout.includes('sandbox-ok')) return null;
    const why = (result.stderr || result.stdout || '').trim().split('\n')[0] ?? '';
    return why || `exit status ${String(result.status ?? result.signal)}`;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

const FALLBACK_HOW =
  'candidates run in a private temporary folder, in their own process group with a wall-clock limit, memory and file-size limits and an environment cleared of secrets, ' +
  'but they can still read your files and use the network';

let cached: IsolationInfo | null = null;

/**
 * Detect the isolation once per process: bwrap when it can actually start a
 * sandbox here, else the fallback. `preference: 'fallback'` skips bwrap (tests,
 * or where a user wants it off).
 */
export function detectIsolation(preference: 'auto' | 'fallback' = 'auto'): IsolationInfo {
  const prlimitPath = findExecutable('prlimit');
  const rootUser = isRoot();
  const limitNote = prlimitPath ? '' : ' (prlimit from util-linux was not found, so the process-count limit is not applied)';
  if (preference === 'fallback') {
    return {
      kind: 'fallback',
      warning: `Sandbox: bubblewrap is switched off: ${FALLBACK_HOW}.${limitNote}`,
      bwrapPath: null,
      prlimitPath,
      runAs: rootUser ? { uid: UNPRIVILEGED_ID, gid: UNPRIVILEGED_ID } : null,
      tmpfsSizeOption: false,
      processLimit: rootUser && prlimitPath !== null,
    };
  }
  if (cached) return cached;
  cached = detectUncached(prlimitPath, rootUser, limitNote);
  return cached;
}

function detectUncached(prlimitPath: string | null, rootUser: boolean, limitNote: string): IsolationInfo {
  const fallback = (reason: string): IsolationInfo => ({
    kind: 'fallback',
    warning: `Sandbox: ${reason}, so ${FALLBACK_HOW}. Install bubblewrap (Debian/Ubuntu: sudo apt install bubblewrap) for real isolation.${limitNote}`,
    bwrapPath: null,
    prlimitPath,
    runAs: rootUser ? { uid: UNPRIVILEGED_ID, gid: UNPRIVILEGED_ID } : null,
    tmpfsSizeOption: false,
    processLimit: rootUser && prlimitPath !== null,
  });
  if (process.platform !== 'linux') return fallback(`bubblewrap needs Linux (this is ${process.platform})`);
  const bwrapPath = findExecutable('bwrap');
  if (!bwrapPath) return fallback('bubblewrap (bwrap) is not installed');
  const help = spawnSync(bwrapPath, ['--help'], { encoding: 'utf8', timeout: 5000 });
  const tmpfsSizeOption = `${help.stdout ?? ''}${help.stderr ?? ''}`.includes('--size');
  const runAs = rootUser ? { uid: UNPRIVILEGED_ID, gid: UNPRIVILEGED_ID } : null;
  const limited = prlimitPath !== null;
  const problem = probeBwrap(bwrapPath, prlimitPath, runAs, tmpfsSizeOption, limited ? PROBE_PROCESS_LIMIT : null);
  if (problem === null) return { kind: 'bwrap', warning: null, bwrapPath, prlimitPath, runAs, tmpfsSizeOption, processLimit: limited };
  if (limited && probeBwrap(bwrapPath, prlimitPath, runAs, tmpfsSizeOption, null) === null) {
    return {
      kind: 'bwrap',
      warning: 'Sandbox: this kernel counts processes per user rather than per sandbox, so the process-count limit is not applied (a fork bomb is stopped only by the time limit).',
      bwrapPath,
      prlimitPath,
      runAs,
      tmpfsSizeOption,
      processLimit: false,
    };
  }
  if (runAs) {
    // Unprivileged user namespaces may be off; bwrap as root still isolates
    // everything, but the kernel does not apply process-count limits to root.
    const asRoot = probeBwrap(bwrapPath, prlimitPath, null, tmpfsSizeOption, null);
    if (asRoot === null) {
      return {
        kind: 'bwrap',
        warning: `Sandbox: bubblewrap cannot run as an unprivileged user here (${problem}); candidates run as root inside it, where the process-count limit does not apply.`,
        bwrapPath,
        prlimitPath,
        runAs: null,
        tmpfsSizeOption,
        processLimit: false,
      };
    }
  }
  return fallback(`bubblewrap is installed but cannot create a sandbox here (${problem})`);
}
