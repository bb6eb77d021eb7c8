// How the dashboard page writes numbers (webview/src/format.ts): pure text, no DOM.
import assert from 'node:assert/strict';
import { binLabels } from '../../webview/src/format';

describe('dashboard number formats', () => {
  it('labels histogram bins by their lower edges with the decimals their width needs, not six significant digits', () => {
    assert.deepEqual(binLabels(0.3, 0.05, 4), ['0.3', '0.35', '0.4', '0.45']);
    assert.deepEqual(binLabels(10, 5, 3), ['10', '15', '20']);
    assert.deepEqual(binLabels(100, 50, 2), ['100', '150']);
    assert.deepEqual(binLabels(0.3, 0.025, 3), ['0.3', '0.325', '0.35']);
    const labels = binLabels(0.95, 0.0001, 5);
    assert.equal(new Set(labels).size, 5, `neighbours stay apart: ${labels.join(', ')}`);
    assert.deepEqual(binLabels(2e6, 1e5, 1), ['2.0000e+6']);
    assert.deepEqual(binLabels(1, 0, 1), ['1']);
  });
});
