// Per-sandbox limits need a cgroup (RLIMIT_AS is per process: three
// processes of 2.5 GiB each add up, and memory outside any process, such as
// tmpfs files, memfds, SysV segments and socket buffers, counts for none).
// A cgroup v2 the host delegates to us, else, as root, the cgroup v1 memory
// (and cpu, pids) controllers of a hybrid or v1-only host. This finds out
// which one we can have, and says why not when none.
import { accessSync, constants, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { errorMessage } from '../common/errors';

export type CgroupSupport =
  | { available: true; version: 2; dir: string; cpu: boolean }
  | { available: true; version: 1; dirs: { memory: string; cpu: string | null; pids: string | null } }
  | { available: false; why: string };

/** One evaluation's cgroup: the folders its processes enter (one per hierarchy) and the one holding the memory limit. */
export interface SandboxCgroup {
  version: 1 | 2;
  memory: string;
  dirs: string[];
  /** The folder holding its CPU share (null: no cpu controller here). */
  cpu: string | null;
}

/** The cgroup2 mount point, from /proc/self/mountinfo (field 5 is the mount point, the type follows " - "). */
function cgroup2Mount(mountinfo: string): string | null {
  for (const line of mountinfo.split('\n')) {
    const [left, right] = line.split(' - ');
    if (right?.startsWith('cgroup2 ')) return left?.split(' ')[4] ?? null;
  }
  return null;
}

/** Mount points of the cgroup v1 hierarchies, by controller (super options of the "cgroup" mounts). */
function cgroup1Mounts(mountinfo: string): Map<string, string> {
  const mounts = new Map<string, string>();
  for (const line of mountinfo.split('\n')) {
    const [left, right] = line.split(' - ');
    if (!right?.startsWith('cgroup ')) continue;
    const point = left?.split(' ')[4];
    if (!point) continue;
    for (const option of (right.split(' ')[2] ?? '').split(',')) if (!mounts.has(option)) mounts.set(option, point);
  }
  return mounts;
}

/** Whether we can make (and remove) a child cgroup in `dir`: the only sure test of write access to a cgroup. */
function canCreateChild(dir: string): boolean {
  const probe = join(dir, `thetaevolve-probe-${process.pid}`);
  try {
    mkdirSync(probe);
    rmdirSync(probe);
    return true;
  } catch {
    return false;
  }
}

/**
 * As root on a host whose memory controller is on cgroup v1 (a hybrid or
 * v1-only host): our own v1 memory cgroup, and the cpu and pids ones when
 * mounted, where we can create children.
 */
function detectCgroup1(mountinfo: string, selfCgroup: string): CgroupSupport {
  const mounts = cgroup1Mounts(mountinfo);
  const ours = (controller: string): string | null => {
    const mount = mounts.get(controller);
    if (!mount) return null;
    for (const line of selfCgroup.split('\n')) {
      const [, controllers, path] = /^\d+:([^:]*):(.*)$/.exec(line) ?? [];
      if (controllers?.split(',').includes(controller) && path !== undefined) return join(mount, path);
    }
    return null;
  };
  const memory = ours('memory');
  if (!memory) return { available: false, why: 'no cgroup v1 memory controller is mounted either' };
  if (!canCreateChild(memory)) return { available: false, why: `the cgroup v1 memory controller (${memory}) is not writable here` };
  const optional = (controller: string): string | null => {
    const dir = ours(controller);
    return dir && canCreateChild(dir) ? dir : null;
  };
  return { available: true, version: 1, dirs: { memory, cpu: optional('cpu'), pids: optional('pids') } };
}

/**
 * Our cgroup v2 folder when it can hold per-evaluation children with the
 * memory and pids controllers: it must already pass both controllers down
 * (cgroup.subtree_control) and be writable by us. A cgroup that holds
 * processes cannot enable controllers for its children, so this is the case
 * in a delegated cgroup namespace root (containers started with a private
 * cgroup namespace, systemd units with Delegate=yes whose processes moved
 * to a leaf), not in an ordinary login session. Failing that, as root, the
 * cgroup v1 controllers (detectCgroup1); the reason given is v2's.
 */
export function detectCgroup(files: { mountinfo?: string; selfCgroup?: string; root?: boolean } = {}): CgroupSupport {
  let mountinfo: string;
  let selfCgroup: string;
  try {
    mountinfo = files.mountinfo ?? readFileSync('/proc/self/mountinfo', 'utf8');
    selfCgroup = files.selfCgroup ?? readFileSync('/proc/self/cgroup', 'utf8');
  } catch {
    return { available: false, why: '/proc cannot be read' };
  }
  const v2 = detectCgroup2(mountinfo, selfCgroup);
  if (v2.available || !(files.root ?? process.getuid?.() === 0)) return v2;
  const v1 = detectCgroup1(mountinfo, selfCgroup);
  return v1.available ? v1 : { available: false, why: `${v2.why}; ${v1.why}` };
}

function detectCgroup2(mountinfo: string, selfCgroup: string): CgroupSupport {
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
  // The cpu controller gives each sandbox an equal share: passed down when the host offers it and we may.
  const cpu = subtree.includes('cpu') || (controllers.includes('cpu') && writeOptional(join(dir, 'cgroup.subtree_control'), '+cpu'));
  return { available: true, version: 2, dir, cpu };
}

let created = 0;

/** Write a cgroup file; false when this kernel has no such file (e.g. no swap accounting). */
function writeOptional(path: string, value: string): boolean {
  try {
    writeFileSync(path, value);
    return true;
  } catch {
    return false;
  }
}

/**
 * A cgroup for one sandbox: a memory limit (no swap) and a process limit
 * for all its processes together, and its own CPU group, so that under
 * contention each sandbox gets the same share of the CPU however many
 * threads it runs (v2 cpu.weight and v1 cpu.shares start equal).
 */
export function createSandboxCgroup(
  support: Extract<CgroupSupport, { available: true }>,
  limits: { memoryBytes: number; pids: number | null },
): SandboxCgroup {
  const name = `thetaevolve-${process.pid}-${++created}`;
  const made: string[] = [];
  const make = (parent: string): string => {
    const path = join(parent, name);
    mkdirSync(path);
    made.push(path);
    return path;
  };
  try {
    if (support.version === 2) {
      const path = make(support.dir);
      writeFileSync(join(path, 'memory.max'), String(limits.memoryBytes));
      // No swap accounting on this kernel: memory.max still holds.
      writeOptional(join(path, 'memory.swap.max'), '0');
      if (limits.pids !== null) writeFileSync(join(path, 'pids.max'), String(limits.pids));
      return { version: 2, memory: path, dirs: [path], cpu: support.cpu ? path : null };
    }
    const memory = make(support.dirs.memory);
    writeFileSync(join(memory, 'memory.limit_in_bytes'), String(limits.memoryBytes));
    // memsw (memory + swap) exists only with swap accounting; without it, memory.limit_in_bytes still holds.
    writeOptional(join(memory, 'memory.memsw.limit_in_bytes'), String(limits.memoryBytes));
    const dirs = [memory];
    const cpu = support.dirs.cpu ? make(support.dirs.cpu) : null;
    if (cpu) dirs.push(cpu);
    if (support.dirs.pids && limits.pids !== null) {
      const pids = make(support.dirs.pids);
      writeFileSync(join(pids, 'pids.max'), String(limits.pids));
      dirs.push(pids);
    }
    return { version: 1, memory, dirs, cpu };
  } catch (err) {
    for (const path of made.reverse()) rmdirQuietly(path);
    throw err;
  }
}

function rmdirQuietly(path: string): void {
  try {
    rmdirSync(path);
  } catch {
    // Nothing was started in it: an empty folder the kernel removes with its parent's cleanup, or never.
  }
}

/**
 * A sandbox's CPU share: 'waiting' (a warm sandbox warming up or waiting
 * for its candidate, warmPool.ts) yields the CPU to everything else,
 * 'running' is every sandbox's equal share. False where there is no cpu
 * controller (the share stays equal).
 */
export function setSandboxCpuShare(cgroup: Pick<SandboxCgroup, 'version' | 'cpu'>, share: 'waiting' | 'running'): boolean {
  if (cgroup.cpu === null) return false;
  // The lowest weight each version takes, and its default.
  const [file, value] =
    cgroup.version === 2 ? ['cpu.weight', share === 'waiting' ? 1 : 100] : ['cpu.shares', share === 'waiting' ? 2 : 1024];
  return writeOptional(join(cgroup.cpu, file), String(value));
}

/**
 * `command` started inside the cgroup: a shell moves itself into each of its
 * folders before anything of the sandbox exists (so no process can start
 * outside it), then, when ThetaEvolve is root, drops to the unprivileged user.
 */
export function inCgroupCommand(
  cgroup: Pick<SandboxCgroup, 'dirs'>,
  command: readonly string[],
  drop: { setpriv: string; uid: number; gid: number } | null,
): string[] {
  const dropArgs = drop ? [drop.setpriv, `--reuid=${drop.uid}`, `--regid=${drop.gid}`, '--clear-groups', '--'] : [];
  const script = 'n=$1; shift\nwhile [ "$n" -gt 0 ]; do echo 0 > "$1/cgroup.procs" || exit 125; shift; n=$((n - 1)); done\nexec "$@"';
  return ['/bin/sh', '-c', script, 'sh', String(cgroup.dirs.length), ...cgroup.dirs, ...dropArgs, ...command];
}

/** How many times the kernel's OOM killer acted in the cgroup (v2 memory.events, v1 memory.oom_control). */
export function oomKills(cgroup: Pick<SandboxCgroup, 'version' | 'memory'>): number {
  try {
    const file = cgroup.version === 2 ? 'memory.events' : 'memory.oom_control';
    const match = /^oom_kill (\d+)$/m.exec(readFileSync(join(cgroup.memory, file), 'utf8'));
    return match ? Number(match[1]) : 0;
  } catch {
    return 0;
  }
}

/** SIGKILL every process in a cgroup folder (cgroup.kill where the kernel has it, else each pid in cgroup.procs). */
function killAll(path: string): void {
  if (writeOptional(join(path, 'cgroup.kill'), '1')) return;
  try {
    for (const pid of readFileSync(join(path, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean)) {
      try {
        process.kill(Number(pid), 'SIGKILL');
      } catch {
        // Gone already.
      }
    }
  } catch {
    // Gone already.
  }
}

/** Kill whatever is left in the cgroup and remove its folders; null when gone, else what is left and why. */
export async function removeSandboxCgroup(cgroup: Pick<SandboxCgroup, 'dirs'>): Promise<string | null> {
  const problems: string[] = [];
  for (const path of cgroup.dirs) {
    const problem = await removeCgroupDir(path);
    if (problem !== null) problems.push(problem);
  }
  return problems.length > 0 ? problems.join('; ') : null;
}

async function removeCgroupDir(path: string): Promise<string | null> {
  // Killed processes leave the cgroup once the kernel has reaped them: a few milliseconds.
  for (let attempt = 0; attempt < 400; attempt++) {
    killAll(path);
    try {
      rmdirSync(path);
      return null;
    } catch (err) {
      const code = typeof err === 'object' && err !== null && 'code' in err ? String((err as { code: unknown }).code) : '';
      if (code === 'ENOENT') return null;
      if (code !== 'EBUSY') return `could not remove the cgroup ${path}: ${errorMessage(err)}`;
    }
    await new Promise((resolvePromise) => setTimeout(resolvePromise, 5));
  }
  return `could not remove the cgroup ${path}: processes are still in it after 2 s`;
}
