// "ThetaEvolve: Mark Selection as EVOLVE-BLOCK": wraps the selected lines in
// EVOLVE-BLOCK-START / EVOLVE-BLOCK-END comments in the file's own comment
// syntax, read from the language configuration the language's extension
// contributes (so any language VS Code knows), else the common prefixes.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as vscode from 'vscode';
import { z } from 'zod';
import { type CommentSyntax, commentSyntaxFromLanguageConfiguration, markEvolveBlock } from '../engine/evolveBlockMarkers';
import { COMMAND_IDS } from './commandIds';
import { fileName, registerCommand } from './commandRegistry';
import { commentPrefix } from './evolveBlockLens';

/** What we read of another extension's package.json: its languages and their configuration files. */
const LanguageContributionsSchema = z.array(z.looseObject({ id: z.string(), configuration: z.string().optional() }));

/** The comment syntax of a language from its language-configuration.json, null when no extension declares one. */
export async function commentSyntaxOf(languageId: string): Promise<CommentSyntax | null> {
  for (const extension of vscode.extensions.all) {
    const contributes: unknown = (extension.packageJSON as { contributes?: { languages?: unknown } } | undefined)?.contributes?.languages;
    const languages = LanguageContributionsSchema.safeParse(contributes);
    if (!languages.success) continue;
    for (const language of languages.data) {
      if (language.id !== languageId || !language.configuration) continue;
      const text = await readFile(join(extension.extensionPath, language.configuration), 'utf8').catch(() => null);
      const syntax = text === null ? null : commentSyntaxFromLanguageConfiguration(text);
      if (syntax) return syntax;
    }
  }
  return null;
}

async function markSelection(): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!editor) throw new Error('open the program and select the lines to evolve first');
  const { document, selection } = editor;
  const first = selection.start.line;
  // A selection that ends at the start of a line leaves that line out, as line-wise edits do.
  const last = selection.end.line > first && selection.end.character === 0 ? selection.end.line - 1 : selection.end.line;
  const syntax = (await commentSyntaxOf(document.languageId)) ?? { line: commentPrefix(document.languageId), block: null };
  const result = markEvolveBlock(document.getText(), first, last, syntax);
  if (!result.ok) throw new Error(`${fileName(document.uri)}: ${result.problem}`);
  const lines = result.text.split(/\r?\n/);
  const eol = document.eol === vscode.EndOfLine.CRLF ? '\r\n' : '\n';
  const [start, end] = [lines[first] as string, lines[last + 2] as string];
  const applied = await editor.edit((edit) => {
    if (last + 1 < document.lineCount) edit.insert(new vscode.Position(last + 1, 0), `${end}${eol}`);
    else edit.insert(document.lineAt(last).range.end, `${eol}${end}`);
    edit.insert(new vscode.Position(first, 0), `${start}${eol}`);
  });
  if (!applied) throw new Error(`${fileName(document.uri)} changed while marking; try again`);
  editor.selection = new vscode.Selection(first, 0, last + 2, end.length);
}

export function registerMarkEvolveBlock(context: vscode.ExtensionContext): void {
  registerCommand(context, COMMAND_IDS.markEvolveBlock, markSelection);
}
