// A task's own model choice (a release config's `llm.models`) against the
// person's (docs/guide.md "Several models and cost"): the config's list is
// the run's models unless the person names a model or models themselves;
// then the config's choice is dropped whole, so a --model never runs beside
// the config's list, and one line says so.
import type { Settings } from '../common/config';

/** The model or models a task's settings name, for a line ("test-model 0.75, other-model 0.25"). */
function modelsText(settings: Partial<Settings>): string {
  if (settings.models && settings.models.length > 0) return settings.models.map((m) => `${m.name} ${m.weight ?? 1}`).join(', ');
  return settings.model ?? '';
}

/**
 * The task's settings as they sit below the person's: without its `model`
 * and `models` when `personSets` says the person set either (by: how, for
 * the line, e.g. "--model other-model"); `notice` says it was dropped.
 */
export function taskSettingsUnderPerson(
  taskSettings: Partial<Settings>,
  personSets: (key: 'model' | 'models') => boolean,
  by: (key: 'model' | 'models') => string,
): { settings: Partial<Settings>; notice: string | null } {
  const taskNamesModels = taskSettings.model !== undefined || taskSettings.models !== undefined;
  const key = personSets('models') ? 'models' : personSets('model') ? 'model' : null;
  if (!taskNamesModels || key === null) return { settings: taskSettings, notice: null };
  const rest = { ...taskSettings };
  delete rest.model;
  delete rest.models;
  return { settings: rest, notice: `${by(key)} overrides the config's llm.models (${modelsText(taskSettings)}), which this run drops.` };
}
