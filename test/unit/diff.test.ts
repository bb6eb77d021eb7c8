import assert from 'node:assert/strict';
import {
  applyResponse,
  evolveBlockContent,
  EvolveBlockError,
  locateEvolveBlocks,
  parseDiffBlocks,
  replaceEvolveBlock,
  stripReasoning,
} from '../../src/engine/common/diff';

const PARENT = [
  'import math',
  'SCALE = 2.0',
  '',
  '# EVOLVE-BLOCK-START',
  'def solve():',
  '    step = 0.1',
  '    count = 10',
  '    return step * count',
  '# EVOLVE-BLOCK-END',
  '',
  'print(solve() * SCALE)',
  '',
].join('\n');

function block(search: string[], replace: string[]): string {
  return ['<<<<<<< SEARCH', ...search, '=======', ...replace, '>>>>>>> REPLACE'].join('\n');
}

describe('diff: EVOLVE-BLOCK regions', () => {
  it('finds one region in Python, // and /* */ comment styles', () => {
    for (const [start, end] of [
      ['# EVOLVE-BLOCK-START', '# EVOLVE-BLOCK-END'],
      ['// EVOLVE-BLOCK-START', '// EVOLVE-BLOCK-END'],
      ['/* EVOLVE-BLOCK-START */', '/* EVOLVE-BLOCK-END */'],
      ['-- EVOLVE-BLOCK-START', '-- EVOLVE-BLOCK-END'],
      ['% EVOLVE-BLOCK-START', '% EVOLVE-BLOCK-END'],
      ['; EVOLVE-BLOCK-START', '; EVOLVE-BLOCK-END'],
    ]) {
      const text = ['head', start, 'x = 1', end, 'tail'].join('\n');
      const loc = locateEvolveBlocks(text);
      assert.deepEqual(loc.problems, [], start);
      assert.deepEqual(loc.regions, [{ startLine: 1, endLine: 3 }]);
    }
  });

  it('reports no region, unbalanced and nested markers with line numbers, and accepts several regions', () => {
    const none = locateEvolveBlocks('x = 1\n');
    assert.equal(none.problems[0]?.kind, 'no_region');

    const noEnd = locateEvolveBlocks('a\n# EVOLVE-BLOCK-START\nb\n');
    assert.equal(noEnd.problems[0]?.kind, 'unbalanced');
    assert.deepEqual(noEnd.problems[0]?.lines, [1]);
    assert.match(noEnd.problems[0]?.message ?? '', /line 2/);

    const strayEnd = locateEvolveBlocks('# EVOLVE-BLOCK-END\n');
    assert.equal(strayEnd.problems[0]?.kind, 'unbalanced');

    const nested = locateEvolveBlocks('# EVOLVE-BLOCK-START\n# EVOLVE-BLOCK-START\nx\n# EVOLVE-BLOCK-END\n# EVOLVE-BLOCK-END\n');
    assert.ok(nested.problems.length >= 2);
    assert.ok(nested.problems.every((p) => p.kind === 'unbalanced'));
    assert.deepEqual(nested.problems[0]?.lines, [0, 1]);

    // Algorithm.md section 3: a file may hold several EVOLVE-BLOCK regions.
    const two = locateEvolveBlocks('// EVOLVE-BLOCK-START\na\n// EVOLVE-BLOCK-END\nb\n// EVOLVE-BLOCK-START\nc\n// EVOLVE-BLOCK-END\n');
    assert.deepEqual(two.regions, [
      { startLine: 0, endLine: 2 },
      { startLine: 4, endLine: 6 },
    ]);
    assert.deepEqual(two.problems, []);
  });

  it("replaces a file's EVOLVE-BLOCK content with a program's, keeping the rest and CRLF", () => {
    const file = ['header', '// EVOLVE-BLOCK-START', 'old();', '// EVOLVE-BLOCK-END', 'footer'].join('\r\n');
    const program = ['other header', '# EVOLVE-BLOCK-START', 'new1();', 'new2();', '# EVOLVE-BLOCK-END', ''].join('\n');
    assert.equal(
      replaceEvolveBlock(file, program),
      ['header', '// EVOLVE-BLOCK-START', 'new1();', 'new2();', '// EVOLVE-BLOCK-END', 'footer'].join('\r\n'),
    );
    assert.equal(evolveBlockContent(program), 'new1();\nnew2();');
    assert.throws(() => replaceEvolveBlock('no markers', program), EvolveBlockError);
    assert.throws(() => replaceEvolveBlock(file, 'x'), /the program: no EVOLVE-BLOCK-START/);
  });
});

