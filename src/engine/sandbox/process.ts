// One child process with a hard wall-clock limit that kills its whole
// process group, and captured, truncated output. Used for sandboxed
// candidates and for the trusted evaluators alike.
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync, statfsSync, statSync } from 'node:fs';
import type { Readable, Writable } from 'node:stream';
import { z } from 'zod';

export interface ProcessSpec {
  file: string;
  args: readonly string[];
  cwd: string;
  /** The complete environment of the child (nothing is inherited). */
  env: Readonly<Record<string, string>>;
  /** Run as this user (only when we are root). */
  uid?: number;
  gid?: number;
  timeoutMs: number;
  /** Bytes kept of stdout and of stderr each; the rest is read and dropped. */
  outputLimitBytes: number;
  signal?: AbortSignal;
  /**
   * The child is bwrap started with `--info-fd 3`: it reports the pid of the
   * sandbox's init there. Killing that init first lets the kernel tear the
   * whole PID namespace down before bwrap exits, so when the result arrives
   * no process of the sandbox is left.
   */
  bwrapInfoFd?: boolean;
  /** Data fed to the child on extra descriptors (pipes, closed after the data). */
  inputs?: readonly { fd: number; data: Buffer }[];
  /** An extra descriptor whose bytes are kept (up to limitBytes; the rest is read and dropped). */
  capture?: { fd: number; limitBytes: number };
  /**
   * A process started ahead of need (warmPool.ts): the wall-clock limit,
   * durationMs and `inputs` begin when `inputs` resolves (its candidate is
   * there), with its data on the descriptors `fds` (pipes until then).
   */
  startGate?: { fds: readonly number[]; inputs: Promise<readonly { fd: number; data: Buffer }[]> };
  /** Told the child's pid once it is spawned (a warm process's priority is changed through it). */
  onSpawn?: (pid: number) => void;
  /** A descriptor the child writes one byte to once it is ready (warmed); onReady is called at the first byte. */
  ready?: { fd: number; onReady: () => void };
  /**
   * Kill the run when its processes together hold more than limitBytes of
   * anonymous memory (checked every intervalMs over the process tree under
   * the sandbox's init, or under the child): the per-sandbox memory limit
   * where no cgroup is delegated (RLIMIT_AS is per process).
   */
  memoryWatch?: {
    limitBytes: number;
    intervalMs: number;
    /** tmpfs mounts inside the sandbox whose contents count too (RAM, not disk), seen through /proc/INIT/root; the first must exist only in the sandbox. */
    tmpfsPaths?: readonly string[];
    /**
     * The kernel already enforced the limit (a cgroup's OOM killer acted):
     * checked on each tick, so that the whole sandbox stops, not only the
     * process the kernel picked.
     */
    kernelKilled?: () => boolean;
  };
}

export interface ProcessOutcome {
  exitCode: number | null;
  /** The signal that ended the process, if any. */
  exitSignal: string | null;
  timedOut: boolean;
  aborted: boolean;
  /** Set when the process could not be started at all. */
  spawnError: string | null;
  stdout: string;
  stderr: string;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  /** The memory watch killed it. */
  memoryExceeded: boolean;
  /** The bytes of spec.capture's descriptor (null without one). */
  captured: Buffer | null;
  durationMs: number;
}

/** How long to wait for the pipes to close once the process has exited. */
const PIPE_DRAIN_MS = 250;
/** How long a sandbox may take to tear down after its init was killed before its group is killed too. */
const TEARDOWN_GRACE_MS = 3000;
/**
 * How often the memory of a process waiting for its work (startGate) is
 * summed: only our launcher runs in it then, and a pool of them summed at
 * the candidate's pace would take the CPU the evaluations need.
 */
const GATED_MEMORY_WATCH_MS = 1000;

const BwrapInfoSchema = z.object({ 'child-pid': z.number().int().positive() });

class OutputCapture {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  truncated = false;

  constructor(private readonly limit: number) {}

  add(chunk: Buffer): void {
    if (this.kept >= this.limit) {
      this.truncated = true;
      return;
    }
    const room = this.limit - this.kept;
    const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
    if (part.length < chunk.length) this.truncated = true;
    this.chunks.push(Buffer.from(part));
    this.kept += part.length;
  }

