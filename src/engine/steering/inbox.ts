// The steering inbox of a live run: `<db>.steer/`, one JSON file per request.
// While a process runs a database it alone writes it, so another process
// (`thetaevolve steer`, an editor window) leaves its request here; the
// running loop takes each one at the start of its next step, applies and
// records it in the database, then removes the file. A request left here
// when the run stopped is taken when it resumes.
import { randomBytes } from 'node:crypto';
import { mkdir, open, readdir, rm } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { z } from 'zod';
import { readStart } from '../boundedRead';
import { errorMessage, zodIssueText } from '../common/errors';
import { type SteerRequest, SteerRequestSchema } from '../common/steering';
import { writeFileAtomic } from '../database/atomicFile';
import { steerInboxDir } from '../runFiles';

/** A request file is a program at most; more is no request of ours. */
const MAX_REQUEST_BYTES = 4 * 1024 * 1024;

const RequestFileSchema = z.object({ version: z.literal(1), request: SteerRequestSchema, requestedAt: z.number() });

/**
 * A request file read back: the request, or why it cannot be one (then it is
 * removed unapplied). `id`, the file's name, is recorded with what it applied.
 */
export type InboxItem =
  { file: string; id: string; request: SteerRequest; problem: null } | { file: string; id: string; request: null; problem: string };

/** Leave `request` for the process that runs `dbFile`; written whole or not at all. */
export async function enqueueSteer(dbFile: string, request: SteerRequest): Promise<string> {
  const dir = steerInboxDir(dbFile);
  await mkdir(dir, { recursive: true });
  // Time first, so that names sort in the order the requests were made.
  const name = `${Date.now().toString().padStart(15, '0')}-${randomBytes(4).toString('hex')}.json`;
  const file = join(dir, name);
  await writeFileAtomic(file, JSON.stringify({ version: 1, request, requestedAt: Date.now() }));
  return file;
}

/** The requests waiting, oldest first. */
export async function readInbox(dbFile: string): Promise<InboxItem[]> {
  const dir = steerInboxDir(dbFile);
  const names = await readdir(dir).catch(() => [] as string[]);
  const items: InboxItem[] = [];
  for (const name of names.filter((n) => n.endsWith('.json')).sort()) {
    const file = join(dir, name);
    items.push(await readRequest(file));
  }
  return items;
}

/**
 * The guidance the waiting requests set once the run takes them: the last
 * guidance or clear request not yet applied (its text; null: cleared), or
 * null when none waits.
 */
export function queuedGuidance(items: readonly InboxItem[], applied: (id: string) => boolean): { text: string | null } | null {
  let queued: { text: string | null } | null = null;
  for (const item of items) {
    if (applied(item.id)) continue;
    if (item.request?.kind === 'guidance') queued = { text: item.request.text.trim() };
    else if (item.request?.kind === 'clearGuidance') queued = { text: null };
  }
  return queued;
}

/** Remove a request once applied (or refused). */
export async function removeRequest(item: InboxItem): Promise<void> {
  await rm(item.file, { force: true });
}

async function readRequest(file: string): Promise<InboxItem> {
  const id = basename(file, '.json');
  let text: string;
  try {
    const handle = await open(file, 'r');
    try {
      const bytes = await readStart(handle, MAX_REQUEST_BYTES + 1);
      if (bytes.length > MAX_REQUEST_BYTES) return { file, id, request: null, problem: `${file} is larger than a request can be` };
      text = bytes.toString('utf8');
    } finally {
      await handle.close();
    }
  } catch (err) {
    return { file, id, request: null, problem: `cannot read ${file}: ${errorMessage(err)}` };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { file, id, request: null, problem: `${file} is not JSON` };
  }
  const parsed = RequestFileSchema.safeParse(value);
  if (!parsed.success) return { file, id, request: null, problem: `${file} is not a steer request: ${zodIssueText(parsed.error, '')}` };
  return { file, id, request: parsed.data.request, problem: null };
}
