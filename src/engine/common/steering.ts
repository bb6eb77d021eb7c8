// Interactive evolution (docs/algorithm.md section 11): what a researcher asks
// of a run (a steer request), what the run database records of it (a
// steering entry), and who wrote each program (its origin). Browser-safe: the
// CLI, the engine and the editor speak these same shapes.
import { z } from 'zod';
import { forDisplay } from './displayText';
import { formatScore } from './format';

/**
 * Who wrote a program: the run's starting program, the model, a researcher, an
 * agent acting for the researcher (docs/architecture.md "Agents"), or a copy
 * migration (or island seeding) made.
 */
export const PROGRAM_ORIGINS = ['initial', 'model', 'researcher', 'migration', 'agent'] as const;
export type ProgramOrigin = (typeof PROGRAM_ORIGINS)[number];

/** Who asked for a change of a run: the researcher (`thetaevolve steer`, the editor's commands) or an agent (MCP, language-model tools). */
export const STEER_AUTHORS = ['researcher', 'agent'] as const;
export type SteerAuthor = (typeof STEER_AUTHORS)[number];
/** Absent: the researcher (requests and log entries written before agents could steer). */
const byField = { by: z.enum(STEER_AUTHORS).optional() };

/** Who asked for a request or log entry. */
export function steerAuthorOf(item: { by?: SteerAuthor | undefined }): SteerAuthor {
  return item.by ?? 'researcher';
}

const programId = z.string().regex(/^[0-9a-z]{1,11}$/, 'a program id (base 36, as `thetaevolve db` prints it)');
/** Guidance and notes are prompt text a person wrote: bounded, so a mistaken file does not fill every prompt. */
export const MAX_GUIDANCE_CHARS = 8_000;
export const MAX_NOTE_CHARS = 2_000;

/** One thing a researcher asks of a run (`thetaevolve steer`, the editor). */
export const SteerRequestSchema = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('add'),
    /** The program's text (EVOLVE-BLOCK required). */
    code: z.string().min(1),
    /** The island to place it on (default: the smallest). */
    island: z.number().int().min(0).optional(),
    /** The program it was derived from, if any (its lineage goes through it). */
    parentId: programId.optional(),
    note: z.string().max(MAX_NOTE_CHARS).optional(),
    ...byField,
  }),
  z.object({ kind: z.literal('guidance'), text: z.string().trim().min(1).max(MAX_GUIDANCE_CHARS), ...byField }),
  z.object({ kind: z.literal('clearGuidance'), ...byField }),
  /**
   * The model's meta-recommendations as the researcher (or an agent) edited
   * them (docs/algorithm.md section 12): empty text removes them. They stay
   * the model's recommendations, marked edited, until the next meta round
   * writes new ones.
   */
  z.object({ kind: z.literal('recommendations'), text: z.string().trim().max(MAX_GUIDANCE_CHARS), ...byField }),
  z.object({ kind: z.literal('ban'), id: programId, descendants: z.boolean(), ...byField }),
  z.object({ kind: z.literal('unban'), id: programId, ...byField }),
  z.object({
    kind: z.literal('pin'),
    id: programId,
    /** The share of each step's prompts that get it as their parent, in (0, 1]. */
    share: z.number().gt(0).max(1),
    steps: z.number().int().min(1),
    ...byField,
  }),
]);
export type SteerRequest = z.infer<typeof SteerRequestSchema>;
export type SteerKind = SteerRequest['kind'];

/** What a request did: on a live run it waits for the next step (`queued`); otherwise it took effect from `step` on. */
export const SteerResultSchema = z.union([
  z.object({ kind: z.string(), queued: z.literal(true) }),
  z.object({
    kind: z.literal('add'),
    id: z.string(),
    outcome: z.string(),
    score: z.number(),
    island: z.number().int(),
    step: z.number().int(),
  }),
  z.object({
    kind: z.enum(['guidance', 'clearGuidance', 'recommendations', 'ban', 'unban', 'pin']),
    /** The first step it applies to. */
    step: z.number().int(),
    /** ban/unban: the ids it changed. */
    ids: z.array(z.string()).optional(),
  }),
]);
export type SteerResult = z.infer<typeof SteerResultSchema>;

/**
 * One row of the run database's steering log, in the order applied; `step`
 * is the first step it applies to. Replaying the log rebuilds the guidance,
 * bans and pins exactly (src/engine/database/steeringRules.ts).
 */
/** The inbox request a live run applied (its file name), recorded with the entry so that a restart never applies it twice; and who asked. */
const fromRequest = { request: z.string().optional(), ...byField };

export const SteeringEntrySchema = z.discriminatedUnion('kind', [
  /** A researcher's program entered (its row holds the rest). */
  z.object({ kind: z.literal('add'), step: z.number().int(), id: z.string(), ...fromRequest }),
  /** New guidance, or null: cleared. */
  z.object({ kind: z.literal('guidance'), step: z.number().int(), text: z.string().nullable(), ...fromRequest }),
  /**
   * Meta-recommendations (docs/algorithm.md section 12), or null: removed.
   * Written by the model after step `afterStep` committed; `editedBy` when a
   * person or an agent edited them since (then `by` says nothing more).
   */
  z.object({
    kind: z.literal('recommendations'),
    step: z.number().int(),
    text: z.string().nullable(),
    afterStep: z.number().int().optional(),
    editedBy: z.enum(STEER_AUTHORS).optional(),
    ...fromRequest,
  }),
  /** `ids`: every program the ban covers, decided when it was applied (the id, its migration copies, and with `descendants` theirs). */
  z.object({
    kind: z.literal('ban'),
    step: z.number().int(),
    id: z.string(),
    descendants: z.boolean(),
    ids: z.array(z.string()),
    ...fromRequest,
  }),
  z.object({ kind: z.literal('unban'), step: z.number().int(), id: z.string(), ids: z.array(z.string()), ...fromRequest }),
  z.object({
    kind: z.literal('pin'),
    step: z.number().int(),
    id: z.string(),
    share: z.number(),
    steps: z.number().int().min(1),
    ...fromRequest,
  }),
]);
export type SteeringEntry = z.infer<typeof SteeringEntrySchema>;

/** A guidance version as `db --json` lists it: text null where it was cleared; who set it. */
export interface GuidanceVersion {
  step: number;
  text: string | null;
  by: SteerAuthor;
}

/** A meta-recommendations version: written by the model after step `afterStep`, edited by `editedBy` when it was; text null where removed. */
export interface RecommendationsVersion {
  step: number;
  text: string | null;
  afterStep: number | null;
  editedBy: SteerAuthor | null;
}

/** What an applied request did, in one line for people (the CLI and the editor say it alike). */
export function steerResultText(result: Exclude<SteerResult, { queued: true }>): string {
  if (result.kind === 'add')
    return `added program ${result.id}: ${result.outcome}, score ${formatScore(result.score)}, island ${result.island} (enters at step ${result.step})`;
  const ids = 'ids' in result && result.ids && result.ids.length > 0 ? ` (${result.ids.map(forDisplay).join(', ')})` : '';
  return `${result.kind}${ids}: from step ${result.step} on`;
}
