// The code hashes of every program a run ever added (the lazy penalty of
// docs/algorithm.md section 4). A paper-scale run adds 307,200 programs: as
// a Set of 64-character strings that is 35 MB of JS heap in the process
// holding the database. A sha256 in hex is held here as its 32 bytes, exact
// (the whole hash is compared): the keys packed densely in fixed chunks, and
// an open-addressed table of key numbers beside them, so growth reallocates
// only the 4-byte slots (about 12 MB at that size, where slots of whole keys
// took 17 MB and twice that while growing). Any other string (a hash in
// another form) goes to a plain Set beside it.

const WORDS = 8;
const HEX_LENGTH = WORDS * 8;
const INITIAL_SLOTS = 1024;
/** Keys per chunk (2^14): 512 KB each, so the last chunk wastes little. */
const CHUNK_SHIFT = 14;
const CHUNK_KEYS = 1 << CHUNK_SHIFT;
const CHUNK_MASK = CHUNK_KEYS - 1;

/** 0-15 for a lowercase hex digit's char code, -1 for anything else. */
function hexValue(code: number): number {
  if (code >= 48 && code <= 57) return code - 48;
  if (code >= 97 && code <= 102) return code - 87;
  return -1;
}

export class CodeHashIndex {
  /** Key number + 1 per slot; 0 is an empty slot. */
  private table = new Int32Array(INITIAL_SLOTS);
  private readonly chunks: Uint32Array[] = [];
  private packedCount = 0;
  private readonly others = new Set<string>();
  private readonly scratch = new Uint32Array(WORDS);

  get size(): number {
    return this.packedCount + this.others.size;
  }

  has(hash: string): boolean {
    if (!this.pack(hash)) return this.others.has(hash);
    return this.find(this.scratch) >= 0;
  }

  /** Add `hash`; true when it was not there before. */
  add(hash: string): boolean {
    if (!this.pack(hash)) {
      if (this.others.has(hash)) return false;
      this.others.add(hash);
      return true;
    }
    const found = this.find(this.scratch);
    if (found >= 0) return false;
    const key = this.packedCount;
    if ((key & CHUNK_MASK) === 0) this.chunks.push(new Uint32Array(CHUNK_KEYS * WORDS));
    (this.chunks[this.chunks.length - 1] as Uint32Array).set(this.scratch, (key & CHUNK_MASK) * WORDS);
    this.packedCount++;
    // Grow at three quarters full: probes stay short.
    if (this.packedCount * 4 > this.table.length * 3) this.grow();
    else this.table[-found - 1] = key + 1;
    return true;
  }

  /** A 64-digit lowercase hex string into `scratch`; false for any other string. */
  private pack(hash: string): boolean {
    if (hash.length !== HEX_LENGTH) return false;
    for (let w = 0; w < WORDS; w++) {
      let word = 0;
      for (let i = w * 8; i < w * 8 + 8; i++) {
        const digit = hexValue(hash.charCodeAt(i));
        if (digit < 0) return false;
        word = word * 16 + digit;
      }
      this.scratch[w] = word;
    }
    return true;
  }

  /** The slot holding `key`, or -(free slot where it would go) - 1. */
  private find(key: Uint32Array): number {
    const mask = this.table.length - 1;
    // A sha256's bits are uniform: its first word is as good a start as any hash of it.
    let slot = (key[0] as number) & mask;
    for (;;) {
      const held = this.table[slot] as number;
      if (held === 0) return -slot - 1;
      if (this.keyEquals(held - 1, key)) return slot;
      slot = (slot + 1) & mask;
    }
  }

  private keyEquals(keyNumber: number, key: Uint32Array): boolean {
    const chunk = this.chunks[keyNumber >>> CHUNK_SHIFT] as Uint32Array;
    const base = (keyNumber & CHUNK_MASK) * WORDS;
    for (let w = 0; w < WORDS; w++) if (chunk[base + w] !== key[w]) return false;
    return true;
  }

  /** Twice the slots, every key placed again (the keys themselves stay where they are). */
  private grow(): void {
    this.table = new Int32Array(this.table.length * 2);
    const mask = this.table.length - 1;
    for (let keyNumber = 0; keyNumber < this.packedCount; keyNumber++) {
      const chunk = this.chunks[keyNumber >>> CHUNK_SHIFT] as Uint32Array;
      let slot = (chunk[(keyNumber & CHUNK_MASK) * WORDS] as number) & mask;
      while (this.table[slot] !== 0) slot = (slot + 1) & mask;
      this.table[slot] = keyNumber + 1;
    }
  }
}
