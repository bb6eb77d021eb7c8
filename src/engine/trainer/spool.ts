// The trainer bridge's durable queue, beside the run database:
//   <db>.trainer-spool/meta.json     the run's id prefix (stable across resumes)
//   <db>.trainer-spool/groups.jsonl  one scored group per line, appended and fsynced
//   <db>.trainer-spool/acks.jsonl    one acknowledged id per line (a group, or one slime response),
//                                    the child ids of groups spooled before their step's commit, and
//                                    which env id a posted atropos group waits under (until pulled)
//   <db>.trainer-spool/rejected.jsonl groups the trainer refused (4xx), kept for people
// A group is pending until its own id is in the ack log. Appends are whole
// lines; a line torn by a crash is cut off on open. When everything is
// acknowledged both logs are truncated (groups first, so a crash in between
// can never resurrect an acknowledged group). Groups of a step the database
// never committed are discarded by rewriting the logs without them, so their
// ids are free again for the step's redo.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, open, readFile, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { firstZodIssue } from '../common/errors';
import { writeFileAtomic } from '../database/atomicFile';

const finite = z.number().finite();

export const SpooledSampleSchema = z.object({
  index: z.number().int().min(0),
  outcome: z.string(),
  /** Combined score with penalties (the raw score). */
  score: finite,
  objective: finite.nullable(),
  /** Shaped reward (what the trainer optimises). */
  reward: finite,
  finishReason: z.string(),
  truncated: z.boolean(),
  content: z.string(),
  reasoning: z.string().nullable(),
  childId: z.string().nullable(),
  promptTokenIds: z.array(z.number().int()).nullable(),
  completionTokenIds: z.array(z.number().int()).nullable(),
  completionLogprobs: z.array(finite).nullable(),
});
export type SpooledSample = z.infer<typeof SpooledSampleSchema>;

export const SpooledGroupSchema = z.object({
  /** Stable and unique: `<run id prefix>:<group key>`. */
  id: z.string().min(1),
  key: z.string(),
  step: z.number().int().min(0),
  parentId: z.string(),
  /** The policy (weights) version the group was sampled with; null when unknown. */
  policyVersion: z.string().nullable(),
  messages: z.array(z.object({ role: z.enum(['system', 'user', 'assistant']), content: z.string() })),
  samples: z.array(SpooledSampleSchema),
  spooledAt: finite,
});
export type SpooledGroup = z.infer<typeof SpooledGroupSchema>;

const AckSchema = z.object({ ack: z.string().min(1), at: finite, rejected: z.string().optional() });
/** A group spooled before its step's commit learns its children's ids after it (by sample position). */
const ChildIdsSchema = z.object({ children: z.string().min(1), ids: z.array(z.string().nullable()), at: finite });
/**
 * A group posted to a trainer that holds it in memory until its trainer pulls it (atropos): under which
 * registration (env id) it waits there; env null: the trainer lost it and it must be sent again.
 */
const PostedSchema = z.object({ posted: z.string().min(1), env: z.number().int().nullable(), at: finite });
const AckLogLineSchema = z.union([AckSchema, ChildIdsSchema, PostedSchema]);
const MetaSchema = z.object({ version: z.literal(1), runPrefix: z.string().min(1), createdAt: finite });

/** Where the spool of a run database lives. */
export function spoolDirOf(dbFile: string): string {
  return `${dbFile}.trainer-spool`;
}

/** Lines of a JSONL text; a last line without its newline was torn by a crash and is dropped. */
function completeLines(text: string): { lines: string[]; validBytes: number } {
  const end = text.lastIndexOf('\n');
  if (end < 0) return { lines: [], validBytes: 0 };
  const kept = text.slice(0, end + 1);
  return { lines: kept.split('\n').filter((l) => l.trim() !== ''), validBytes: Buffer.byteLength(kept, 'utf8') };
}

