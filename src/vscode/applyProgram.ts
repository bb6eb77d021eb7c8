// "Apply Program to File": replace only the content of the file's EVOLVE-BLOCK
// regions with the program's (region by region, in order), as one
// WorkspaceEdit (one Undo restores it). Everything outside the regions
// (markers included) and the file's line endings stay. A notebook's program
// goes into its evolved cell (src/vscode/notebookCells.ts).
import * as vscode from 'vscode';
import { confirmProgramFile } from './runTrust';
import { showError, showInfo, showWarning } from './notify';
import { EvolveBlockError, evolveRegionLines, evolveRegions, replaceEvolveBlock } from '../engine/common/diff';
import { errorMessage } from '../engine/common/errors';
import { NotebookProgramError } from '../engine/notebookProgram';
import { isNotebookUri, type OpenNotebookProgram, openNotebookProgram } from './notebookCells';

export type ApplyOutcome = 'applied' | 'unchanged' | 'cancelled' | 'refused';

/** Which program of which run was applied (its blame then annotates the file: src/vscode/blameDecorations.ts). */
export interface AppliedProgram {
  runId: string;
  dbFile: string;
  programId: string;
}

const appliedEmitter = new vscode.EventEmitter<{ fileUri: vscode.Uri; programCode: string; program: AppliedProgram }>();
/** A program was applied to a file (told before the file is shown). */
export const onDidApplyProgram = appliedEmitter.event;

function fileNameOf(uri: vscode.Uri): string {
  return uri.path.split('/').pop() ?? uri.toString();
}

/**
 * Replace each EVOLVE-BLOCK region of `fileUri` (unsaved edits included) with
 * the region of the same rank in `programCode`. When the file's text is no longer `textAtRunStart`:
 * interactive -> a modal warning asks to confirm ('cancelled' if not);
 * non-interactive (follow-best) -> 'refused' with a warning, nothing asked.
 * 'refused' also when either text has no usable region or the two hold
 * different numbers of regions (the message says which). The file is
 * edited, not saved.
 */
export async function applyProgramToFile(
  fileUri: vscode.Uri,
  programCode: string,
  options: { textAtRunStart?: string; interactive: boolean; program?: AppliedProgram },
): Promise<ApplyOutcome> {
  let fileName = fileNameOf(fileUri);
  // The file is named by a run's database: outside the workspace only once confirmed.
  if (!(await confirmProgramFile(fileUri, `Apply to ${fileName}`))) return 'cancelled';
  let document: vscode.TextDocument;
  // A notebook's run started from its cells as one script: that is what changed or not; the edit goes into its evolved cell.
  let notebook: OpenNotebookProgram | undefined;
  try {
    if (isNotebookUri(fileUri)) {
      notebook = await openNotebookProgram(fileUri);
      fileName = notebook.name;
      document = notebook.cell.document;
    } else document = await vscode.workspace.openTextDocument(fileUri);
  } catch (err) {
    void showError(
      err instanceof NotebookProgramError
        ? `ThetaEvolve: cannot apply the program: ${err.message}.`
        : `ThetaEvolve: cannot open ${fileName}: ${errorMessage(err)}`,
    );
    return 'refused';
  }
  const before = document.getText();
  let after: string;
  try {
    after = replaceEvolveBlock(before, programCode);
  } catch (err) {
    if (!(err instanceof EvolveBlockError)) throw err;
    void showError(`ThetaEvolve: cannot apply the program to ${fileName}: ${err.message}.`);
    return 'refused';
  }
  if (after === before) {
    if (options.interactive) void showInfo(`ThetaEvolve: ${fileName} already holds this program's EVOLVE-BLOCK.`);
    return 'unchanged';
  }

  if (options.textAtRunStart !== undefined && (notebook?.program.text ?? before) !== options.textAtRunStart) {
    if (!options.interactive) {
      void showWarning(
        `ThetaEvolve: did not apply the new best program to ${fileName}: the file changed since the run started. Use "Apply Program to File" to apply it anyway.`,
      );
      return 'refused';
    }
    const replace = 'Replace EVOLVE-BLOCK';
    const answer = await showWarning(
      `${fileName} changed since the run started.`,
      {
        modal: true,
        detail: "Applying replaces the file's current EVOLVE-BLOCK content, edits in it included, with the program's. Undo restores it.",
      },
      replace,
    );
    if (answer !== replace) return 'cancelled';
  }

  // Edit only the lines strictly between each region's markers, so cursors,
  // folds and breakpoints elsewhere stay where they are.
  const targets = evolveRegions(before, 'the file');
  const contents = evolveRegionLines(programCode);
  const eol = document.eol === vscode.EndOfLine.CRLF ? '\r\n' : '\n';
  const edit = new vscode.WorkspaceEdit();
  targets.forEach((region, r) => {
    const lines = contents[r] as string[];
    edit.replace(document.uri, new vscode.Range(region.startLine + 1, 0, region.endLine, 0), lines.map((line) => line + eol).join(''));
  });
  if (!(await vscode.workspace.applyEdit(edit))) {
    void showError(`ThetaEvolve: VS Code did not apply the edit to ${fileName} (was it closed or made read-only?).`);
    return 'refused';
  }
  if (options.program) appliedEmitter.fire({ fileUri: document.uri, programCode, program: options.program });
  // Asked for by the user: show the result, where one Undo takes it back.
  if (options.interactive && !vscode.window.visibleTextEditors.some((e) => e.document === document)) {
    if (notebook) await vscode.window.showNotebookDocument(notebook.notebook, { preview: false });
    else await vscode.window.showTextDocument(document, { preview: false });
  }
  return 'applied';
}
