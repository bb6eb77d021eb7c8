// The robustness rules at the end of algorithm.md section 3, one test each,
// and cases taken from peers' own diff test suites (cited per test, with
// their licences: OpenEvolve, ShinkaEvolve, Aider and Cline are Apache-2.0).
// The same cases run through `thetaevolve apply` in cliApply.test.ts.
import assert from 'node:assert/strict';
import { applyResponse, parseDiffBlocks, replaceEvolveBlock } from '../../src/engine/common/diff';

function block(search: string[], replace: string[]): string {
  return ['<<<<<<< SEARCH', ...search, '=======', ...replace, '>>>>>>> REPLACE'].join('\n');
}

/** No line of a child may be a SEARCH/REPLACE syntax line. */
function assertNoConflictMarkers(child: string | null): void {
  for (const line of (child ?? '').split(/\r?\n/))
    assert.doesNotMatch(line, /^\s*(<{5,}\s*SEARCH|={5,}|>{5,}\s*REPLACE)\s*$/, `conflict marker in the child: ${line}`);
}

const PARSER = [
  'import re',
  '# EVOLVE-BLOCK-START',
  'def answer_of(text):',
  "    if '<think>' in text:",
  "        text = text.split('</think>')[-1]",
  '    return text.strip()',
  '# EVOLVE-BLOCK-END',
  'print(answer_of(open(0).read()))',
  '',
].join('\n');

