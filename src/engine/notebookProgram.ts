// A Jupyter notebook as one Python program (docs/guide.md "Notebook cells"):
// its Python code cells in notebook order, as "Run All" runs them (cells
// after the evolved one too: they often write what the evaluator reads),
// markdown and other languages' cells left out. No kernel runs a candidate, so
// IPython's own syntax (line magics, `!` shell lines, `?` help, non-Python
// cell magics) is neutralised line for line into comments: each cell line
// keeps its place, so the one cell holding EVOLVE-BLOCK regions maps back.
import { EVOLVE_BLOCK_END, EVOLVE_BLOCK_START, locateEvolveBlocks, splitLines } from './common/diff';
import { z } from 'zod';
import { ThetaEvolveError, zodIssueText } from './common/errors';

/** One cell as the notebook holds it. */
export interface NotebookCellText {
  kind: 'code' | 'markup';
  languageId: string;
  text: string;
}

/** Where a cell's lines are in the program: its line k is program line `start + k` (0-based). */
export interface CellSpan {
  cell: number;
  start: number;
  lineCount: number;
}

export interface NotebookProgram {
  /** The script a candidate is: every Python code cell, each after a `# %% [cell N]` line. */
  text: string;
  /** The (0-based) index of the cell holding the EVOLVE-BLOCK regions. */
  evolveCell: number;
  /** Each cell in the program, in order. */
  spans: CellSpan[];
  /** Cell lines not run as Python (0-based cell index and line), each a comment in the program. */
  neutralised: { cell: number; line: number }[];
}

/** The notebook cannot be evolved as it is; the message says what to change. */
export class NotebookProgramError extends ThetaEvolveError {
  override readonly name = 'NotebookProgramError';
}

const NOT_RUN = '[IPython, not run as a script]';
/** Cell magics whose body is Python (timing, capturing output): only their magic line is left out. */
const PYTHON_BODY_CELL_MAGICS = new Set(['time', 'timeit', 'capture', 'prun']);

/** What a line is to IPython when it starts a statement: its own syntax, or Python. */
function isIPythonLine(statement: string): boolean {
  const body = statement.trimStart();
  return (
    /^[%!]/.test(body) ||
    // `files = !ls`, `t = %timeit -o f()`
    /^[A-Za-z_][\w.]*(\s*,\s*[A-Za-z_][\w.]*)*\s*=\s*[%!]/.test(body) ||
    // `np.linspace?`, `??f`
    /^\?{1,2}[A-Za-z_][\w.]*\s*$/.test(body) ||
    /^[A-Za-z_][\w.]*\?{1,2}\s*$/.test(body)
  );
}

interface ScanState {
  triple: '"""' | "'''" | null;
  depth: number;
  continued: boolean;
}

/** Advance through one line of Python: open triple-quoted strings, bracket depth, a trailing backslash. */
function scanLine(line: string, state: ScanState): void {
  let i = 0;
  let comment = false;
  while (i < line.length) {
    const ch = line[i] as string;
    if (state.triple) {
      if (ch === '\\') i += 2;
      else if (line.startsWith(state.triple, i)) {
        state.triple = null;
        i += 3;
      } else i++;
      continue;
    }
    if (ch === '#') {
      comment = true;
      break;
    }
    if (ch === '"' || ch === "'") {
      if (line.startsWith(ch.repeat(3), i)) {
        state.triple = ch === '"' ? '"""' : "'''";
        i += 3;
        continue;
      }
      i++;
      while (i < line.length && line[i] !== ch) i += line[i] === '\\' ? 2 : 1;
      i++;
      continue;
    }
    if ('([{'.includes(ch)) state.depth++;
    else if (')]}'.includes(ch)) state.depth = Math.max(0, state.depth - 1);
    i++;
  }
  state.continued = !comment && state.triple === null && line.endsWith('\\');
}

