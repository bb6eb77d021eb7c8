// Several models in the editor (docs/guide.md "Several models and cost"):
// each model's requests carry its own key, one stored in SecretStorage the
// way Set API Key stores it, the other from the environment variable its
// apiKeyName names; the test server records each request's Authorization.
import assert from 'node:assert/strict';
import * as vscode from 'vscode';
import type { ThetaEvolveApi } from '../../src/extension';
import { readSettings } from '../../src/vscode/settings';
import { startTestServer, type TestServer } from '../server/openaiTestServer';
import { api, applySettings, nextEvent, stopRun, taskCopy } from './support';

const STORED_NAME = 'THETAEVOLVE_HOST_KEY_BIG';
const ENV_NAME = 'THETAEVOLVE_HOST_KEY_SMALL';

describe('several models: per-model keys', function () {
  this.timeout(120_000);
  let theta: ThetaEvolveApi;
  let program: vscode.Uri;
  let server: TestServer;
  let restore: (() => Promise<void>) | undefined;

  before(async () => {
    theta = await api();
    ({ program } = await taskCopy(theta, 'models-keys'));
    server = await startTestServer({ models: ['big', 'small'], latencyMs: 1 });
    await theta.storeApiKey(STORED_NAME, 'key-of-big-stored');
    // The engine worker shares the host's environment as it is when a run starts.
    process.env[ENV_NAME] = 'key-of-small-from-env';
    const { Global, Workspace } = vscode.ConfigurationTarget;
    restore = await applySettings(
      [
        ['endpoint', server.baseURL, Global],
        [
          'models',
          [
            { name: 'big', weight: 1, apiKeyName: STORED_NAME },
            { name: 'small', weight: 1, apiKeyName: ENV_NAME },
          ],
          Global,
        ],
        ['sampler', 'llm', Workspace],
        ['batchSize', 4, Workspace],
        ['samplesPerPrompt', 1, Workspace],
      ],
      program,
    );
  });

  after(async () => {
    await stopRun(theta.controller);
    await restore?.();
    await theta.storeApiKey(STORED_NAME, '');
    delete process.env[ENV_NAME];
    await server.close();
  });

  it("sends each model's requests with its own key: one from SecretStorage, one from the environment", async () => {
    const committed = nextEvent(theta.controller, (e) => e.type === 'step_committed' && e.step === 2, 'step 2 to commit');
    await vscode.commands.executeCommand('thetaevolve.startRun', program);
    await committed;
    await stopRun(theta.controller);
    const byModel = (model: string) => server.requests.filter((r) => r.model === model).map((r) => r.authorization);
    assert.ok(byModel('big').length > 0 && byModel('small').length > 0, `big ${byModel('big').length}, small ${byModel('small').length}`);
    assert.deepEqual(new Set(byModel('big')), new Set(['Bearer key-of-big-stored']));
    assert.deepEqual(new Set(byModel('small')), new Set(['Bearer key-of-small-from-env']));
  });

  it("a release config's llm.models yields whole to the user's thetaevolve.models, and the output says so in one line", () => {
    const notices: string[] = [];
    const fromConfig = {
      models: [
        { name: 'test-model', weight: 0.75 },
        { name: 'other-model', weight: 0.25 },
      ],
      temperature: 0.55,
    };
    const settings = readSettings(program, fromConfig, (line) => notices.push(line));
    assert.deepEqual(
      settings.models.map((m) => m.name),
      ['big', 'small'],
    );
    assert.equal(settings.temperature, 0.55, "the config's other values stay below the user's");
    assert.deepEqual(notices, [
      "thetaevolve.models (User Settings) overrides the config's llm.models (test-model 0.75, other-model 0.25), which this run drops.",
    ]);
  });
});
