// Interpreters started ahead of need
// (docs/architecture.md "Warm interpreters"). A quick candidate spends most of its time in a fresh
// Python importing numpy; here that Python is started, confined and warmed
// before the candidate arrives: each warm process is one whole sandbox as a
// cold one would be (its own bwrap namespaces, cgroup, seccomp filter,
// limits and tmpfs), waiting with its modules imported for the one
// candidate it will ever run, and a new one is started in its place in the
// background. Nothing is shared between candidates: a warm process is used
// once and dies with its candidate. The trusted evaluator gets the same (a
// warm process per evaluation, outside the sandbox as before).
//
// The interpreter is a parameter (whatever the command names), so any
// command of the form `<python> <script.py> args...` can be warmed; any
// other command runs cold, as before.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { type ProcessOutcome, type ProcessSpec, runProcess } from './process';

/** Where a warm process reads its work (the candidate's code; empty for the trusted evaluator): the program descriptor bwrap would otherwise bind. */
export const WARM_INPUT_FD = 5;
/** Where a warm process says it has imported its modules (one byte). */
export const WARM_READY_FD = 7;
/** Modules imported ahead by every warm Python (ImportError ignored): the one nearly every task's program imports. */
const ALWAYS_WARMED = ['numpy'];
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

/** The top-level modules a Python source imports (plain `import x` / `from x import` lines), numpy first; at most a couple of dozen. */
export function modulesToWarm(...sources: readonly string[]): string[] {
  const names = new Set(ALWAYS_WARMED);
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
 * What a warm candidate imports ahead: numpy, the initial program's
 * imports, its command's script's (another system's wrapper) and those of the
 * .py files of the task's read-only folders (another system's evaluator,
 * which runs in the candidate's process).
 */
export function candidateModulesToWarm(initialProgram: string, scriptOnHost: string | null, readOnlyDirs: readonly string[]): string[] {
  return modulesToWarm(
    initialProgram,
    ...(scriptOnHost ? readSmallSource(scriptOnHost) : []),
    ...readOnlyDirs.flatMap((dir) => topLevelPythonFiles(dir).flatMap(readSmallSource)),
  );
}

/** What a warm trusted evaluator imports ahead: its script's imports (numpy only when it imports it: else it would only cost memory). */
export function trustedModulesToWarm(script: string): string[] {
  const source = readSmallSource(script);
  const numpy = source.some((text) => /^\s*(?:import|from)\s+numpy\b/m.test(text));
  return modulesToWarm(...source).filter((m) => m !== 'numpy' || numpy);
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
}

/**
 * A process of `spec` (a command from warmLauncherCommand) started now,
 * whose work comes later: `finish` turns its outcome into the result (and
 * cleans up what belongs to it, also when it is discarded).
 */
export function startWarmProcess<R>(spec: ProcessSpec, finish: (outcome: ProcessOutcome) => Promise<R>): WarmProcess<R> {
  const stopper = new AbortController();
  let give: (inputs: readonly { fd: number; data: Buffer }[]) => void = () => undefined;
  const inputs = new Promise<readonly { fd: number; data: Buffer }[]>((resolve) => (give = resolve));
  let markReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  let isReady = false;
  let isGone = false;
  let started = false;
  const signals = [stopper.signal, ...(spec.signal ? [spec.signal] : [])];
  const outcome = runProcess({
    ...spec,
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
  };
}

/**
 * `size` warm processes kept ready: take() hands out the first that is
 * still alive (ready ones first), and another is started in its place when
 * it is done; with none there, it starts one for the caller (a cold start,
 * as without the pool).
 */
export class WarmPool<R> {
  private readonly idle: WarmProcess<R>[] = [];
  private closed = false;

  constructor(
    private readonly create: () => WarmProcess<R>,
    readonly size: number,
  ) {}

  /** Start the pool's processes (also done by the first take()). */
  fill(): void {
    if (this.closed) return;
    for (let i = this.idle.length - 1; i >= 0; i--) if ((this.idle[i] as WarmProcess<R>).isGone) this.idle.splice(i, 1);
    while (this.idle.length < this.size) this.idle.push(this.create());
  }

  take(): WarmProcess<R> {
    if (this.closed) throw new Error('the warm pool is closed');
    this.fill();
    const index = this.idle.findIndex((p) => p.isReady && !p.isGone);
    const taken = index >= 0 ? this.idle.splice(index, 1)[0] : this.idle.shift();
    const chosen = taken && !taken.isGone ? taken : this.create();
    // Its replacement starts once it is done, not beside it: a warm-up would take CPU from the candidate it is for.
    void chosen.settled.then(() => this.fill());
    return chosen;
  }

  /** Resolves once every idle process is warm (benches measure a candidate that finds the pool ready). */
  async warmed(): Promise<void> {
    this.fill();
    await keepingAlive(Promise.all(this.idle.map((p) => p.ready)));
  }

  /** Kill the idle processes and wait until they are cleaned up. */
  async close(): Promise<void> {
    this.closed = true;
    const idle = this.idle.splice(0);
    for (const p of idle) p.discard();
    await Promise.all(idle.map((p) => p.settled));
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
