// A local atropos API server for tests, faithful to NousResearch/atropos
// atroposlib/api/server.py: /register (the trainer), /register-env ("wait for
// trainer to start" until the trainer polled /batch), /scored_data,
// /scored_data_list, /batch (exact batches of batch_size sequences; the step
// counter advances per batch), /status, /status-env (env id in a JSON body;
// 500 for an unknown env, as the real IndexError), /latest_example, /info,
// /disconnect-env, /reset_data. Everything lives in memory, as there, with
// the real server's quirks: /batch before the trainer's /register answers
// 200 {"status": "error"}; a /scored_data before /register creates the queue,
// after which /register never initialises (wedged: /batch errors forever);
// a group of another size than the env's group_size is buffered and merged
// with others only when sizes sum to it, and the merged pieces are batched
// only in packs of the largest group size (never with full groups); shapes
// are not checked (a wrong-length mask is taken; `problem` records it for
// tests); /status-env for an unknown env id is a 500 (IndexError).
// Faults: a script per /scored_data request (503, connection reset before or
// after storing, a reply held forever after storing), down windows
// (connection refused), and restart() that loses all state. An optional
// simulated trainer registers itself and polls /batch.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import { type DataFault, FaultyTrainerServer, parseBody, readBody, type Refusal, sendJson } from './faultyTrainerServer';

const RegisterSchema = z.object({
  wandb_group: z.string(),
  wandb_project: z.string(),
  batch_size: z.number().int(),
  max_token_len: z.number().int(),
  checkpoint_dir: z.string(),
  save_checkpoint_interval: z.number().int(),
  starting_step: z.number().int(),
  num_steps: z.number().int(),
});
const RegisterEnvSchema = z.object({
  max_token_length: z.number().int(),
  desired_name: z.string(),
  weight: z.number(),
  group_size: z.number().int(),
  min_batch_allocation: z.number().nullish(),
});
const EnvIdentifierSchema = z.object({ env_id: z.number().int() });
const MessageSchema = z.looseObject({ role: z.string(), content: z.unknown() });
export const ScoredDataSchema = z.object({
  tokens: z.array(z.array(z.number().int())),
  masks: z.array(z.array(z.number().int())),
  scores: z.array(z.number()),
  advantages: z.array(z.array(z.number())).nullish(),
  ref_logprobs: z.array(z.array(z.number())).nullish(),
  messages: z.array(z.array(MessageSchema)).nullish(),
  generation_params: z.record(z.string(), z.unknown()).nullish(),
  inference_logprobs: z.array(z.array(z.number())).nullish(),
  overrides: z.array(z.record(z.string(), z.unknown())).nullish(),
  group_overrides: z.record(z.string(), z.unknown()).nullish(),
  images: z.unknown().optional(),
  env_id: z.number().int().nullish(),
});
export type ScoredData = z.infer<typeof ScoredDataSchema>;

/** The shape checks the real server leaves to the trainer: why the group is malformed, or null. */
export function scoredDataProblem(data: ScoredData): { loc: (string | number)[]; msg: string } | null {
  const n = data.tokens.length;
  if (n === 0) return { loc: ['tokens'], msg: 'empty group' };
  if (data.masks.length !== n) return { loc: ['masks'], msg: `${data.masks.length} masks for ${n} sequences` };
  if (data.scores.length !== n) return { loc: ['scores'], msg: `${data.scores.length} scores for ${n} sequences` };
  if (data.messages && data.messages.length !== n)
    return { loc: ['messages'], msg: `${data.messages.length} message lists for ${n} sequences` };
  for (let i = 0; i < n; i++) {
    const tokens = data.tokens[i] as number[];
    const masks = data.masks[i] as number[];
    if (masks.length !== tokens.length) return { loc: ['masks', i], msg: `mask length ${masks.length} != token length ${tokens.length}` };
    let trained = 0;
    for (let j = 0; j < tokens.length; j++) {
      const m = masks[j] as number;
      if (m === -100) continue;
      if (m !== tokens[j]) return { loc: ['masks', i, j], msg: `mask ${m} is neither -100 nor the token ${tokens[j]}` };
      trained++;
    }
    if (trained === 0) return { loc: ['masks', i], msg: 'no completion token to train on' };
    // Prompt first, completion after: no masked position after a trained one.
    const firstTrained = masks.findIndex((m) => m !== -100);
    if (masks.slice(firstTrained).some((m) => m === -100))
      return { loc: ['masks', i], msg: 'a masked position after the completion started' };
    if (data.inference_logprobs) {
      const lp = data.inference_logprobs[i];
      if (!lp || lp.length !== tokens.length)
        return { loc: ['inference_logprobs', i], msg: `logprob length ${lp?.length ?? 0} != token length ${tokens.length}` };
      for (let j = 0; j < tokens.length; j++) {
        const v = lp[j] as number;
        if (masks[j] === -100 ? v !== 1.0 : !(v <= 0))
          return {
            loc: ['inference_logprobs', i, j],
            msg: `logprob ${v} at a ${masks[j] === -100 ? 'prompt (want 1.0)' : 'completion (want <= 0)'} position`,
          };
      }
    }
  }
  if (data.inference_logprobs && data.inference_logprobs.length !== n)
    return { loc: ['inference_logprobs'], msg: 'one logprob list per sequence' };
  return null;
}