/**
 * One cell's lines with IPython's own syntax made comments (line count kept):
 * at top level `# [IPython, not run as a script] %matplotlib inline`, indented
 * `pass  # ...` so the block stays a statement. A cell magic whose body is not
 * Python (`%%bash`, `%%writefile`) leaves the whole cell out, each line a comment.
 * Only lines that start a statement count: a `%` continuing an expression or
 * inside a string is Python's.
 */
export function neutraliseIPython(text: string): { lines: string[]; neutralised: number[]; wholeCell: string | null } {
  const lines = splitLines(text);
  const firstCode = lines.findIndex((l) => l.trim() !== '');
  const cellMagic = firstCode >= 0 ? /^\s*%%(\w+)/.exec(lines[firstCode] as string) : null;
  if (cellMagic && !PYTHON_BODY_CELL_MAGICS.has(cellMagic[1] as string)) {
    return {
      lines: lines.map((l) => (l === '' ? l : `# ${l}`)),
      neutralised: lines.map((_, i) => i),
      wholeCell: `%%${cellMagic[1] as string}`,
    };
  }
  const state: ScanState = { triple: null, depth: 0, continued: false };
  const neutralised: number[] = [];
  const out = lines.map((line, n) => {
    const startsStatement = state.triple === null && state.depth === 0 && !state.continued;
    if (startsStatement && isIPythonLine(line)) {
      neutralised.push(n);
      const indent = /^\s*/.exec(line)?.[0] ?? '';
      return indent === '' ? `# ${NOT_RUN} ${line}` : `${indent}pass  # ${NOT_RUN} ${line.trimStart()}`;
    }
    scanLine(line, state);
    return line;
  });
  return { lines: out, neutralised, wholeCell: null };
}

function cellList(cells: readonly number[]): string {
  const names = cells.map((c) => String(c + 1));
  return names.length <= 2 ? names.join(' and ') : `${names.slice(0, -1).join(', ')} and ${names[names.length - 1] as string}`;
}

/** Cells with at least one marker line, and what each holds. */
function markedCells(cells: readonly NotebookCellText[], isPython: (cell: NotebookCellText) => boolean) {
  const marked: { cell: number; regions: number; problem: string | null }[] = [];
  cells.forEach((cell, index) => {
    if (!isPython(cell) || !cell.text.includes('EVOLVE-BLOCK')) return;
    const location = locateEvolveBlocks(cell.text);
    const problem = location.problems.find((p) => p.kind === 'unbalanced');
    if (location.regions.length === 0 && !problem) return;
    marked.push({ cell: index, regions: location.regions.length, problem: problem?.message ?? null });
  });
  return marked;
}

/**
 * The notebook as the script its candidates are. `name` (the notebook's file
 * name) goes into the errors: no Python cell with markers, markers split across
 * cells or regions in two cells, an unbalanced marker, an IPython line inside
 * the EVOLVE-BLOCK (a candidate is plain Python, and Apply writes the block back).
 */
