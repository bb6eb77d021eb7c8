// The documents the code cites exist and say what is cited. A comment or
// string in the source cites the docs as
//   docs/algorithm.md section 4          (a numbered section: "## 4. ...")
//   docs/algorithm.md sections 4 and 5
//   docs/architecture.md "Sandbox"       (a heading of that file, any level)
//   docs/contracts.md
// never as a bare `algorithm.md` / `product.md` (the design notes those names
// once meant are not in the repository). And every repository path the docs
// name in backticks exists.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const ROOT = join(__dirname, '..', '..');
/** Where citations are checked: the source the product is built from, package.json's setting descriptions and the task.json schema generated from src. */
const CITING_ROOTS = ['src', 'webview/src'];
const CITING_FILES = ['package.json', 'media/task.schema.json'];
/** Document names that are only ever cited under docs/. */
const DOC_NAMES = ['algorithm', 'product', 'architecture', 'contracts', 'testing'];

function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' || entry.name === '__pycache__' ? [] : filesUnder(path);
    return /\.(ts|mjs|js|py|md|json|css|html)$/.test(entry.name) ? [path] : [];
  });
}

interface Citation {
  file: string;
  line: number;
  text: string;
}

/** The file's text with comment continuations joined, so a citation broken over two comment lines reads as one. */
function joined(text: string): { text: string; lineAt: (index: number) => number } {
  const starts: number[] = [];
  let out = '';
  const lines = text.split('\n');
  lines.forEach((line, i) => {
    const continuation = i > 0 ? /^\s*(\/\/+|\*(?!\/)|#)\s?/.exec(line) : null;
    starts.push(out.length);
    out += continuation ? ` ${line.slice(continuation[0].length)}` : `${i > 0 ? '\n' : ''}${line}`;
  });
  return {
    text: out,
    lineAt: (index) => {
      let line = 0;
      while (line + 1 < starts.length && (starts[line + 1] as number) <= index) line++;
      return line + 1;
    },
  };
}

function citingFiles(): string[] {
  return [...CITING_ROOTS.flatMap((dir) => filesUnder(join(ROOT, dir))), ...CITING_FILES.map((f) => join(ROOT, f))];
}

/** Every mention of one of DOC_NAMES (with what follows it) in the citing files. */
function citations(): Citation[] {
  const found: Citation[] = [];
  const mention = new RegExp(
    `(?:[\\w./-]*/)?(?:${DOC_NAMES.join('|')})\\.md(?:'s)?(?:[ \\t]+(?:sections?[ \\t]+\\d+(?:(?:,[ \\t]*|[ \\t]+and[ \\t]+)\\d+)*|"[^"\\n]+"))?`,
    'g',
  );
  for (const path of citingFiles()) {
    const { text, lineAt } = joined(readFileSync(path, 'utf8'));
    for (const m of text.matchAll(mention)) found.push({ file: relative(ROOT, path), line: lineAt(m.index ?? 0), text: m[0] });
  }
  return found;
}

function headingsOf(doc: string): string[] {
  return readFileSync(join(ROOT, 'docs', doc), 'utf8')
    .split('\n')
    .flatMap((line) => {
      const m = /^#{1,6}\s+(.+?)\s*$/.exec(line);
      return m ? [m[1] as string] : [];
    });
}

function sectionNumbers(doc: string): Set<number> {
  return new Set(
    headingsOf(doc).flatMap((h) => {
      const m = /^(\d+)\.\s/.exec(h);
      return m ? [Number(m[1])] : [];
    }),
  );
}

/** What is wrong with one citation, or null. */
function problemOf(citation: Citation): string | null {
  const m = /^(?:([\w./-]*)\/)?(\w+)\.md(?:'s)?(?:\s+sections?\s+([\d,\sand]+)|\s+"([^"]+)")?$/.exec(citation.text);
  if (!m) return `unreadable citation '${citation.text}'`;
  const [, folder, name, sections, heading] = m;
  if (folder !== 'docs')
    return `cites '${name}.md' without docs/: write docs/${name === 'product' ? 'architecture' : name}.md (see test/unit/docs.test.ts)`;
  const doc = `${name}.md`;
  if (!existsSync(join(ROOT, 'docs', doc))) return `cites docs/${doc}, which does not exist`;
  if (sections !== undefined) {
    const have = sectionNumbers(doc);
    const missing = (sections.match(/\d+/g) ?? []).map(Number).filter((n) => !have.has(n));
    if (missing.length > 0)
      return `cites docs/${doc} section ${missing.join(', ')}, which docs/${doc} does not have (it has ${[...have].join(', ')})`;
  }
  if (heading !== undefined && !headingsOf(doc).includes(heading))
    return `cites docs/${doc} "${heading}", which is not a heading of docs/${doc}`;
  return null;
}

/** Each "## Title (src/file.ts)" section of docs/contracts.md with the declarations of its ts blocks. */
function contractSections(): { file: string; exports: string[]; members: string[] }[] {
  const text = readFileSync(join(ROOT, 'docs', 'contracts.md'), 'utf8');
  return text
    .split(/^## /m)
    .slice(1)
    .flatMap((section) => {
      const file = /^[^\n]*\((src\/[\w./-]+\.ts)\)/.exec(section)?.[1];
      if (!file) return [];
      const code = [...section.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1] as string).join('\n');
      const exports = [...code.matchAll(/^export (?:async )?(?:function|class|interface|type|const) (\w+)/gm)].map((m) => m[1] as string);
      const members = [...code.matchAll(/^ {2}(?:static |readonly )?(?:async )?(\w+)[(:]/gm)].map((m) => m[1] as string);
      return [{ file, exports, members }];
    });
}

describe('docs the code cites', () => {
  it('has docs/algorithm.md with numbered sections 1 to 7 (the numbering comments cite)', () => {
    const have = sectionNumbers('algorithm.md');
    for (let n = 1; n <= 7; n++) assert.ok(have.has(n), `docs/algorithm.md has no "## ${n}. ..." section`);
  });

  it('every citation in src/, package.json and media/task.schema.json names an existing docs/ file, section and heading', () => {
    const found = citations();
    const problems = found.flatMap((c) => {
      const problem = problemOf(c);
      return problem ? [`${c.file}:${c.line}: ${problem}`] : [];
    });
    assert.ok(problems.length === 0, `${problems.length} citation(s) to fix:\n${problems.join('\n')}`);
  });

  it('reads citations the way they are written (one line or broken over comment lines)', () => {
    const one = joined('// see docs/algorithm.md\n// section 4, and\n/** docs/architecture.md\n * "Sandbox" */');
    assert.match(one.text, /docs\/algorithm\.md section 4, and/);
    assert.match(one.text, /docs\/architecture\.md "Sandbox"/);
    assert.equal(problemOf({ file: 'x', line: 1, text: 'docs/algorithm.md section 4' }), null);
    assert.equal(problemOf({ file: 'x', line: 1, text: 'docs/algorithm.md sections 4 and 5' }), null);
    assert.match(problemOf({ file: 'x', line: 1, text: 'algorithm.md section 4' }) ?? '', /without docs\//);
    assert.match(problemOf({ file: 'x', line: 1, text: 'product.md "Sandbox"' }) ?? '', /without docs\//);
    assert.match(problemOf({ file: 'x', line: 1, text: 'docs/algorithm.md section 99' }) ?? '', /does not have/);
    assert.match(problemOf({ file: 'x', line: 1, text: 'docs/product.md' }) ?? '', /does not exist/);
    assert.match(problemOf({ file: 'x', line: 1, text: 'docs/architecture.md "No such heading"' }) ?? '', /not a heading/);
  });

  it('every repository path the docs name in backticks exists', () => {
    const docs = [
      ...readdirSync(join(ROOT, 'docs'))
        .filter((f) => f.endsWith('.md'))
        .map((f) => join('docs', f)),
      'CONTRIBUTING.md',
      'README.md',
    ];
    const missing: string[] = [];
    for (const doc of docs) {
      if (!existsSync(join(ROOT, doc))) continue;
      const text = readFileSync(join(ROOT, doc), 'utf8');
      for (const m of text.matchAll(/`((?:src|test|scripts|webview|tasks|bench|docs|media)\/[\w./-]+)`/g)) {
        const path = (m[1] as string).replace(/\/$/, '');
        if (!existsSync(join(ROOT, path))) missing.push(`${doc}: ${path}`);
      }
    }
    assert.ok(missing.length === 0, `paths named in the docs that do not exist:\n${missing.join('\n')}`);
  });

  it('docs/contracts.md declares only what its files export, and class members they have', () => {
    const sections = contractSections();
    assert.ok(sections.length >= 8, `docs/contracts.md has ${sections.length} sections naming a source file`);
    const problems: string[] = [];
    for (const { file, exports, members } of sections) {
      if (!existsSync(join(ROOT, file))) {
        problems.push(`${file} does not exist`);
        continue;
      }
      const source = readFileSync(join(ROOT, file), 'utf8');
      for (const name of exports) {
        const declared = new RegExp(
          `export\\s+(?:declare\\s+)?(?:abstract\\s+)?(?:async\\s+)?(?:function|class|interface|type|const)\\s+${name}\\b`,
        ).test(source);
        const reexported = new RegExp(`export\\s+(?:type\\s+)?\\{[^}]*\\b${name}\\b[^}]*\\}`).test(source);
        if (!declared && !reexported) problems.push(`${file} does not export ${name}`);
      }
      for (const name of members) if (!new RegExp(`\\b${name}\\b`).test(source)) problems.push(`${file} has no member ${name}`);
    }
    assert.ok(problems.length === 0, `docs/contracts.md is out of date:\n${problems.join('\n')}`);
  });
});
