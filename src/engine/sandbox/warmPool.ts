// Interpreters started ahead of need
// (docs/architecture.md "Warm interpreters"). A quick candidate spends most of its time in a fresh
// Python importing numpy; here that Python is started, confined and warmed
// before the candidate arrives: each warm process is one whole sandbox as a
// cold one would be (its own bwrap namespaces, cgroup, seccomp filter,
// limits and tmpfs), waiting with its modules imported for the one
// candidate it will ever run. New ones are started with CPU the evaluations
// leave idle (WarmRefill); a candidate that finds none starts cold. Nothing
// is shared between candidates: a warm process is used once and dies with
// its candidate. The trusted evaluator gets the same (a warm process per
// evaluation, outside the sandbox as before).
//
// The interpreter is a parameter (whatever the command names), so any
// command of the form `<python> <script.py> args...` can be warmed; any
// other command runs cold, as before.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { basename, join } from 'node:path';
import { type ProcessOutcome, type ProcessSpec, runProcess } from './process';

/** Where a warm process reads its work (the candidate's code; empty for the trusted evaluator): the program descriptor bwrap would otherwise bind. */
export const WARM_INPUT_FD = 5;
/** Where a warm process says it has imported its modules (one byte). */
export const WARM_READY_FD = 7;
/**
 * Modules a candidate's own imports add to those later warm Pythons import
 * ahead (the one nearly every task's program imports; importing it changes
 * nothing another candidate could see). Imported ahead only once something
 * imports it: unused, it costs each warm process CPU a cold one would not
 * spend.
 */
const LEARNED_MODULES = ['numpy'];
const MAX_WARMED_MODULES = 24;

/**
 * The launcher (`python -c`): sys.path as `python script.py` would have it,
 * the modules imported, "ready" said, then it waits for its input; with a
 * program path it writes the input there (the candidate's program file),
 * then runs the script as __main__ in this process with the script's own
 * argv. A traceback starts at the script, as it would without the launcher.
 */