export function assembleNotebookProgram(cells: readonly NotebookCellText[], name: string): NotebookProgram {
  const isPython = (cell: NotebookCellText): boolean => cell.kind === 'code' && cell.languageId === 'python';
  const marked = markedCells(cells, isPython);
  if (marked.length === 0)
    throw new NotebookProgramError(
      `${name}: no Python code cell holds an EVOLVE-BLOCK: put the code to evolve between a line "# ${EVOLVE_BLOCK_START}" and a line "# ${EVOLVE_BLOCK_END}" in one code cell`,
    );
  if (marked.length > 1) {
    const cellsMarked = cellList(marked.map((m) => m.cell));
    throw new NotebookProgramError(
      marked.some((m) => m.problem !== null)
        ? `${name}: the EVOLVE-BLOCK markers are split across cells ${cellsMarked}: put both markers of a region in the one cell to evolve`
        : `${name}: cells ${cellsMarked} each hold an EVOLVE-BLOCK; a notebook is evolved in one cell: keep the markers in one cell`,
    );
  }
  const target = marked[0] as { cell: number; problem: string | null };
  if (target.problem !== null) throw new NotebookProgramError(`${name}, cell ${target.cell + 1}: ${target.problem}`);

  const lines: string[] = [];
  const spans: CellSpan[] = [];
  const neutralised: { cell: number; line: number }[] = [];
  cells.forEach((cell, index) => {
    if (!isPython(cell)) return;
    const made = neutraliseIPython(cell.text);
    if (index === target.cell) {
      if (made.wholeCell !== null)
        throw new NotebookProgramError(
          `${name}, cell ${index + 1}: a ${made.wholeCell} cell is not Python; a candidate runs as a Python script: evolve a Python cell`,
        );
      const { regions } = locateEvolveBlocks(cell.text);
      const inside = made.neutralised.find((line) => regions.some((r) => line > r.startLine && line < r.endLine));
      if (inside !== undefined)
        throw new NotebookProgramError(
          `${name}, cell ${index + 1}, line ${inside + 1}: an IPython line (magic, shell or help) is inside the EVOLVE-BLOCK; a candidate runs as plain Python: move it out of the block`,
        );
    }
    lines.push(
      made.wholeCell === null ? `# %% [cell ${index + 1}]` : `# %% [cell ${index + 1}: a ${made.wholeCell} cell, not run as a script]`,
    );
    spans.push({ cell: index, start: lines.length, lineCount: made.lines.length });
    lines.push(...made.lines, '');
    for (const line of made.neutralised) neutralised.push({ cell: index, line });
  });
  return { text: lines.join('\n'), evolveCell: target.cell, spans, neutralised };
}

const Source = z.union([z.string(), z.array(z.string())]);
const LanguageOf = z
  .object({ vscode: z.object({ languageId: z.string() }).partial() })
  .partial()
  .passthrough();
/** The parts of an nbformat 4 file read here (https://nbformat.readthedocs.io: `source` is a string or its lines). */
const IpynbFile = z.object({
  cells: z.array(z.object({ cell_type: z.string(), source: Source, metadata: LanguageOf.optional() }).passthrough()),
  metadata: z
    .object({
      kernelspec: z.object({ language: z.string() }).partial().passthrough().optional(),
      language_info: z.object({ name: z.string() }).partial().passthrough().optional(),
    })
    .partial()
    .passthrough()
    .optional(),
});

/**
 * The cells of a .ipynb file's text, as VS Code shows them: markdown as
 * markup, raw cells as code in the language `raw` (never run), a code cell
 * in the notebook's language unless its own metadata names another (VS Code
 * writes `metadata.vscode.languageId`). Throws NotebookProgramError naming
 * `name` when the text is not a notebook.
 */
export function cellsOfIpynb(text: string, name: string): NotebookCellText[] {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new NotebookProgramError(`${name} is not a Jupyter notebook: its text is not JSON`, { cause: err });
  }
  const parsed = IpynbFile.safeParse(json);
  if (!parsed.success) throw new NotebookProgramError(`${name} is not a Jupyter notebook: ${zodIssueText(parsed.error, '(top level)')}`);
  const language = parsed.data.metadata?.kernelspec?.language ?? parsed.data.metadata?.language_info?.name ?? 'python';
  return parsed.data.cells.map((cell) => {
    const source = typeof cell.source === 'string' ? cell.source : cell.source.join('');
    if (cell.cell_type === 'markdown') return { kind: 'markup', languageId: 'markdown', text: source };
    if (cell.cell_type === 'code') return { kind: 'code', languageId: cell.metadata?.vscode?.languageId ?? language, text: source };
    return { kind: 'code', languageId: 'raw', text: source };
  });
}

/** The script of a .ipynb file's text (its Python code cells as one program); NotebookProgramError when it is none. */
export function scriptOfIpynb(text: string, name: string): string {
  return assembleNotebookProgram(cellsOfIpynb(text, name), name).text;
}