describe('diff: robustness rules (algorithm.md section 3)', () => {
  it('takes reasoning only from a leading <think>...</think>: <think> and </think> inside SEARCH or REPLACE are code', () => {
    const edit = block(
      ["    if '<think>' in text:", "        text = text.split('</think>')[-1]"],
      ["    if '</think>' in text:", "        text = text.rsplit('</think>', 1)[-1]"],
    );
    const expected = PARSER.replace("    if '<think>' in text:", "    if '</think>' in text:").replace(
      "text.split('</think>')[-1]",
      "text.rsplit('</think>', 1)[-1]",
    );
    for (const response of [
      `I handle a reply whose tag was eaten.\n${edit}`,
      `<think>\nThe parser should look for the closing tag.\n</think>\nHere is the edit:\n${edit}`,
      `The opening tag was in the template, so this starts mid-thought.\n</think>\n${edit}`,
    ]) {
      const result = applyResponse(PARSER, response, { language: 'py' });
      assert.equal(result.status, 'applied', `${result.message}\n${response}`);
      assert.equal(result.child, expected);
    }
    // A draft block inside the leading reasoning is still ignored, even one the closing tag interrupts.
    const draft = block(['    return text.strip()'], ['    return text']);
    const drafted = applyResponse(PARSER, `<think>\nmaybe:\n<<<<<<< SEARCH\n    return text.strip()\n</think>\nNo edit is needed.`, {
      language: 'py',
    });
    assert.equal(drafted.status, 'no_diff_blocks');
    assert.equal(applyResponse(PARSER, `<think>\n${draft}\n</think>\nNothing to change.`, { language: 'py' }).status, 'no_diff_blocks');
  });

  it("tries a literal match before stripping fences: a Markdown program's own fence lines can be SEARCH text", () => {
    const readme = [
      '# Usage',
      '<!-- EVOLVE-BLOCK-START -->',
      'Run it:',
      '',
      '```bash',
      'make run',
      '```',
      '<!-- EVOLVE-BLOCK-END -->',
      '',
    ].join('\n');
    // Stripping the fences first would turn this into 'make run' -> 'make run': no change.
    const result = applyResponse(readme, block(['```bash', 'make run', '```'], ['```sh', 'make run', '```']), { language: 'md' });
    assert.equal(result.status, 'applied', result.message);
    assert.equal(result.child, readme.replace('```bash', '```sh'));
    // A fenced REPLACE for a program with fence lines is kept as written (it may be a new code block).
    const added = applyResponse(readme, block(['Run it:'], ['Build first:', '```bash', 'make', '```', 'Run it:']), { language: 'md' });
    assert.equal(added.child, readme.replace('Run it:', 'Build first:\n```bash\nmake\n```\nRun it:'));
    // Still: fences a model wraps around the sections of a fence-free program are stripped.
    const python = ['# EVOLVE-BLOCK-START', 'x = 1', '# EVOLVE-BLOCK-END', ''].join('\n');
    const wrapped = applyResponse(python, block(['```python', 'x = 1', '```'], ['```python', 'x = 2', '```']), { language: 'py' });
    assert.equal(wrapped.child, python.replace('x = 1', 'x = 2'));
    const replaceOnly = applyResponse(python, block(['x = 1'], ['```python', 'x = 3', '```']), { language: 'py' });
    assert.equal(replaceOnly.child, python.replace('x = 1', 'x = 3'));
  });

  it("keeps every untouched line's own line ending (a parent with mixed endings and no final newline)", () => {
    const parent = 'import os\r\n# EVOLVE-BLOCK-START\nx = 1\r\ny = 2\nz = 3\r\n# EVOLVE-BLOCK-END\r\nprint(x)';
    const one = applyResponse(parent, block(['y = 2'], ['y = 20']), { language: 'py' });
    assert.equal(one.child, 'import os\r\n# EVOLVE-BLOCK-START\nx = 1\r\ny = 20\nz = 3\r\n# EVOLVE-BLOCK-END\r\nprint(x)');
    // Replaced lines take the endings of the lines they replace, in order; added lines the file's usual one (CRLF here).
    const grown = applyResponse(parent, block(['x = 1', 'y = 2'], ['x = 10', 'y = 20', 'w = 5']), { language: 'py' });
    assert.equal(grown.child, 'import os\r\n# EVOLVE-BLOCK-START\nx = 10\r\ny = 20\r\nw = 5\nz = 3\r\n# EVOLVE-BLOCK-END\r\nprint(x)');
    const crlfResponse = applyResponse(parent, block(['z = 3'], ['z = 30']).replace(/\n/g, '\r\n'), { language: 'py' });
    assert.equal(crlfResponse.child, parent.replace('z = 3', 'z = 30'));
  });

  it('accepts an unchanged marker line used as context in both SEARCH and REPLACE', () => {
    const parent = ['SCALE = 2', '# EVOLVE-BLOCK-START', 'def solve():', '    return 1', '# EVOLVE-BLOCK-END', 'print(solve())', ''].join(
      '\n',
    );
    const start = applyResponse(parent, block(['# EVOLVE-BLOCK-START', 'def solve():'], ['# EVOLVE-BLOCK-START', 'def solve(k=3):']), {
      language: 'py',
    });
    assert.equal(start.status, 'applied', start.message);
    assert.equal(start.child, parent.replace('def solve():', 'def solve(k=3):'));
    const end = applyResponse(
      parent,
      block(['    return 1', '# EVOLVE-BLOCK-END', 'print(solve())'], ['    return 2', '# EVOLVE-BLOCK-END', 'print(solve())']),
      { language: 'py' },
    );
    assert.equal(end.child, parent.replace('return 1', 'return 2'));
    // Context is only allowed unchanged: moving, dropping or editing a marker, or code outside, is not.
    const dropped = applyResponse(parent, block(['# EVOLVE-BLOCK-START', 'def solve():'], ['def solve(k=3):']), { language: 'py' });
    assert.equal(dropped.skipped[0]?.reason, 'marker_in_replace');
    const outside = applyResponse(parent, block(['SCALE = 2', '# EVOLVE-BLOCK-START'], ['SCALE = 3', '# EVOLVE-BLOCK-START']), {
      language: 'py',
    });
    assert.equal(outside.status, 'outside_evolve_block');
    assert.match(outside.skipped[0]?.detail ?? '', /lines 1-2/);
  });

  it('lets a file hold several EVOLVE-BLOCK regions and a block edit any of them (never the code between)', () => {
    const parent = [
      '// EVOLVE-BLOCK-START',
      'const a = 1;',
      '// EVOLVE-BLOCK-END',
      'const fixed = 0;',
      '// EVOLVE-BLOCK-START',
      'const b = 2;',
      '// EVOLVE-BLOCK-END',
      '',
    ].join('\n');
    const both = applyResponse(parent, `${block(['const b = 2;'], ['const b = 20;'])}\n${block(['const a = 1;'], ['const a = 10;'])}`, {
      language: 'js',
    });
    assert.equal(both.status, 'applied', both.message);
    assert.equal(both.applied, 2);
    assert.equal(both.child, parent.replace('a = 1', 'a = 10').replace('b = 2', 'b = 20'));
    const between = applyResponse(parent, block(['const fixed = 0;'], ['const fixed = 1;']), { language: 'js' });
    assert.equal(between.status, 'outside_evolve_block');
    assert.match(between.skipped[0]?.detail ?? '', /lines 1-3, 5-7/);
    // A block across both regions that keeps the markers and the code between them applies.
    const across = applyResponse(
      parent,
      block(
        ['const a = 1;', '// EVOLVE-BLOCK-END', 'const fixed = 0;', '// EVOLVE-BLOCK-START', 'const b = 2;'],
        ['const a = 3;', '// EVOLVE-BLOCK-END', 'const fixed = 0;', '// EVOLVE-BLOCK-START', 'const b = 4;'],
      ),
      { language: 'js' },
    );
    assert.equal(across.child, parent.replace('a = 1', 'a = 3').replace('b = 2', 'b = 4'));
    // Apply to File replaces region by region and refuses a different number of regions.
    const file = parent.replace(/\n/g, '\r\n');
    assert.equal(replaceEvolveBlock(file, both.child ?? ''), (both.child ?? '').replace(/\n/g, '\r\n'));
    assert.throws(
      () => replaceEvolveBlock(file, ['// EVOLVE-BLOCK-START', 'x', '// EVOLVE-BLOCK-END'].join('\n')),
      /the file has 2 EVOLVE-BLOCK regions \(lines 1-3, 5-7\), the program 1/,
    );
  });

  it('retries a SEARCH that matches nothing without its trailing blank lines (a blank line before =======)', () => {
    const parent = ['# EVOLVE-BLOCK-START', 'def f():', '    a = 1', '    return a', '# EVOLVE-BLOCK-END', ''].join('\n');
    const result = applyResponse(parent, block(['    a = 1', ''], ['    a = 2', '']), { language: 'py' });
    assert.equal(result.status, 'applied', result.message);
    assert.equal(result.child, parent.replace('a = 1', 'a = 2'), 'the REPLACE loses its trailing blank line too, as in the release');
    // A literal match comes first: a SEARCH whose blank line is really there keeps the REPLACE as written.
    const spaced = parent.replace('    a = 1\n', '    a = 1\n\n');
    assert.equal(
      applyResponse(spaced, block(['    a = 1', ''], ['    a = 2', '']), { language: 'py' }).child,
      spaced.replace('a = 1', 'a = 2'),
    );
  });

  it('never puts conflict markers into the child from an unterminated or malformed block', () => {
    const parent = ['# EVOLVE-BLOCK-START', 'x = 1', 'y = 2', '# EVOLVE-BLOCK-END', ''].join('\n');
    const cases: [string, string, string | null][] = [
      // A block missing its REPLACE line, then a complete one: only the complete one applies.
      [
        'missing REPLACE line',
        ['<<<<<<< SEARCH', 'x = 1', '=======', 'x = 5', block(['y = 2'], ['y = 6'])].join('\n'),
        parent.replace('y = 2', 'y = 6'),
      ],
      [
        'missing divider',
        ['<<<<<<< SEARCH', 'x = 1', '>>>>>>> REPLACE', 'x = 7', block(['y = 2'], ['y = 6'])].join('\n'),
        parent.replace('y = 2', 'y = 6'),
      ],
      ['a second divider', ['<<<<<<< SEARCH', 'x = 1', '=======', 'x = 8', '=======', 'x = 9', '>>>>>>> REPLACE'].join('\n'), null],
      ['truncated in REPLACE', ['<<<<<<< SEARCH', 'x = 1', '=======', 'x = 8'].join('\n'), null],
      ['truncated in SEARCH', `${block(['y = 2'], ['y = 3'])}\n<<<<<<< SEARCH\nx = 1`, parent.replace('y = 2', 'y = 3')],
    ];
    for (const [name, response, child] of cases) {
      const parsed = parseDiffBlocks(response);
      assert.equal(parsed.unterminated, true, name);
      const result = applyResponse(parent, response, { language: 'py' });
      assert.equal(result.child, child, name);
      assertNoConflictMarkers(result.child);
      if (child !== null) assert.match(result.message, /an unterminated block was ignored/, name);
    }
  });
});