function describeProblem(problem: { loc: (string | number)[]; msg: string } | null): string | null {
  return problem ? `${problem.loc.join('.')}: ${problem.msg}` : null;
}

export interface ScoredDataRecord {
  data: ScoredData;
  at: number;
  /** How many restarts the server had gone through when it took this. */
  epoch: number;
  /** Queued for the trainer, or buffered as a mixed-size group. */
  status: 'received' | 'buffered';
  /** What is wrong with its shapes (the real server takes it anyway), or null. */
  problem: string | null;
}

export interface AtroposTestServerOptions {
  host?: string;
  port?: number;
  /** Simulated trainer: registers itself, then polls /batch every pollMs. Null: an external trainer drives /register and /batch. */
  trainer?: { batchSize: number; pollMs?: number; startDelayMs?: number; restartDelayMs?: number } | null;
  /** /scored_data request k (arrival order, across restarts) gets script[k]; 'ok' after the script. */
  script?: readonly DataFault[];
  /** How long a 'down' fault keeps the server down (default 800 ms). */
  downWindowMs?: number;
}

export interface AtroposTestServer {
  readonly url: string;
  readonly port: number;
  /** Every /scored_data the server took, across restarts (what the trainer side saw). */
  readonly received: readonly ScoredDataRecord[];
  /** 4xx refusals of /scored_data. */
  readonly refused: readonly { status: number; body: unknown }[];
  readonly registrations: readonly z.infer<typeof RegisterEnvSchema>[];
  /** Batches the trainer pulled with /batch, in order, across restarts. */
  readonly batches: readonly ScoredData[][];
  /** /disconnect-env calls (env ids). */
  readonly disconnects: readonly number[];
  /** /batch answered "Trainer not registered" (the wedge) this many times. */
  readonly notRegisteredBatches: number;
  readonly currentStep: number;
  readonly epoch: number;
  readonly counters: { scoredRequests: number; statusEnvRequests: number; latestExampleRequests: number };
  /** Called after each trainer step with the new step. */
  onTrainerStep: ((step: number) => void) | null;
  /** Called when a /scored_data request arrives (before its fault), with its arrival index. */
  onScoredData: ((index: number) => void) | null;
  goDown(): Promise<void>;
  comeUp(): Promise<void>;
  /** Down now, back after ms. */
  downFor(ms: number): Promise<void>;
  /** Down and up again with every in-memory state lost (the simulated trainer re-registers at its last step). */
  restart(downMs?: number): Promise<void>;
  close(): Promise<void>;
}

interface EnvEntry {
  max_context_len: number;
  weight: number;
  desired_name: string;
  real_name: string;
  registered_id: number;
  connected: boolean;
  group_size: number;
}

interface AppState {
  /** app.state.queue exists (created by /register, or by a /scored_data before it). */
  hasQueue: boolean;
  /** /register initialised the app (app.state.started exists). */
  registered: boolean;
  started: boolean;
  batchSize: number;
  maxTokenLen: number;
  step: number;
  numSteps: number;
  checkpointDir: string;
  checkpointInterval: number;
  queue: ScoredData[];
  currBatch: ScoredData[][];
  buffer: Map<number, ScoredData[]>;
  envs: EnvEntry[] | null;
  latest: ScoredData | null;
}

function freshState(): AppState {
  return {
    hasQueue: false,
    registered: false,
    started: false,
    batchSize: -1,
    maxTokenLen: -1,
    step: 0,
    numSteps: -1,
    checkpointDir: '',
    checkpointInterval: 0,
    queue: [],
    currBatch: [],
    buffer: new Map(),
    envs: null,
    latest: null,
  };
}

