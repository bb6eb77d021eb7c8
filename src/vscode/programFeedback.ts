// The evaluator's feedback on a program (OpenEvolve's artifacts,
// ShinkaEvolve's text_feedback, our evaluator's reason: docs/algorithm.md
// section 2), shown with its program document: a CodeLens over the first
// line gives its first words and opens the whole of it as a read-only
// document, thetaevolve-feedback:/<run>/<program>/feedback.txt. Kept apart
// from the program's text, so its diffs, blame and Compare with File see
// only code. The text is as the engine kept it (bounded, control characters
// stripped); it may come from a candidate's own process, so it is plain
// text, never markup.
import * as vscode from 'vscode';
import { forDisplay } from '../engine/common/displayText';
import { COMMAND_IDS } from './commandIds';
import { registerCommand } from './commandRegistry';
import { findProgram, parseProgramUri, PROGRAM_SCHEME } from './programDocuments';

export const FEEDBACK_SCHEME = 'thetaevolve-feedback';
/** Characters of the feedback's first line in the CodeLens title. */
const LENS_CHARS = 80;

/** The feedback document of a program. */
export function feedbackUri(runId: string, programId: string): vscode.Uri {
  return vscode.Uri.from({ scheme: FEEDBACK_SCHEME, path: `/${runId}/${programId}/feedback.txt` });
}

/** The CodeLens title: the feedback's first line, cut. */
export function feedbackLensTitle(feedback: string): string {
  const first = forDisplay(feedback).trim().split('\n')[0] ?? '';
  const lines = feedback.trim().split('\n').length;
  const cut = first.length > LENS_CHARS ? `${first.slice(0, LENS_CHARS)}…` : first;
  return `$(comment) Evaluator feedback: ${cut}${lines > 1 ? ` (${lines} lines)` : ''}`;
}

class FeedbackLensProvider implements vscode.CodeLensProvider {
  async provideCodeLenses(document: vscode.TextDocument): Promise<vscode.CodeLens[]> {
    const ref = parseProgramUri(document.uri);
    if (!ref) return [];
    const program = await findProgram(ref.runId, ref.programId).catch(() => null);
    if (!program || program.feedback === '') return [];
    return [
      new vscode.CodeLens(new vscode.Range(0, 0, 0, 0), {
        title: feedbackLensTitle(program.feedback),
        command: COMMAND_IDS.showProgramFeedback,
        arguments: [ref.runId, ref.programId],
        tooltip: "The evaluator's feedback on this program, as its children's prompts get it: open it whole",
      }),
    ];
  }
}

class FeedbackContentProvider implements vscode.TextDocumentContentProvider {
  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const [runId, programId] = uri.path.split('/').filter((part) => part !== '');
    if (!runId || !programId) return `ThetaEvolve: ${uri.toString()} names no program.\n`;
    const program = await findProgram(runId, programId);
    if (!program) return `ThetaEvolve: program ${programId} of run ${runId} is not available.\n`;
    return program.feedback === '' ? 'The evaluator gave no feedback on this program.\n' : `${forDisplay(program.feedback)}\n`;
  }
}

export function registerProgramFeedback(context: vscode.ExtensionContext): void {
  context.subscriptions.push(
    vscode.languages.registerCodeLensProvider({ scheme: PROGRAM_SCHEME }, new FeedbackLensProvider()),
    vscode.workspace.registerTextDocumentContentProvider(FEEDBACK_SCHEME, new FeedbackContentProvider()),
  );
  registerCommand(context, COMMAND_IDS.showProgramFeedback, async (runId: unknown, programId: unknown) => {
    if (typeof runId !== 'string' || typeof programId !== 'string') throw new Error('open a program document first');
    const document = await vscode.workspace.openTextDocument(feedbackUri(runId, programId));
    await vscode.window.showTextDocument(document, { preview: true, viewColumn: vscode.ViewColumn.Beside });
    return document.uri;
  });
}
