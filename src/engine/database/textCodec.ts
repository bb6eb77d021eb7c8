// Long text (responses, reasoning, long programs) is stored zlib-compressed as
// a BLOB; short text stays a plain TEXT value. Any SQLite tool can read the
// file; a BLOB column value is zlib data (Python: zlib.decompress(blob)).
import * as zlib from 'node:zlib';

/** Texts at least this long are compressed: below it zlib saves little and costs a call. */
export const COMPRESS_FROM_CHARS = 512;

// Level 1 and a small window: a step compresses about a thousand texts of a
// few KB, where the default level and window cost far more time (and
// short-lived native memory) for a few percent of size.
const DEFLATE_OPTIONS: zlib.ZlibOptions = { level: 1, windowBits: 13, memLevel: 6 };

export type StoredText = string | Uint8Array;

export function encodeText(text: string | null): StoredText | null {
  if (text === null || text.length < COMPRESS_FROM_CHARS) return text;
  const compressed = zlib.deflateSync(Buffer.from(text, 'utf8'), DEFLATE_OPTIONS);
  return new Uint8Array(compressed.buffer, compressed.byteOffset, compressed.byteLength);
}

export function decodeText(value: StoredText | null): string | null {
  if (value === null || typeof value === 'string') return value;
  return zlib.inflateSync(value).toString('utf8');
}
