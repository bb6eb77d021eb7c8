// Whether RL is on belongs to the run, not to a file people commit: the RL
// toggle (dashboard switch, Toggle RL Trainer) switches the active run's
// trainer and keeps the choice for the next run in this workspace's state.
// `thetaevolve.trainer.enabled` stays the default until the toggle is used;
// the toggle never writes it into .vscode/settings.json.
import type * as vscode from 'vscode';
import type { Settings } from '../engine/common/config';

const NEXT_RUN_KEY = 'thetaevolve.trainer.enabledForNextRun';

/** The RL choice for the next run: the toggle's last word in this workspace, else the setting. */
export function trainerEnabledForNextRun(settings: Pick<Settings, 'trainer.enabled'>, state: vscode.Memento): boolean {
  return state.get<boolean>(NEXT_RUN_KEY) ?? settings['trainer.enabled'];
}

/** A run's settings with the toggle's choice applied. */
export function withTrainerChoice(settings: Settings, state: vscode.Memento): Settings {
  return { ...settings, 'trainer.enabled': trainerEnabledForNextRun(settings, state) };
}

export async function rememberTrainerChoice(state: vscode.Memento, enabled: boolean): Promise<void> {
  await state.update(NEXT_RUN_KEY, enabled);
}

/** The setting is the word again (someone changed it). */
export async function forgetTrainerChoice(state: vscode.Memento): Promise<void> {
  await state.update(NEXT_RUN_KEY, undefined);
}
