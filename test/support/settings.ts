// Settings for tests, as a user writes them (flat dotted keys), through the
// real parser: a test file names its base once and each test its changes.
import { parseSettings, type Settings } from '../../src/engine/common/config';

export type SettingsOverrides = Record<string, unknown>;

/** A builder of settings over `base`: `settings({ seed: 3 })` is `base` with seed 3, parsed and checked. */
export function settingsBuilder(base: SettingsOverrides): (overrides?: SettingsOverrides) => Settings {
  return (overrides = {}) => parseSettings({ ...base, ...overrides });
}
