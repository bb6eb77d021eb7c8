// Blame on program documents (docs/algorithm.md section 11), as GitLens does
// for commits: each block of lines that came from one program of the
// lineage ends with "step 12 #1 · model · 0.9613" (the program's name, who wrote it, its
// objective), and its hover opens that step's diff (the program against its
// parent). Read from the run's database through the worker's `blame` query.
// A file a program was applied to carries the blame of its EVOLVE-BLOCK
// lines until it is edited away from that program.
import * as vscode from 'vscode';
import { type EvolveRegion, evolveRegionLines, evolveRegions } from '../engine/common/diff';
import { forDisplay } from '../engine/common/displayText';
import { formatScore, programLabel, programName, programNameDetail } from '../engine/common/format';
import type { QueryResult } from '../protocol/workerMessages';
import { registerCommand } from './commandRegistry';
import { COMMAND_IDS } from './commandIds';
import { showProgramDiff } from './diffViews';
import { NOTEBOOK_CELL_SCHEME } from './notebookCells';
import { parseProgramUri } from './programDocuments';
import { type AppliedProgram, onDidApplyProgram } from './applyProgram';
import type { RunController } from './runController';

/** One annotation as shown: the line (0-based), its text, and its hover. */
export interface BlameAnnotation {
  line: number;
  text: string;
  hover: vscode.MarkdownString;
}

/** `drawn`: false on a diff's side, where only the hovers are set. */
const annotated = new vscode.EventEmitter<{ uri: vscode.Uri; annotations: BlameAnnotation[]; drawn: boolean }>();
/** A program document got its blame annotations (the in-host tests watch it). */
export const onDidAnnotateBlame = annotated.event;

type Blame = QueryResult<'blame'>;

/** Where a program's line (0-based) is in a document, or undefined where the document does not show it. */
export type LineMap = (programLine: number) => number | undefined;

/** The annotations of a blame: one at the first line of each block of shown lines from the same program. */
export function blameAnnotations(blame: Blame, runId: string, extension: string, lineOf: LineMap = (line) => line): BlameAnnotation[] {
  const programs = new Map(blame.programs.map((p) => [p.id, p]));
  const annotations: BlameAnnotation[] = [];
  let previous: string | null = null;
  /** The block's program has no annotation yet: its lines so far were blank (a blank line carries none). */
  let unannotated = false;
  for (const line of blame.lines) {
    const at = lineOf(line.line - 1);
    if (at === undefined) {
      previous = null;
      continue;
    }
    if (line.id === previous && !unannotated) continue;
    previous = line.id;
    unannotated = line.text.trim() === '';
    if (unannotated) continue;
    const program = programs.get(line.id);
    // Six digits, as the Runs view shows objectives.
    const objective = formatScore(program?.objective ?? null, 6);
    const hover = new vscode.MarkdownString();
    // Ids and notes are text from the database: appended as text, never as markup.
    const named = { ...line, stepRank: program?.stepRank ?? null };
    hover.appendText(`Line from ${programLabel(named)}, objective ${objective} (${programNameDetail(named)})`);
    if (program?.note) hover.appendText(`\nNote: ${forDisplay(program.note)}`);
    if (program?.parentId) {
      const args = encodeURIComponent(JSON.stringify([runId, program.parentId, line.id, extension]));
      hover.appendMarkdown(`\n\n[Open the diff of ${programName(named)}](command:${COMMAND_IDS.showBlameDiff}?${args})`);
      hover.isTrusted = { enabledCommands: [COMMAND_IDS.showBlameDiff] };
    }
    annotations.push({ line: at, text: `${programLabel(named)} · ${objective}`, hover });
  }
  return annotations;
}

/**
 * Whether `editor` is a side of a diff: its group's active tab is a diff
 * showing its document (the API marks no editor as a diff's side).
 */
export function inDiffEditor(editor: vscode.TextEditor): boolean {
  const uri = editor.document.uri.toString();
  return vscode.window.tabGroups.all.some((group) => {
    if (editor.viewColumn !== undefined && group.viewColumn !== editor.viewColumn) return false;
    const input = group.activeTab?.input;
    return input instanceof vscode.TabInputTextDiff && (input.original.toString() === uri || input.modified.toString() === uri);
  });
}

/**
 * A file after Apply holds the program's EVOLVE-BLOCK regions in its own: each region line of the program at the
 * same offset in the file's region of the same rank. Undefined once the file's regions differ from the program's.
 */
export function appliedLineMap(fileText: string, programCode: string): LineMap | undefined {
  let fileRegions: EvolveRegion[];
  let programRegions: EvolveRegion[];
  try {
    fileRegions = evolveRegions(fileText, 'the file');
    programRegions = evolveRegions(programCode);
  } catch {
    return undefined;
  }
  const same = evolveRegionLines(fileText).map((lines) => lines.join('\n'));
  const applied = evolveRegionLines(programCode).map((lines) => lines.join('\n'));
  if (same.length !== applied.length || same.some((text, r) => text !== applied[r])) return undefined;
  return (programLine) => {
    const r = programRegions.findIndex((region) => programLine > region.startLine && programLine < region.endLine);
    const program = programRegions[r];
    const file = fileRegions[r];
    return program && file ? file.startLine + (programLine - program.startLine) : undefined;
  };
}

