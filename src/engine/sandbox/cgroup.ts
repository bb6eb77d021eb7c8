// Per-sandbox limits need a cgroup v2 the host lets us manage (RLIMIT_AS
// is per process: three processes of 2.5 GiB each add up). This finds out
// whether one is delegated to us, and says why not when it is not.
import { accessSync, constants, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { errorMessage } from '../common/errors';

export type CgroupSupport = { available: true; dir: string } | { available: false; why: string };

/** The cgroup2 mount point, from /proc/self/mountinfo (field 5 is the mount point, the type follows " - "). */
function cgroup2Mount(mountinfo: string): string | null {
  for (const line of mountinfo.split('\n')) {
    const [left, right] = line.split(' - ');
    if (right?.startsWith('cgroup2 ')) return left?.split(' ')[4] ?? null;
  }
  return null;
}

/**
 * Our cgroup v2 folder when it can hold per-evaluation children with the
 * memory and pids controllers: it must already pass both controllers down
 * (cgroup.subtree_control) and be writable by us. A cgroup that holds
 * processes cannot enable controllers for its children, so this is the case
 * in a delegated cgroup namespace root (containers started with a private
 * cgroup namespace, systemd units with Delegate=yes whose processes moved
 * to a leaf), not in an ordinary login session.
 */
export function detectCgroup(files: { mountinfo?: string; selfCgroup?: string } = {}): CgroupSupport {
  let mountinfo: string;
  let selfCgroup: string;
  try {
    mountinfo = files.mountinfo ?? readFileSync('/proc/self/mountinfo', 'utf8');
    selfCgroup = files.selfCgroup ?? readFileSync('/proc/self/cgroup', 'utf8');
  } catch {
    return { available: false, why: '/proc cannot be read' };
  }
  const mount = cgroup2Mount(mountinfo);
  if (!mount) return { available: false, why: 'no cgroup v2 hierarchy is mounted (cgroup v1 only)' };
  const unified = selfCgroup.split('\n').find((line) => line.startsWith('0::'));
  if (!unified) return { available: false, why: 'this process is not in a cgroup v2 hierarchy' };
  const dir = join(mount, unified.slice(3).trim());
  let controllers: string[];
  let subtree: string[];
  try {
    controllers = readFileSync(join(dir, 'cgroup.controllers'), 'utf8').trim().split(/\s+/);
    subtree = readFileSync(join(dir, 'cgroup.subtree_control'), 'utf8').trim().split(/\s+/);
  } catch {
    return { available: false, why: `${dir} cannot be read` };
  }
  const needed = ['memory', 'pids'];
  const absent = needed.filter((c) => !controllers.includes(c));
  if (absent.length > 0) {
    const hybrid = mount !== '/sys/fs/cgroup' ? ' (a hybrid cgroup v1/v2 host: the controllers are on v1)' : '';
    return {
      available: false,
      why: `the ${absent.join(' and ')} controller${absent.length > 1 ? 's are' : ' is'} not available in ${dir}${hybrid}`,
    };
  }
  const notDelegated = needed.filter((c) => !subtree.includes(c));
  if (notDelegated.length > 0) {
    return {
      available: false,
      why: `${dir} does not pass the ${notDelegated.join(' and ')} controller${notDelegated.length > 1 ? 's' : ''} to sub-cgroups (run ThetaEvolve in a delegated cgroup, e.g. systemd-run --user --scope -p Delegate=yes, with its processes in a leaf)`,
    };
  }
  try {
    accessSync(dir, constants.W_OK);
  } catch {
    return { available: false, why: `${dir} is not writable by this user (not delegated)` };
  }
  return { available: true, dir };
}

let created = 0;

/** A child cgroup for one sandbox: memory.max (no swap) and pids.max for all its processes together. */
export function createSandboxCgroup(parent: string, limits: { memoryBytes: number; pids: number | null }): string {
  const path = join(parent, `thetaevolve-${process.pid}-${++created}`);
  mkdirSync(path);
  try {
    writeFileSync(join(path, 'memory.max'), String(limits.memoryBytes));
    try {
      writeFileSync(join(path, 'memory.swap.max'), '0');
    } catch {
      // No swap accounting on this kernel: memory.max still holds.
    }
    if (limits.pids !== null) writeFileSync(join(path, 'pids.max'), String(limits.pids));
  } catch (err) {
    rmdirSync(path);
    throw err;
  }
  return path;
}

/**
 * `command` started inside the cgroup: a shell moves itself there before
 * anything of the sandbox exists (so no process can start outside it),
 * then, when ThetaEvolve is root, drops to the unprivileged user.
 */
export function inCgroupCommand(
  path: string,
  command: readonly string[],
  drop: { setpriv: string; uid: number; gid: number } | null,
): string[] {
  const dropArgs = drop ? [drop.setpriv, `--reuid=${drop.uid}`, `--regid=${drop.gid}`, '--clear-groups', '--'] : [];
  return ['/bin/sh', '-c', 'echo 0 > "$1/cgroup.procs" || exit 125\nshift\nexec "$@"', 'sh', path, ...dropArgs, ...command];
}

/** How many times the kernel's OOM killer acted in the cgroup (memory.events). */
export function oomKills(path: string): number {
  try {
    const match = /^oom_kill (\d+)$/m.exec(readFileSync(join(path, 'memory.events'), 'utf8'));
    return match ? Number(match[1]) : 0;
  } catch {
    return 0;
  }
}

/** Kill whatever is left in the cgroup and remove it; null when gone, else what is left and why. */
export async function removeSandboxCgroup(path: string): Promise<string | null> {
  try {
    writeFileSync(join(path, 'cgroup.kill'), '1');
  } catch {
    // Before Linux 5.14: the sandbox's PID namespace is gone already when its init exited.
  }
  // Killed processes leave the cgroup once the kernel has reaped them: a few milliseconds.
  for (let attempt = 0; attempt < 200; attempt++) {
    try {
      rmdirSync(path);
      return null;
    } catch (err) {
      const code = typeof err === 'object' && err !== null && 'code' in err ? String((err as { code: unknown }).code) : '';
      if (code === 'ENOENT') return null;
      if (code !== 'EBUSY') return `could not remove the cgroup ${path}: ${errorMessage(err)}`;
    }
    await new Promise((resolvePromise) => setTimeout(resolvePromise, 10));
  }
  return `could not remove the cgroup ${path}: processes are still in it after 2 s`;
}
