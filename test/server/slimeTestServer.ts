// A local slime rollout buffer for tests, faithful to THUDM/slime
// slime_plugins/rollout_buffer/buffer.py: POST /buffer/write appends one
// response to its group (instance_id) and answers {success, message, data};
// POST /get_rollout_data hands out (and removes) the groups that reached the
// group size; everything lives in memory. As the real buffer: a write is any
// JSON object with an instance_id (without one, or not JSON: 500; nothing
// else is checked, `problem` records it for tests); the group size is 16
// until POST /start_rollout names a task_type that has a generator module
// (options.generators), which replaces the buffer (earlier writes are gone)
// with num_repeat_per_sample; an unknown task_type changes nothing; a
// restarted buffer is back at 16.
// Faults: a script per write (503, resets before or after storing, held
// replies), down windows, restart() losing the buffer. An optional simulated
// slime trainer pulls /get_rollout_data and, per batch of groups, bumps the
// weight_version it serves at GET /get_model_info (as SGLang does when a
// weight update carries a version), so tests can point the endpoint's
// model-info probe here.
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import { type DataFault, FaultyTrainerServer, parseBody, readBody, type Refusal, sendJson } from './faultyTrainerServer';

export const BufferWriteSchema = z.object({
  uid: z.string().min(1),
  instance_id: z.union([z.string().min(1), z.number().int()]),
  messages: z
    .array(z.object({ role: z.string(), content: z.string() }))
    .min(2)
    .refine((m) => m[m.length - 1]?.role === 'assistant', 'the last message must be the assistant reply'),
  reward: z.number().finite(),
  extra_info: z.record(z.string(), z.unknown()),
});
export type BufferWrite = z.infer<typeof BufferWriteSchema>;

export interface BufferWriteRecord {
  /** As written (checked against BufferWriteSchema only into `problem`). */
  item: BufferWrite;
  at: number;
  epoch: number;
  /** What BufferWriteSchema finds wrong with it (the real buffer takes it anyway), or null. */
  problem: string | null;
  /** The same uid and instance_id were written before (e.g. written back after a look at the buffer). */
  repeat: boolean;
}

export interface SlimeTestServerOptions {
  host?: string;
  port?: number;
  /** The group size as if slime's trainer had called /start_rollout (default 16, the real buffer's before it); a restart goes back to 16. */
  groupSize?: number;
  /** task_types with a generator module: /start_rollout with one of them replaces the buffer (default none). */
  generators?: readonly string[];
  /** /buffer/write k (arrival order, across restarts) gets script[k]; 'ok' after it. */
  script?: readonly DataFault[];
  /** How long a 'down' fault keeps the server down (default 800 ms). */
  downWindowMs?: number;
  /** Simulated slime trainer: every pollMs pull /get_rollout_data; each batchGroups groups taken is one weight update. */
  trainer?: { batchGroups: number; pollMs?: number } | null;
}

export interface SlimeTestServer {
  readonly url: string;
  readonly port: number;
  /** Every write the buffer took, across restarts. */
  readonly received: readonly BufferWriteRecord[];
  readonly refused: readonly { status: number; body: unknown }[];
  /** Groups the simulated trainer pulled, in order (POST /get_rollout_data hands out groups too, unrecorded). */
  readonly pulled: readonly BufferWrite[][];
  /** The buffer's group size now. */
  readonly groupSize: number;
  /** The groups held now (instance_id -> items). */
  readonly held: ReadonlyMap<string, readonly BufferWrite[]>;
  readonly weightVersion: number;
  readonly epoch: number;
  /** Told of each write as it arrives (before its fault); a fault it returns strikes this write. */
  onWrite: ((index: number) => DataFault | undefined | void) | null;
  /** Told of each write once stored, before its reply (what slime's trainer may do between a write and the writer's next request). */
  onStored: ((index: number) => void) | null;
  /** The simulated trainer pulls every whole group now (as its poll would). */
  pullNow(): void;
  goDown(): Promise<void>;
  comeUp(): Promise<void>;
  downFor(ms: number): Promise<void>;
  restart(downMs?: number): Promise<void>;
  close(): Promise<void>;
}

