// The weak fallback as root (no bwrap): util-linux unshare gives the
// candidate a PID namespace whose end kills every process in it, its own
// IPC (SysV segments capped) and UTS and, where it works here, a mount
// namespace with its own size-capped /tmp and /dev/shm; setpriv drops it to
// the unprivileged user. What holds without a cgroup is said here too.
import { spawnSync } from 'node:child_process';

/** nobody/nogroup: whom candidates run as when ThetaEvolve itself runs as root. */
export const UNPRIVILEGED_ID = 65534;

export interface PidNamespaceTools {
  unshare: string;
  setpriv: string;
  mount: string | null;
}

/** What the root fallback's namespaces hold, in bytes: SysV segments, and each of /tmp and /dev/shm (with tools.mount). */
export interface PidNamespaceLimits {
  sharedMemoryBytes: number;
  /** The evaluation's folder, under the host's /tmp or not: bound again into the private /tmp so the candidate still has it. */
  keepDir: string;
}

/**
 * Set up as root before the drop: the IPC namespace's own SysV limit
 * (kernel.shmall, in pages), and with mount, a size-capped tmpfs on
 * /dev/shm and /tmp (RAM no process's RSS shows), the evaluation's folder
 * bound back in through a descriptor opened before /tmp was covered.
 */
const NAMESPACE_SETUP = [
  'pages="$1"; mount="$2"; bytes="$3"; keep="$4"; shift 4',
  'echo "$pages" > /proc/sys/kernel/shmall 2>/dev/null',
  'if [ -n "$mount" ]; then',
  '  exec 9<"$keep" &&',
  '  "$mount" -t tmpfs -o "size=$bytes,mode=1777,nosuid,nodev" thetaevolve /dev/shm &&',
  '  "$mount" -t tmpfs -o "size=$bytes,mode=1777,nosuid,nodev" thetaevolve /tmp &&',
  '  mkdir -p "$keep" && "$mount" --no-canonicalize --bind /proc/self/fd/9 "$keep" || { echo "thetaevolve: the private /tmp and /dev/shm could not be set up" >&2; exit 126; }',
  '  exec 9<&-',
  'fi',
  'exec "$@"',
].join('\n');

/**
 * Fallback as root: a PID namespace (its init's end kills every process in
 * it, daemons included), own IPC (SysV segments capped at sharedMemoryBytes
 * in all), UTS and, with tools.mount, mount namespace (its own /tmp and
 * /dev/shm, each capped at sharedMemoryBytes), and the candidate dropped to
 * the unprivileged user with no capabilities and no_new_privs.
 */
export function pidNamespaceCommand(command: readonly string[], tools: PidNamespaceTools, limits: PidNamespaceLimits): string[] {
  const pages = Math.max(1, Math.floor(limits.sharedMemoryBytes / 4096));
  const tmpfsBytes = Math.max(1024 * 1024, Math.floor(limits.sharedMemoryBytes));
  return [
    tools.unshare,
    '--pid',
    '--fork',
    '--kill-child',
    '--mount-proc',
    '--ipc',
    '--uts',
    ...(tools.mount ? ['--mount', '--propagation', 'private'] : []),
    '--',
    '/bin/sh',
    '-c',
    NAMESPACE_SETUP,
    'sh',
    String(pages),
    tools.mount ?? '',
    String(tmpfsBytes),
    limits.keepDir,
    tools.setpriv,
    `--reuid=${UNPRIVILEGED_ID}`,
    `--regid=${UNPRIVILEGED_ID}`,
    '--clear-groups',
    '--inh-caps=-all',
    '--bounding-set=-all',
    '--no-new-privs',
    '--',
    ...command,
  ];
}

/** What holds the limits in the fallback where no cgroup can be had (docs/guide.md "What each host mode guarantees"). */
export function fallbackWithoutCgroup(seccomp: boolean, tools: PidNamespaceTools | null): string {
  const parts = [
    "instead the memory of the candidate's processes and their open memfds is summed every 50 ms (killed past the limit), with RLIMIT per process as the floor",
    seccomp
      ? 'the seccomp filter refuses memfds, SysV shared memory and larger socket buffers and open files are capped, so queued datagrams hold at most about a third of the limit; setsid returns without making a session'
      : `without the seccomp filter, memfds count only while open and datagrams queued on sockets${tools ? '' : ' and detached SysV shared memory'} are not held`,
    tools?.mount
      ? 'its /tmp and /dev/shm are tmpfs of its own, and SysV segments its own, each capped at a quarter of the limit'
      : tools
        ? 'SysV segments are its own, capped at a quarter of the limit; files in RAM-backed host folders (/dev/shm, a tmpfs /tmp) are not held'
        : 'files in RAM-backed host folders (/dev/shm, a tmpfs /tmp) are not held',
    'CPU: one scheduling group per evaluation where the kernel has autogroup on',
  ];
  return parts.join('; ');
}

/** The root fallback's tools with mount where a mount namespace with tmpfs of its own can be set up here (tried once). */
export function withPrivateTmpfs(tools: PidNamespaceTools, mount: string | null, keepDir: string): PidNamespaceTools {
  if (!mount) return tools;
  const withMount = { ...tools, mount };
  const command = pidNamespaceCommand(['/bin/true'], withMount, { sharedMemoryBytes: 1024 * 1024, keepDir });
  const result = spawnSync(command[0] as string, command.slice(1), { cwd: '/', env: {}, timeout: 15000 });
  return result.status === 0 ? withMount : tools;
}
