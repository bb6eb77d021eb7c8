// What the protocol-faithful trainer test servers (atropos, slime) share: an
// HTTP listener that can go down and come back on the same port, JSON / 422
// helpers in FastAPI's shapes, and the outage machinery around the one
// endpoint that takes rollouts: a fault script drawn per arrival (503, resets
// before or after storing, held replies, down windows, restarts), an epoch
// counted per restart, and goDown / comeUp / downFor / restart / close. Each
// server keeps its own routes and state and tells this class how to reset
// them (and stop / start its simulated trainer) around a restart.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { z } from 'zod';

/** What a listener does with one request; the listener can go down and come back on the same port. */
export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void;

export class RestartableListener {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  private boundPort: number;

  constructor(
    private readonly handler: RequestHandler,
    private readonly host: string,
    port: number,
  ) {
    this.boundPort = port;
  }

  get port(): number {
    return this.boundPort;
  }

  get isUp(): boolean {
    return this.server !== null;
  }

  async up(): Promise<void> {
    if (this.server) return;
    const server = createServer(this.handler);
    server.keepAliveTimeout = 5_000;
    server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.boundPort, this.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.boundPort = (server.address() as AddressInfo).port;
    this.server = server;
  }

  /** Stop listening and drop every connection: clients see refused connections. */
  async down(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = null;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      for (const socket of this.sockets) socket.destroy();
    });
  }
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** FastAPI's 422 body. */
export function sendValidationError(res: ServerResponse, loc: (string | number)[], msg: string): void {
  sendJson(res, 422, { detail: [{ type: 'value_error', loc: ['body', ...loc], msg, input: null }] });
}

export function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', () => resolve(''));
  });
}

/** A 4xx refusal a server keeps for tests to inspect. */
export interface Refusal {
  status: number;
  body: unknown;
}

/**
 * Parse a JSON body against a schema; answers 422 (as FastAPI) and returns null when it does not fit.
 * With `refused`, the refusal is also recorded there (the first 200 characters of a body that is not JSON).
 */
export function parseBody<T>(res: ServerResponse, text: string, schema: z.ZodType<T>, refused?: Refusal[]): T | null {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    refused?.push({ status: 422, body: text.slice(0, 200) });
    sendValidationError(res, [0], 'JSON decode error');
    return null;
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    refused?.push({ status: 422, body: json });
    sendValidationError(
      res,
      (issue?.path ?? []).map((p) => (typeof p === 'number' ? p : String(p))),
      issue?.message ?? 'invalid',
    );
    return null;
  }
  return parsed.data;
}

export type DataFault =
  | 'ok'
  | 'unavailable' // 503, nothing stored
  | 'error' // 500 (what the real slime buffer answers to a write it cannot take), nothing stored
  | 'invalid' // 422 in FastAPI's shape (a payload the server's model refuses), nothing stored
  | 'reset' // connection destroyed before anything is stored
  | 'reset_after_store' // stored, then the connection is destroyed: the client cannot know
  | 'hold_after_store' // stored, the reply never comes (until the client gives up or dies)
  | 'hold_before_store' // nothing stored, the reply never comes
  | 'down' // nothing stored; the server goes down (connections refused) for downWindowMs
  | 'restart'; // nothing stored; the server restarts, losing every in-memory state

export interface FaultyTrainerServerOptions {
  host?: string;
  port?: number;
  /** Arrival k (in order, across restarts) gets script[k]; 'ok' after the script. */
  script?: readonly DataFault[];
  /** How long a 'down' fault keeps the server down (default 800 ms). */
  downWindowMs?: number;
}

/** What a server does around restart(): a simulated trainer stops before going down and starts after coming up. */
export interface RestartHooks {
  beforeDown?: () => void;
  /** Lose every in-memory state (while down). */
  reset: () => void;
  afterUp?: () => void;
}

/** The part of a trainer test server's interface that FaultyTrainerServer.expose() provides. */
export interface FaultyTrainerApi {
  readonly url: string;
  readonly port: number;
  readonly epoch: number;
  goDown(): Promise<void>;
  comeUp(): Promise<void>;
  downFor(ms: number): Promise<void>;
  restart(downMs?: number): Promise<void>;
  close(): Promise<void>;
}

export class FaultyTrainerServer {
  private readonly listener: RestartableListener;
  private readonly host: string;
  private readonly script: readonly DataFault[];
  /** Replies the held faults never send; destroyed when the server goes down. */
  private readonly held = new Set<ServerResponse>();
  private arrivals = 0;
  private restarts = 0;
  private closed = false;