/** atropos' find_groups_summing_to_target: FIFO first, then any subset (earliest indices preferred). */
function findGroupsSummingTo(buffer: ScoredData[], target: number): number[] {
  let sum = 0;
  const fifo: number[] = [];
  for (const [i, g] of buffer.entries()) {
    if (sum + g.tokens.length <= target) {
      fifo.push(i);
      sum += g.tokens.length;
      if (sum === target) return fifo;
    }
  }
  const sizes = buffer.map((g) => g.tokens.length);
  const dp: boolean[][] = [Array.from({ length: target + 1 }, (_, j) => j === 0)];
  for (let i = 1; i <= sizes.length; i++) {
    const prev = dp[i - 1] as boolean[];
    dp.push(prev.map((can, j) => can || (j >= (sizes[i - 1] as number) && (prev[j - (sizes[i - 1] as number)] as boolean))));
  }
  if (!(dp[sizes.length] as boolean[])[target]) return [];
  const picked: number[] = [];
  let j = target;
  for (let i = sizes.length; i > 0; i--) {
    const size = sizes[i - 1] as number;
    if (j >= size && (dp[i - 1] as boolean[])[j - size]) {
      picked.push(i - 1);
      j -= size;
    }
  }
  return picked.sort((a, b) => a - b);
}

/**
 * atropos' grab_exact_from_heterogeneous_queue: groups are packed by size
 * into packs of the largest group size, and a batch is taken from whole
 * packs in queue order (a short group alone never makes a pack).
 */
function grabExact(queue: ScoredData[], batchSize: number): ScoredData[] | null {
  if (queue.length === 0) return null;
  const lengths = queue.map((q) => q.tokens.length);
  if (lengths.reduce((a, b) => a + b, 0) < batchSize) return null;
  const maxSize = Math.max(...lengths);
  const storage = new Map<number, number[]>();
  const packed: number[] = [];
  for (const [i, size] of lengths.entries()) {
    const bucket = storage.get(size) ?? [];
    bucket.push(i);
    storage.set(size, bucket);
    if (bucket.length * size === maxSize) {
      packed.push(...bucket);
      storage.set(size, []);
    }
  }
  if (packed.reduce((a, i) => a + (lengths[i] as number), 0) < batchSize) return null;
  const taken: number[] = [];
  let running = 0;
  for (const i of packed) {
    taken.push(i);
    running += lengths[i] as number;
    if (running === batchSize) break;
    if (running > batchSize) return null;
  }
  if (running !== batchSize) return null;
  const batch = taken.map((i) => queue[i] as ScoredData);
  const takenSet = new Set(taken);
  const rest = queue.filter((_, i) => !takenSet.has(i));
  queue.splice(0, queue.length, ...rest);
  return batch;
}