  bytes(): Buffer {
    return Buffer.concat(this.chunks);
  }

  text(): string {
    const body = Buffer.concat(this.chunks).toString('utf8');
    return this.truncated ? `${body}\n[... output truncated at ${formatBytes(this.limit)}]` : body;
  }
}

export function formatBytes(bytes: number): string {
  if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MiB`;
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  if (bytes >= 1024 * 1024) return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
  return `${bytes} bytes`;
}

/** SIGKILL a whole process group; quietly nothing when it is already gone. */
export function killProcessGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
}

/** Anonymous and shared-memory resident bytes of a process (RssAnon + RssShmem: shared libraries are not counted again per process). */
function processMemoryBytes(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    let kib = 0;
    for (const match of status.matchAll(/^(?:RssAnon|RssShmem):\s+(\d+) kB$/gm)) kib += Number(match[1]);
    return kib * 1024;
  } catch {
    return 0;
  }
}

/**
 * memfds a process holds open, by inode: a memfd filled with write() is
 * memory that shows in no RSS until it is mapped (one mapped as well counts
 * twice: on the safe side). Where no cgroup counts it, bwrap's seccomp
 * filter refuses memfds altogether; this is for the weaker isolations.
 */
function addMemfds(pid: number, memfds: Map<string, number>): void {
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return; // Gone, or not ours to read.
  }
  for (const fd of fds) {
    const path = `/proc/${pid}/fd/${fd}`;
    try {
      if (!readlinkSync(path).startsWith('/memfd:')) continue;
      const stats = statSync(path);
      memfds.set(`${stats.dev}:${stats.ino}`, stats.blocks * 512);
    } catch {
      // Closed meanwhile.
    }
  }
}

/** Children of every thread of a process (/proc/PID/task/TID/children). */
function childrenOf(pid: number): number[] {
  const children: number[] = [];
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const text = readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim();
      if (text) for (const child of text.split(/\s+/)) children.push(Number(child));
    }
  } catch {
    // Gone.
  }
  return children;
}

const TMPFS_MAGIC = 0x01021994;

/**
 * Bytes used in tmpfs mounts of a sandbox, through its init's root
 * (/proc/PID/root/...). Counted only once the sandbox's own root is in
 * place (the first path, the working directory, is a tmpfs there): while
 * bwrap sets up, that root is still the host's, whose /tmp is not the
 * candidate's.
 */
function tmpfsBytes(initPid: number, paths: readonly string[]): number {
  let total = 0;
  for (const [index, path] of paths.entries()) {
    try {
      const stats = statfsSync(`/proc/${initPid}/root${path}`);
      if (stats.type !== TMPFS_MAGIC) {
        if (index === 0) return 0;
        continue;
      }
      total += (stats.blocks - stats.bfree) * stats.bsize;
    } catch {
      // Not set up yet, or gone with the sandbox.
      if (index === 0) return 0;
    }
  }
  return total;
}

/** Memory of a process and all its descendants, and of the memfds they hold (a sandbox's init adopts every orphan in it, daemons included). */
export function treeMemoryBytes(root: number): number {
  let total = 0;
  const seen = new Set<number>();
  const memfds = new Map<string, number>();
  const queue = [root];
  while (queue.length > 0) {
    const pid = queue.pop() as number;
    if (seen.has(pid)) continue;
    seen.add(pid);
    total += processMemoryBytes(pid);
    addMemfds(pid, memfds);
    queue.push(...childrenOf(pid));
  }
  for (const bytes of memfds.values()) total += bytes;
  return total;
}

/**
 * Run one process in its own process group (session). On timeout or abort
 * the whole group gets SIGKILL; after a normal exit the group is killed too,
 * so children left behind in it do not outlive the run. Never rejects.
 */
export function runProcess(spec: ProcessSpec): Promise<ProcessOutcome> {
  let started = performance.now();
  const stdout = new OutputCapture(spec.outputLimitBytes);
  const stderr = new OutputCapture(spec.outputLimitBytes);
  return new Promise<ProcessOutcome>((resolvePromise) => {
    let timedOut = false;
    let aborted = false;
    let settled = false;
    let exitCode: number | null = null;
    let exitSignal: string | null = null;
    let spawnError: string | null = null;

    if (spec.signal?.aborted) {
      resolvePromise({
        exitCode: null,
        exitSignal: null,
        timedOut: false,
        aborted: true,
        spawnError: null,
        stdout: '',
        stderr: '',
        stdoutTruncated: false,
        stderrTruncated: false,
        memoryExceeded: false,
        captured: null,
        durationMs: 0,
      });
      return;
    }

    const extraFds = [
      ...(spec.bwrapInfoFd ? [3] : []),
      ...(spec.inputs ?? []).map((i) => i.fd),
      ...(spec.capture ? [spec.capture.fd] : []),
      ...(spec.ready ? [spec.ready.fd] : []),
      ...(spec.startGate?.fds ?? []),
    ];
    const stdio: ('ignore' | 'pipe')[] = ['ignore', 'pipe', 'pipe'];
    for (const fd of extraFds) {
      while (stdio.length <= fd) stdio.push('ignore');
      stdio[fd] = 'pipe';
    }
    const captured = spec.capture ? new OutputCapture(spec.capture.limitBytes) : null;
    const child = spawn(spec.file, [...spec.args], {
      cwd: spec.cwd,
      env: { ...spec.env },
      stdio,
      detached: true, // setsid: its own process group, killed as one
      ...(spec.uid !== undefined ? { uid: spec.uid } : {}),
      ...(spec.gid !== undefined ? { gid: spec.gid } : {}),
    });

    const finish = (): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(graceTimer);
      clearInterval(memoryTimer);
      spec.signal?.removeEventListener('abort', onAbort);
      resolvePromise({
        exitCode,
        exitSignal,
        timedOut,
        aborted,
        spawnError,
        stdout: stdout.text(),
        stderr: stderr.text(),
        stdoutTruncated: stdout.truncated,
        stderrTruncated: stderr.truncated,
        memoryExceeded,
        captured: captured ? captured.bytes() : null,
        durationMs: performance.now() - started,
      });
    };

    let sandboxInitPid: number | null = null;
    let graceTimer: NodeJS.Timeout | undefined;
    /** A process waiting for its work does not keep this one alive (startGate); from its stop on, it does until it is gone. */
    let waitForIt = (): void => undefined;
    const stop = (): void => {
      waitForIt();
      if (sandboxInitPid !== null) {
        try {
          process.kill(sandboxInitPid, 'SIGKILL');
        } catch {
          // Already gone.
        }
        graceTimer ??= setTimeout(() => killProcessGroup(child.pid), TEARDOWN_GRACE_MS);
      } else {
        killProcessGroup(child.pid);
      }
    };
    let timer: NodeJS.Timeout | undefined;
    const armTimer = (): void => {
      if (settled || exited) return;
      started = performance.now();
      timer = setTimeout(() => {
        timedOut = true;
        stop();
      }, spec.timeoutMs);
    };
    let exited = false;
    const onAbort = (): void => {
      aborted = true;
      stop();
    };
    let memoryExceeded = false;
    const watch = spec.memoryWatch;
    const checkMemory = (): void => {
      const root = sandboxInitPid ?? child.pid;
      if (!watch || root === undefined || memoryExceeded) return;
      const tmpfs = sandboxInitPid !== null ? tmpfsBytes(sandboxInitPid, watch.tmpfsPaths ?? []) : 0;
      if (watch.kernelKilled?.() === true || treeMemoryBytes(root) + tmpfs > watch.limitBytes) {
        memoryExceeded = true;
        stop();
      }
    };
    let memoryTimer = watch
      ? setInterval(checkMemory, spec.startGate ? Math.max(watch.intervalMs, GATED_MEMORY_WATCH_MS) : watch.intervalMs)
      : undefined;
    spec.signal?.addEventListener('abort', onAbort, { once: true });

    const drain = (stream: Readable | null, capture: OutputCapture): void => {
      stream?.on('data', (chunk: Buffer) => capture.add(chunk));
      stream?.on('error', () => undefined);
    };
    drain(child.stdout, stdout);
    drain(child.stderr, stderr);
    const capturedStream = spec.capture && captured ? (child.stdio[spec.capture.fd] as Readable | null | undefined) : null;
    if (capturedStream && captured) drain(capturedStream, captured);
    const feed = (inputs: readonly { fd: number; data: Buffer }[]): void => {
      for (const input of inputs) {
        const stream = child.stdio[input.fd] as Writable | null | undefined;
        // A child that never reads (it failed to start) must not make the write throw.
        stream?.on('error', () => undefined);
        stream?.end(input.data);
      }
    };
    feed(spec.inputs ?? []);
    if (child.pid !== undefined) spec.onSpawn?.(child.pid);
    if (spec.startGate) {
      for (const fd of spec.startGate.fds) (child.stdio[fd] as Writable | null | undefined)?.on('error', () => undefined);
      // Waiting for its work, it must not keep this process alive (a CLI that ends without closing its evaluator still ends).
      const handles = [child, ...child.stdio, memoryTimer].filter((h) => h !== null && h !== undefined) as {
        ref?: () => void;
        unref?: () => void;
      }[];
      for (const handle of handles) handle.unref?.();
      // Killed unused (a pool's close, a stop), it is awaited: unreferenced, this process could end first, before
      // whoever awaits it (a CLI run's close) has finished, with exit code 0 whatever the run's result was.
      waitForIt = () => {
        for (const handle of [child, ...child.stdio]) (handle as { ref?: () => void } | null)?.ref?.();
      };
      spec.startGate.inputs.then(
        (inputs) => {
          for (const handle of handles) handle.ref?.();
          if (watch && memoryTimer !== undefined && !settled && !exited) {
            clearInterval(memoryTimer);
            memoryTimer = setInterval(checkMemory, watch.intervalMs);
          }
          armTimer();
          if (!settled && !exited) feed(inputs);
        },
        () => undefined,
      );
    } else {
      armTimer();
    }
    const readyStream = spec.ready ? (child.stdio[spec.ready.fd] as Readable | null | undefined) : null;
    if (spec.ready && readyStream) {
      const onReady = spec.ready.onReady;
      readyStream.once('data', () => onReady());
      readyStream.on('data', () => undefined);
      readyStream.on('error', () => undefined);
    }
    const info = spec.bwrapInfoFd ? (child.stdio[3] as Readable | null | undefined) : null;
    if (info) {
      let text = '';
      info.on('data', (chunk: Buffer) => {
        if (sandboxInitPid !== null || text.length > 4096) return;
        text += chunk.toString('utf8');
        const end = text.indexOf('}');
        if (end === -1) return;
        try {
          const parsed = BwrapInfoSchema.safeParse(JSON.parse(text.slice(0, end + 1)));
          if (parsed.success) sandboxInitPid = parsed.data['child-pid'];
        } catch {
          // Not the JSON bwrap writes: fall back to killing the group.
        }
        if (sandboxInitPid !== null && (timedOut || aborted)) stop();
      });
      info.on('error', () => undefined);
    }

    child.on('error', (err) => {
      spawnError = err.message;
      killProcessGroup(child.pid);
      finish();
    });
    child.on('exit', (code, signal) => {
      exited = true;
      exitCode = code;
      exitSignal = signal;
      clearTimeout(timer);
      clearInterval(memoryTimer);
      // Anything the program left running in its group dies with it.
      killProcessGroup(child.pid);
      // Wait briefly for the pipes to close; a straggler holding them open
      // (one that escaped the group) must not hold up the result. What the
      // process wrote before it exited is in the pipes already, but this
      // loop may have reaped it before polling them (another child's
      // SIGCHLD, then a callback that held the loop past the wait on a
      // loaded host): they are read in one more poll phase (setImmediate
      // runs after it) before they are given up, never cut at the wait.
      const giveUpPipes = (): void => {
        child.stdout?.destroy();
        child.stderr?.destroy();
        info?.destroy();
        capturedStream?.destroy();
        readyStream?.destroy();
        finish();
      };
      let drainImmediate: NodeJS.Immediate | undefined;
      const drainTimer = setTimeout(() => {
        drainImmediate = setImmediate(giveUpPipes);
      }, PIPE_DRAIN_MS);
      child.on('close', () => {
        clearTimeout(drainTimer);
        clearImmediate(drainImmediate);
        finish();
      });
    });
  });
}
