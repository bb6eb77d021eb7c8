// The code hashes of every program a run ever added (the lazy penalty of
// docs/algorithm.md section 4). A paper-scale run adds 307,200 programs: as
// a Set of 64-character strings that is 35 MB of JS heap in the process
// holding the database. A sha256 in hex is held here as its 32 bytes, in one
// open-addressed table of typed arrays (about 17 MB at that size, exact: the
// whole hash is compared). Any other string (a hash in another form) goes to
// a plain Set beside it.

const WORDS = 8;
const HEX_LENGTH = WORDS * 8;
const INITIAL_SLOTS = 1024;

/** 0-15 for a lowercase hex digit's char code, -1 for anything else. */
function hexValue(code: number): number {
  if (code >= 48 && code <= 57) return code - 48;
  if (code >= 97 && code <= 102) return code - 87;
  return -1;
}

export class CodeHashIndex {
  private slots = INITIAL_SLOTS;
  private words = new Uint32Array(INITIAL_SLOTS * WORDS);
  private used = new Uint8Array(INITIAL_SLOTS);
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
    // Grow at three quarters full: probes stay short.
    if ((this.packedCount + 1) * 4 > this.slots * 3) {
      this.grow();
      this.insert(this.scratch, this.freeSlot(this.scratch));
    } else {
      this.insert(this.scratch, -found - 1);
    }
    this.packedCount++;
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
    const mask = this.slots - 1;
    // A sha256's bits are uniform: its first word is as good a start as any hash of it.
    let slot = (key[0] as number) & mask;
    for (;;) {
      if (this.used[slot] === 0) return -slot - 1;
      if (this.equalAt(slot, key)) return slot;
      slot = (slot + 1) & mask;
    }
  }

  private freeSlot(key: Uint32Array): number {
    return -this.find(key) - 1;
  }

  private equalAt(slot: number, key: Uint32Array): boolean {
    const base = slot * WORDS;
    for (let w = 0; w < WORDS; w++) if (this.words[base + w] !== key[w]) return false;
    return true;
  }

  private insert(key: Uint32Array, slot: number): void {
    this.words.set(key, slot * WORDS);
    this.used[slot] = 1;
  }

  private grow(): void {
    const oldWords = this.words;
    const oldUsed = this.used;
    const oldSlots = this.slots;
    this.slots = oldSlots * 2;
    this.words = new Uint32Array(this.slots * WORDS);
    this.used = new Uint8Array(this.slots);
    for (let slot = 0; slot < oldSlots; slot++) {
      if (oldUsed[slot] === 0) continue;
      const key = oldWords.subarray(slot * WORDS, slot * WORDS + WORDS);
      this.insert(key, this.freeSlot(key));
    }
  }
}
