// A real, throwaway single-node SLURM cluster for tests and benchmarks
// (testing.md "A real SLURM cluster in a test"): munged, slurmctld and slurmd
// from Debian's packages, started as child processes under a temp folder,
// loopback only, on free ports, and stopped by pid. Clients reach it through
// SLURM_CONF (see `env`). Comes up in about a second.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { openSync, closeSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { findExecutable } from '../../src/engine/sandbox/isolation';
import { freePort } from './freePort';

const SBIN_PATH = `${process.env.PATH ?? ''}:/usr/sbin:/sbin`;
const DAEMONS = ['munged', 'mungekey', 'slurmctld', 'slurmd'] as const;
const CLIENTS = ['sbatch', 'squeue', 'scancel', 'sinfo', 'scontrol'] as const;
const READY_TIMEOUT_MS = 30_000;

export interface SlurmCluster {
  dir: string;
  /** slurm.conf of this cluster. */
  conf: string;
  /** The one partition (the default). */
  partition: string;
  /** Environment for SLURM's client tools: process.env plus SLURM_CONF. */
  env: NodeJS.ProcessEnv;
  /** Folders where slurmctld and slurmd keep job scripts and environments while jobs exist. */
  spoolDirs: string[];
  /** Run one of SLURM's client tools against this cluster. */
  client(tool: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }>;
  /** Ids (`123_4`) of every job in the queue, any name. */
  queuedJobs(): Promise<string[]>;
  stop(): Promise<void>;
}

/** Why no cluster can be started here, or null when it can. */
export function slurmUnavailableReason(): string | null {
  for (const tool of [...DAEMONS, ...CLIENTS]) {
    if (!findExecutable(tool, SBIN_PATH))
      return `${tool} is not installed (Debian: apt-get install slurmctld slurmd slurm-client munge; scripts/setup.sh does)`;
  }
  if (process.getuid?.() !== 0) return 'slurmd must run as root to start jobs (the test cluster runs its daemons as child processes)';
  return null;
}

function run(file: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolveRun) => {
    execFile(file, args, { env, timeout: 20_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolveRun({ code, stdout, stderr });
    });
  });
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolveExit) => child.once('exit', () => resolveExit()));
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  const done = exited(child);
  process.kill(child.pid, 'SIGTERM');
  const killed = await Promise.race([done.then(() => true), delay(10_000).then(() => false)]);
  if (!killed && child.exitCode === null && child.signalCode === null) {
    process.kill(child.pid, 'SIGKILL');
    await done;
  }
}

