// Language-aware comment stripping and hashing of programs (docs/algorithm.md
// section 4): two children that differ only in comments, trailing spaces or
// blank lines are the same program for the no-change check and the lazy
// penalty. String literals are kept: a `#` or `//` inside a string is code.

interface StringSyntax {
  /** Opening and closing delimiter (the same text). */
  quote: string;
  /** Whether the literal may run over line ends (else it ends at the newline). */
  multiline: boolean;
  /** Whether a backslash escapes the next character. */
  escapes: boolean;
}

interface CommentSyntax {
  line: readonly string[];
  block: readonly (readonly [string, string])[];
  strings: readonly StringSyntax[];
}

const C_STRINGS: readonly StringSyntax[] = [
  { quote: '"', multiline: false, escapes: true },
  { quote: "'", multiline: false, escapes: true },
];
const JS_STRINGS: readonly StringSyntax[] = [...C_STRINGS, { quote: '`', multiline: true, escapes: true }];
const GO_STRINGS: readonly StringSyntax[] = [...C_STRINGS, { quote: '`', multiline: true, escapes: false }];
const PY_STRINGS: readonly StringSyntax[] = [
  { quote: '"""', multiline: true, escapes: true },
  { quote: "'''", multiline: true, escapes: true },
  ...C_STRINGS,
];

const PYTHON: CommentSyntax = { line: ['#'], block: [], strings: PY_STRINGS };
const HASH: CommentSyntax = { line: ['#'], block: [], strings: C_STRINGS };
const C_LIKE: CommentSyntax = { line: ['//'], block: [['/*', '*/']], strings: C_STRINGS };
const JS_LIKE: CommentSyntax = { line: ['//'], block: [['/*', '*/']], strings: JS_STRINGS };
const GO: CommentSyntax = { line: ['//'], block: [['/*', '*/']], strings: GO_STRINGS };
const JULIA: CommentSyntax = { line: ['#'], block: [['#=', '=#']], strings: PY_STRINGS.filter((s) => s.quote !== "'''") };
const LUA: CommentSyntax = { line: ['--'], block: [['--[[', ']]']], strings: C_STRINGS };
const SQL: CommentSyntax = { line: ['--'], block: [['/*', '*/']], strings: C_STRINGS };
const HASKELL: CommentSyntax = { line: ['--'], block: [['{-', '-}']], strings: [{ quote: '"', multiline: false, escapes: true }] };
const PERCENT: CommentSyntax = {
  line: ['%'],
  block: [],
  strings: [
    { quote: "'", multiline: false, escapes: false },
    { quote: '"', multiline: false, escapes: false },
  ],
};
const SEMICOLON: CommentSyntax = { line: [';'], block: [], strings: [{ quote: '"', multiline: false, escapes: true }] };
const NONE: CommentSyntax = { line: [], block: [], strings: [] };

const SYNTAX_BY_LANGUAGE: Readonly<Record<string, CommentSyntax>> = {
  py: PYTHON,
  python: PYTHON,
  pyw: PYTHON,
  pyi: PYTHON,
  sh: HASH,
  bash: HASH,
  zsh: HASH,
  r: HASH,
  rb: HASH,
  ruby: HASH,
  pl: HASH,
  perl: HASH,
  yaml: HASH,
  yml: HASH,
  toml: HASH,
  jl: JULIA,
  julia: JULIA,
  c: C_LIKE,
  h: C_LIKE,
  cpp: C_LIKE,
  cc: C_LIKE,
  cxx: C_LIKE,
  hpp: C_LIKE,
  hh: C_LIKE,
  cu: C_LIKE,
  cuh: C_LIKE,
  java: C_LIKE,
  cs: C_LIKE,
  rs: C_LIKE,
  rust: C_LIKE,
  swift: C_LIKE,
  kt: C_LIKE,
  scala: C_LIKE,
  dart: C_LIKE,
  php: C_LIKE,
  js: JS_LIKE,
  mjs: JS_LIKE,
  cjs: JS_LIKE,
  jsx: JS_LIKE,
  ts: JS_LIKE,
  tsx: JS_LIKE,
  mts: JS_LIKE,
  cts: JS_LIKE,
  javascript: JS_LIKE,
  typescript: JS_LIKE,
  go: GO,
  lua: LUA,
  sql: SQL,
  hs: HASKELL,
  haskell: HASKELL,
  m: PERCENT,
  matlab: PERCENT,
  tex: PERCENT,
  erl: PERCENT,
  lisp: SEMICOLON,
  clj: SEMICOLON,
  scm: SEMICOLON,
  el: SEMICOLON,
  asm: SEMICOLON,
  s: SEMICOLON,
};

