import assert from 'node:assert/strict';
import { Rng } from '../../src/engine/common/rng';

describe('Rng', () => {
  it('is deterministic under a seed and resumes from its state', () => {
    const a = Rng.fromSeed(42);
    const b = Rng.fromSeed(42);
    const first = Array.from({ length: 5 }, () => a.next());
    assert.deepEqual(
      first,
      Array.from({ length: 5 }, () => b.next()),
    );
    const saved = a.state();
    const expected = Array.from({ length: 5 }, () => a.next());
    const resumed = Rng.fromState(JSON.parse(JSON.stringify(saved)));
    assert.deepEqual(
      Array.from({ length: 5 }, () => resumed.next()),
      expected,
    );
  });

  it('differs between seeds and stays in [0, 1)', () => {
    const a = Rng.fromSeed(1);
    const b = Rng.fromSeed(2);
    assert.notEqual(a.next(), b.next());
    for (let i = 0; i < 10000; i++) {
      const x = a.next();
      assert.ok(x >= 0 && x < 1);
    }
  });

  it('draws weighted indices in proportion to the weights', () => {
    const rng = Rng.fromSeed(7);
    const counts = [0, 0];
    for (let i = 0; i < 20000; i++) counts[rng.weightedIndex([0.3, 0.7])]! += 1;
    assert.ok(Math.abs(counts[0]! / 20000 - 0.3) < 0.02, `got ${counts[0]}`);
  });
});
