// What of a committed step goes to the trainer: its groups of n scored
// responses as they are spooled. Only whole groups of n (a failed request,
// or for atropos a response without token ids, leaves a group short: it is
// dropped, since a short group stalls the trainer), and groups whose
// responses all have the same reward only when asked.
import type { CommittedStep } from '../loop';
import type { TrainerProtocol } from './protocol';
import type { SpooledGroup, SpooledSample } from './spool';

export interface RolloutGroupOptions {
  protocol: TrainerProtocol;
  /** n: responses per group. */
  groupSize: number;
  /** Leave out groups whose responses all have the same reward (trainer.filterEqualRewards). */
  filterEqualRewards: boolean;
  /** The spool's run prefix, which makes group ids unique across runs. */
  runPrefix: string;
  /** The policy version of groups whose responses name none. */
  samplingVersion: string | null;
  now: number;
}

/** A group left out for being short of n responses. */
export interface ShortGroup {
  key: string;
  /** Responses the trainer could take (for atropos: with token ids). */
  usable: number;
  /** Responses the group has at all. */
  responses: number;
  /** Requests that failed after retries. */
  failed: number;
}

/** The groups of a committed step as they are spooled, and the groups dropped for being short. */
export function rolloutGroupsOf(committed: CommittedStep, options: RolloutGroupOptions): { groups: SpooledGroup[]; short: ShortGroup[] } {
  const groups: SpooledGroup[] = [];
  const short: ShortGroup[] = [];
  for (const group of committed.groups) {
    const samples: SpooledSample[] = [];
    let version: string | null = null;
    for (const s of group.samples) {
      const r = s.response;
      if (!r || s.reward === null || s.score === null) continue; // no response: not a rollout
      version ??= r.policyVersion;
      samples.push({
        index: s.index,
        outcome: s.outcome,
        score: s.score,
        objective: s.objective,
        reward: s.reward,
        finishReason: r.finishReason,
        truncated: r.truncated,
        content: r.content,
        reasoning: r.reasoning,
        childId: s.childId,
        promptTokenIds: r.tokens?.promptTokenIds ?? null,
        completionTokenIds: r.tokens?.completionTokenIds ?? null,
        completionLogprobs: r.tokens?.completionLogprobs ?? null,
      });
    }
    const usable =
      options.protocol === 'atropos'
        ? samples.filter((s) => s.promptTokenIds !== null && s.completionTokenIds !== null).length
        : samples.length;
    if (usable < options.groupSize || group.samples.length < options.groupSize) {
      const failed = group.samples.filter((s) => !s.response || s.reward === null).length;
      short.push({ key: group.key, usable, responses: samples.length, failed });
      continue;
    }
    if (options.filterEqualRewards && samples.every((s) => s.reward === (samples[0] as SpooledSample).reward)) continue;
    groups.push({
      id: `${options.runPrefix}:${group.key}`,
      key: group.key,
      step: group.step,
      parentId: group.parentId,
      policyVersion: version ?? options.samplingVersion,
      messages: group.messages.map((m) => ({ role: m.role, content: m.content })),
      samples,
      spooledAt: options.now,
    });
  }
  return { groups, short };
}

/** The policy version a committed step's responses name (the first that names one), else null. */
export function namedPolicyVersion(committed: CommittedStep): string | null {
  for (const group of committed.groups) for (const s of group.samples) if (s.response?.policyVersion) return s.response.policyVersion;
  return null;
}

/** The warning for a short group, `droppedSoFar` counting it. */
export function shortGroupWarning(
  group: ShortGroup,
  options: { protocol: TrainerProtocol; groupSize: number },
  droppedSoFar: number,
): string {
  return (
    `group ${group.key} has ${group.usable} of its ${options.groupSize} responses` +
    (group.failed > 0
      ? ` (${group.failed} request(s) failed after retries)`
      : options.protocol === 'atropos' && group.usable < group.responses
        ? ' with token ids'
        : '') +
    `: not sent, since a short group stalls the trainer (atropos buffers it, slime never releases it); ${droppedSoFar} group(s) dropped so far`
  );
}
