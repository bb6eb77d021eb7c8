// Full rewrites (docs/algorithm.md section 12, "Several models and cost"): the
// answer gives the whole EVOLVE-BLOCK in a fenced block instead of
// SEARCH/REPLACE edits. Only the code between the parent's markers is
// replaced; the result is an ApplyResult like an edit's, so the early checks
// (no change, too long, duplicate) and their outcomes are the same.
import { sameCodeIgnoringComments } from './codeText';
import {
  type ApplyOptions,
  type ApplyResult,
  DEFAULT_MAX_CODE_LENGTH,
  locateEvolveBlocks,
  replaceEvolveBlock,
  stripReasoning,
} from './diff';

const MARKER = /EVOLVE-BLOCK-(START|END)/;

/** The fenced blocks of an answer, in order, each as its lines (an unterminated last fence ends at the answer's end). */
function fencedBlocks(answer: string): string[][] {
  const lines = answer.replace(/\r\n?/g, '\n').split('\n');
  const blocks: string[][] = [];
  let open: { fence: string; lines: string[] } | null = null;
  for (const line of lines) {
    const fence = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (open === null) {
      if (fence !== undefined) open = { fence, lines: [] };
    } else if (fence !== undefined && fence[0] === open.fence[0] && fence.length >= open.fence.length && line.trim() === fence) {
      blocks.push(open.lines);
      open = null;
    } else {
      open.lines.push(line);
    }
  }
  return blocks;
}

/** A block's code between the markers, when the model copied them too; null when a marker is out of place. */
function interior(block: string[]): string[] | null {
  const start = block.findIndex((l) => l.includes('EVOLVE-BLOCK-START'));
  const end = block.findIndex((l) => l.includes('EVOLVE-BLOCK-END'));
  if (start < 0 && end < 0) return block;
  if (start >= 0 && end > start && !block.slice(start + 1, end).some((l) => MARKER.test(l))) return block.slice(start + 1, end);
  return null;
}

/**
 * The child of a rewrite answer: the last fenced block (the last k blocks for
 * a parent of k regions, in order) replaces the code between the markers.
 */
export function applyRewrite(parent: string, response: string, options: ApplyOptions = {}): ApplyResult {
  const maxLength = options.maxLength ?? DEFAULT_MAX_CODE_LENGTH;
  const blocks = fencedBlocks(stripReasoning(response)).filter((b) => b.some((l) => l.trim() !== ''));
  const result = (status: ApplyResult['status'], child: string | null, message: string): ApplyResult => ({
    status,
    child,
    applied: status === 'applied' || status === 'too_long' ? 1 : 0,
    skipped: [],
    blocks: blocks.length,
    message,
  });
  const location = locateEvolveBlocks(parent);
  const broken = location.problems[0];
  if (broken) return result('no_evolve_block', null, `the parent has no usable EVOLVE-BLOCK: ${broken.message}`);
  const k = location.regions.length;
  if (blocks.length === 0) return result('no_diff_blocks', null, 'the answer has no fenced code block (rewrite mode)');
  if (blocks.length < k)
    return result(
      'no_valid_change',
      null,
      `the parent has ${k} EVOLVE-BLOCK regions, the answer ${blocks.length} fenced blocks (rewrite mode)`,
    );
  const bodies = blocks.slice(-k).map(interior);
  if (bodies.some((b) => b === null))
    return result('outside_evolve_block', null, 'the rewrite moves or adds EVOLVE-BLOCK markers (rewrite mode)');
  // A program whose regions are the answer's blocks: its markers are any lines naming them.
  const program = (bodies as string[][]).flatMap((body) => ['EVOLVE-BLOCK-START', ...body, 'EVOLVE-BLOCK-END']).join('\n');
  const child = replaceEvolveBlock(parent, program);
  if (sameCodeIgnoringComments(child, parent, options.language ?? ''))
    return result('no_valid_change', child, 'the rewrite equals the parent up to comments and blank space');
  if (child.length > maxLength)
    return result('too_long', child, `the child has ${child.length} characters, over the limit of ${maxLength}`);
  return result('applied', child, 'the EVOLVE-BLOCK rewritten');
}
