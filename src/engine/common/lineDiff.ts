// Which lines of a text it shares with the text it came from: a longest
// common subsequence of lines, after the common head and tail (an edit
// usually touches a few lines in the middle). The blame of
// docs/algorithm.md section 11 runs it along a lineage.

/** For each line of `after`, the index of the line of `before` it is kept from, or -1 for a line new in `after`. */
export function keptLines(before: readonly string[], after: readonly string[]): number[] {
  const kept = new Array<number>(after.length).fill(-1);
  let head = 0;
  while (head < before.length && head < after.length && before[head] === after[head]) {
    kept[head] = head;
    head++;
  }
  let tail = 0;
  while (tail < before.length - head && tail < after.length - head && before[before.length - 1 - tail] === after[after.length - 1 - tail]) {
    kept[after.length - 1 - tail] = before.length - 1 - tail;
    tail++;
  }
  const a = before.slice(head, before.length - tail);
  const b = after.slice(head, after.length - tail);
  if (a.length === 0 || b.length === 0) return kept;
  // lengths[i][j]: the LCS of a[i..] and b[j..], one row of (b.length + 1) per line of a.
  const width = b.length + 1;
  const lengths = new Uint32Array((a.length + 1) * width);
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      lengths[i * width + j] =
        a[i] === b[j]
          ? (lengths[(i + 1) * width + j + 1] as number) + 1
          : Math.max(lengths[(i + 1) * width + j] as number, lengths[i * width + j + 1] as number);
    }
  }
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) {
      kept[head + j] = head + i;
      i++;
      j++;
    } else if ((lengths[(i + 1) * width + j] as number) >= (lengths[i * width + j + 1] as number)) i++;
    else j++;
  }
  return kept;
}

/**
 * A unified diff of two texts' lines (`-` removed, `+` added, ` ` kept), in
 * hunks with `context` kept lines around each change; '' when they are equal.
 * What an agent reads of a step's change (docs/architecture.md "Agents").
 */
export function unifiedLineDiff(before: readonly string[], after: readonly string[], context = 3): string {
  const kept = keptLines(before, after);
  // One sequence of operations in order: removed lines of `before` come before the added ones at the same place.
  const ops: { tag: ' ' | '-' | '+'; text: string; a: number; b: number }[] = [];
  let i = 0;
  let added: number[] = [];
  const flush = (until: number): void => {
    const b = added[0] ?? (ops.at(-1)?.b ?? -1) + 1;
    for (; i < until; i++) ops.push({ tag: '-', text: before[i] as string, a: i, b });
    for (const j of added) ops.push({ tag: '+', text: after[j] as string, a: i, b: j });
    added = [];
  };
  for (let j = 0; j < after.length; j++) {
    const from = kept[j] as number;
    if (from === -1) {
      added.push(j);
      continue;
    }
    flush(from);
    ops.push({ tag: ' ', text: after[j] as string, a: i, b: j });
    i = from + 1;
  }
  flush(before.length);
  const changed = ops.flatMap((op, k) => (op.tag === ' ' ? [] : [k]));
  if (changed.length === 0) return '';
  const hunks: string[] = [];
  let start = 0;
  while (start < changed.length) {
    let end = start;
    while (end + 1 < changed.length && (changed[end + 1] as number) - (changed[end] as number) <= 2 * context + 1) end++;
    const from = Math.max(0, (changed[start] as number) - context);
    const to = Math.min(ops.length - 1, (changed[end] as number) + context);
    const slice = ops.slice(from, to + 1);
    const first = slice[0] as (typeof ops)[number];
    const aCount = slice.filter((op) => op.tag !== '+').length;
    const bCount = slice.filter((op) => op.tag !== '-').length;
    hunks.push(
      `@@ -${aCount === 0 ? first.a : first.a + 1},${aCount} +${bCount === 0 ? first.b : first.b + 1},${bCount} @@\n` +
        slice.map((op) => `${op.tag}${op.text}`).join('\n'),
    );
    start = end + 1;
  }
  return hunks.join('\n');
}