export async function startAtroposTestServer(options: AtroposTestServerOptions = {}): Promise<AtroposTestServer> {
  let state = freshState();
  const received: ScoredDataRecord[] = [];
  const refused: Refusal[] = [];
  const registrations: z.infer<typeof RegisterEnvSchema>[] = [];
  const batches: ScoredData[][] = [];
  const disconnects: number[] = [];
  let notRegisteredBatches = 0;
  const counters = { scoredRequests: 0, statusEnvRequests: 0, latestExampleRequests: 0 };
  let trainerTimer: NodeJS.Timeout | null = null;
  let lastTrainerStep = 0;

  const api: AtroposTestServer = {
    onTrainerStep: null,
    onScoredData: null,
  } as AtroposTestServer;

  /** _process_scored_data: creates the queue if there is none (the wedge when it comes before /register). */
  function takeScored(data: ScoredData): { status: ScoredDataRecord['status']; bufferSize?: number } {
    state.hasQueue = true;
    const envId = data.env_id;
    const envs = state.envs ?? [];
    const env = envId !== null && envId !== undefined && envId < envs.length ? envs[envId] : undefined;
    if (env && data.tokens.length !== env.group_size) {
      const buf = state.buffer.get(envId as number) ?? [];
      buf.push(data);
      state.buffer.set(envId as number, buf);
      const picked = findGroupsSummingTo(buf, env.group_size);
      if (picked.length > 0) {
        const moved = picked.map((i) => buf[i] as ScoredData);
        for (const i of [...picked].reverse()) buf.splice(i, 1);
        for (const g of moved) {
          state.queue.push(g);
          state.latest = g;
        }
      }
      return { status: 'buffered', bufferSize: buf.reduce((a, g) => a + g.tokens.length, 0) };
    }
    state.queue.push(data);
    state.latest = data;
    return { status: 'received' };
  }

  /** /register: initialises only when no queue exists yet. */
  function registerTrainer(body: z.infer<typeof RegisterSchema>): void {
    if (state.hasQueue) return;
    state.hasQueue = true;
    state.registered = true;
    state.started = false;
    state.queue = [];
    state.currBatch = [];
    state.envs = [];
    state.buffer = new Map();
    state.batchSize = body.batch_size;
    state.maxTokenLen = body.max_token_len;
    state.step = body.starting_step;
    state.checkpointDir = body.checkpoint_dir;
    state.checkpointInterval = body.save_checkpoint_interval;
    state.numSteps = body.num_steps;
  }

  /** /batch: null is the "Trainer not registered" error; otherwise the batch or nothing yet. */
  function batch(): { batch: ScoredData[] | null } | null {
    if (!state.registered) {
      notRegisteredBatches++;
      return null;
    }
    state.started = true;
    if (state.currBatch.length > 0) return { batch: state.currBatch.pop() as ScoredData[] };
    const formed: ScoredData[][] = [];
    for (let b = grabExact(state.queue, state.batchSize); b; b = grabExact(state.queue, state.batchSize)) formed.push(b);
    if (formed.length === 0) return { batch: null };
    state.step += formed.length;
    state.currBatch.push(...formed);
    return { batch: state.currBatch.pop() as ScoredData[] };
  }

  function startTrainer(): void {
    const trainer = options.trainer;
    if (!trainer || server.isClosed) return;
    const begin = () => {
      if (server.isClosed) return;
      registerTrainer({
        wandb_group: 'test',
        wandb_project: 'test',
        batch_size: trainer.batchSize,
        max_token_len: 32768,
        checkpoint_dir: '',
        save_checkpoint_interval: 0,
        starting_step: lastTrainerStep,
        num_steps: 1000,
      });
      const poll = () => {
        if (!server.isUp) return;
        const before = state.step;
        const pulled = batch()?.batch;
        if (pulled) batches.push(pulled);
        if (state.step !== before) {
          lastTrainerStep = state.step;
          api.onTrainerStep?.(state.step);
        }
      };
      poll(); // the trainer's first /batch: from now on environments may register
      trainerTimer = setInterval(poll, trainer.pollMs ?? 20);
    };
    const delay = server.epoch > 0 ? (trainer.restartDelayMs ?? 0) : (trainer.startDelayMs ?? 0);
    if (delay > 0) trainerTimer = setTimeout(begin, delay);
    else begin();
  }

  function stopTrainer(): void {
    if (trainerTimer) {
      clearInterval(trainerTimer);
      clearTimeout(trainerTimer);
    }
    trainerTimer = null;
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const route = `${req.method ?? ''} ${url.pathname}`;
    const text = await readBody(req);
    switch (route) {
      case 'GET /':
        return sendJson(res, 200, { message: 'AtroposLib API' });
      case 'POST /register': {
        const body = parseBody(res, text, RegisterSchema);
        if (!body) return;
        registerTrainer(body);
        return sendJson(res, 200, { uuid: Math.floor(Math.random() * 2 ** 48) });
      }
      case 'POST /register-env': {
        const body = parseBody(res, text, RegisterEnvSchema);
        if (!body) return;
        if (!state.started) return sendJson(res, 200, { status: 'wait for trainer to start' });
        registrations.push(body);
        state.envs ??= [];
        const sameName = state.envs.filter((e) => e.desired_name === body.desired_name).length;
        const id = state.envs.length;
        state.envs.push({
          max_context_len: body.max_token_length,
          weight: body.weight,
          desired_name: body.desired_name,
          real_name: `${body.desired_name}_${sameName}`,
          registered_id: id,
          connected: true,
          group_size: body.group_size,
        });
        return sendJson(res, 200, {
          status: 'success',
          env_id: id,
          wandb_name: `${body.desired_name}_${sameName}`,
          checkpoint_dir: state.checkpointDir,
          starting_step: state.step,
          checkpoint_interval: state.checkpointInterval,
          num_steps: state.numSteps,
        });
      }
      case 'POST /disconnect-env': {
        const body = parseBody(res, text, EnvIdentifierSchema);
        if (!body) return;
        disconnects.push(body.env_id);
        const env = state.envs?.[body.env_id];
        if (!env) return sendJson(res, 200, { status: 'failure', error: 'list index out of range' });
        env.connected = false;
        return sendJson(res, 200, { status: 'success' });
      }
      case 'GET /info':
        return sendJson(
          res,
          200,
          state.registered ? { batch_size: state.batchSize, max_token_len: state.maxTokenLen } : { batch_size: -1, max_token_len: -1 },
        );
      case 'GET /batch': {
        const b = batch();
        if (!b) return sendJson(res, 200, { status: 'error', message: 'Trainer not registered. Call /register first.', batch: [] });
        if (b.batch) batches.push(b.batch);
        return sendJson(res, 200, b);
      }
      case 'GET /latest_example':
        counters.latestExampleRequests++;
        return sendJson(
          res,
          200,
          state.latest ?? {
            tokens: [],
            masks: [],
            scores: [],
            advantages: [],
            ref_logprobs: [],
            generation_params: [],
            inference_logprobs: [],
            messages: [],
            images: [],
          },
        );
      case 'GET /status':
        return sendJson(res, 200, { current_step: state.registered ? state.step : 0, queue_size: state.queue.length });
      case 'GET /status-env': {
        counters.statusEnvRequests++;
        const body = parseBody(res, text, EnvIdentifierSchema);
        if (!body) return;
        const env = state.envs?.[body.env_id];
        // The real server raises AttributeError / IndexError (no envs, an unknown env, e.g. after a restart): 500.
        if (!env || !state.envs) return (res.writeHead(500, { 'content-type': 'text/plain' }), void res.end('Internal Server Error'));
        const total = state.envs.filter((e) => e.connected).reduce((a, e) => a + e.max_context_len * Math.max(0, e.weight), 0);
        if (total === 0) return (res.writeHead(500, { 'content-type': 'text/plain' }), void res.end('Internal Server Error'));
        let groupSize = env.group_size;
        let own = 0;
        let others = 0;
        let maxGroup = 1;
        for (const q of state.queue) {
          maxGroup = Math.max(maxGroup, q.tokens.length);
          if (q.env_id === body.env_id) {
            groupSize = Math.max(groupSize, q.tokens.length);
            own += q.tokens.length;
          } else others += q.tokens.length;
        }
        env.group_size = groupSize;
        const fromOthers = maxGroup > 1 ? Math.ceil(others / maxGroup) * maxGroup : 0;
        return sendJson(res, 200, {
          current_step: state.step,
          queue_size: Math.floor((own + fromOthers) / groupSize),
          unallocated_fraction: 1.0,
          self_queue_size: Math.floor(own / groupSize),
          max_group_size: maxGroup,
          env_weight: Math.max(0.01, (env.max_context_len * env.weight) / total),
        });
      }
      case 'GET /reset_data':
        state = freshState();
        res.writeHead(200, { 'content-type': 'text/plain' });
        return void res.end('Reset successful');
      case 'POST /scored_data_list': {
        const body = parseBody(res, text, z.array(ScoredDataSchema));
        if (!body) return;
        for (const data of body)
          received.push({
            data,
            at: Date.now(),
            epoch: server.epoch,
            status: takeScored(data).status,
            problem: describeProblem(scoredDataProblem(data)),
          });
        return sendJson(res, 200, { status: 'received', groups_processed: body.length });
      }
      case 'POST /scored_data': {
        counters.scoredRequests++;
        const fault = server.arrive((index) => api.onScoredData?.(index));
        if (server.beforeStore(fault, req, res)) return;
        const data = parseBody(res, text, ScoredDataSchema, refused);
        if (!data) return;
        const taken = takeScored(data);
        received.push({
          data,
          at: Date.now(),
          epoch: server.epoch,
          status: taken.status,
          problem: describeProblem(scoredDataProblem(data)),
        });
        if (server.afterStore(fault, req, res)) return;
        return sendJson(
          res,
          200,
          taken.status === 'buffered' ? { status: 'buffered', buffer_size: taken.bufferSize } : { status: 'received' },
        );
      }
      default:
        return sendJson(res, 404, { detail: 'Not Found' });
    }
  }

  // The outages: atropos' restart stops the simulated trainer, loses every
  // state, and lets the trainer re-register at its last step once back up.
  const server = new FaultyTrainerServer(handle, options, {
    beforeDown: stopTrainer,
    reset: () => {
      state = freshState();
    },
    afterUp: startTrainer,
  });
  await server.comeUp();
  startTrainer();

  server.expose(
    api,
    {
      received: () => received,
      refused: () => refused,
      registrations: () => registrations,
      batches: () => batches,
      disconnects: () => disconnects,
      notRegisteredBatches: () => notRegisteredBatches,
      currentStep: () => state.step,
      counters: () => counters,
    },
    stopTrainer,
  );
  return api;
}
