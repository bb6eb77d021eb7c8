// The endpoint's API key: SecretStorage first ("Set API Key"), then the
// OPENAI_API_KEY environment variable (secrets do not persist in
// browser-hosted VS Code). Never logged.
import * as vscode from 'vscode';
import { askText, showInfo } from './notify';

const SECRET_KEY = 'thetaevolve.apiKey';

export async function readApiKey(secrets: vscode.SecretStorage): Promise<string | undefined> {
  const stored = await secrets.get(SECRET_KEY);
  if (stored) return stored;
  const fromEnv = process.env.OPENAI_API_KEY;
  return fromEnv ? fromEnv : undefined;
}

export async function promptAndStoreApiKey(secrets: vscode.SecretStorage): Promise<void> {
  const value = await askText({
    title: 'ThetaEvolve: Set API Key',
    prompt: 'API key for the inference endpoint (kept in VS Code SecretStorage; leave empty to remove it and use OPENAI_API_KEY).',
    password: true,
    ignoreFocusOut: true,
  });
  if (value === undefined) return;
  if (value.trim() === '') {
    await secrets.delete(SECRET_KEY);
    void showInfo('ThetaEvolve: API key removed. OPENAI_API_KEY is used when set.');
    return;
  }
  await secrets.store(SECRET_KEY, value.trim());
  void showInfo('ThetaEvolve: API key stored in SecretStorage.');
}
