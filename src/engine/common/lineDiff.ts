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