/** Start a cluster whose one node offers `cpus` job slots (default 16, whatever the machine has: jobs mostly wait). */
export async function startSlurmCluster(options: { cpus?: number } = {}): Promise<SlurmCluster> {
  const unavailable = slurmUnavailableReason();
  if (unavailable) throw new Error(`cannot start a SLURM test cluster: ${unavailable}`);
  const cpus = options.cpus ?? 16;
  const dir = await mkdtemp(join(tmpdir(), 'te-slurm-'));
  const children: ChildProcess[] = [];
  const env: NodeJS.ProcessEnv = { ...process.env, PATH: SBIN_PATH, SLURM_CONF: join(dir, 'slurm.conf') };
  const conf = env.SLURM_CONF as string;
  const logDir = join(dir, 'log');
  const started = (file: string, args: string[], logName: string): ChildProcess => {
    const out = openSync(join(logDir, logName), 'a');
    try {
      const child = spawn(file, args, { env, stdio: ['ignore', out, out] });
      children.push(child);
      return child;
    } finally {
      closeSync(out);
    }
  };
  const stopAll = async (): Promise<void> => {
    for (const child of [...children].reverse()) await stopChild(child);
  };
  try {
    // munged refuses folders others may write, and a key others may read.
    await chmod(dir, 0o755);
    await mkdir(join(dir, 'munge'), { mode: 0o755 });
    await mkdir(join(dir, 'munge-key'), { mode: 0o700 });
    for (const sub of ['state', 'spool', 'log']) await mkdir(join(dir, sub));
    const key = join(dir, 'munge-key', 'munge.key');
    const made = await run('mungekey', ['-c', '-k', key], env);
    if (made.code !== 0) throw new Error(`mungekey failed: ${made.stderr.trim()}`);
    const socket = join(dir, 'munge', 'munge.socket');
    started(
      'munged',
      [
        '-F',
        `--socket=${socket}`,
        `--key-file=${key}`,
        `--pid-file=${join(dir, 'munge', 'munged.pid')}`,
        `--log-file=${join(logDir, 'munged.log')}`,
        `--seed-file=${join(dir, 'munge', 'seed')}`,
      ],
      'munged.out',
    );

    const host = hostname().split('.')[0] as string;
    const [ctldPort, slurmdPort] = [await freePort(), await freePort()];
    const partition = 'main';
    await writeFile(
      conf,
      [
        'ClusterName=thetaevolve-test',
        `SlurmctldHost=${host}(127.0.0.1)`,
        `SlurmctldPort=${ctldPort}`,
        `SlurmdPort=${slurmdPort}`,
        'AuthType=auth/munge',
        'CredType=cred/munge',
        `AuthInfo=socket=${socket}`,
        'SlurmUser=root',
        `StateSaveLocation=${join(dir, 'state')}`,
        `SlurmdSpoolDir=${join(dir, 'spool')}`,
        `SlurmctldPidFile=${join(dir, 'slurmctld.pid')}`,
        `SlurmdPidFile=${join(dir, 'slurmd.pid')}`,
        `SlurmctldLogFile=${join(logDir, 'slurmctld.log')}`,
        `SlurmdLogFile=${join(logDir, 'slurmd.log')}`,
        'ProctrackType=proctrack/linuxproc',
        'TaskPlugin=task/none',
        'SelectType=select/cons_tres',
        'SelectTypeParameters=CR_Core',
        // Arrays start at once instead of in 3 s waves.
        'SchedulerParameters=batch_sched_delay=0',
        // The node may claim more CPUs than the machine has: test jobs mostly wait.
        'SlurmdParameters=config_overrides',
        'ReturnToService=2',
        'JobCompType=jobcomp/filetxt',
        `JobCompLoc=${join(logDir, 'jobcomp.log')}`,
        'AccountingStorageType=accounting_storage/none',
        'MpiDefault=none',
        `NodeName=${host} NodeAddr=127.0.0.1 CPUs=${cpus} RealMemory=2000 State=UNKNOWN`,
        `PartitionName=${partition} Nodes=${host} Default=YES MaxTime=INFINITE State=UP`,
        '',
      ].join('\n'),
    );
    started('slurmctld', ['-D', '-c', '-f', conf], 'slurmctld.out');
    started('slurmd', ['-D', '-f', conf], 'slurmd.out');

    const client = (tool: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> => run(tool, args, env);
    // Ready when the node is idle; a daemon that died meanwhile fails at once with its log.
    const deadline = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      const dead = children.find((c) => c.exitCode !== null || c.signalCode !== null);
      if (dead) throw new Error(`${String(dead.spawnfile)} exited during start-up:\n${await logTail(logDir)}`);
      const info = await client('sinfo', ['-h', '-o', '%T']);
      if (info.code === 0 && info.stdout.trim() === 'idle') break;
      if (Date.now() > deadline)
        throw new Error(
          `the SLURM test cluster was not idle within ${READY_TIMEOUT_MS / 1000} s (sinfo: ${info.stdout.trim() || info.stderr.trim()}):\n${await logTail(logDir)}`,
        );
      await delay(50);
    }

    const queuedJobs = async (): Promise<string[]> => {
      const out = await client('squeue', ['-h', '-r', '-o', '%i']);
      if (out.code !== 0) throw new Error(`squeue failed: ${out.stderr.trim()}`);
      return out.stdout
        .split('\n')
        .map((l) => l.trim())
        .filter((l) => l !== '');
    };
    return {
      dir,
      conf,
      partition,
      env,
      spoolDirs: [join(dir, 'state'), join(dir, 'spool')],
      client,
      queuedJobs,
      stop: async () => {
        // Jobs first (their slurmstepd outlives slurmd), then the daemons, newest first.
        const jobs = await queuedJobs().catch(() => []);
        if (jobs.length > 0) {
          await client('scancel', jobs);
          // Until they are gone (KillWait is 30 s), so no slurmstepd outlives the cluster.
          const deadline = Date.now() + 45_000;
          while ((await queuedJobs().catch(() => [])).length > 0 && Date.now() < deadline) await delay(100);
        }
        await stopAll();
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await stopAll();
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

async function logTail(logDir: string): Promise<string> {
  const parts: string[] = [];
  for (const name of ['slurmctld.log', 'slurmd.log', 'munged.log', 'slurmctld.out', 'slurmd.out', 'munged.out']) {
    const text = await readFile(join(logDir, name), 'utf8').catch(() => '');
    if (text.trim()) parts.push(`--- ${name}\n${text.trim().split('\n').slice(-15).join('\n')}`);
  }
  return parts.join('\n');
}