export class TrainerSpool {
  readonly dir: string;
  readonly runPrefix: string;
  private groupsFile: FileHandle;
  private acksFile: FileHandle;
  /** Acknowledged groups still taking room in groups.jsonl (compaction rewrites the log past a limit). */
  private ackedInLog = 0;
  private readonly compactAfter: number;
  private readonly pendingGroups = new Map<string, SpooledGroup>();
  private readonly acked = new Set<string>();
  /** Pending groups the trainer server holds (not yet pulled by its trainer), by the env id they were posted under. */
  private readonly postedTo = new Map<string, number>();
  /** Every spool file operation runs in this chain, one at a time. */
  private chain: Promise<unknown> = Promise.resolve();
  private closed = false;

  private constructor(dir: string, runPrefix: string, groupsFile: FileHandle, acksFile: FileHandle, compactAfter: number) {
    this.dir = dir;
    this.runPrefix = runPrefix;
    this.groupsFile = groupsFile;
    this.acksFile = acksFile;
    this.compactAfter = compactAfter;
  }

  /**
   * Open (or create) the spool in `dir`; `runPrefix` is used only when
   * creating it. `compactAfter`: acknowledged groups the log may hold while
   * others are still pending before it is rewritten (default 256).
   */
  static async open(dir: string, runPrefix?: string, options: { compactAfter?: number } = {}): Promise<TrainerSpool> {
    await mkdir(dir, { recursive: true });
    const metaPath = join(dir, 'meta.json');
    let meta: z.infer<typeof MetaSchema>;
    if (existsSync(metaPath)) {
      const parsed = MetaSchema.safeParse(JSON.parse(await readFile(metaPath, 'utf8')));
      if (!parsed.success) throw new Error(`${metaPath} is not a trainer spool meta file: ${firstZodIssue(parsed.error, '').message}`);
      meta = parsed.data;
    } else {
      meta = { version: 1, runPrefix: runPrefix ?? `te-${randomBytes(6).toString('hex')}`, createdAt: Date.now() };
      await writeFileAtomic(metaPath, JSON.stringify(meta) + '\n');
    }
    const groupsPath = join(dir, 'groups.jsonl');
    const acksPath = join(dir, 'acks.jsonl');
    const acked = new Set<string>();
    const childIds = new Map<string, (string | null)[]>();
    const posted = new Map<string, number>();
    const ackText = existsSync(acksPath) ? await readFile(acksPath, 'utf8') : '';
    const ackLines = completeLines(ackText);
    for (const line of ackLines.lines) {
      const parsed = AckLogLineSchema.safeParse(safeJson(line));
      if (!parsed.success) throw new Error(`${acksPath}: a line is not an acknowledgement: ${line.slice(0, 80)}`);
      if ('ack' in parsed.data) acked.add(parsed.data.ack);
      else if ('posted' in parsed.data) {
        if (parsed.data.env === null) posted.delete(parsed.data.posted);
        else posted.set(parsed.data.posted, parsed.data.env);
      } else childIds.set(parsed.data.children, parsed.data.ids);
    }
    const groupText = existsSync(groupsPath) ? await readFile(groupsPath, 'utf8') : '';
    const groupLines = completeLines(groupText);
    const pending = new Map<string, SpooledGroup>();
    let ackedInLog = 0;
    for (const line of groupLines.lines) {
      const parsed = SpooledGroupSchema.safeParse(safeJson(line));
      if (!parsed.success) {
        const { path, message } = firstZodIssue(parsed.error, '');
        throw new Error(`${groupsPath}: a line is not a spooled group (${path}: ${message})`);
      }
      if (!acked.has(parsed.data.id) && !pending.has(parsed.data.id)) pending.set(parsed.data.id, parsed.data);
      else ackedInLog++;
    }
    const groupsFile = await open(groupsPath, 'a+');
    const acksFile = await open(acksPath, 'a+');
    // Cut torn tails so the next append starts on a fresh line.
    if (groupLines.validBytes !== Buffer.byteLength(groupText, 'utf8')) await groupsFile.truncate(groupLines.validBytes);
    if (ackLines.validBytes !== Buffer.byteLength(ackText, 'utf8')) await acksFile.truncate(ackLines.validBytes);
    const spool = new TrainerSpool(dir, meta.runPrefix, groupsFile, acksFile, options.compactAfter ?? 256);
    for (const [id, g] of pending) {
      const ids = childIds.get(id);
      spool.pendingGroups.set(id, ids ? withChildIds(g, ids) : g);
    }
    for (const id of acked) spool.acked.add(id);
    for (const [id, env] of posted) if (pending.has(id)) spool.postedTo.set(id, env);
    spool.ackedInLog = ackedInLog;
    return spool;
  }

