// How the dashboard page writes numbers (webview/src/format.ts): pure text, no DOM.
import assert from 'node:assert/strict';
import { binLabels } from '../../webview/src/format';

describe('dashboard number formats', () => {
  it('labels histogram bins with the decimals their width needs, not six significant digits', () => {
    // Twelve bins over 0.3..0.9: centres 0.325, 0.375, ...; the old labels read 0.336567-like values.
    assert.deepEqual(binLabels(0.3, 0.05, 4), ['0.325', '0.375', '0.425', '0.475']);
    assert.deepEqual(binLabels(0.30123, 0.0518, 3), ['0.327', '0.379', '0.431']);
    assert.deepEqual(binLabels(10, 5, 3), ['12.5', '17.5', '22.5']);
    assert.deepEqual(binLabels(100, 50, 2), ['125', '175']);
    const labels = binLabels(0.95, 0.0001, 5);
    assert.equal(new Set(labels).size, 5, `neighbours stay apart: ${labels.join(', ')}`);
    assert.deepEqual(binLabels(2e6, 1e5, 1), ['2.0500e+6']);
    assert.deepEqual(binLabels(1, 0, 1), ['1']);
  });
});
