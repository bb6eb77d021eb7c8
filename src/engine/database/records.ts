// What goes into a run database and what comes out: the configuration of its
// population, a program as the loop hands it over, and a stored program.
import { DATABASE_PRESETS, type Settings } from '../common/config';
import type { ProgramOrigin } from '../common/steering';
import type { Outcome } from '../common/types';
import type { FeatureDimension } from '../operators/features';

export interface DatabaseConfig {
  populationSize: number;
  archiveSize: number;
  numIslands: number;
  migrationInterval: number;
  migrationRate: number;
  explorationRatio: number;
  exploitationRatio: number;
  seed: number;
  /** A task's behaviour dimensions (operators/features.ts); absent: score and code length. */
  features?: FeatureDimension[];
}

export function databaseConfigFromSettings(settings: Settings): DatabaseConfig {
  const preset = DATABASE_PRESETS[settings['database.preset']];
  return {
    populationSize: settings['database.populationSize'] || preset.populationSize,
    archiveSize: settings['database.archiveSize'] || preset.archiveSize,
    numIslands: settings['database.numIslands'] || preset.numIslands,
    migrationInterval: settings['database.migrationInterval'],
    migrationRate: settings['database.migrationRate'],
    explorationRatio: settings['database.explorationRatio'],
    exploitationRatio: settings['database.exploitationRatio'],
    seed: settings.seed,
  };
}

export interface NewProgram {
  parentId: string | null;
  step: number;
  code: string;
  codeHash: string;
  score: number;
  objective: number | null;
  outcome: Outcome;
  metrics: Record<string, number | string | boolean | null>;
  metaInfoId: string | null;
  response: string | null;
  reasoning: string | null;
  generationMs: number;
  evaluationMs: number;
  promptTokens: number;
  completionTokens: number;
}

export interface ProgramRecord extends NewProgram {
  id: string;
  island: number;
  createdAt: number;
  /** Set on the copies migration (and seeding the islands) makes: the id of the program copied. */
  migrantOf?: string | null;
  /** Who wrote it (docs/algorithm.md section 11). */
  origin: ProgramOrigin;
  /** A researcher's note on a program they added; null otherwise. */
  note: string | null;
}

/** A copy (migration, island seeding) was not generated: no prompt, response or cost of its own. */
export const NOT_GENERATED = {
  metaInfoId: null,
  response: null,
  reasoning: null,
  generationMs: 0,
  evaluationMs: 0,
  promptTokens: 0,
  completionTokens: 0,
} as const;

/** Program ids are their insertion sequence number in base 36; null for anything else. */
export function seqOfId(id: string): number | null {
  if (!/^[0-9a-z]{1,11}$/.test(id)) return null;
  const seq = parseInt(id, 36);
  return Number.isSafeInteger(seq) && seq.toString(36) === id ? seq : null;
}

/**
 * Parent, grandparent, ... of `id` up to the root, as far as `lookup` finds
 * them (a cycle stops the walk).
 */
export function ancestorsOf<T extends { parentId: string | null }>(id: string, lookup: (id: string) => T | null | undefined): T[] {
  const out: T[] = [];
  const seen = new Set<string>([id]);
  let parentId = lookup(id)?.parentId ?? null;
  while (parentId !== null && !seen.has(parentId)) {
    seen.add(parentId);
    const parent = lookup(parentId);
    if (!parent) break;
    out.push(parent);
    parentId = parent.parentId;
  }
  return out;
}