describe("diff: peers' own test cases", () => {
  // OpenEvolve tests/test_code_utils.py, test_apply_diff (codelion/openevolve, Apache-2.0): indented markers and
  // code, two blocks applied in order. The code sits in an EVOLVE-BLOCK here, which we enforce.
  it('OpenEvolve test_apply_diff: two indented blocks', () => {
    const original = [
      '',
      '        # EVOLVE-BLOCK-START',
      '        def hello():',
      '            print("Hello")',
      '',
      '        x = 1',
      '        y = 2',
      '        # EVOLVE-BLOCK-END',
      '        ',
    ].join('\n');
    const diff = [
      '',
      '        <<<<<<< SEARCH',
      '        def hello():',
      '            print("Hello")',
      '        =======',
      '        def hello():',
      '            print("Hello, World!")',
      '        >>>>>>> REPLACE',
      '',
      '        <<<<<<< SEARCH',
      '        x = 1',
      '        =======',
      '        x = 2',
      '        >>>>>>> REPLACE',
      '        ',
    ].join('\n');
    const result = applyResponse(original, diff, { language: 'py' });
    assert.equal(result.applied, 2);
    assert.equal(result.child, original.replace('print("Hello")', 'print("Hello, World!")').replace('x = 1', 'x = 2'));
  });

  // ShinkaEvolve tests/test_edit_base.py, test_edit with tests/file.py (SakanaAI/ShinkaEvolve, Apache-2.0): the second
  // block matches the first block's replacement; the blank lines before the END marker stay.
  it('ShinkaEvolve test_edit: a block applies to the result of the one before', () => {
    const body = [
      'def run_experiment(train_dataset, device):',
      '    epochs = 5',
      '    batch_size = 64',
      '    learning_rate = 0.01',
      '    train_loader = DataLoader(train_dataset, batch_size=batch_size, shuffle=True)',
      '',
      '    # Initialize model, loss function, and optimizer',
      '    model = MNISTNet().to(device)',
      '    criterion = nn.CrossEntropyLoss()',
      '    optimizer = optim.SGD(model.parameters(), lr=learning_rate)',
      '',
      '    # Training loop',
      '    for epoch in range(1, epochs + 1):',
      '        train(model, device, train_loader, optimizer, criterion, epoch)',
      '    return model',
    ];
    const file = ['# EVOLVE-BLOCK-START', ...body, '', '', '# EVOLVE-BLOCK-END', ''].join('\n');
    const patch = `\n${block(body, ['THIS IS A TEST'])}\n\n${block(['THIS IS A TEST'], ['THIS IS A TEST PART 2'])}\n`;
    const result = applyResponse(file, patch, { language: 'py' });
    assert.equal(result.applied, 2);
    assert.equal(result.child, '# EVOLVE-BLOCK-START\nTHIS IS A TEST PART 2\n\n\n# EVOLVE-BLOCK-END\n');
  });

  // ShinkaEvolve tests/test_edit_base.py, test_enhanced_evolve_block_violation_error and
  // test_enhanced_search_not_found_error: an edit of immutable code is refused; a near miss is not found.
  it('ShinkaEvolve: editing immutable code is refused, a near-miss SEARCH is not found', () => {
    const original = [
      '# Immutable header',
      'import os',
      'import sys',
      '',
      '# EVOLVE-BLOCK-START',
      'def mutable_function():',
      '    return "editable"',
      '# EVOLVE-BLOCK-END',
      '',
      '# Immutable footer',
      'if __name__ == "__main__":',
      '    main()',
    ].join('\n');
    const violation = applyResponse(original, block(['import os'], ['import os', 'import json']), { language: 'py' });
    assert.equal(violation.status, 'outside_evolve_block');
    assert.equal(violation.applied, 0);
    const calculate = [
      '# EVOLVE-BLOCK-START',
      'def calculate():',
      '    centers = compute_centers()',
      '    radius = get_radius()',
      '# EVOLVE-BLOCK-END',
    ].join('\n');
    const miss = applyResponse(calculate, block(['centers = compute_center()'], ['centers = compute_new_centers()']), { language: 'py' });
    assert.equal(miss.skipped[0]?.reason, 'no_match');
  });

  // ShinkaEvolve tests/test_edit_markdown.py, test_apply_diff_patch_supports_markdown: HTML-comment markers; the patch
  // repeats the marker lines around the block (text outside any block for us).
  it('ShinkaEvolve: Markdown with HTML-comment markers', () => {
    const original = ['<!-- EVOLVE-BLOCK-START -->', '## Step 1', '', 'Run the old command.', '<!-- EVOLVE-BLOCK-END -->'].join('\n');
    const patch = [
      '<!-- EVOLVE-BLOCK-START -->',
      block(['Run the old command.'], ['Run the new command.']),
      '<!-- EVOLVE-BLOCK-END -->',
    ].join('\n');
    const result = applyResponse(original, patch, { language: 'md' });
    assert.equal(result.status, 'applied');
    assert.equal(result.child, original.replace('old command', 'new command'));
  });

  // Aider tests/basic/test_editblock.py (Aider-AI/aider, Apache-2.0): a fenced block under a file name
  // (test_find_original_update_blocks), an unclosed block (..._unclosed), several blocks without a final newline
  // (..._no_final_newline), and only the first of several matches replaced (test_replace_multiple_matches).
  it('Aider test_editblock: fenced block under a file name, unclosed block, no final newline, first match only', () => {
    const parent = ['# EVOLVE-BLOCK-START', 'One', 'Two', 'Three', '# EVOLVE-BLOCK-END', ''].join('\n');
    const fenced =
      "\nHere's the change:\n\n```text\nfoo.txt\n<<<<<<< SEARCH\nTwo\n=======\nTooooo\n>>>>>>> REPLACE\n```\n\nHope you like it!\n";
    assert.equal(applyResponse(parent, fenced).child, parent.replace('Two', 'Tooooo'));
    const unclosed = "\nHere's the change:\n\n```text\nfoo.txt\n<<<<<<< SEARCH\nTwo\n=======\nTooooo\n\n\noops!\n";
    const open = applyResponse(parent, unclosed);
    assert.deepEqual([open.status, open.child], ['no_diff_blocks', null]);
    const noFinalNewline = [block(['One'], ['1']), block(['Two'], ['2']), block(['Three'], ['3'])].join('\n\naider/coder.py\n');
    assert.equal(parseDiffBlocks(noFinalNewline).blocks.length, 3);
    assert.equal(applyResponse(parent, noFinalNewline).child, parent.replace('One', '1').replace('Two', '2').replace('Three', '3'));
    const lines = ['# EVOLVE-BLOCK-START', 'line1', 'line2', 'line1', 'line3', '# EVOLVE-BLOCK-END', ''].join('\n');
    assert.equal(applyResponse(lines, block(['line1'], ['new_line'])).child, lines.replace('line1', 'new_line'));
  });

  // Cline src/core/assistant-message/diff.test.ts (cline/cline, Apache-2.0), written there with its v2 markers
  // (------- SEARCH / +++++++ REPLACE) and translated to ours: ordered replacements, replace then delete, delete then
  // replace, and the malformed cases "missing separator" and "double replace markers" (no child).
  it('Cline diff.test.ts: ordered replacements, deletions, malformed blocks', () => {
    const wrap = (lines: string[]): string => ['# EVOLVE-BLOCK-START', ...lines, '# EVOLVE-BLOCK-END'].join('\n');
    assert.equal(
      applyResponse(wrap(['First', 'Second', 'Third', 'Fourth']), `${block(['First'], ['1st'])}\n\n${block(['Third'], ['3rd'])}`).child,
      wrap(['1st', 'Second', '3rd', 'Fourth']),
    );
    assert.equal(
      applyResponse(wrap(['line1', 'line2', 'line3', 'line4']), `${block(['line2'], ['replaced'])}\n\n${block(['line4'], [])}`).child,
      wrap(['line1', 'replaced', 'line3']),
    );
    assert.equal(
      applyResponse(wrap(['line1', 'line2', 'line3', 'line4']), `${block(['line1'], [])}\n\n${block(['line3'], ['replaced'])}`).child,
      wrap(['line2', 'replaced', 'line4']),
    );
    const missingSeparator = applyResponse(wrap(['line1', 'line2', 'line3']), '<<<<<<< SEARCH\nline2\n>>>>>>> REPLACE\nreplaced');
    assert.deepEqual([missingSeparator.status, missingSeparator.child], ['no_diff_blocks', null]);
    const doubleReplace = applyResponse(
      wrap(['line1', 'line2', 'line3']),
      '<<<<<<< SEARCH\nline2\n>>>>>>> REPLACE\nfirst replacement\n>>>>>>> REPLACE',
    );
    assert.deepEqual([doubleReplace.status, doubleReplace.child], ['no_diff_blocks', null]);
  });
});
