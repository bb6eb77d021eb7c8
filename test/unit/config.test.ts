import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { contributedConfiguration, defaultSettings, parseSettings } from '../../src/engine/common/config';

describe('settings', () => {
  it('package.json contributes exactly the settings of the settings table', () => {
    const manifest = JSON.parse(readFileSync(join(__dirname, '../../package.json'), 'utf8'));
    assert.deepEqual(manifest.contributes.configuration.properties, contributedConfiguration());
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
