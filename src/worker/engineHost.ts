// The host side of the engine worker thread: spawns dist/engineWorker.js,
// sends it typed messages, validates everything it sends back
// (src/protocol/workerMessages.ts) and relays it to listeners. Queries are
// request/response with ids. No vscode import: the unit tests drive it too.
import { SHARE_ENV, Worker } from 'node:worker_threads';
import type { EngineEvent } from '../engine/common/events';
import {
  type HostToWorker,
  type LogLevel,
  parseQueryResult,
  parseWorkerToHost,
  type Query,
  type QueryKind,
  type QueryResult,
  type StartMessage,
  type WorkerToHost,
} from '../protocol/workerMessages';
import { errorMessage } from '../engine/common/errors';

export interface EngineHostOptions {
  /** dist/engineWorker.js, or the absolute path of src/worker/engineWorker.ts with execArgv ['--require', 'tsx/cjs']. */
  workerFile: string;
  execArgv?: string[];
  /** Longest wait for a query's reply (default 60 s). */
  queryTimeoutMs?: number;
}

export interface EngineHostListeners {
  event: (runId: string, event: EngineEvent) => void;
  /** `setting`: the setting to change (e.g. thetaevolve.endpoint), when one is the cause. */
  startFailed: (runId: string, message: string, setting: string | null) => void;
  runClosed: (runId: string) => void;
  log: (level: LogLevel, message: string) => void;
  /** The worker refused a message or sent a malformed one. */
  protocolError: (message: string) => void;
  /** The worker thread ended (crash or dispose); a run it held is over. */
  exit: (code: number, activeRunId: string | null) => void;
}

type ListenerSets = { [K in keyof EngineHostListeners]: Set<EngineHostListeners[K]> };

interface Pending {
  kind: QueryKind;
  resolve: (value: unknown) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

export type StartRequest = Omit<StartMessage, 'type'>;

/**
 * The worker's young generation, in MB (V8's default lets it grow past 32 MB):
 * a run's steps allocate texts fast, and a large young generation stays
 * resident as heap that is mostly garbage (about 25 MB of the worker holding
 * a paper-scale database; bench db-paper-scale). 12 MB is 4 MB semi-spaces;
 * 6 MB saved 7 MB more but slowed the step commit.
 */
export const WORKER_YOUNG_GENERATION_MB = 12;

export class EngineHost {
  private worker: Worker | null = null;
  private nextRequestId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly listeners: ListenerSets = {
    event: new Set(),
    startFailed: new Set(),
    runClosed: new Set(),
    log: new Set(),
    protocolError: new Set(),
    exit: new Set(),
  };
  /** The run the worker holds (from start until runClosed / startFailed / exit). */
  private runId: string | null = null;
  private disposed = false;
  /** Messages received from the worker so far: a query's timeout tells a slow worker from a stuck one by it. */
  private messagesReceived = 0;
  private restarts = 0;
  /** Workers whose end was already settled (a stuck one is settled when ended, before its exit event). */
  private readonly ended = new WeakSet<Worker>();

  constructor(private readonly options: EngineHostOptions) {}

  get activeRunId(): string | null {
    return this.runId;
  }

  /** Subscribe; returns the unsubscribe function. */
  on<K extends keyof EngineHostListeners>(kind: K, listener: EngineHostListeners[K]): () => void {
    const set = this.listeners[kind] as Set<EngineHostListeners[K]>;
    set.add(listener);
    return () => set.delete(listener);
  }

  start(request: StartRequest): void {
    if (this.runId !== null) throw new Error(`run ${this.runId} is still active: stop it first`);
    this.runId = request.runId;
    this.post({ type: 'start', ...request });
  }

  stop(): void {
    if (this.runId !== null) this.post({ type: 'stop' });
  }

  pause(): void {
    if (this.runId !== null) this.post({ type: 'pause' });
  }

  resume(): void {
    if (this.runId !== null) this.post({ type: 'resume' });
  }

  setTrainerEnabled(enabled: boolean): void {
    this.post({ type: 'setTrainerEnabled', enabled });
  }

  /** Ask the worker about a run database; the reply is validated against its kind's schema. */
  query<K extends QueryKind>(query: Extract<Query, { kind: K }>, options: { timeoutMs?: number } = {}): Promise<QueryResult<K>> {
    const requestId = this.nextRequestId++;
    const timeoutMs = options.timeoutMs ?? this.options.queryTimeoutMs ?? 60_000;
    return new Promise<QueryResult<K>>((resolve, reject) => {
      const postedAt = this.messagesReceived;
      const timer = setTimeout(() => {
        this.pending.delete(requestId);
        // Nothing at all from the worker meanwhile: its thread is stuck (sql.js is synchronous; a database may be
        // made to keep one query busy). It is ended, and the next request starts a fresh one, rather than spinning.
        const stuck = this.messagesReceived === postedAt && this.worker !== null;
        reject(
          new Error(
            `the engine worker did not answer the ${query.kind} query within ${timeoutMs} ms${stuck ? '; it was ended and starts afresh with the next request' : ''}`,
          ),
        );
        if (stuck) this.restartStuckWorker(query.kind, timeoutMs);
      }, timeoutMs);
      this.pending.set(requestId, { kind: query.kind, resolve: resolve as (v: unknown) => void, reject, timer });
      try {
        this.post({ type: 'query', requestId, query });
      } catch (err) {
        clearTimeout(timer);
        this.pending.delete(requestId);
        reject(err instanceof Error ? err : new Error(String(err)));
      }
    });
  }