describe('diff: parsing responses', () => {
  it('ignores <think> reasoning, closed, stray-closed and unclosed', () => {
    const fake = block(['    step = 0.1'], ['    step = 0.9']);
    assert.equal(parseDiffBlocks(`<think>\n${fake}\n</think>\nNothing to do.`).blocks.length, 0);
    assert.equal(parseDiffBlocks(`reasoning ${fake} </think> answer`).blocks.length, 0);
    assert.equal(parseDiffBlocks(`<think>\n${fake}`).blocks.length, 0, 'an unclosed leading <think>: a truncated reply, all reasoning');
    // Reasoning is only a leading <think>...</think>: a later one is text of the answer.
    assert.equal(parseDiffBlocks(`answer first\n<think>\n${fake}`).blocks.length, 1);
    assert.equal(stripReasoning('a<think>b</think>c'), 'a<think>b</think>c');
    assert.equal(stripReasoning('  <think>b</think>c'), 'c');
    const real = parseDiffBlocks(`<think>${fake}</think>\nHere:\n${block(['    count = 10'], ['    count = 20'])}`);
    assert.deepEqual(
      real.blocks.map((b) => b.search),
      [['    count = 10']],
    );
  });

  it('tolerates markdown fences around and inside blocks, and CRLF', () => {
    const fencedAround = '```python\r\n' + block(['    count = 10'], ['    count = 11']).replace(/\n/g, '\r\n') + '\r\n```\r\n';
    const parsed = parseDiffBlocks(fencedAround);
    assert.deepEqual(parsed.blocks, [{ index: 0, search: ['    count = 10'], replace: ['    count = 11'] }]);
    // Sections are kept as written (a literal match comes first); the fences are stripped when applying.
    const fencedInside = [
      '<<<<<<< SEARCH',
      '```python',
      '    count = 10',
      '```',
      '=======',
      '```python',
      '    count = 12',
      '```',
      '>>>>>>> REPLACE',
    ].join('\n');
    assert.deepEqual(parseDiffBlocks(fencedInside).blocks[0]?.replace, ['```python', '    count = 12', '```']);
    assert.equal(applyResponse(PARENT, fencedInside, { language: 'py' }).child, PARENT.replace('count = 10', 'count = 12'));
  });

  it('flags an unterminated block and ignores it', () => {
    const parsed = parseDiffBlocks('<<<<<<< SEARCH\n    count = 10\n=======\n    count = 1');
    assert.equal(parsed.blocks.length, 0);
    assert.equal(parsed.unterminated, true);
  });
});