export function registerBlameDecorations(context: vscode.ExtensionContext, controller: RunController): void {
  const decoration = vscode.window.createTextEditorDecorationType({
    after: { margin: '0 0 0 3em', color: new vscode.ThemeColor('editorCodeLens.foreground'), fontStyle: 'italic' },
  });
  /** Blame per program: a program never changes, so once read it stays. */
  const blames = new Map<string, Promise<Blame | null>>();
  const blameOf = (dbFile: string, programId: string): Promise<Blame | null> => {
    const key = `${dbFile}#${programId}`;
    let pending = blames.get(key);
    if (!pending) {
      pending = controller.query({ kind: 'blame', dbFile, programId }).catch(() => null);
      blames.set(key, pending);
    }
    return pending;
  };
  /** Files a program was applied to, and which (annotated while their EVOLVE-BLOCK is still that program's). */
  const appliedFiles = new Map<string, { program: AppliedProgram; programCode: string }>();

  const annotationsFor = async (document: vscode.TextDocument): Promise<BlameAnnotation[] | null> => {
    // A notebook cell's path is its notebook's (.ipynb): its programs are Python scripts.
    const extension = document.uri.scheme === NOTEBOOK_CELL_SCHEME ? 'py' : (/\.([^./]+)$/.exec(document.uri.path)?.[1] ?? '');
    const ref = parseProgramUri(document.uri);
    if (ref) {
      const dbFile = controller.dbFileOf(ref.runId);
      const blame = dbFile ? await blameOf(dbFile, ref.programId) : null;
      return blame && blameAnnotations(blame, ref.runId, extension);
    }
    const applied = appliedFiles.get(document.uri.toString());
    if (!applied) return null;
    const lineOf = appliedLineMap(document.getText(), applied.programCode);
    // Edited since: the file is no longer the program, and its blame no longer true.
    if (!lineOf) {
      appliedFiles.delete(document.uri.toString());
      return [];
    }
    const blame = await blameOf(applied.program.dbFile, applied.program.programId);
    return blame && blameAnnotations(blame, applied.program.runId, extension, lineOf);
  };

  const decorate = async (editor: vscode.TextEditor): Promise<void> => {
    const annotations = await annotationsFor(editor.document);
    if (!annotations) return;
    // A diff's two narrow sides have no room after their lines: there only the hover stays.
    const drawn = !inDiffEditor(editor);
    editor.setDecorations(
      decoration,
      annotations.map((a) => {
        // The whole line: its hover is there wherever the pointer rests on it; the annotation is drawn after its end.
        const range = editor.document.lineAt(Math.min(a.line, editor.document.lineCount - 1)).range;
        return drawn
          ? { range, hoverMessage: a.hover, renderOptions: { after: { contentText: a.text } } }
          : { range, hoverMessage: a.hover, renderOptions: { after: { contentText: '' } } };
      }),
    );
    annotated.fire({ uri: editor.document.uri, annotations, drawn });
  };

  const decorateVisible = (editors: readonly vscode.TextEditor[]): void => {
    for (const editor of editors)
      if (parseProgramUri(editor.document.uri) || appliedFiles.has(editor.document.uri.toString())) void decorate(editor);
  };
  const decorateDocument = (uri: vscode.Uri): void =>
    decorateVisible(vscode.window.visibleTextEditors.filter((e) => e.document.uri.toString() === uri.toString()));

  registerCommand(context, COMMAND_IDS.showBlameDiff, async (...args: unknown[]) => {
    const [runId, parentId, programId, extension] = args;
    if (![runId, parentId, programId, extension].every((a) => typeof a === 'string'))
      throw new Error('Open the diff of a step: a blame annotation gives its program');
    await showProgramDiff(runId as string, parentId as string, programId as string, extension as string);
  });
  context.subscriptions.push(
    decoration,
    annotated,
    vscode.window.onDidChangeVisibleTextEditors(decorateVisible),
    vscode.window.onDidChangeActiveTextEditor((editor) => editor && decorateVisible([editor])),
    // An editor that became (or stopped being) a diff's side is drawn again accordingly.
    vscode.window.tabGroups.onDidChangeTabs(() => decorateVisible(vscode.window.visibleTextEditors)),
    onDidApplyProgram(({ fileUri, programCode, program }) => {
      appliedFiles.set(fileUri.toString(), { program, programCode });
      decorateDocument(fileUri);
    }),
    vscode.workspace.onDidChangeTextDocument((change) => {
      if (appliedFiles.has(change.document.uri.toString())) decorateDocument(change.document.uri);
    }),
  );
  decorateVisible(vscode.window.visibleTextEditors);
}
