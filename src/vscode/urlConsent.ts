// A workspace must not silently redirect the requests that carry the user's
// API key (thetaevolve.endpoint, the endpoints of thetaevolve.models) or the
// rollouts (thetaevolve.trainer.url):
// the User and Remote settings apply as they are; a value from a workspace's
// (or folder's) settings is used only once the user allowed that very URL for
// that workspace. The decision is kept in the workspace's state.
import * as vscode from 'vscode';
import { showWarning } from './notify';
import type { Settings } from '../engine/common/config';
import { urlOriginLines } from '../engine/common/endpointUrls';
import { ModelListSchema, type ModelSpec } from '../engine/common/models';

const GUARDED = [
  { key: 'endpoint', what: 'sends the model requests, with your API key,' },
  { key: 'trainer.url', what: 'sends the scored rollouts' },
  { key: 'novelty.embeddingEndpoint', what: 'sends the candidate code to embed' },
] as const satisfies readonly { key: keyof Settings; what: string }[];

/** thetaevolve.models: each model with an endpoint of its own receives its key (the run's, or the one its apiKeyName names). */
const MODELS_WHAT = "sends a model's requests, with your API key or the key its apiKeyName names,";

export type UrlKey = (typeof GUARDED)[number]['key'] | 'models';

/** The endpoints of a models list that are their own (a model without one goes to thetaevolve.endpoint, guarded above), as one comma list. */
function ownEndpoints(models: readonly ModelSpec[]): string {
  return [...new Set(models.flatMap((m) => (m.endpoint !== undefined ? [m.endpoint] : [])))].join(', ');
}

/** How the user answers "use this workspace's URL?": use it, use the user-level value, or cancel the run. */
export type UrlChoice = 'workspace' | 'user' | 'cancel';

export type AskUrlChoice = (question: { key: UrlKey; workspaceValue: string; userValue: string; what: string }) => Thenable<UrlChoice>;

const stateKey = (key: UrlKey): string => `thetaevolve.allowedWorkspaceUrl.${key}`;

/** The modal question, in the editor. */
export const askInEditor: AskUrlChoice = async ({ key, workspaceValue, userValue, what }) => {
  const useIt = 'Use This Workspace\u2019s URL';
  const mine = 'Use My Setting';
  // Each URL as its parsed origin, one per line: a look-alike host shows in punycode, hidden characters escaped.
  const choice = await showWarning(
    `This workspace's settings set thetaevolve.${key}: ThetaEvolve ${what} to:\n${urlOriginLines(workspaceValue)}`,
    {
      modal: true,
      detail: `Your own (User or Remote) setting sends it to:\n${userValue ? urlOriginLines(userValue) : '(empty)'}\n\nAllow it only if you trust this workspace. The answer is remembered for this workspace and this URL.`,
    },
    useIt,
    mine,
  );
  return choice === useIt ? 'workspace' : choice === mine ? 'user' : 'cancel';
};

/**
 * The settings a run uses: each guarded URL that comes from the workspace is
 * kept only with the user's consent (asked once per workspace and URL), else
 * replaced by the User/Remote value. undefined: the user cancelled.
 */
export async function settingsWithAllowedUrls(
  settings: Settings,
  scope: vscode.Uri | undefined,
  state: vscode.Memento,
  ask: AskUrlChoice = askInEditor,
): Promise<Settings | undefined> {
  const config = vscode.workspace.getConfiguration('thetaevolve', scope ?? null);
  let result = settings;
  for (const { key, what } of GUARDED) {
    const inspected = config.inspect<string>(key);
    const workspaceValue = inspected?.workspaceFolderValue ?? inspected?.workspaceValue;
    if (workspaceValue === undefined || workspaceValue === null) continue;
    const userValue = inspected?.globalValue ?? inspected?.defaultValue ?? '';
    if (workspaceValue === userValue || state.get<string>(stateKey(key)) === workspaceValue) continue;
    const choice = await ask({ key, workspaceValue, userValue, what });
    if (choice === 'cancel') return undefined;
    if (choice === 'workspace') await state.update(stateKey(key), workspaceValue);
    else result = { ...result, [key]: userValue };
  }
  // thetaevolve.models from the workspace: its models' own endpoints, asked about as one list (declined: the User list).
  const models = config.inspect<unknown>('models');
  if ((models?.workspaceFolderValue ?? models?.workspaceValue) !== undefined) {
    const workspaceValue = ownEndpoints(result.models);
    const userModels = ModelListSchema.safeParse(models?.globalValue ?? []);
    const userList = userModels.success ? userModels.data : [];
    const userValue = ownEndpoints(userList);
    if (workspaceValue !== '' && workspaceValue !== userValue && state.get<string>(stateKey('models')) !== workspaceValue) {
      const choice = await ask({ key: 'models', workspaceValue, userValue, what: MODELS_WHAT });
      if (choice === 'cancel') return undefined;
      if (choice === 'workspace') await state.update(stateKey('models'), workspaceValue);
      else result = { ...result, models: userList };
    }
  }
  return result;
}
