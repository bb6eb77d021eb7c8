// A new task from a file: the markers "Mark Selection as EVOLVE-BLOCK" writes
// in the file's comment syntax (read from real language configurations), and
// the task.json + evaluator template "New Task for This File" drafts, loaded
// and run through the real sandbox.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { commentSyntaxFromLanguageConfiguration, markEvolveBlock } from '../../src/engine/evolveBlockMarkers';
import { Evaluator } from '../../src/engine/sandbox/evaluator';
import { draftTask, inferDirection } from '../../src/engine/task/scaffold';
import { loadTask } from '../../src/engine/task/task';
import { OUTCOME_PENALTY } from '../../src/engine/common/types';
import { tempDir } from '../support/tempDirs';

const CODE_SERVER_EXTENSIONS = join(__dirname, '../../tools/code-server/node_modules/code-server/lib/vscode/extensions');

describe('Mark Selection as EVOLVE-BLOCK: comment syntax and markers', () => {
  it('reads line and block comments from language configuration files (comments, trailing commas, escapes, the object form)', () => {
    assert.deepEqual(commentSyntaxFromLanguageConfiguration('{"comments":{"lineComment":"#","blockComment":["\\"\\"\\"","\\"\\"\\""]}}'), {
      line: '#',
      block: ['"""', '"""'],
    });
    assert.deepEqual(commentSyntaxFromLanguageConfiguration('{\n  // HTML\n  "comments": { "blockComment": ["<!--", "-->"], },\n}'), {
      line: null,
      block: ['<!--', '-->'],
    });
    assert.deepEqual(
      commentSyntaxFromLanguageConfiguration(
        '{"comments": {"lineComment": {"comment": "//", "noIndent": false}, "blockComment": ["/*", "*/"]}}',
      ),
      { line: '//', block: ['/*', '*/'] },
    );
    assert.equal(commentSyntaxFromLanguageConfiguration('{"brackets": [["{", "}"]]}'), null);
  });

  it("reads the language configurations VS Code's own extensions ship", function () {
    if (!existsSync(CODE_SERVER_EXTENSIONS)) this.skip(); // Reason: code-server is not installed (scripts/setup.sh installs it; CI has it).
    const syntaxOf = (ext: string) =>
      commentSyntaxFromLanguageConfiguration(readFileSync(join(CODE_SERVER_EXTENSIONS, ext, 'language-configuration.json'), 'utf8'));
    assert.equal(syntaxOf('python')?.line, '#');
    assert.equal(syntaxOf('cpp')?.line, '//');
    assert.deepEqual(syntaxOf('html'), { line: null, block: ['<!--', '-->'] });
    assert.equal(syntaxOf('lua')?.line, '--');
    const all = readdirSync(CODE_SERVER_EXTENSIONS).filter((e) =>
      existsSync(join(CODE_SERVER_EXTENSIONS, e, 'language-configuration.json')),
    );
    const unread = all.filter((e) => syntaxOf(e) === null);
    // A few languages have no comments at all (JSON lines, plain text...); every other one is read.
    assert.ok(unread.length <= all.length / 5, `unread: ${unread.join(', ')}`);
  });

  it('wraps the lines in markers, indented like them, keeping the line endings; a block comment where there is no line comment', () => {
    const python = markEvolveBlock('import math\n\ndef f():\n    return 1\n', 2, 3, { line: '#', block: null });
    assert.deepEqual(python, { ok: true, text: 'import math\n\n# EVOLVE-BLOCK-START\ndef f():\n    return 1\n# EVOLVE-BLOCK-END\n' });
    const indented = markEvolveBlock('int main() {\r\n  int x = 1;\r\n  return x;\r\n}\r\n', 1, 1, { line: '//', block: ['/*', '*/'] });
    assert.deepEqual(indented, {
      ok: true,
      text: 'int main() {\r\n  // EVOLVE-BLOCK-START\r\n  int x = 1;\r\n  // EVOLVE-BLOCK-END\r\n  return x;\r\n}\r\n',
    });
    const html = markEvolveBlock('<p>a</p>', 0, 0, { line: null, block: ['<!--', '-->'] });
    assert.deepEqual(html, { ok: true, text: '<!-- EVOLVE-BLOCK-START -->\n<p>a</p>\n<!-- EVOLVE-BLOCK-END -->' });
  });

  it('refuses a second region and lines outside the file, saying why', () => {
    const twice = markEvolveBlock('# EVOLVE-BLOCK-START\nx = 1\n# EVOLVE-BLOCK-END\ny = 2\n', 3, 3, { line: '#', block: null });
    assert.deepEqual(twice, {
      ok: false,
      problem: 'the file already has an EVOLVE-BLOCK marker (line 1); a file has one region: remove it first',
    });
    const outside = markEvolveBlock('x = 1\n', 4, 5, { line: '#', block: null });
    assert.equal(outside.ok, false);
  });
});

