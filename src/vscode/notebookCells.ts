// A Jupyter notebook evolved like a file (docs/guide.md "Notebook cells"): the
// run's file is the notebook (.ipynb), its program the notebook's Python code
// cells as one script (src/engine/notebookProgram.ts), and what Apply, Best
// so far and blame act on is the one cell holding the EVOLVE-BLOCK, through
// its cell document (a cell edit is undoable; the .ipynb is never written
// here, nor saved). Cell documents have no stable URI across a reopen, so
// runs record the notebook and the cell is found again by its markers.
import * as vscode from 'vscode';
import { replaceEvolveBlock } from '../engine/common/diff';
import { errorMessage } from '../engine/common/errors';
import { assembleNotebookProgram, type NotebookProgram, NotebookProgramError } from '../engine/notebookProgram';
import { findProgram } from './programDocuments';
import { registerReadOnlyDocuments } from './readOnlyDocuments';

/** The scheme of a notebook cell's text document. */
export const NOTEBOOK_CELL_SCHEME = 'vscode-notebook-cell';
/** Read-only "the evolved cell as a program would make it" documents: the right side of a cell's Best so far diff. */
export const CELL_VIEW_SCHEME = 'thetaevolve-cell';

/** Whether a run's file, or a URI given to a command, is a notebook or one of its cells. */
export function isNotebookUri(uri: vscode.Uri): boolean {
  return uri.scheme === NOTEBOOK_CELL_SCHEME || uri.path.endsWith('.ipynb');
}

/** The notebook a cell document belongs to (its URI); any other URI as it is. */
export function notebookUriOf(uri: vscode.Uri): vscode.Uri {
  if (uri.scheme !== NOTEBOOK_CELL_SCHEME) return uri;
  const key = uri.toString();
  const open = vscode.workspace.notebookDocuments.find((nb) => nb.getCells().some((c) => c.document.uri.toString() === key));
  // A cell URI is its notebook's path with the cell in the fragment.
  return open?.uri ?? uri.with({ scheme: 'file', fragment: '' });
}

/** The program a command is about when it is given none: the focused editor's file, or the notebook in front. */
export function activeProgramUri(): vscode.Uri | undefined {
  const text = vscode.window.activeTextEditor?.document.uri;
  if (text && text.scheme !== NOTEBOOK_CELL_SCHEME) return text;
  return vscode.window.activeNotebookEditor?.notebook.uri ?? (text && notebookUriOf(text));
}

export interface OpenNotebookProgram {
  notebook: vscode.NotebookDocument;
  program: NotebookProgram;
  /** The cell holding the EVOLVE-BLOCK. */
  cell: vscode.NotebookCell;
  /** "q.ipynb, cell 3", for messages. */
  name: string;
}

function fileNameOf(uri: vscode.Uri): string {
  return uri.path.split('/').pop() ?? uri.toString();
}

/**
 * The notebook of `uri` (a notebook or one of its cells; its unsaved edits
 * included) as a program, and its evolved cell. Throws NotebookProgramError
 * when it cannot be evolved (markers split across cells, in two cells...).
 */
export async function openNotebookProgram(uri: vscode.Uri): Promise<OpenNotebookProgram> {
  const notebook = await vscode.workspace.openNotebookDocument(notebookUriOf(uri));
  const cells = notebook.getCells();
  const program = assembleNotebookProgram(
    cells.map((cell) => ({
      kind: cell.kind === vscode.NotebookCellKind.Code ? 'code' : 'markup',
      languageId: cell.document.languageId,
      text: cell.document.getText(),
    })),
    fileNameOf(notebook.uri),
  );
  const cell = cells[program.evolveCell] as vscode.NotebookCell;
  return { notebook, program, cell, name: `${fileNameOf(notebook.uri)}, cell ${program.evolveCell + 1}` };
}

/** The script a run of the notebook starts from, or why it cannot be evolved ("q.ipynb: ...", saying what to change). */
export async function notebookStartText(uri: vscode.Uri): Promise<{ text: string } | { problem: string }> {
  try {
    return { text: (await openNotebookProgram(uri)).program.text };
  } catch (err) {
    return { problem: err instanceof NotebookProgramError ? err.message : `${fileNameOf(uri)}: ${errorMessage(err)}` };
  }
}

/** The program text of a run's file as it is now: a notebook's script, else the document's text. */
export async function programTextOf(uri: vscode.Uri): Promise<string> {
  if (isNotebookUri(uri)) return (await openNotebookProgram(uri)).program.text;
  return (await vscode.workspace.openTextDocument(uri)).getText();
}

/** thetaevolve-cell:/<runId>/<programId>/<label>.py?<notebook URI>: the notebook's evolved cell with the program's EVOLVE-BLOCK. */
export function cellViewUri(runId: string, programId: string, label: string, notebook: vscode.Uri): vscode.Uri {
  const safe = (text: string): string => text.replace(/[/\\:*?"<>|%]+/g, '-').trim() || 'program';
  return vscode.Uri.from({
    scheme: CELL_VIEW_SCHEME,
    path: `/${safe(runId)}/${safe(programId)}/${safe(label)}.py`,
    query: notebook.toString(),
  });
}

async function cellViewText(uri: vscode.Uri): Promise<string> {
  const [runId, programId] = uri.path.split('/').filter((p) => p !== '');
  if (!runId || !programId) return `ThetaEvolve: ${uri.toString()} does not name a program.\n`;
  try {
    const program = await findProgram(runId, programId);
    if (!program) return `ThetaEvolve: program ${programId} of run ${runId} is not available (is the run's database still there?).\n`;
    const { cell } = await openNotebookProgram(vscode.Uri.parse(uri.query, true));
    return replaceEvolveBlock(cell.document.getText(), program.code);
  } catch (err) {
    return `ThetaEvolve: cannot show program ${programId} in its notebook cell: ${errorMessage(err)}\n`;
  }
}

/**
 * Best so far / Compare with File on a notebook: the evolved cell as it is
 * now (left, unsaved edits included) against that cell with the program's
 * EVOLVE-BLOCK (right), so the diff shows the block's change and nothing of
 * the other cells.
 */
export async function compareProgramWithCell(
  runId: string,
  programId: string,
  label: string,
  title: string,
  uri: vscode.Uri,
): Promise<void> {
  const { cell, name, notebook } = await openNotebookProgram(uri);
  await vscode.commands.executeCommand(
    'vscode.diff',
    cell.document.uri,
    cellViewUri(runId, programId, label, notebook.uri),
    `${name} (current) \u2194 ${title}`,
    { preview: true } satisfies vscode.TextDocumentShowOptions,
  );
}

/** Serve the cell views (registered at activation, so such diff tabs come back after a reload). */
export function registerNotebookCells(): vscode.Disposable {
  return registerReadOnlyDocuments(CELL_VIEW_SCHEME, cellViewText);
}
