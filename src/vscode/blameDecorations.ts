// Blame on program documents (docs/algorithm.md section 11), as GitLens does
// for commits: each block of lines that came from one program of the
// lineage ends with "step 12 · model · 0.9613" (the step, who wrote it, its
// objective), and its hover opens that step's diff (the program against its
// parent). Read from the run's database through the worker's `blame` query.
import * as vscode from 'vscode';
import { forDisplay } from '../engine/common/displayText';
import { formatScore } from '../engine/common/format';
import type { QueryResult } from '../protocol/workerMessages';
import { registerCommand } from './commandRegistry';
import { COMMAND_IDS } from './commandIds';
import { showProgramDiff } from './diffViews';
import { parseProgramUri } from './programDocuments';
import type { RunController } from './runController';

/** One annotation as shown: the line (0-based), its text, and its hover. */
export interface BlameAnnotation {
  line: number;
  text: string;
  hover: vscode.MarkdownString;
}

const annotated = new vscode.EventEmitter<{ uri: vscode.Uri; annotations: BlameAnnotation[] }>();
/** A program document got its blame annotations (the in-host tests watch it). */
export const onDidAnnotateBlame = annotated.event;

type Blame = QueryResult<'blame'>;

/** The annotations of a blame: one at the end of the first line of each block of lines from the same program. */
export function blameAnnotations(blame: Blame, runId: string, extension: string): BlameAnnotation[] {
  const programs = new Map(blame.programs.map((p) => [p.id, p]));
  const annotations: BlameAnnotation[] = [];
  let previous: string | null = null;
  for (const line of blame.lines) {
    if (line.id === previous) continue;
    previous = line.id;
    const program = programs.get(line.id);
    // Six digits, as the Runs view shows objectives.
    const objective = formatScore(program?.objective ?? null, 6);
    const hover = new vscode.MarkdownString();
    // Ids and notes are text from the database: appended as text, never as markup.
    hover.appendText(`Line from program ${line.id} (step ${line.step}, written by ${line.origin}, objective ${objective})`);
    if (program?.note) hover.appendText(`\nNote: ${forDisplay(program.note)}`);
    if (program?.parentId) {
      const args = encodeURIComponent(JSON.stringify([runId, program.parentId, line.id, extension]));
      hover.appendMarkdown(`\n\n[Open the diff of step ${line.step}](command:${COMMAND_IDS.showBlameDiff}?${args})`);
      hover.isTrusted = { enabledCommands: [COMMAND_IDS.showBlameDiff] };
    }
    annotations.push({ line: line.line - 1, text: `step ${line.step} · ${line.origin} · ${objective}`, hover });
  }
  return annotations;
}

export function registerBlameDecorations(context: vscode.ExtensionContext, controller: RunController): void {
  const decoration = vscode.window.createTextEditorDecorationType({
    after: { margin: '0 0 0 3em', color: new vscode.ThemeColor('editorCodeLens.foreground'), fontStyle: 'italic' },
  });
  /** Blame per program document: a program never changes, so once read it stays. */
  const cache = new Map<string, Promise<BlameAnnotation[] | null>>();

  const annotationsOf = (uri: vscode.Uri): Promise<BlameAnnotation[] | null> => {
    const key = uri.toString();
    let pending = cache.get(key);
    if (!pending) {
      const ref = parseProgramUri(uri);
      const dbFile = ref ? controller.dbFileOf(ref.runId) : undefined;
      if (!ref || !dbFile) return Promise.resolve(null);
      const extension = /\.([^./]+)$/.exec(uri.path)?.[1] ?? '';
      pending = controller.query({ kind: 'blame', dbFile, programId: ref.programId }).then(
        (blame) => blameAnnotations(blame, ref.runId, extension),
        () => null,
      );
      cache.set(key, pending);
    }
    return pending;
  };

  const decorate = async (editor: vscode.TextEditor): Promise<void> => {
    const annotations = await annotationsOf(editor.document.uri);
    if (!annotations) return;
    editor.setDecorations(
      decoration,
      annotations.map((a) => {
        // The whole line: its hover is there wherever the pointer rests on it; the annotation is drawn after its end.
        const range = editor.document.lineAt(Math.min(a.line, editor.document.lineCount - 1)).range;
        return { range, hoverMessage: a.hover, renderOptions: { after: { contentText: a.text } } };
      }),
    );
    annotated.fire({ uri: editor.document.uri, annotations });
  };

  const decorateVisible = (editors: readonly vscode.TextEditor[]): void => {
    for (const editor of editors) if (parseProgramUri(editor.document.uri)) void decorate(editor);
  };

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
    vscode.workspace.onDidCloseTextDocument((document) => cache.delete(document.uri.toString())),
  );
  decorateVisible(vscode.window.visibleTextEditors);
}