describe('New Task for This File: the drafted task', function () {
  this.timeout(60_000);
  let dir: string;
  beforeEach(() => {
    dir = tempDir('thetaevolve-new-task-', { mode: 0o755 });
  });

  async function evaluate(taskDir: string, code: string) {
    const evaluator = new Evaluator(await loadTask(taskDir), { concurrency: 1, memoryLimitMb: 2048, outputLimitBytes: 65536 });
    try {
      return await evaluator.evaluate(code);
    } finally {
      await evaluator.close();
    }
  }

  it('a Python file: task.json with direction, limits, the docstring as meta-information and a target; the template scores solution.json', async () => {
    const program = [
      '"""Find a large {value} of x * (10 - x)."""',
      'import json',
      '# EVOLVE-BLOCK-START',
      'x = 3',
      '# EVOLVE-BLOCK-END',
      'json.dump({"value": x * (10 - x)}, open("solution.json", "w"))',
      '',
    ].join('\n');
    writeFileSync(join(dir, 'product.py'), program);
    const draft = draftTask({ programFile: 'product.py', code: program, taken: (n) => existsSync(join(dir, n)) });
    assert.equal(draft.evaluatorFile, 'evaluate.py');
    const raw = JSON.parse(draft.taskJson) as Record<string, unknown>;
    assert.equal(raw.$schema, undefined, 'validated through the contributed schema, no relative path to break');
    assert.equal(raw.direction, 'maximize');
    assert.equal(raw.targetValue, null);
    writeFileSync(join(dir, 'task.json'), draft.taskJson);
    writeFileSync(join(dir, draft.evaluatorFile), draft.evaluatorText);
    const task = await loadTask(dir);
    assert.equal(task.initialProgramPath, join(dir, 'product.py'));
    assert.equal(task.runtimeLimitSec, 60);
    assert.doesNotMatch(task.metaInformation[0]?.text ?? '', /EVOLVE-BLOCK/, 'markers in task.json would read as a region there');
    assert.match(
      task.metaInformation[0]?.text ?? '',
      /^Find a large \{value\} of x \* \(10 - x\)\.\n\nImprove the marked region of the py program/,
    );
    const ok = await evaluate(dir, program);
    assert.equal(ok.status, 'ok', ok.reason);
    assert.equal(ok.objective, 21);
    const invalid = await evaluate(dir, program.replace('x = 3', 'x = 10'));
    assert.equal(invalid.status, 'invalid_solution');
    assert.equal(invalid.reason, 'the value must be positive');
    const none = await evaluate(dir, program.replace(/json\.dump.*/, 'pass'));
    assert.equal(none.score, OUTCOME_PENALTY.no_solution);
    // A second draft in the same folder does not take the first one's evaluator name.
    assert.equal(
      draftTask({ programFile: 'product.py', code: program, taken: (n) => existsSync(join(dir, n)) }).evaluatorFile,
      'evaluate_product.py',
    );
  });

  it('reads the direction from the program\'s own words ("Minimise", "as small as"), else maximize with no evidence; the objective goes into the prompt', () => {
    const cases: [string, string, string | null][] = [
      ['"""Minimise the maximum autocorrelation of a step function."""\n', 'minimize', 'Minimise'],
      ['# Make the energy as small as you can.\n# (Larger would be wrong.)\n', 'minimize', 'as small as'],
      ['"""Find a large value; we maximize the product."""\n', 'maximize', 'maximize'],
      ['"""Pack circles."""\n', 'maximize', null],
      ['x = 1  # minimize nothing here: not the leading text\n', 'maximize', null],
    ];
    for (const [code, direction, evidence] of cases) assert.deepEqual(inferDirection(code), { direction, evidence }, code);
    const program = '"""Minimise the energy."""\n# EVOLVE-BLOCK-START\nx = 1\n# EVOLVE-BLOCK-END\n';
    const inferred = JSON.parse(draftTask({ programFile: 'e.py', code: program }).taskJson) as { direction: string };
    assert.equal(inferred.direction, 'minimize', 'the draft follows the docstring');
    const told = JSON.parse(
      draftTask({ programFile: 'e.py', code: program, direction: 'maximize', objective: 'the energy gap' }).taskJson,
    ) as {
      direction: string;
      metaInformation: { text: string }[];
    };
    assert.equal(told.direction, 'maximize', 'what the person chose wins');
    assert.match(told.metaInformation[0]?.text ?? '', /The objective is the energy gap; larger is better\./);
  });

  it('a JavaScript file: node runs the program and the template evaluator', async () => {
    const program =
      '// Make value large.\nconst fs = require("fs");\n// EVOLVE-BLOCK-START\nconst value = 4;\n// EVOLVE-BLOCK-END\nfs.writeFileSync("solution.json", JSON.stringify({ value }));\n';
    writeFileSync(join(dir, 'big.js'), program);
    const draft = draftTask({ programFile: 'big.js', code: program });
    assert.equal(draft.evaluatorFile, 'evaluate.cjs');
    writeFileSync(join(dir, 'task.json'), draft.taskJson);
    writeFileSync(join(dir, draft.evaluatorFile), draft.evaluatorText);
    const result = await evaluate(dir, program);
    assert.equal(result.status, 'ok', result.reason);
    assert.equal(result.objective, 4);
  });
});
