import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  contributedConfiguration,
  contributedSettings,
  defaultSettings,
  parseSettings,
  restrictedConfigurations,
  SETTINGS,
} from '../../src/engine/common/config';

describe('settings', () => {
  it('package.json contributes exactly the settings of the settings table, in titled categories (npx tsx scripts/sync-settings.ts)', () => {
    const manifest = JSON.parse(readFileSync(join(__dirname, '../../package.json'), 'utf8'));
    assert.deepEqual(manifest.contributes.configuration, contributedConfiguration());
    // An untrusted workspace cannot set where runs, requests and rollouts go, nor how candidates are evaluated.
    assert.deepEqual(manifest.capabilities.untrustedWorkspaces.restrictedConfigurations, restrictedConfigurations());
    for (const key of ['runsDirectory', 'endpoint', 'trainer.url', 'evaluation.backend', 'evaluationConcurrency', 'sandbox.memoryLimitMb'])
      assert.ok(restrictedConfigurations().includes(`thetaevolve.${key}`), key);
    // The sandbox's limits come from User or Remote settings only.
    for (const s of SETTINGS.filter((x) => x.key.startsWith('sandbox.')))
      assert.equal(contributedSettings()[`thetaevolve.${s.key}`]?.scope, 'machine', s.key);
    const categories = contributedConfiguration();
    assert.ok(categories.length >= 6 && categories.every((c) => c.title && Object.keys(c.properties).length > 0));
    const all = Object.values(contributedSettings());
    assert.equal(all.length, SETTINGS.length, 'each setting in one category');
    for (const entry of all) {
      assert.equal(typeof entry.markdownDescription, 'string');
      assert.equal(typeof entry.order, 'number');
    }
  });

  it('defaults match the paper', () => {
    const s = defaultSettings();
    assert.equal(s.batchSize, 32);
    assert.equal(s.samplesPerPrompt, 16);
    assert.equal(s.temperature, 1);
    assert.equal(s.maxTokens, 16384);
    assert.equal(s.evaluationConcurrency, 16);
    assert.equal(s['database.preset'], 'large');
    assert.equal(s.lazyPenalty, true);
  });

  it('names the bad setting and what is wrong', () => {
    assert.throws(() => parseSettings({ batchSize: -3 }), /thetaevolve\.batchSize.*-3/);
    assert.throws(() => parseSettings({ 'trainer.protocol': 'grpc' }), /thetaevolve\.trainer\.protocol/);
  });
});
