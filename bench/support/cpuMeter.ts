// CPU time of this bench process and of everything it starts, sandboxes
// included. Counting reaped children (/proc/self/stat cutime) misses most of
// a sandbox: bwrap's outer process exits without reaping the sandbox's init,
// so what ran inside is never added to anyone. As root on cgroup v1 the
// bench moves itself into a cpuacct cgroup of its own, which its children
// inherit (the sandboxes' own cgroups are in the memory, cpu and pids
// hierarchies only); on cgroup v2 its own cgroup's cpu.stat counts the
// sandboxes' cgroups below it. Elsewhere: this process and its reaped
// children, which the meter's `what` says.
import { mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface CpuMeter {
  /** What is counted. */
  readonly what: string;
  /** CPU milliseconds so far. */
  ms(): number;
  /** Leave the meter's cgroup (where one was made). */
  close(): void;
}

function selfStatMs(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime, stime, cutime, cstime (fields 14 to 17 of proc(5)), in clock ticks of 10 ms.
  return fields.slice(11, 15).reduce((sum, f) => sum + Number(f), 0) * 10;
}

function cgroupLine(controller: string): string | null {
  for (const line of readFileSync('/proc/self/cgroup', 'utf8').split('\n')) {
    const [, controllers, path] = /^\d+:([^:]*):(.*)$/.exec(line) ?? [];
    if (controllers !== undefined && path !== undefined && controllers.split(',').includes(controller)) return path;
  }
  return null;
}

function mountOf(type: string, option: string | null): string | null {
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const [left, right] = line.split(' - ');
    if (!right?.startsWith(`${type} `)) continue;
    if (option !== null && !(right.split(' ')[2] ?? '').split(',').includes(option)) continue;
    return left?.split(' ')[4] ?? null;
  }
  return null;
}

export function startCpuMeter(): CpuMeter {
  try {
    const v1 = mountOf('cgroup', 'cpuacct');
    const path = cgroupLine('cpuacct');
    if (v1 && path !== null && process.getuid?.() === 0) {
      const parent = join(v1, path);
      const dir = join(parent, `thetaevolve-bench-${process.pid}`);
      mkdirSync(dir);
      writeFileSync(join(dir, 'cgroup.procs'), String(process.pid));
      const close = (): void => {
        try {
          writeFileSync(join(parent, 'cgroup.procs'), String(process.pid));
          rmdirSync(dir);
        } catch {
          // A process it started still runs there (or the folder is gone): tried again as this process exits.
        }
      };
      // Also when the bench fails before its close.
      process.once('exit', close);
      return {
        what: 'CPU time of the bench and every process it started (its cpuacct cgroup)',
        ms: () => Number(readFileSync(join(dir, 'cpuacct.usage'), 'utf8')) / 1e6,
        close,
      };
    }
    const v2 = mountOf('cgroup2', null);
    const unified = cgroupLine('');
    if (v2 && unified !== null) {
      const file = join(v2, unified, 'cpu.stat');
      const usage = (): number => Number(/^usage_usec (\d+)$/m.exec(readFileSync(file, 'utf8'))?.[1] ?? NaN) / 1000;
      if (Number.isFinite(usage()))
        return { what: "CPU time of the bench's cgroup and those below it (the sandboxes')", ms: usage, close: () => undefined };
    }
  } catch {
    // No cgroup of our own here: the fallback below.
  }
  return {
    what: 'CPU time of the bench and its reaped children only (no cgroup to count the sandboxes: an undercount)',
    ms: selfStatMs,
    close: () => undefined,
  };
}