function syntaxOf(language: string): CommentSyntax {
  return SYNTAX_BY_LANGUAGE[language.toLowerCase().replace(/^\./, '')] ?? NONE;
}

/** Whether comments of this language are recognised (else only whitespace is normalised). */
/** The line-comment text of a language ("#", "//"), or null when it has none or we do not know it. */
export function lineCommentOf(language: string): string | null {
  return syntaxOf(language).line[0] ?? null;
}

export function knowsCommentSyntax(language: string): boolean {
  return syntaxOf(language) !== NONE;
}

export interface CodeSegment {
  kind: 'code' | 'comment' | 'string';
  /** Offsets into the text, end exclusive. */
  start: number;
  end: number;
}

/**
 * Split source text into code, comment and string-literal segments. A
 * lexer, not a parser: good enough to keep `#` inside strings and to skip
 * numbers inside comments. Line comments end before their newline.
 */
export function segmentCode(code: string, language: string): CodeSegment[] {
  const syntax = syntaxOf(language);
  const segments: CodeSegment[] = [];
  let codeStart = 0;
  let i = 0;
  const push = (kind: CodeSegment['kind'], start: number, end: number): void => {
    if (end > start) segments.push({ kind, start, end });
  };
  outer: while (i < code.length) {
    // Block comments before line comments: Lua's `--[[` starts with `--`.
    for (const [open, close] of syntax.block) {
      if (code.startsWith(open, i)) {
        const closeAt = code.indexOf(close, i + open.length);
        const end = closeAt === -1 ? code.length : closeAt + close.length;
        push('code', codeStart, i);
        push('comment', i, end);
        i = codeStart = end;
        continue outer;
      }
    }
    for (const open of syntax.line) {
      if (code.startsWith(open, i)) {
        const newline = code.indexOf('\n', i);
        const end = newline === -1 ? code.length : newline;
        push('code', codeStart, i);
        push('comment', i, end);
        i = codeStart = end;
        continue outer;
      }
    }
    for (const s of syntax.strings) {
      if (code.startsWith(s.quote, i)) {
        const end = stringEnd(code, i, s);
        if (end === -1) break; // not a literal after all (e.g. a Rust lifetime): plain code
        push('code', codeStart, i);
        push('string', i, end);
        i = codeStart = end;
        continue outer;
      }
    }
    i++;
  }
  push('code', codeStart, code.length);
  return segments;
}

/** End offset (exclusive) of the literal opening at `start`, or -1 when a single-line literal is not closed on its line. */
function stringEnd(code: string, start: number, s: StringSyntax): number {
  let j = start + s.quote.length;
  while (j < code.length) {
    const ch = code[j];
    if (s.escapes && ch === '\\') {
      j += 2;
      continue;
    }
    if (ch === '\n' && !s.multiline) return -1;
    if (code.startsWith(s.quote, j)) return j + s.quote.length;
    j++;
  }
  return s.multiline ? code.length : -1;
}

/**
 * The program without comments, trailing spaces and blank lines; string
 * literals and indentation kept. CRLF is read as LF.
 */
export function stripComments(code: string, language: string): string {
  const text = code.replace(/\r\n?/g, '\n');
  let kept = '';
  for (const segment of segmentCode(text, language)) {
    if (segment.kind !== 'comment') kept += text.slice(segment.start, segment.end);
  }
  return kept
    .split('\n')
    .map((line) => line.replace(/[ \t\f\v]+$/, ''))
    .filter((line) => line.length > 0)
    .join('\n');
}

/** Whether two programs are the same up to comments, trailing spaces and blank lines. */
export function sameCodeIgnoringComments(a: string, b: string, language: string): boolean {
  return stripComments(a, language) === stripComments(b, language);
}
