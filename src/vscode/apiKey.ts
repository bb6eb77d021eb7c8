// The endpoint's API key: SecretStorage first ("Set API Key"), then the
// OPENAI_API_KEY environment variable (secrets do not persist in
// browser-hosted VS Code). Never logged.
import * as vscode from 'vscode';
import { askText, pickOne, showInfo } from './notify';
import type { Settings } from '../engine/common/config';

const SECRET_KEY = 'thetaevolve.apiKey';

export async function readApiKey(secrets: vscode.SecretStorage): Promise<string | undefined> {
  const stored = await secrets.get(SECRET_KEY);
  if (stored) return stored;
  const fromEnv = process.env.OPENAI_API_KEY;
  return fromEnv ? fromEnv : undefined;
}

/**
 * Several models (thetaevolve.models): the keys stored under each model's
 * apiKeyName (secret `thetaevolve.apiKey.NAME`); a name with none stored is
 * read from the environment variable of that name only when the models are
 * the user's own (`fromUserSettings`): a workspace's apiKeyName names a stored
 * secret, never a variable of this environment (AWS_SECRET_ACCESS_KEY), which
 * it could send to a server of its choosing (docs/guide.md "What the editor trusts").
 */
export async function readModelApiKeys(
  secrets: vscode.SecretStorage,
  settings: Settings,
  fromUserSettings: boolean,
): Promise<Record<string, string>> {
  const keys: Record<string, string> = {};
  for (const name of new Set(settings.models.flatMap((m) => (m.apiKeyName ? [m.apiKeyName] : [])))) {
    const stored = await secrets.get(`${SECRET_KEY}.${name}`);
    const fromEnv = fromUserSettings ? process.env[name]?.trim() : undefined;
    if (stored) keys[name] = stored;
    else if (fromEnv) keys[name] = fromEnv;
  }
  return keys;
}

/** Store (or, empty, remove) the run's key (`name` null) or the key a model's apiKeyName names, in SecretStorage. */
export async function storeApiKey(secrets: vscode.SecretStorage, name: string | null, value: string): Promise<void> {
  const secret = name === null ? SECRET_KEY : `${SECRET_KEY}.${name}`;
  if (value.trim() === '') await secrets.delete(secret);
  else await secrets.store(secret, value.trim());
}

export async function promptAndStoreApiKey(secrets: vscode.SecretStorage, settings?: Settings): Promise<void> {
  // Several models with keys of their own: which key to set first.
  const names = [...new Set((settings?.models ?? []).flatMap((m) => (m.apiKeyName ? [m.apiKeyName] : [])))];
  let name: string | null = null;
  if (names.length > 0) {
    const runKey = "The run's key (thetaevolve.endpoint)";
    const picked = await pickOne(
      [runKey, ...names].map((label) => ({ label })),
      { title: 'ThetaEvolve: which API key?' },
    );
    if (picked === undefined) return;
    name = picked.label === runKey ? null : picked.label;
  }
  const fallback = name ?? 'OPENAI_API_KEY';
  const value = await askText({
    title: 'ThetaEvolve: Set API Key',
    prompt: `API key ${name === null ? 'for the inference endpoint' : `named ${name}`} (kept in VS Code SecretStorage; leave empty to remove it and use ${fallback}).`,
    password: true,
    ignoreFocusOut: true,
  });
  if (value === undefined) return;
  await storeApiKey(secrets, name, value);
  void showInfo(
    value.trim() === '' ? `ThetaEvolve: API key removed. ${fallback} is used when set.` : 'ThetaEvolve: API key stored in SecretStorage.',
  );
}
