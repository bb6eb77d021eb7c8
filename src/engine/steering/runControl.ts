// Pause, resume or stop a live run from another process (an agent's MCP
// server, the editor's tools): the request is one small file beside the
// database, `<db>.control.json`, written atomically; the process that runs
// the database looks for it twice a second, removes it and does what it asks
// (docs/architecture.md "Agents"). A run in this same process could be told
// directly, but one path for every caller keeps the behaviour the same.
import { randomBytes } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import { z } from 'zod';
import { STEER_AUTHORS, type SteerAuthor } from '../common/steering';
import { writeFileAtomic } from '../database/atomicFile';
import { runControlFile } from '../runFiles';

export const RUN_CONTROL_ACTIONS = ['pause', 'resume', 'stop'] as const;
export type RunControlAction = (typeof RUN_CONTROL_ACTIONS)[number];

const ControlFileSchema = z.object({
  version: z.literal(1),
  action: z.enum(RUN_CONTROL_ACTIONS),
  by: z.enum(STEER_AUTHORS),
  requestedAt: z.number(),
  id: z.string(),
});
export type RunControlRequest = z.infer<typeof ControlFileSchema>;

/** How often the running process looks for a request: a person or an agent sees the effect within a second. */
const POLL_MS = 500;

/** Leave `action` for the process that runs `dbFile` (the newest request replaces one not yet taken). */
export async function requestRunControl(dbFile: string, action: RunControlAction, by: SteerAuthor): Promise<RunControlRequest> {
  const request: RunControlRequest = { version: 1, action, by, requestedAt: Date.now(), id: randomBytes(4).toString('hex') };
  await writeFileAtomic(runControlFile(dbFile), JSON.stringify(request));
  return request;
}

/**
 * Watch for control requests while this process runs `dbFile`. A request left
 * from before (its run ended before taking it) is dropped at the start: it
 * was meant for that session. Returns the function that stops watching.
 */
export async function watchRunControl(dbFile: string, onRequest: (request: RunControlRequest) => void): Promise<() => void> {
  const file = runControlFile(dbFile);
  await rm(file, { force: true });
  let busy = false;
  const look = async (): Promise<void> => {
    const text = await readFile(file, 'utf8').catch(() => null);
    if (text === null) return;
    await rm(file, { force: true });
    let parsed: ReturnType<typeof ControlFileSchema.safeParse>;
    try {
      parsed = ControlFileSchema.safeParse(JSON.parse(text));
    } catch {
      return;
    }
    if (parsed.success) onRequest(parsed.data);
  };
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    void look().finally(() => (busy = false));
  }, POLL_MS);
  timer.unref();
  return () => clearInterval(timer);
}