describe('diff: applying responses', () => {
  it('applies several blocks in order, each to the result of the ones before', () => {
    const response = [
      'I make the step finer, then use more of them.',
      block(['    step = 0.1'], ['    step = 0.05']),
      'and',
      block(['    step = 0.05', '    count = 10'], ['    step = 0.05', '    count = 40']),
    ].join('\n\n');
    const result = applyResponse(PARENT, response, { language: 'py' });
    assert.equal(result.status, 'applied');
    assert.equal(result.applied, 2);
    assert.deepEqual(result.skipped, []);
    assert.equal(result.child, PARENT.replace('step = 0.1', 'step = 0.05').replace('count = 10', 'count = 40'));
  });

  it('replaces only the first match inside the region', () => {
    const parent = '# EVOLVE-BLOCK-START\nx = 1\nx = 1\n# EVOLVE-BLOCK-END\n';
    const result = applyResponse(parent, block(['x = 1'], ['x = 2']), { language: 'py' });
    assert.equal(result.child, '# EVOLVE-BLOCK-START\nx = 2\nx = 1\n# EVOLVE-BLOCK-END\n');
  });

  it('prefers a match inside the region to an earlier identical line outside', () => {
    const parent = 'x = 1\n# EVOLVE-BLOCK-START\nx = 1\n# EVOLVE-BLOCK-END\n';
    const result = applyResponse(parent, block(['x = 1'], ['x = 3']), { language: 'py' });
    assert.equal(result.status, 'applied');
    assert.equal(result.child, 'x = 1\n# EVOLVE-BLOCK-START\nx = 3\n# EVOLVE-BLOCK-END\n');
  });

  it('skips a non-matching block, reports it and still applies the others', () => {
    const response = [block(['    step = 0.2'], ['    step = 0.3']), block(['    count = 10'], ['    count = 11'])].join('\n');
    const result = applyResponse(PARENT, response, { language: 'py' });
    assert.equal(result.status, 'applied');
    assert.equal(result.applied, 1);
    assert.deepEqual(
      result.skipped.map((s) => [s.index, s.reason, s.search]),
      [[0, 'no_match', '    step = 0.2']],
    );
  });

  it('matches whitespace exactly', () => {
    const tabs = applyResponse(PARENT, block(['\tstep = 0.1'], ['\tstep = 0.2']), { language: 'py' });
    assert.equal(tabs.status, 'no_valid_change');
    assert.equal(tabs.skipped[0]?.reason, 'no_match');
    const trailing = applyResponse(PARENT, block(['    step = 0.1 '], ['    step = 0.2']), { language: 'py' });
    assert.equal(trailing.skipped[0]?.reason, 'no_match');
    const partial = applyResponse(PARENT, block(['step = 0.1'], ['step = 0.2']), { language: 'py' });
    assert.equal(partial.skipped[0]?.reason, 'no_match', 'SEARCH lines match whole lines, not substrings');
  });

  it('rejects blocks that touch lines outside the EVOLVE-BLOCK or its markers', () => {
    const outside = applyResponse(PARENT, block(['SCALE = 2.0'], ['SCALE = 3.0']), { language: 'py' });
    assert.equal(outside.status, 'outside_evolve_block');
    assert.equal(outside.child, null);
    assert.equal(outside.skipped[0]?.reason, 'outside_evolve_block');
    assert.match(outside.skipped[0]?.detail ?? '', /lines 2-2/);

    // An unchanged marker line as context is allowed (section 3); changing lines across it is not.
    const acrossMarker = applyResponse(
      PARENT,
      block(['', '# EVOLVE-BLOCK-START', 'def solve():'], ['SCALE = 3', '# EVOLVE-BLOCK-START', 'def solve(x=1):']),
      { language: 'py' },
    );
    assert.equal(acrossMarker.status, 'outside_evolve_block');
    const markerEdited = applyResponse(
      PARENT,
      block(['# EVOLVE-BLOCK-START', 'def solve():'], ['# EVOLVE-BLOCK-START (edited)', 'def solve(x=1):']),
      { language: 'py' },
    );
    assert.equal(markerEdited.skipped[0]?.reason, 'marker_in_replace');

    const markerInReplace = applyResponse(PARENT, block(['    count = 10'], ['    count = 10', '# EVOLVE-BLOCK-END', 'SCALE = 9']), {
      language: 'py',
    });
    assert.equal(markerInReplace.status, 'outside_evolve_block');
    assert.equal(markerInReplace.skipped[0]?.reason, 'marker_in_replace');

    const mixed = applyResponse(
      PARENT,
      [block(['SCALE = 2.0'], ['SCALE = 3.0']), block(['    count = 10'], ['    count = 12'])].join('\n'),
      { language: 'py' },
    );
    assert.equal(mixed.status, 'applied');
    assert.equal(mixed.applied, 1);
    assert.ok(mixed.child?.includes('SCALE = 2.0'));
  });

  it('rejects an empty SEARCH section', () => {
    const result = applyResponse(PARENT, block([], ['    extra = 1']), { language: 'py' });
    assert.equal(result.status, 'no_valid_change');
    assert.equal(result.skipped[0]?.reason, 'empty_search');
    const blank = applyResponse(PARENT, block(['', '  '], ['    extra = 1']), { language: 'py' });
    assert.equal(blank.skipped[0]?.reason, 'empty_search');
  });

  it('allows a deletion (empty REPLACE)', () => {
    const result = applyResponse(PARENT, block(['    count = 10'], []), { language: 'py' });
    assert.equal(result.status, 'applied');
    assert.ok(!result.child?.includes('count = 10'));
  });

  it("tolerates CRLF in the parent and the response, and keeps the parent's line ends", () => {
    const parentCrlf = PARENT.replace(/\n/g, '\r\n');
    const response = block(['    count = 10'], ['    count = 15']).replace(/\n/g, '\r\n');
    const result = applyResponse(parentCrlf, response, { language: 'py' });
    assert.equal(result.status, 'applied');
    assert.equal(result.child, parentCrlf.replace('count = 10', 'count = 15'));
  });

  it('works with // and /* */ markers', () => {
    const c = [
      '#include <stdio.h>',
      '/* EVOLVE-BLOCK-START */',
      'double r = 0.5;',
      '/* EVOLVE-BLOCK-END */',
      'int main(void) { return 0; }',
    ].join('\n');
    assert.equal(applyResponse(c, block(['double r = 0.5;'], ['double r = 0.6;']), { language: 'c' }).status, 'applied');
    const js = c.replace('/* EVOLVE-BLOCK-START */', '// EVOLVE-BLOCK-START').replace('/* EVOLVE-BLOCK-END */', '// EVOLVE-BLOCK-END');
    assert.equal(applyResponse(js, block(['double r = 0.5;'], ['double r = 0.6;']), { language: 'js' }).status, 'applied');
  });

  it('gives each status', () => {
    assert.equal(applyResponse(PARENT, '', { language: 'py' }).status, 'no_diff_blocks');
    assert.equal(applyResponse(PARENT, 'I would change the step size.', { language: 'py' }).status, 'no_diff_blocks');
    assert.equal(applyResponse('x = 1\n', block(['x = 1'], ['x = 2'])).status, 'no_evolve_block');
    const nested = '# EVOLVE-BLOCK-START\n# EVOLVE-BLOCK-START\nx = 1\n# EVOLVE-BLOCK-END\n# EVOLVE-BLOCK-END\n';
    assert.equal(applyResponse(nested, block(['x = 1'], ['x = 2'])).status, 'no_evolve_block');
    const commentOnly = applyResponse(PARENT, block(['    step = 0.1'], ['    step = 0.1  # a finer step later']), { language: 'py' });
    assert.equal(commentOnly.status, 'no_valid_change');
    assert.notEqual(commentOnly.child, null);
    const identical = applyResponse(PARENT, block(['    step = 0.1'], ['    step = 0.1']), { language: 'py' });
    assert.equal(identical.status, 'no_valid_change');
    const long = applyResponse(PARENT, block(['    count = 10'], ['    count = 10', `    pad = "${'x'.repeat(200)}"`]), {
      language: 'py',
      maxLength: 250,
    });
    assert.equal(long.status, 'too_long');
    assert.equal(applyResponse(PARENT, block(['SCALE = 2.0'], ['SCALE = 1.0'])).status, 'outside_evolve_block');
    assert.equal(applyResponse(PARENT, block(['    count = 10'], ['    count = 9'])).status, 'applied');
  });
});