const WARM_LAUNCHER = [
  'import atexit, ctypes, gc, io, json, os, runpy, sys, threading, traceback',
  'def _retitle(argv):',
  // The process's command line (what ps and /proc/PID/cmdline show) becomes the one it runs, in the space the
  // launcher's own took: to the host it is the candidate's process, as a cold one would be, and a forked child too.
  '    try:',
  "        with open('/proc/self/stat', 'rb') as f:",
  '            stat = f.read()',
  "        fields = stat[stat.rindex(b')') + 2:].split()",
  '        start, end = int(fields[45]), int(fields[46])',
  "        title = b'\\0'.join(os.fsencode(a) for a in argv) + b'\\0'",
  "        ctypes.memmove(start, title[:end - start].ljust(end - start, b'\\0'), end - start)",
  '    except Exception:',
  '        pass',
  'def _warm():',
  '    modules, program, input_fd, ready_fd = sys.argv[1:5]',
  '    interpreter = sys.orig_argv[0]',
  '    script = sys.argv[5]',
  '    sys.argv[:] = sys.argv[5:]',
  '    sys.path[0] = os.path.dirname(os.path.abspath(script))',
  "    for name in modules.split(','):",
  '        if name:',
  '            try:',
  '                __import__(name)',
  '            except BaseException:',
  '                pass',
  // run_path's own first-use imports (pkgutil, typing), done here rather than on the candidate's time.
  '    try:',
  "        runpy.run_path(os.devnull, run_name='__warm__')",
  '    except BaseException:',
  '        pass',
  // What is loaded now is never garbage to the candidate's collections: they, and _finish's, see only its objects.
  '    gc.collect()',
  '    gc.freeze()',
  '    try:',
  "        os.write(int(ready_fd), b'R')",
  '        os.close(int(ready_fd))',
  '    except OSError:',
  '        pass',
  '    chunks = []',
  '    while True:',
  '        chunk = os.read(int(input_fd), 1 << 16)',
  '        if not chunk:',
  '            break',
  '        chunks.append(chunk)',
  '    os.close(int(input_fd))',
  // The input: the script's arguments (and the folder to work in) as one JSON line, then the program.
  "    head, _, code = b''.join(chunks).partition(b'\\n')",
  '    head = json.loads(head)',
  "    sys.argv[1:] = head['args']",
  "    if head.get('cwd'):",
  "        os.chdir(head['cwd'])",
  "        os.environ['HOME'] = head['cwd']",
  '    _retitle([interpreter] + sys.argv)',
  '    if program:',
  "        with open(program, 'wb') as f:",
  '            f.write(code)',
  '        os.chmod(program, 0o444)',
  '    return script',
  '_script = _warm()',
  'del _warm',
  'def _finish(code):',
  // What Py_Finalize does that a program can see (non-daemon threads joined, atexit handlers, every open file
  // flushed: after gc.freeze, collecting and listing objects touches only the candidate's), then the exit without
  // the interpreter's teardown (with numpy loaded, most of a quick program's cost).
  '    try:',
  '        threading._shutdown()',
  '    except BaseException:',
  '        pass',
  '    atexit._run_exitfuncs()',
  '    gc.collect()',
  '    for f in gc.get_objects():',
  '        if isinstance(f, io.IOBase):',
  '            try:',
  '                if not f.closed:',
  '                    f.flush()',
  '            except BaseException:',
  '                pass',
  '    for f in (sys.stdout, sys.stderr):',
  '        try:',
  '            f.flush()',
  '        except BaseException:',
  '            code = code or 120',
  // C libraries' stdio buffers (what a C extension printed) are flushed by exit(), not by _exit.
  '    try:',
  '        ctypes.CDLL(None).fflush(None)',
  '    except Exception:',
  '        pass',
  '    os._exit(code)',
  'try:',
  "    runpy.run_path(_script, run_name='__main__')",
  '    _code = 0',
  'except SystemExit as e:',
  '    if e.code is None:',
  '        _code = 0',
  '    elif isinstance(e.code, int):',
  '        _code = e.code & 0xFF',
  '    else:',
  '        print(e.code, file=sys.stderr)',
  '        _code = 1',
  'except BaseException as e:',
  '    tb = e.__traceback__',
  '    while tb is not None and tb.tb_frame.f_code.co_filename != _script:',
  '        tb = tb.tb_next',
  '    traceback.print_exception(type(e), e, tb or e.__traceback__)',
  '    _code = 1',
  '_finish(_code)',
].join('\n');

/** A command that can be warmed: an interpreter named python, python3 or python3.N running a script, and its arguments. */
export interface WarmableCommand {
  interpreter: string;
  script: string;
  args: string[];
}

export function warmableCommand(command: readonly string[]): WarmableCommand | null {
  const [interpreter, script, ...args] = command;
  if (interpreter === undefined || script === undefined) return null;
  if (!/^python(\d+(\.\d+)?)?$/.test(basename(interpreter))) return null;
  // Interpreter options (-u, -m, -c...) change how the script runs: those stay cold.
  if (script.startsWith('-') || !script.endsWith('.py')) return null;
  return { interpreter, script, args };
}

/**
 * The launcher's command: the same interpreter, the modules to import
 * ahead, where the program goes (null: nowhere), then the script; its
 * arguments come with the work (warmInput), so no idle process carries them.
 */
export function warmLauncherCommand(command: WarmableCommand, modules: readonly string[], programPath: string | null): string[] {
  return [
    command.interpreter,
    '-c',
    WARM_LAUNCHER,
    modules.join(','),
    programPath ?? '',
    String(WARM_INPUT_FD),
    String(WARM_READY_FD),
    command.script,
  ];
}

/**
 * What a warm process is handed: the script's arguments and, where it was
 * started elsewhere, the folder it works in (its HOME too) as one JSON line,
 * then the program's code (none for the trusted evaluator).
 */
