import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { evolveRegionLines, replaceEvolveBlock, splitLines } from '../../src/engine/common/diff';
import {
  assembleNotebookProgram,
  cellsOfIpynb,
  NotebookProgramError,
  neutraliseIPython,
  type NotebookCellText,
  scriptOfIpynb,
} from '../../src/engine/notebookProgram';
import { notebookJson, QUADRATIC_NOTEBOOK } from '../support/notebook';
import { tempDir } from '../support/tempDirs';

const code = (...lines: string[]): NotebookCellText => ({ kind: 'code', languageId: 'python', text: lines.join('\n') });
const markdown = (text: string): NotebookCellText => ({ kind: 'markup', languageId: 'markdown', text });

const CELLS: NotebookCellText[] = [
  markdown('# Quadratic\nChoose x; the EVOLVE-BLOCK below is evolved.'),
  code('%matplotlib inline', 'import json', '!echo setting up'),
  code('# EVOLVE-BLOCK-START', 'def choose():', '    return 1', '# EVOLVE-BLOCK-END'),
  markdown('Write the answer:'),
  code('with open("solution.json", "w") as f:', '    json.dump({"x": choose()}, f)', 'print("x =", choose())'),
];

describe('notebook cells as one program', () => {
  it('takes the Python code cells in order, each after a "# %% [cell N]" line, markdown left out', () => {
    const program = assembleNotebookProgram(CELLS, 'q.ipynb');
    assert.equal(program.evolveCell, 2);
    assert.deepEqual(
      program.spans.map((s) => s.cell),
      [1, 2, 4],
    );
    const lines = splitLines(program.text);
    for (const span of program.spans) {
      assert.equal(lines[span.start - 1], `# %% [cell ${span.cell + 1}]`);
      const cellLines = splitLines((CELLS[span.cell] as NotebookCellText).text);
      assert.equal(span.lineCount, cellLines.length);
      // Line for line: each cell line is at its span's offset (a neutralised one as a comment holding it).
      cellLines.forEach((line, k) => assert.ok((lines[span.start + k] as string).endsWith(line), `${line} at cell line ${k}`));
    }
    assert.ok(!program.text.includes('Write the answer'));
    assert.deepEqual(program.neutralised, [
      { cell: 1, line: 0 },
      { cell: 1, line: 2 },
    ]);
  });

  it('runs as a plain Python script (magics and shell lines are comments): the cells after the evolved one run too', function () {
    this.timeout(60_000);
    const dir = tempDir('thetaevolve-notebook-');
    const script = join(dir, 'program.py');
    writeFileSync(script, assembleNotebookProgram(CELLS, 'q.ipynb').text);
    const out = execFileSync('/usr/bin/python3', [script], { cwd: dir, encoding: 'utf8' });
    assert.equal(out.trim(), 'x = 1');
  });

  it("Apply's region swap on the evolved cell gives the cell the child's block and nothing else", () => {
    const program = assembleNotebookProgram(CELLS, 'q.ipynb');
    const child = program.text.replace('    return 1', '    best = 3\n    return best');
    const cell = (CELLS[2] as NotebookCellText).text;
    const applied = replaceEvolveBlock(cell, child);
    assert.equal(applied, cell.replace('    return 1', '    best = 3\n    return best'));
    assert.deepEqual(evolveRegionLines(applied), evolveRegionLines(child));
  });

  it('neutralises only lines that start a statement, keeping indentation valid', () => {
    const { lines, neutralised } = neutraliseIPython(
      [
        'x = (10',
        '     % 3)',
        's = """',
        '% not a magic: inside a string',
        '"""',
        'for i in range(2):',
        '    !echo hi',
        'files = !ls',
        'y = 1 \\',
        '  % 2',
        'np.linspace?',
        'if x != 1: pass',
      ].join('\n'),
    );
    assert.deepEqual(neutralised, [6, 7, 10]);
    assert.equal(lines[6], '    pass  # [IPython, not run as a script] !echo hi');
    assert.equal(lines[7], '# [IPython, not run as a script] files = !ls');
    const dir = tempDir('thetaevolve-notebook-');
    // What is left parses as Python.
    writeFileSync(join(dir, 'cell.py'), `${lines.join('\n')}\n`);
    execFileSync('/usr/bin/python3', ['-c', 'import ast, sys; ast.parse(open(sys.argv[1]).read())', join(dir, 'cell.py')]);
  });

  it('leaves out a cell whose cell magic is not Python, and keeps the Python body of %%time', () => {
    const bash = neutraliseIPython('%%bash\necho hi\nls');
    assert.equal(bash.wholeCell, '%%bash');
    assert.deepEqual(bash.lines, ['# %%bash', '# echo hi', '# ls']);
    const timed = neutraliseIPython('%%time\nx = 1');
    assert.equal(timed.wholeCell, null);
    assert.deepEqual(timed.lines, ['# [IPython, not run as a script] %%time', 'x = 1']);
    const program = assembleNotebookProgram([code('%%bash', 'echo hi'), ...CELLS.slice(2)], 'q.ipynb');
    assert.match(program.text, /^# %% \[cell 1: a %%bash cell, not run as a script\]\n# %%bash\n# echo hi\n/);
  });

  describe('refuses, saying what to change', () => {
    const refused = (cells: NotebookCellText[], pattern: RegExp): void =>
      assert.throws(
        () => assembleNotebookProgram(cells, 'q.ipynb'),
        (err: unknown) => err instanceof NotebookProgramError && pattern.test(err.message),
      );

    it('markers split across cells', () =>
      refused(
        [code('import json', '# EVOLVE-BLOCK-START', 'x = 1'), code('y = 2', '# EVOLVE-BLOCK-END')],
        /^q\.ipynb: the EVOLVE-BLOCK markers are split across cells 1 and 2: put both markers/,
      ));

    it('regions in two cells', () =>
      refused(
        [CELLS[2] as NotebookCellText, markdown('x'), CELLS[2] as NotebookCellText],
        /cells 1 and 3 each hold an EVOLVE-BLOCK; .*keep the markers in one cell/,
      ));

    it('no cell with markers (a markdown cell that mentions them does not count)', () =>
      refused(
        [markdown('# EVOLVE-BLOCK-START\n# EVOLVE-BLOCK-END'), code('x = 1')],
        /^q\.ipynb: no Python code cell holds an EVOLVE-BLOCK/,
      ));

    it('an unbalanced marker in the one cell', () =>
      refused([code('# EVOLVE-BLOCK-START', 'x = 1')], /^q\.ipynb, cell 1: EVOLVE-BLOCK-START on line 1 has no EVOLVE-BLOCK-END/));

    it('an IPython line inside the EVOLVE-BLOCK (Apply writes the block back into the cell)', () =>
      refused(
        [code('# EVOLVE-BLOCK-START', '%time x = 1', '# EVOLVE-BLOCK-END')],
        /cell 1, line 2: an IPython line .* inside the EVOLVE-BLOCK.*move it out/,
      ));

    it('an EVOLVE-BLOCK in a cell that is not Python', () =>
      refused([code('%%bash', '# EVOLVE-BLOCK-START', 'echo 1', '# EVOLVE-BLOCK-END')], /a %%bash cell is not Python/));
  });

  describe('.ipynb files (the CLI reads them)', () => {
    it('reads the cells as VS Code shows them: markdown as markup, raw cells never run, a cell of another language by its metadata', () => {
      const nb = JSON.parse(notebookJson(QUADRATIC_NOTEBOOK)) as { cells: Record<string, unknown>[] };
      nb.cells.push({ cell_type: 'raw', metadata: {}, source: 'not code' });
      nb.cells.push({ cell_type: 'code', metadata: { vscode: { languageId: 'sql' } }, outputs: [], source: ['SELECT 1'] });
      const cells = cellsOfIpynb(JSON.stringify(nb), 'q.ipynb');
      assert.deepEqual(
        cells.map((c) => [c.kind, c.languageId]),
        [
          ['markup', 'markdown'],
          ['code', 'python'],
          ['code', 'python'],
          ['code', 'python'],
          ['code', 'raw'],
          ['code', 'sql'],
        ],
      );
      assert.equal(cells[2]?.text, '# EVOLVE-BLOCK-START\ndef choose():\n    return 1\n# EVOLVE-BLOCK-END');
      const script = scriptOfIpynb(JSON.stringify(nb), 'q.ipynb');
      assert.ok(!script.includes('not code') && !script.includes('SELECT'));
    });

    it('says a file is not a notebook', () => {
      assert.throws(() => cellsOfIpynb('{"cells": 3}', 'q.ipynb'), /^NotebookProgramError: q\.ipynb is not a Jupyter notebook: cells: /);
      assert.throws(() => cellsOfIpynb('print(1)', 'q.ipynb'), /q\.ipynb is not a Jupyter notebook: its text is not JSON/);
    });
  });
});
