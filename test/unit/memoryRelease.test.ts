// A persist's copy released at once (src/engine/database/memoryRelease.ts),
// without leaving V8's flags changed for the rest of the process: in the
// editor that process is the extension host, the engine worker one of its
// threads.
import assert from 'node:assert/strict';
import * as vm from 'node:vm';
import { releaseCopy } from '../../src/engine/database/memoryRelease';

describe('releaseCopy (a persist lets go of its copy without changing the process)', () => {
  it('detaches the copy: its memory belongs to nothing that is still held', () => {
    const copy = new Uint8Array(4096).fill(7);
    releaseCopy(copy);
    assert.equal(copy.length, 0);
    assert.equal(copy.buffer.byteLength, 0);
  });

  it('leaves no gc function to the process: a context made afterwards sees none, as before', () => {
    assert.equal(vm.runInNewContext('typeof gc'), 'undefined', 'this test process was started without --expose-gc');
    releaseCopy(new Uint8Array(4096));
    releaseCopy(new Uint8Array(4096));
    assert.equal(vm.runInNewContext('typeof gc'), 'undefined');
  });
});
