// The operators beyond the paper (docs/algorithm.md section 12) are settings a
// run records in its database when it starts with any of them on, so that a
// resumed run searches exactly as the run it continues, whatever the
// settings of the invocation that resumes it.
import { defaultSettings, OPERATOR_SETTING_KEYS, parseSettings, type Settings } from '../common/config';

/** The run meta key holding the operator settings a run started with. */
export const OPERATORS_META_KEY = 'operators';

/** The operator settings that differ from their defaults (empty: the paper's loop). */
export function operatorSettingsOf(settings: Settings): Record<string, unknown> {
  const defaults = defaultSettings();
  const out: Record<string, unknown> = {};
  for (const key of OPERATOR_SETTING_KEYS) if (settings[key] !== defaults[key]) out[key] = settings[key];
  return out;
}

/** Whether a run recorded meta-recommendations on (meta.everySteps > 0): its Runs view row offers Edit Model Recommendations. */
export function recordsMetaRecommendations(runMeta: { [OPERATORS_META_KEY]?: Record<string, unknown> }): boolean {
  const everySteps = runMeta[OPERATORS_META_KEY]?.['meta.everySteps'];
  return typeof everySteps === 'number' && everySteps > 0;
}

/**
 * The settings a run goes on with: `settings` with the operator settings the
 * database recorded at its start (every operator key, recorded or default), or
 * `settings` unchanged for a database that recorded none.
 */
export function withRecordedOperators(settings: Settings, runMeta: Record<string, unknown>): Settings {
  const recorded = runMeta[OPERATORS_META_KEY];
  if (recorded === undefined || recorded === null || typeof recorded !== 'object') return settings;
  const defaults = defaultSettings();
  const merged: Record<string, unknown> = { ...settings };
  for (const key of OPERATOR_SETTING_KEYS) merged[key] = key in recorded ? (recorded as Record<string, unknown>)[key] : defaults[key];
  return parseSettings(merged);
}