export function warmInput(command: WarmableCommand, code: string, cwd?: string): Buffer {
  return Buffer.from(`${JSON.stringify({ args: command.args, ...(cwd !== undefined ? { cwd } : {}) })}\n${code}`, 'utf8');
}

/** The top-level modules a Python source imports (plain `import x` / `from x import` lines); at most a couple of dozen. */
export function modulesToWarm(...sources: readonly string[]): string[] {
  const names = new Set<string>();
  for (const source of sources) {
    for (const match of source.matchAll(/^(?:import|from)\s+([A-Za-z_][A-Za-z0-9_]*)/gm)) {
      const name = match[1] as string;
      // __future__ must be first in a file; importing it ahead changes nothing.
      if (name !== '__future__') names.add(name);
    }
  }
  return [...names].slice(0, MAX_WARMED_MODULES);
}

/**
 * What a warm candidate imports ahead: the initial program's
 * imports, its command's script's (another system's wrapper) and those of the
 * .py files of the task's read-only folders (another system's evaluator,
 * which runs in the candidate's process).
 */
export function candidateModulesToWarm(initialProgram: string, scriptOnHost: string | null, readOnlyDirs: readonly string[]): string[] {
  // The folders' own modules (our stand-in `openevolve`, a release's package) are left to the script: which one it
  // imports depends on the path it sets up, and one imported ahead from the launcher's path would be taken instead.
  const own = new Set(readOnlyDirs.flatMap(modulesIn));
  return modulesToWarm(
    initialProgram,
    ...(scriptOnHost ? readSmallSource(scriptOnHost) : []),
    ...readOnlyDirs.flatMap((dir) => topLevelPythonFiles(dir).flatMap(readSmallSource)),
  ).filter((name) => !own.has(name));
}

/** The top-level module names a folder provides: its x.py files and its folders (packages, or namespace packages). */
function modulesIn(dir: string): string[] {
  try {
    return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
      if (entry.isFile() && entry.name.endsWith('.py')) return [entry.name.slice(0, -'.py'.length)];
      return entry.isDirectory() ? [entry.name] : [];
    });
  } catch {
    return [];
  }
}

/** What a warm trusted evaluator imports ahead: its script's imports. */
export function trustedModulesToWarm(script: string): string[] {
  return modulesToWarm(...readSmallSource(script));
}

/** The modules of LEARNED_MODULES a candidate's code imports that `warmed` lacks. */
export function learnedModules(code: string, warmed: readonly string[]): string[] {
  return LEARNED_MODULES.filter((m) => !warmed.includes(m) && new RegExp(`^\\s*(?:import|from)\\s+${m}\\b`, 'm').test(code));
}

/** A Python source to read for its imports (absent or large: none). */
function readSmallSource(path: string): string[] {
  try {
    if (!existsSync(path)) return [];
    const text = readFileSync(path, 'utf8');
    return text.length <= 256 * 1024 ? [text] : [];
  } catch {
    return [];
  }
}

/** The .py files directly in a folder (a task folder's evaluator and helpers), at most a dozen. */
function topLevelPythonFiles(dir: string): string[] {
  try {
    return readdirSync(dir)
      .filter((name) => name.endsWith('.py'))
      .sort()
      .slice(0, 12)
      .map((name) => join(dir, name));
  } catch {
    return [];
  }
}

/** One process started ahead of need, waiting for its one piece of work. */
export interface WarmProcess<R> {
  /** Whether it has said it is warm. */
  readonly isReady: boolean;
  /** Whether it is gone already (killed, crashed before its work came): of no use. */
  readonly isGone: boolean;
  readonly ready: Promise<void>;
  /** Resolves once it is gone and what belongs to it is cleaned up. */
  readonly settled: Promise<void>;
  /** Hand it its work (data on WARM_INPUT_FD); the wall-clock limit starts now. Once only. */
  start(input: Buffer, signal?: AbortSignal): Promise<R>;
  /** Kill it unused. */
  discard(): void;
  /** Let it warm only with CPU nothing else wants (true), or at the priority of its work (false; once taken, always). */
  yieldCpu(yielding: boolean): void;
}

