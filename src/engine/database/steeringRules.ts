// What a run's steering log means for its population (docs/algorithm.md
// section 11): the guidance in force, the banned programs, the pins. Pure:
// rebuilt on open by replaying the log in order, so a resumed or replayed
// run sees exactly what the live one saw.
import { type GuidanceVersion, type RecommendationsVersion, type SteeringEntry, steerAuthorOf } from '../common/steering';

export interface ActivePin {
  id: string;
  share: number;
  /** First and last step it applies to. */
  fromStep: number;
  toStep: number;
}

export class SteeringState {
  private readonly entries: SteeringEntry[] = [];
  private readonly bannedIds = new Set<string>();
  private readonly guidanceVersions: GuidanceVersion[] = [];
  private readonly recommendationsVersions: RecommendationsVersion[] = [];
  private readonly pinList: ActivePin[] = [];
  private readonly requests = new Set<string>();

  /** Take one log entry into account; call in log order. */
  apply(entry: SteeringEntry): void {
    this.entries.push(entry);
    if (entry.request !== undefined) this.requests.add(entry.request);
    switch (entry.kind) {
      case 'guidance':
        this.guidanceVersions.push({ step: entry.step, text: entry.text, by: steerAuthorOf(entry) });
        break;
      case 'recommendations': {
        // An edit keeps the round it edits: the mark says the text is no longer the model's alone.
        const before = this.recommendationsVersions.at(-1);
        const afterStep = entry.afterStep ?? (entry.editedBy !== undefined ? (before?.afterStep ?? null) : null);
        this.recommendationsVersions.push({ step: entry.step, text: entry.text, afterStep, editedBy: entry.editedBy ?? null });
        break;
      }
      case 'ban':
        for (const id of entry.ids) this.bannedIds.add(id);
        break;
      case 'unban':
        for (const id of entry.ids) this.bannedIds.delete(id);
        break;
      case 'pin':
        this.pinList.push({ id: entry.id, share: entry.share, fromStep: entry.step, toStep: entry.step + entry.steps - 1 });
        break;
      case 'add':
        break;
    }
  }

  /** Whether the inbox request `request` was applied already (its entry is in the log). */
  applied(request: string): boolean {
    return this.requests.has(request);
  }

  get log(): readonly SteeringEntry[] {
    return this.entries;
  }

  get banned(): ReadonlySet<string> {
    return this.bannedIds;
  }

  /** Every guidance version, oldest first (text null: cleared). */
  get guidanceHistory(): readonly GuidanceVersion[] {
    return this.guidanceVersions;
  }

  /** The guidance prompts of `step` carry, or null. */
  guidanceAt(step: number): string | null {
    let text: string | null = null;
    for (const version of this.guidanceVersions) if (version.step <= step) text = version.text;
    return text;
  }

  /** Every meta-recommendations version, oldest first (text null: removed). */
  get recommendationsHistory(): readonly RecommendationsVersion[] {
    return this.recommendationsVersions;
  }

  /** The meta-recommendations prompts of `step` carry (the last version from that step or before), or null. */
  recommendationsAt(step: number): RecommendationsVersion | null {
    let version: RecommendationsVersion | null = null;
    for (const v of this.recommendationsVersions) if (v.step <= step) version = v;
    return version && version.text !== null ? version : null;
  }

  /** Whether the meta round after step `afterStep` wrote its recommendations. */
  metaRoundDone(afterStep: number): boolean {
    return this.recommendationsVersions.some((v) => v.afterStep === afterStep && v.editedBy === null);
  }

  /** A program is banned when its id is, or (a migration copy) the program it copies is. */
  isBanned(node: { id: string; migrantOf: string | null }): boolean {
    if (this.bannedIds.size === 0) return false;
    return this.bannedIds.has(node.id) || (node.migrantOf !== null && this.bannedIds.has(node.migrantOf));
  }

  /** The pins in force at `step`, oldest first. */
  pinsAt(step: number): ActivePin[] {
    return this.pinList.filter((pin) => pin.fromStep <= step && step <= pin.toStep);
  }

  /** Pins not yet over after `step` (still to come or in force). */
  pinsAfter(step: number): ActivePin[] {
    return this.pinList.filter((pin) => pin.toStep > step);
  }
}

/** How many of a step's `batch` prompts a pin of `share` takes: at least one. */
export function pinnedCount(share: number, batch: number): number {
  return Math.min(batch, Math.max(1, Math.round(share * batch)));
}

/** Ids of the live `nodes` whose lineage (followed through `lineage`) reaches `id`, `id` excluded. */
export function descendantsIn(
  nodes: readonly { id: string; parentId: string | null; alive: boolean }[],
  id: string,
  lineage: (id: string) => { parentId: string | null } | undefined,
): string[] {
  const out: string[] = [];
  for (const node of nodes) {
    if (!node.alive || node.id === id) continue;
    let parentId = node.parentId;
    const seen = new Set<string>();
    while (parentId !== null && !seen.has(parentId)) {
      if (parentId === id) {
        out.push(node.id);
        break;
      }
      seen.add(parentId);
      parentId = lineage(parentId)?.parentId ?? null;
    }
  }
  return out;
}
