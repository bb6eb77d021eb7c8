// The Runs view's program rows stay where they are when a new best arrives:
// the best row keeps its place and id, earlier rows keep theirs, the new row
// is added below them.
import assert from 'node:assert/strict';
import { programRowId, programRowOrder } from '../../src/vscode/programRowOrder';

const ids = (improvements: string[]): string[] =>
  programRowOrder(improvements.map((id) => ({ id }))).map((r) => programRowId('run.sqlite', r));

describe('Runs view program rows', () => {
  it('pin the best on top and list the earlier improvements oldest first', () => {
    const rows = programRowOrder(['initial', 'a', 'b'].map((id) => ({ id })));
    assert.deepEqual(
      rows.map((r) => [r.programId, r.pinnedBest]),
      [
        ['b', true],
        ['initial', false],
        ['a', false],
      ],
    );
    assert.deepEqual(programRowOrder([]), []);
  });

  it('keep every row in place, under the same id, as bests arrive', () => {
    const found = ['initial', 'a', 'b', 'c', 'd'];
    for (let n = 1; n < found.length; n++) {
      const before = ids(found.slice(0, n));
      const after = ids(found.slice(0, n + 1));
      assert.deepEqual(after.slice(0, before.length), before, `after best ${n + 1}: rows moved`);
      assert.equal(after.length, before.length + 1);
    }
    assert.equal(new Set(ids(found)).size, found.length, 'row ids are unique');
  });
});
