// Novelty rejection's vectors (docs/algorithm.md section 12): an embedding is
// kept as int8 (each component over the vector's largest magnitude, times
// 127), one byte a dimension in the database and in memory; a child's own
// embedding stays float. Cosine similarity is scale-free, so the quantised
// vector needs no scale stored. A resumed run reads the same bytes the
// uninterrupted run compared against, so both decide alike.

/** A float embedding as the int8 bytes stored with its program. */
export function quantise(vector: ArrayLike<number>): Int8Array {
  let largest = 0;
  for (let i = 0; i < vector.length; i++) largest = Math.max(largest, Math.abs(vector[i] as number));
  const out = new Int8Array(vector.length);
  if (largest === 0) return out;
  const scale = 127 / largest;
  for (let i = 0; i < vector.length; i++) out[i] = Math.round((vector[i] as number) * scale);
  return out;
}

/** The stored bytes as the int8 vector (a view, no copy). */
export function int8Of(bytes: Uint8Array): Int8Array {
  return new Int8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** The int8 vector as the bytes stored (a view, no copy). */
export function bytesOf(vector: Int8Array): Uint8Array {
  return new Uint8Array(vector.buffer, vector.byteOffset, vector.byteLength);
}

/** The closest program of an island to a child: its id and their cosine similarity. */
export interface Closest {
  id: string;
  similarity: number;
}

/** Dimensions between two checks of a row's bound (closest()). */
const BLOCK = 64;

/**
 * Relative slack on the bound: a row is skipped only when even its bound is this far under the threshold, so rounding
 * (about 1e-13 here) never skips a row whose computed similarity would exceed it.
 */
const BOUND_SLACK = 1e-9;

/** Norms of each block's tail: out[b] = the norm of the components from block b on (b = 0: the whole vector). */
export function blockTailNorms(vector: Int8Array): Float64Array {
  const out = new Float64Array(Math.max(1, Math.ceil(vector.length / BLOCK)));
  tailNorms(vector, out.length, out, 0);
  return out;
}

function tailNorms(vector: ArrayLike<number>, blocks: number, out: Float64Array, at: number): void {
  let sum = 0;
  for (let b = blocks - 1; b >= 0; b--) {
    const end = Math.min(vector.length, (b + 1) * BLOCK);
    for (let i = b * BLOCK; i < end; i++) sum += (vector[i] as number) * (vector[i] as number);
    out[at + b] = Math.sqrt(sum);
  }
}

/**
 * One island's programs as one matrix (rows of int8, each row's norm kept):
 * a child is compared with every row in one pass over contiguous memory.
 * Only a row above the threshold matters (it names the closest program), so
 * a row is left as soon as Cauchy–Schwarz shows it cannot exceed it: the dot
 * product so far plus |rest of the query| x |rest of the row| is an upper bound
 * of the whole. Rows that can reach it are summed in full, in the same order,
 * so the similarity found is the one a plain scan finds.
 */
export class IslandMatrix {
  private readonly rows: Int8Array;
  /** Each row's norm, as float32 (the similarity divides by it). */
  private readonly norms: Float32Array;
  /** blocks entries a row: the norm of its components from block b on (for the bound). */
  private readonly tails: Float64Array;
  private readonly blocks: number;
  readonly ids: readonly string[];
  readonly dimensions: number;

  /** `tails`: the row's blockTailNorms, when its holder keeps them (computed here otherwise). */
  constructor(members: readonly { id: string; vector: Int8Array; tails?: Float64Array }[]) {
    this.dimensions = members[0]?.vector.length ?? 0;
    this.blocks = Math.max(1, Math.ceil(this.dimensions / BLOCK));
    const usable = members.filter((m) => m.vector.length === this.dimensions);
    this.ids = usable.map((m) => m.id);
    this.rows = new Int8Array(usable.length * this.dimensions);
    this.norms = new Float32Array(usable.length);
    this.tails = new Float64Array(usable.length * this.blocks);
    usable.forEach((m, r) => {
      this.rows.set(m.vector, r * this.dimensions);
      if (m.tails?.length === this.blocks) this.tails.set(m.tails, r * this.blocks);
      else tailNorms(m.vector, this.blocks, this.tails, r * this.blocks);
      // A sum of squares of int8 is an exact integer, whatever the order.
      this.norms[r] = this.tails[r * this.blocks] as number;
    });
  }

  get size(): number {
    return this.ids.length;
  }

  /**
   * The row most similar to `vector` (cosine) when its similarity is more than
   * `above`; null when none is (or for an empty island or another dimension).
   */
  closest(vector: Float32Array, above: number): Closest | null {
    const d = this.dimensions;
    const blocks = this.blocks;
    if (this.ids.length === 0 || vector.length !== d) return null;
    let queryNorm = 0;
    for (let i = 0; i < d; i++) queryNorm += (vector[i] as number) * (vector[i] as number);
    queryNorm = Math.sqrt(queryNorm);
    if (queryNorm === 0) return null;
    const queryTails = new Float64Array(blocks);
    tailNorms(vector, blocks, queryTails, 0);
    let best = -1;
    let bestSimilarity = Number.NEGATIVE_INFINITY;
    const rows = this.rows;
    const tails = this.tails;
    rows: for (let r = 0, offset = 0; r < this.ids.length; r++, offset += d) {
      const at = r * blocks;
      const norm = this.norms[r] as number;
      if (norm === 0) continue;
      const scale = norm * queryNorm;
      // What the dot product must exceed, less the slack; -Infinity when every row may (above <= -1).
      const needed = above <= -1 ? Number.NEGATIVE_INFINITY : above * scale - BOUND_SLACK * scale;
      let dot = 0;
      for (let b = 0; b < blocks; b++) {
        if (b > 0 && dot + (queryTails[b] as number) * (tails[at + b] as number) < needed) continue rows;
        const end = Math.min(d, (b + 1) * BLOCK);
        for (let i = b * BLOCK; i < end; i++) dot += (vector[i] as number) * (rows[offset + i] as number);
      }
      const similarity = dot / scale;
      if (similarity > above && similarity > bestSimilarity) {
        bestSimilarity = similarity;
        best = r;
      }
    }
    return best < 0 ? null : { id: this.ids[best] as string, similarity: bestSimilarity };
  }
}