export async function startSlimeTestServer(options: SlimeTestServerOptions = {}): Promise<SlimeTestServer> {
  let groupSize = options.groupSize ?? 16;
  const seenWrites = new Set<string>();
  let data = new Map<string, BufferWrite[]>();
  let weightVersion = 0;
  let consumedGroups = 0;
  const received: BufferWriteRecord[] = [];
  const refused: Refusal[] = [];
  const pulled: BufferWrite[][] = [];
  let trainerTimer: NodeJS.Timeout | null = null;
  const api = { onWrite: null, onStored: null } as SlimeTestServer;

  /** buffer.py's read(): the groups with at least group_size items, removed (`pulled` records the simulated trainer's). */
  function read(byTrainer: boolean): BufferWrite[][] {
    const groups: BufferWrite[][] = [];
    for (const [id, items] of data) {
      if (items.length >= groupSize) {
        groups.push(items);
        data.delete(id);
      }
    }
    if (byTrainer) pulled.push(...groups);
    return groups;
  }

  function startTrainer(): void {
    const trainer = options.trainer;
    if (!trainer || server.isClosed) return;
    trainerTimer = setInterval(() => {
      if (!server.isUp) return;
      consumedGroups += read(true).length;
      while (consumedGroups >= trainer.batchGroups) {
        consumedGroups -= trainer.batchGroups;
        weightVersion++;
      }
    }, trainer.pollMs ?? 20);
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const route = `${req.method ?? ''} ${url.pathname}`;
    const text = await readBody(req);
    switch (route) {
      case 'POST /buffer/write': {
        const fault = server.arrive((index) => api.onWrite?.(index));
        if (server.beforeStore(fault, req, res)) return;
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          refused.push({ status: 500, body: text.slice(0, 200) });
          return sendJson(res, 500, { detail: 'Write failed: Expecting value: line 1 column 1 (char 0)' });
        }
        if (typeof json !== 'object' || json === null || !('instance_id' in json)) {
          refused.push({ status: 500, body: json });
          return sendJson(res, 500, { detail: "Write failed: 'instance_id'" });
        }
        const item = json as BufferWrite;
        const checked = BufferWriteSchema.safeParse(json);
        const key = String(item.instance_id);
        const group = data.get(key) ?? [];
        group.push(item);
        data.set(key, group);
        const identity = `${key}\u0000${String(item.uid)}`;
        received.push({
          item,
          at: Date.now(),
          epoch: server.epoch,
          problem: checked.success ? null : (checked.error.issues[0]?.message ?? 'bad shape'),
          repeat: seenWrites.has(identity),
        });
        seenWrites.add(identity);
        api.onStored?.(received.length - 1);
        if (server.afterStore(fault, req, res)) return;
        return sendJson(res, 200, {
          success: true,
          message: 'Data has been successfully written to buffer',
          data: { data: [item], meta_info: 'write to buffer' },
        });
      }
      case 'POST /get_rollout_data': {
        const groups = read(false);
        if (groups.length === 0)
          return sendJson(res, 200, { success: false, message: 'No data available to read', data: { data: [], meta_info: {} } });
        const items = groups.flat();
        return sendJson(res, 200, {
          success: true,
          message: `Successfully read ${items.length} items`,
          data: { data: items, meta_info: { total_samples: items.length, num_groups: groups.length, finished_groups: [] } },
        });
      }
      case 'POST /start_rollout': {
        const body = parseBody(
          res,
          text,
          z.looseObject({ task_type: z.string(), num_repeat_per_sample: z.union([z.string(), z.number()]) }),
        );
        if (!body) return;
        // A background task in the real buffer: only a known generator replaces the buffer.
        if (options.generators?.includes(body.task_type)) {
          data = new Map();
          groupSize = Number(body.num_repeat_per_sample);
        }
        return sendJson(res, 200, { message: 'Rollout started' });
      }
      case 'GET /get_model_info':
        if (!options.trainer) return sendJson(res, 404, { detail: 'Not Found' });
        return sendJson(res, 200, {
          model_path: 'test-model',
          tokenizer_path: 'test-model',
          is_generation: true,
          preferred_sampling_params: null,
          weight_version: String(weightVersion),
        });
      default:
        return sendJson(res, 404, { detail: 'Not Found' });
    }
  }

  // The outages: slime's restart loses the buffer only; the simulated trainer
  // keeps its timer (and its weight version), skipping polls while down.
  const server = new FaultyTrainerServer(handle, options, {
    reset: () => {
      data = new Map();
      groupSize = 16;
    },
  });
  await server.comeUp();
  startTrainer();

  api.pullNow = () => {
    read(true);
  };
  server.expose(
    api,
    {
      received: () => received,
      refused: () => refused,
      pulled: () => pulled,
      weightVersion: () => weightVersion,
      groupSize: () => groupSize,
      held: () => data,
    },
    () => {
      if (trainerTimer) clearInterval(trainerTimer);
    },
  );
  return api;
}

/** Group keys of the whole groups (n distinct uids under one instance_id) the slime buffer holds or handed its trainer. */
export function wholeSlimeGroups(server: SlimeTestServer, n: number): string[] {
  const keys: string[] = [];
  for (const items of [...server.pulled, ...server.held.values()]) {
    if (items.length < n) continue;
    assert.equal(new Set(items.map((i) => i.uid)).size, items.length, 'no uid twice in a group');
    keys.push(String(items[0]?.extra_info.group_key));
  }
  return keys.sort();
}