  private run<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.chain.then(fn, fn);
    this.chain = next.catch(() => undefined);
    return next;
  }

  /** Pending groups, oldest first. */
  pending(): SpooledGroup[] {
    return [...this.pendingGroups.values()];
  }

  get pendingCount(): number {
    return this.pendingGroups.size;
  }

  isPending(groupId: string): boolean {
    return this.pendingGroups.has(groupId);
  }

  isAcked(id: string): boolean {
    return this.acked.has(id);
  }

  /** The env id a pending group was posted under and waits in the trainer server's queue with; undefined when not posted. */
  postedEnv(groupId: string): number | undefined {
    return this.postedTo.get(groupId);
  }

  /**
   * Record that a pending group now waits in the trainer server's queue
   * (env id), or (null) that the server lost it and it must be sent again.
   * Fsynced: a resumed run must not post a held group twice.
   */
  markPosted(groupId: string, env: number | null): Promise<void> {
    return this.run(async () => {
      this.assertOpen();
      if (!this.pendingGroups.has(groupId)) return;
      await this.acksFile.appendFile(JSON.stringify({ posted: groupId, env, at: Date.now() }) + '\n', 'utf8');
      await this.acksFile.datasync();
      if (env === null) this.postedTo.delete(groupId);
      else this.postedTo.set(groupId, env);
    });
  }

  /** Durably add groups (one write, one fsync). Ids already known are skipped. */
  append(groups: SpooledGroup[]): Promise<void> {
    return this.run(async () => {
      this.assertOpen();
      const fresh = groups.filter((g) => !this.pendingGroups.has(g.id) && !this.acked.has(g.id));
      if (fresh.length === 0) return;
      const text = fresh.map((g) => JSON.stringify(SpooledGroupSchema.parse(g))).join('\n') + '\n';
      await this.groupsFile.appendFile(text, 'utf8');
      await this.groupsFile.datasync();
      for (const g of fresh) this.pendingGroups.set(g.id, g);
    });
  }

  /**
   * Give pending groups their children's ids (known only after the step's
   * commit), in memory and as a line of the ack log. Not fsynced: the ids are
   * information for the trainer, not what makes delivery exactly-once.
   */
  setChildIds(groups: { id: string; childIds: (string | null)[] }[]): Promise<void> {
    return this.run(async () => {
      this.assertOpen();
      const changed = groups.filter((g) => {
        const spooled = this.pendingGroups.get(g.id);
        return spooled !== undefined && spooled.samples.some((s, i) => s.childId !== (g.childIds[i] ?? null));
      });
      if (changed.length === 0) return;
      const at = Date.now();
      await this.acksFile.appendFile(changed.map((g) => JSON.stringify({ children: g.id, ids: g.childIds, at }) + '\n').join(''), 'utf8');
      for (const g of changed) this.pendingGroups.set(g.id, withChildIds(this.pendingGroups.get(g.id) as SpooledGroup, g.childIds));
    });
  }

  /**
   * Drop pending groups that must never be sent (their step was never
   * committed) by rewriting both logs without them: durable, and their ids
   * can be spooled again with new content.
   */
  discard(ids: string[]): Promise<void> {
    return this.run(async () => {
      this.assertOpen();
      let removed = 0;
      for (const id of ids) {
        this.postedTo.delete(id);
        if (this.pendingGroups.delete(id)) removed++;
      }
      if (removed === 0) return;
      if (this.pendingGroups.size === 0) await this.truncateDrained();
      else await this.compact();
    });
  }

  /**
   * Record acknowledged ids (a group id, or a slime response uid). The lines
   * are written at once (a killed process keeps them); `sync` also fsyncs
   * (power loss). A group id ends the group's time in the spool.
   */
  ack(ids: string[], options: { sync: boolean; rejected?: string }): Promise<void> {
    return this.run(async () => {
      this.assertOpen();
      const fresh = ids.filter((id) => !this.acked.has(id));
      if (fresh.length > 0) {
        const at = Date.now();
        const text =
          fresh
            .map((id) => JSON.stringify(options.rejected === undefined ? { ack: id, at } : { ack: id, at, rejected: options.rejected }))
            .join('\n') + '\n';
        await this.acksFile.appendFile(text, 'utf8');
        for (const id of fresh) {
          this.acked.add(id);
          this.postedTo.delete(id);
          if (this.pendingGroups.delete(id)) this.ackedInLog++;
        }
      }
      if (options.sync) await this.acksFile.datasync();
      if (this.pendingGroups.size === 0 && this.acked.size > 0) await this.truncateDrained();
      else if (this.ackedInLog >= this.compactAfter) await this.compact();
    });
  }

  /**
   * Rewrite both logs with only what is pending (and the acknowledged
   * responses of pending slime groups), each through a temporary file and a
   * rename. groups.jsonl goes first: a crash between the two renames leaves
   * extra acknowledgements, never a resurrected group.
   */
  private async compact(): Promise<void> {
    const pending = [...this.pendingGroups.values()];
    const keepAcks = [...this.acked].filter((id) => pending.some((g) => id.startsWith(`${g.id}:`)));
    const replace = async (name: string, text: string): Promise<FileHandle> => {
      const path = join(this.dir, name);
      await writeFileAtomic(path, text);
      return open(path, 'a+');
    };
    const groupsText = pending.map((g) => JSON.stringify(g) + '\n').join('');
    const at = Date.now();
    const newGroups = await replace('groups.jsonl', groupsText);
    await this.groupsFile.close();
    this.groupsFile = newGroups;
    const postedLines = [...this.postedTo].map(([id, env]) => JSON.stringify({ posted: id, env, at }) + '\n');
    const newAcks = await replace(
      'acks.jsonl',
      keepAcks.map((id) => JSON.stringify({ ack: id, at }) + '\n').join('') + postedLines.join(''),
    );
    await this.acksFile.close();
    this.acksFile = newAcks;
    this.acked.clear();
    for (const id of keepAcks) this.acked.add(id);
    this.ackedInLog = 0;
  }

  /** Keep a refused group for people to look at, then acknowledge it as rejected. */
  async reject(group: SpooledGroup, reason: string): Promise<void> {
    await this.run(async () => {
      this.assertOpen();
      const handle = await open(join(this.dir, 'rejected.jsonl'), 'a');
      try {
        await handle.appendFile(JSON.stringify({ reason, at: Date.now(), group }) + '\n', 'utf8');
        await handle.datasync();
      } finally {
        await handle.close();
      }
    });
    await this.ack([group.id], { sync: true, rejected: reason });
  }

  private async truncateDrained(): Promise<void> {
    await this.groupsFile.truncate(0);
    await this.groupsFile.datasync();
    await this.acksFile.truncate(0);
    await this.acksFile.datasync();
    this.acked.clear();
    this.postedTo.clear();
    this.ackedInLog = 0;
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('the trainer spool is closed');
  }

  async close(): Promise<void> {
    await this.run(async () => {
      if (this.closed) return;
      this.closed = true;
      await this.groupsFile.close();
      await this.acksFile.close();
    });
  }
}

/** The group with its samples' child ids replaced by position (a missing position keeps its id). */
function withChildIds(group: SpooledGroup, ids: (string | null)[]): SpooledGroup {
  return { ...group, samples: group.samples.map((s, i) => (i < ids.length ? { ...s, childId: ids[i] ?? null } : s)) };
}

function safeJson(line: string): unknown {
  try {
    return JSON.parse(line);
  } catch {
    return undefined;
  }
}
