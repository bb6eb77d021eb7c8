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

/**
 * One island's programs as one matrix (rows of int8, each row's norm kept):
 * a child is compared with every row in one pass over contiguous memory.
 */
export class IslandMatrix {
  private readonly rows: Int8Array;
  private readonly norms: Float32Array;
  readonly ids: readonly string[];
  readonly dimensions: number;

  constructor(members: readonly { id: string; vector: Int8Array }[]) {
    this.dimensions = members[0]?.vector.length ?? 0;
    const usable = members.filter((m) => m.vector.length === this.dimensions);
    this.ids = usable.map((m) => m.id);
    this.rows = new Int8Array(usable.length * this.dimensions);
    this.norms = new Float32Array(usable.length);
    usable.forEach((m, r) => {
      this.rows.set(m.vector, r * this.dimensions);
      let sum = 0;
      for (let i = 0; i < m.vector.length; i++) sum += (m.vector[i] as number) * (m.vector[i] as number);
      this.norms[r] = Math.sqrt(sum);
    });
  }

  get size(): number {
    return this.ids.length;
  }

  /** The row most similar to `vector` (cosine), or null for an empty island or another dimension. */
  closest(vector: Float32Array): Closest | null {
    const d = this.dimensions;
    if (this.ids.length === 0 || vector.length !== d) return null;
    let queryNorm = 0;
    for (let i = 0; i < d; i++) queryNorm += (vector[i] as number) * (vector[i] as number);
    queryNorm = Math.sqrt(queryNorm);
    if (queryNorm === 0) return null;
    let best = -1;
    let bestSimilarity = Number.NEGATIVE_INFINITY;
    const rows = this.rows;
    for (let r = 0, offset = 0; r < this.ids.length; r++, offset += d) {
      const norm = this.norms[r] as number;
      if (norm === 0) continue;
      let dot = 0;
      for (let i = 0; i < d; i++) dot += (vector[i] as number) * (rows[offset + i] as number);
      const similarity = dot / (norm * queryNorm);
      if (similarity > bestSimilarity) {
        bestSimilarity = similarity;
        best = r;
      }
    }
    return best < 0 ? null : { id: this.ids[best] as string, similarity: bestSimilarity };
  }
}