  /** End a worker that answered nothing past a query's time; ensureWorker starts the next one. */
  private restartStuckWorker(kind: QueryKind, timeoutMs: number): void {
    const worker = this.worker;
    if (!worker) return;
    this.emit(
      'log',
      'error',
      `the engine worker sent nothing for ${timeoutMs} ms after a ${kind} query: ended, a new one starts with the next request`,
    );
    this.worker = null;
    this.restarts++;
    this.settleExit(worker, 1);
    void worker.terminate();
  }

  /** How many times a stuck worker was ended (the tests read it). */
  get workerRestarts(): number {
    return this.restarts;
  }

  /** Stop any run and end the thread. */
  async dispose(): Promise<void> {
    if (this.disposed) return;
    const worker = this.worker;
    if (worker && this.runId !== null) {
      // Give the run a moment to abandon its step and close its sandbox.
      const closed = new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 3000);
        const off = this.on('runClosed', () => {
          clearTimeout(timer);
          off();
          resolve();
        });
      });
      worker.postMessage({ type: 'stop' } satisfies HostToWorker);
      await closed;
    }
    this.disposed = true;
    this.worker = null;
    await worker?.terminate();
  }

  private ensureWorker(): Worker {
    if (this.disposed) throw new Error('the engine worker was shut down');
    if (this.worker) return this.worker;
    // The host's environment as it is when a run starts (SLURM_CONF, PATH for SLURM's tools), not a copy from when the thread was made.
    const worker = new Worker(this.options.workerFile, {
      execArgv: this.options.execArgv ?? [],
      resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB },
      env: SHARE_ENV,
      stdout: false,
      stderr: false,
    });
    worker.on('message', (raw: unknown) => {
      if (this.worker !== worker) return;
      this.messagesReceived++;
      this.receive(raw);
    });
    worker.on('error', (err: Error) => {
      this.emit('log', 'error', `engine worker crashed: ${err.message}`);
    });
    worker.on('exit', (code: number) => this.settleExit(worker, code));
    // An idle worker must not keep a CLI or test process alive.
    worker.unref();
    this.worker = worker;
    return worker;
  }

  /** A worker is gone: what it held is over, every query waiting on it fails. Once per worker. */
  private settleExit(worker: Worker, code: number): void {
    if (this.ended.has(worker)) return;
    this.ended.add(worker);
    if (this.worker === worker) this.worker = null;
    const held = this.runId;
    this.runId = null;
    for (const [id, pending] of this.pending) {
      clearTimeout(pending.timer);
      pending.reject(new Error(`the engine worker exited (code ${code}) before answering`));
      this.pending.delete(id);
    }
    if (!this.disposed) this.emit('exit', code, held);
  }

  private post(message: HostToWorker): void {
    this.ensureWorker().postMessage(message);
  }

  private emit<K extends keyof EngineHostListeners>(kind: K, ...args: Parameters<EngineHostListeners[K]>): void {
    for (const listener of [...this.listeners[kind]]) {
      try {
        (listener as (...a: Parameters<EngineHostListeners[K]>) => void)(...args);
      } catch (err) {
        if (kind !== 'log') this.emit('log', 'error', `listener of ${kind} failed: ${errorMessage(err)}`);
      }
    }
  }

  private receive(raw: unknown): void {
    let message: WorkerToHost;
    try {
      message = parseWorkerToHost(raw);
    } catch (err) {
      const text = errorMessage(err);
      this.emit('protocolError', text);
      this.emit('log', 'error', text);
      return;
    }
    switch (message.type) {
      case 'ready':
        return;
      case 'event':
        return this.emit('event', message.runId, message.event);
      case 'startFailed':
        if (this.runId === message.runId) this.runId = null;
        return this.emit('startFailed', message.runId, message.message, message.setting);
      case 'runClosed':
        if (this.runId === message.runId) this.runId = null;
        return this.emit('runClosed', message.runId);
      case 'log':
        return this.emit('log', message.level, message.message);
      case 'reply': {
        const pending = this.pending.get(message.requestId);
        if (!pending) return;
        this.pending.delete(message.requestId);
        clearTimeout(pending.timer);
        if (!message.ok) {
          pending.reject(new Error(message.error));
          return;
        }
        try {
          pending.resolve(parseQueryResult(pending.kind, message.result));
        } catch (err) {
          pending.reject(err instanceof Error ? err : new Error(String(err)));
        }
        return;
      }
      case 'protocolError': {
        const pending = message.requestId !== null ? this.pending.get(message.requestId) : undefined;
        if (pending && message.requestId !== null) {
          this.pending.delete(message.requestId);
          clearTimeout(pending.timer);
          pending.reject(new Error(message.message));
        }
        this.emit('protocolError', message.message);
        return;
      }
    }
  }
}
