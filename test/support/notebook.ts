// Jupyter notebooks written by the tests (nbformat 4, as Jupyter writes them:
// each source a list of lines keeping their newlines), for the unit tests,
// the CLI's and the in-host ones alike.

export interface TestCell {
  cell_type: 'code' | 'markdown' | 'raw';
  source: string[];
}

/** A cell's source lines as nbformat keeps them: each but the last ending in a newline. */
export function sourceLines(...lines: string[]): string[] {
  return lines.map((l, i) => (i < lines.length - 1 ? `${l}\n` : l));
}

/** The .ipynb text of these cells, in a Python 3 notebook. */
export function notebookJson(cells: readonly TestCell[]): string {
  return JSON.stringify(
    {
      cells: cells.map((c) =>
        c.cell_type === 'code'
          ? { cell_type: 'code', execution_count: null, metadata: {}, outputs: [], source: c.source }
          : { cell_type: c.cell_type, metadata: {}, source: c.source },
      ),
      metadata: {
        kernelspec: { display_name: 'Python 3', language: 'python', name: 'python3' },
        language_info: { name: 'python' },
      },
      nbformat: 4,
      nbformat_minor: 5,
    },
    null,
    1,
  );
}

/** The quadratic fixture's program as a notebook: setup with a magic, the EVOLVE-BLOCK cell, a cell writing the answer with a shell line. */
export const QUADRATIC_NOTEBOOK: readonly TestCell[] = [
  { cell_type: 'markdown', source: sourceLines('# Quadratic', 'The cell below is evolved.') },
  { cell_type: 'code', source: sourceLines('%matplotlib inline', 'import json') },
  { cell_type: 'code', source: sourceLines('# EVOLVE-BLOCK-START', 'def choose():', '    return 1', '# EVOLVE-BLOCK-END') },
  {
    cell_type: 'code',
    source: sourceLines('!echo writing the answer', 'with open("solution.json", "w") as f:', '    json.dump({"x": choose()}, f)'),
  },
];
