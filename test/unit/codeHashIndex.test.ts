import { strict as assert } from 'node:assert';
import { createHash } from 'node:crypto';
import { CodeHashIndex } from '../../src/engine/database/codeHashIndex';

const sha = (i: number): string => createHash('sha256').update(String(i)).digest('hex');

describe('CodeHashIndex', () => {
  it('holds every sha256 added, through growth, and nothing else', () => {
    const index = new CodeHashIndex();
    const reference = new Set<string>();
    for (let i = 0; i < 20000; i++) {
      const hash = sha(i);
      assert.equal(index.add(hash), true, `first add of ${i}`);
      reference.add(hash);
      if (i % 97 === 0) assert.equal(index.add(hash), false, `second add of ${i}`);
    }
    assert.equal(index.size, reference.size);
    for (const hash of reference) assert.equal(index.has(hash), true);
    for (let i = 20000; i < 25000; i++) assert.equal(index.has(sha(i)), false);
  });

  it('tells apart hashes that differ only in their last digit or share their first word', () => {
    const index = new CodeHashIndex();
    const base = 'ab'.repeat(32);
    index.add(base);
    assert.equal(index.has(`${base.slice(0, 63)}c`), false);
    const sameStart = `${base.slice(0, 8)}${'0'.repeat(56)}`;
    assert.equal(index.add(sameStart), true);
    assert.equal(index.has(base), true);
    assert.equal(index.has(sameStart), true);
    assert.equal(index.size, 2);
  });

  it('keeps strings that are not lowercase sha256 hex exactly as given', () => {
    const index = new CodeHashIndex();
    const upper = sha(1).toUpperCase();
    for (const odd of ['h1', '', upper, `${sha(2)}0`, `${'0'.repeat(63)}g`]) {
      assert.equal(index.add(odd), true, odd);
      assert.equal(index.add(odd), false, odd);
      assert.equal(index.has(odd), true, odd);
    }
    assert.equal(index.has(sha(1)), false, 'the uppercase form is another string');
    assert.equal(index.size, 5);
  });
});
