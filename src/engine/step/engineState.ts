// What the loop persists with each committed step beside the programs: the
// step generator's state (a redone step draws the same parents and prompts)
// and the completion tokens spent so far (settings.maxTotalTokens).
import type { RngState } from '../common/rng';

export interface EngineState {
  rng: RngState;
  completionTokens: number;
}

export function isEngineState(value: unknown): value is EngineState {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return Array.isArray(v.rng) && v.rng.length === 4 && v.rng.every((w) => typeof w === 'number') && typeof v.completionTokens === 'number';
}
