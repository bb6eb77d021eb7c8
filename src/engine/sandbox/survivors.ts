// Without bwrap's PID namespace, a candidate's double-forked daemon leaves
// its process group and outlives the run (it rewrote later candidates'
// solutions). Every process of an evaluation inherits a random marker in
// its environment; after the run, every process that still carries it is
// killed. Best effort: a daemon that re-executes itself with a new
// environment is not found (the warning of the fallback says so).
import { readdirSync, readFileSync, statSync } from 'node:fs';

/** Pids (as numbers) of the processes whose initial environment holds `entry` ("NAME=value"), owned by `uid` when given. */
export function processesWithEnvironment(entry: string, uid: number | null): number[] {
  if (process.platform !== 'linux') return [];
  const needle = Buffer.from(`${entry}\0`);
  const found: number[] = [];
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return [];
  }
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    if (pid === process.pid) continue;
    try {
      if (uid !== null && statSync(`/proc/${name}`).uid !== uid) continue;
      const environ = readFileSync(`/proc/${name}/environ`);
      if (environ.includes(needle)) found.push(pid);
    } catch {
      // Gone, or not ours to read.
    }
  }
  return found;
}

/** SIGKILL every process carrying the marker, until none is left (a fork between scan and kill is caught by the next round). */
export function killMarkedProcesses(entry: string, uid: number | null): number {
  let killed = 0;
  for (let round = 0; round < 5; round++) {
    const pids = processesWithEnvironment(entry, uid);
    if (pids.length === 0) break;
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
        killed++;
      } catch {
        // Already gone.
      }
    }
  }
  return killed;
}
