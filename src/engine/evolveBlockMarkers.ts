// Writing EVOLVE-BLOCK markers around lines of a program, in the program's
// own comment syntax ("Mark Selection as EVOLVE-BLOCK"). The syntax comes
// from the language configuration VS Code knows for the file (any
// language an installed extension contributes); this module stays free of
// vscode so the text work is tested directly.
import { EVOLVE_BLOCK_END, EVOLVE_BLOCK_START } from './common/diff';

/** A language's comments: a line comment, and/or a block comment's open and close. */
export interface CommentSyntax {
  line: string | null;
  block: readonly [string, string] | null;
}

/** Parts of a JSON string literal, escapes decoded (language configuration files are JSON with comments). */
const STRING = '"((?:[^"\\\\]|\\\\.)*)"';

function unescape(text: string): string {
  try {
    return JSON.parse(`"${text}"`) as string;
  } catch {
    return text;
  }
}

/**
 * The comment syntax in a language-configuration.json text: `comments.lineComment`
 * (a string, or `{ "comment": ... }` in newer VS Code) and `comments.blockComment`.
 * Read by pattern, so comments and trailing commas in the file do not matter;
 * null when the file declares neither.
 */
export function commentSyntaxFromLanguageConfiguration(text: string): CommentSyntax | null {
  const line = new RegExp(`"lineComment"\\s*:\\s*(?:\\{[^}]*?"comment"\\s*:\\s*)?${STRING}`).exec(text);
  const block = new RegExp(`"blockComment"\\s*:\\s*\\[\\s*${STRING}\\s*,\\s*${STRING}\\s*\\]`).exec(text);
  const lineComment = line ? unescape(line[1] as string) : '';
  const blockComment = block ? ([unescape(block[1] as string), unescape(block[2] as string)] as const) : null;
  if (lineComment === '' && (blockComment === null || blockComment[0] === '')) return null;
  return { line: lineComment === '' ? null : lineComment, block: blockComment && blockComment[0] !== '' ? blockComment : null };
}

/** The two marker lines in this syntax, indented like the code they wrap. */
export function evolveBlockMarkerLines(syntax: CommentSyntax, indent: string): [string, string] {
  const marker = (word: string): string =>
    syntax.line ? `${indent}${syntax.line} ${word}` : `${indent}${syntax.block?.[0] ?? '#'} ${word} ${syntax.block?.[1] ?? ''}`.trimEnd();
  return [marker(EVOLVE_BLOCK_START), marker(EVOLVE_BLOCK_END)];
}

/**
 * Lines `first`..`last` (0-based, inclusive) of `text` wrapped in markers;
 * a problem instead when the text already has markers (one region per file)
 * or the lines are out of range. The line ending of the text is kept.
 */
export function markEvolveBlock(
  text: string,
  first: number,
  last: number,
  syntax: CommentSyntax,
): { ok: true; text: string } | { ok: false; problem: string } {
  const lines = text.split(/\r?\n/);
  const marked = lines.findIndex((l) => l.includes(EVOLVE_BLOCK_START) || l.includes(EVOLVE_BLOCK_END));
  if (marked !== -1)
    return {
      ok: false,
      problem: `the file already has an EVOLVE-BLOCK marker (line ${marked + 1}); a file has one region: remove it first`,
    };
  const eol = text.includes('\r\n') ? '\r\n' : '\n';
  if (first < 0 || last < first || last >= lines.length)
    return { ok: false, problem: `lines ${first + 1}-${last + 1} are not in the file` };
  const indent = /^\s*/.exec(lines[first] as string)?.[0] ?? '';
  const [start, end] = evolveBlockMarkerLines(syntax, indent);
  return { ok: true, text: [...lines.slice(0, first), start, ...lines.slice(first, last + 1), end, ...lines.slice(last + 1)].join(eol) };
}