  /** Not listening yet: comeUp() starts it. A handler that throws answers 500. */
  constructor(
    handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
    private readonly options: FaultyTrainerServerOptions,
    private readonly hooks: RestartHooks,
  ) {
    this.host = options.host ?? '127.0.0.1';
    this.script = options.script ?? [];
    this.listener = new RestartableListener(
      (req, res) => {
        handle(req, res).catch((error: unknown) => {
          if (!res.headersSent && !res.destroyed) sendJson(res, 500, { detail: String(error) });
        });
      },
      this.host,
      options.port ?? 0,
    );
  }

  get url(): string {
    return `http://${this.host}:${this.listener.port}`;
  }

  get port(): number {
    return this.listener.port;
  }

  /** How many restarts the server has gone through. */
  get epoch(): number {
    return this.restarts;
  }

  get isUp(): boolean {
    return this.listener.isUp;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** One more request to the faulty endpoint: tells `notify` its arrival index, then draws its fault (a fault `notify` returns wins). */
  arrive(notify?: (index: number) => DataFault | undefined | void): DataFault {
    const index = this.arrivals++;
    const chosen = notify?.(index);
    return chosen ?? this.script[index] ?? 'ok';
  }

  /** The faults that strike before anything is stored; true when the request is dealt with. */
  beforeStore(fault: DataFault, req: IncomingMessage, res: ServerResponse): boolean {
    switch (fault) {
      case 'unavailable':
        sendJson(res, 503, { detail: 'Service Unavailable' });
        return true;
      case 'error':
        sendJson(res, 500, { detail: 'Write failed' });
        return true;
      case 'invalid':
        sendValidationError(res, ['tokens'], 'Input should be a valid list');
        return true;
      case 'reset':
        req.socket.destroy();
        return true;
      case 'hold_before_store':
        this.held.add(res);
        return true;
      case 'down':
        void this.downFor(this.options.downWindowMs ?? 800);
        return true;
      case 'restart':
        void this.restart(200);
        return true;
      default:
        return false;
    }
  }

  /** The faults that strike once the request is stored; true when the request is dealt with. */
  afterStore(fault: DataFault, req: IncomingMessage, res: ServerResponse): boolean {
    if (fault === 'reset_after_store') {
      req.socket.destroy();
      return true;
    }
    if (fault === 'hold_after_store') {
      this.held.add(res);
      return true;
    }
    return false;
  }

  async goDown(): Promise<void> {
    this.dropHeld();
    await this.listener.down();
  }

  async comeUp(): Promise<void> {
    if (!this.closed) await this.listener.up();
  }

  /** Down now, back after ms. */
  async downFor(ms: number): Promise<void> {
    await this.goDown();
    setTimeout(() => void this.comeUp(), ms);
  }

  /** Down and up again with every in-memory state lost; the epoch counts it. */
  async restart(downMs = 0): Promise<void> {
    this.hooks.beforeDown?.();
    await this.goDown();
    this.hooks.reset();
    this.restarts++;
    if (downMs > 0) await new Promise((r) => setTimeout(r, downMs));
    await this.comeUp();
    this.hooks.afterUp?.();
  }

  /** For good: comeUp() does nothing after it. The server stops its own timers first. */
  async close(): Promise<void> {
    this.closed = true;
    await this.goDown();
  }

  /**
   * Make `api` the server's face: url, port and epoch read live from here, every other getter from `getters`,
   * and the outage methods; close() first runs `stopTimers` (the server's simulated trainer).
   */
  expose<T extends FaultyTrainerApi>(api: T, getters: { [K in keyof T]?: () => T[K] }, stopTimers: () => void): void {
    const properties: PropertyDescriptorMap = {
      url: { get: () => this.url },
      port: { get: () => this.port },
      epoch: { get: () => this.epoch },
    };
    for (const [name, get] of Object.entries(getters)) properties[name] = { get: get as () => unknown };
    Object.defineProperties(api, properties);
    const methods: Pick<FaultyTrainerApi, 'goDown' | 'comeUp' | 'downFor' | 'restart' | 'close'> = {
      goDown: () => this.goDown(),
      comeUp: () => this.comeUp(),
      downFor: (ms) => this.downFor(ms),
      restart: (downMs) => this.restart(downMs),
      close: async () => {
        stopTimers();
        await this.close();
      },
    };
    Object.assign(api, methods);
  }

  private dropHeld(): void {
    for (const res of this.held) res.destroy();
    this.held.clear();
  }
}