/** The niceness of a yielding warm process (the lowest priority). */
const YIELDING_NICENESS = 19;

/**
 * How a warm process yields the CPU: `share` sets its sandbox's CPU share,
 * `renice` (one process that starts no other while it waits, where a
 * priority can be raised again: as root) its niceness; neither: it cannot.
 */
export type WarmYield = { share: (yielding: boolean) => void } | { renice: true } | null;

/**
 * A process of `spec` (a command from warmLauncherCommand) started now,
 * whose work comes later: `finish` turns its outcome into the result (and
 * cleans up what belongs to it, also when it is discarded). While told
 * to, it yields the CPU as `yielder` can; once its work comes, no more.
 */
export function startWarmProcess<R>(
  spec: ProcessSpec,
  finish: (outcome: ProcessOutcome) => Promise<R>,
  yielder: WarmYield = null,
): WarmProcess<R> {
  const stopper = new AbortController();
  let give: (inputs: readonly { fd: number; data: Buffer }[]) => void = () => undefined;
  const inputs = new Promise<readonly { fd: number; data: Buffer }[]>((resolve) => (give = resolve));
  let markReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  let isReady = false;
  let isGone = false;
  let started = false;
  const signals = [stopper.signal, ...(spec.signal ? [spec.signal] : [])];
  let pid: number | null = null;
  let yielding = false;
  const ownPriority = yielder && 'renice' in yielder ? getPriority() : 0;
  const setYielding = (to: boolean): void => {
    if (to === yielding || !yielder) return;
    yielding = to;
    if ('share' in yielder) yielder.share(to);
    else if (pid !== null) {
      try {
        setPriority(pid, to ? YIELDING_NICENESS : ownPriority);
      } catch {
        // Gone already: nothing to change.
      }
    }
  };
  const outcome = runProcess({
    ...spec,
    onSpawn: (spawned) => {
      pid = spawned;
    },
    signal: AbortSignal.any(signals),
    startGate: { fds: [WARM_INPUT_FD], inputs },
    ready: {
      fd: WARM_READY_FD,
      onReady: () => {
        isReady = true;
        markReady();
      },
    },
  });
  const result = outcome.then((run) => {
    isGone = true;
    markReady();
    return finish(run);
  });
  // A discarded one's result is nobody's.
  const settled = result.then(
    () => undefined,
    () => undefined,
  );
  return {
    get isReady() {
      return isReady;
    },
    get isGone() {
      return isGone;
    },
    ready,
    settled,
    start(input: Buffer, signal?: AbortSignal): Promise<R> {
      if (started) throw new Error('a warm process runs one piece of work only');
      started = true;
      setYielding(false);
      if (signal) {
        if (signal.aborted) stopper.abort();
        else signal.addEventListener('abort', () => stopper.abort(), { once: true });
      }
      give([{ fd: WARM_INPUT_FD, data: input }]);
      return result;
    },
    discard(): void {
      started = true;
      stopper.abort();
    },
    yieldCpu(to: boolean): void {
      if (!started) setYielding(to);
    },
  };
}

/**
 * At most `size` warm processes waiting, each started when a WarmRefill
 * lets it (or all at once by warmed()): take() hands out the first that is
 * still alive, ready ones first, else one still warming (what it has done
 * is done); with none there it hands out none, and that candidate starts
 * cold, as without the pool.
 */
export class WarmPool<R> {
  private readonly idle: WarmProcess<R>[] = [];
  private closed = false;

  constructor(
    private readonly create: () => WarmProcess<R>,
    readonly size: number,
  ) {}

  /** The processes alive and waiting for work (ready or still warming). */
  get waiting(): number {
    this.prune();
    return this.idle.length;
  }

  /** Start one more where there is room; null when the pool is full or closed. */
  startOne(): WarmProcess<R> | null {
    if (this.closed) return null;
    this.prune();
    if (this.idle.length >= this.size) return null;
    const started = this.create();
    this.idle.push(started);
    return started;
  }

  take(): WarmProcess<R> | null {
    if (this.closed) throw new Error('the warm pool is closed');
    this.prune();
    const index = this.idle.findIndex((p) => p.isReady);
    const taken = (index >= 0 ? this.idle.splice(index, 1)[0] : this.idle.shift()) ?? null;
    // One still warming is now on a candidate's path.
    taken?.yieldCpu(false);
    return taken;
  }

  /** Let the waiting processes still warming use only CPU nothing else wants (true), or normal priority again. */
  yieldCpu(yielding: boolean): void {
    for (const p of this.idle) if (!p.isReady) p.yieldCpu(yielding);
  }

  /** Fill the pool now, whatever the CPU is doing, and resolve once every waiting process is warm (benches and tests that want it ready). */
  async warmed(): Promise<void> {
    while (this.startOne() !== null);
    await keepingAlive(Promise.all(this.idle.map((p) => p.ready)));
  }

  /** Kill the idle processes and wait until they are cleaned up. */
  async close(): Promise<void> {
    this.closed = true;
    const idle = this.idle.splice(0);
    for (const p of idle) p.discard();
    await Promise.all(idle.map((p) => p.settled));
  }

  private prune(): void {
    for (let i = this.idle.length - 1; i >= 0; i--) if ((this.idle[i] as WarmProcess<R>).isGone) this.idle.splice(i, 1);
  }
}

/** What WarmRefill needs of a pool. */
interface RefillablePool {
  readonly size: number;
  readonly waiting: number;
  startOne(): { readonly ready: Promise<void>; yieldCpu(yielding: boolean): void } | null;
  yieldCpu(yielding: boolean): void;
}

/**
 * Refills pools only with CPU that evaluations leave idle: a warm process
 * costs what a cold start costs (a little more), so it is worth having only
 * when it was warmed while nothing else needed the CPU (the LLM phase, the
 * last evaluations of a step). At most `cores - busy` processes warm at
 * once, busy being the evaluations under way or queued: none while they
 * fill the cores, and never a burst of starts that the next evaluations
 * would wait behind; and while any evaluation is under way, those still
 * warming yield the CPU to it (the one a candidate takes gets its priority
 * back at once). The pool with the fewest waiting goes first (a candidate
 * uses one of each).
 */
export class WarmRefill {
  private busy = 0;
  private warming = 0;
  private started = false;

  constructor(
    private readonly pools: readonly RefillablePool[],
    private readonly cores: number,
  ) {}

  /** Begin refilling (the warm processes' arguments can be built from now on). */
  start(): void {
    this.started = true;
    this.pump();
  }

  /** How many evaluations are under way or queued now. */
  setBusy(evaluations: number): void {
    const was = this.busy;
    this.busy = evaluations;
    if (was > 0 !== evaluations > 0) for (const pool of this.pools) pool.yieldCpu(evaluations > 0);
    this.pump();
  }

  private pump(): void {
    while (this.started && this.warming < this.cores - this.busy) {
      let pool: RefillablePool | null = null;
      for (const p of this.pools) if (p.waiting < p.size && (pool === null || p.waiting < pool.waiting)) pool = p;
      const started = pool?.startOne();
      if (!started) return;
      if (this.busy > 0) started.yieldCpu(true);
      this.warming++;
      // `ready` also resolves when the process died warming.
      void started.ready.then(() => {
        this.warming--;
        this.pump();
      });
    }
  }
}

/**
 * Await something a waiting warm process will settle: those do not keep
 * this process alive (runProcess unrefs them until their work comes), so
 * the wait itself does.
 */
export async function keepingAlive<T>(promise: Promise<T>): Promise<T> {
  const alive = setInterval(() => undefined, 60_000);
  try {
    return await promise;
  } finally {
    clearInterval(alive);
  }
}
