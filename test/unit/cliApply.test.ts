import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import { tempDir } from '../support/tempDirs';

const REPO = path.resolve(__dirname, '../..');
const CLI = path.join(REPO, 'src/cli.ts');
// `node --import tsx src/cli.ts`, with tsx resolved from the repository so the CLI can run in a temporary folder.
const TSX = pathToFileURL(require.resolve('tsx')).href;

const ApplyOutput = z.object({
  status: z.enum(['applied', 'no_diff_blocks', 'no_valid_change', 'outside_evolve_block', 'no_evolve_block', 'too_long']),
  child: z.string().nullable(),
  applied: z.number().int(),
  skipped: z.array(z.object({ index: z.number().int(), reason: z.string(), search: z.string(), detail: z.string() })),
});

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function cli(args: string[], cwd: string): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', TSX, CLI, ...args], { cwd, encoding: 'utf8' }, (err, stdout, stderr) => {
      const code = err && typeof err.code === 'number' ? err.code : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

const PARENT = [
  'import sys',
  'LIMIT = 5',
  '# EVOLVE-BLOCK-START',
  'def f():',
  '    a = 1.5',
  '    b = 2',
  '    return a * b',
  '# EVOLVE-BLOCK-END',
  'print(f())',
  '',
].join('\n');
const block = (s: string, r: string): string => `<<<<<<< SEARCH\n${s}\n=======\n${r}\n>>>>>>> REPLACE\n`;

describe('cli: thetaevolve apply', function () {
  this.timeout(60_000);
  let dir = '';

  before(() => {
    dir = tempDir('thetaevolve-apply-');
    writeFileSync(path.join(dir, 'parent.py'), PARENT);
    writeFileSync(path.join(dir, 'nomarkers.py'), 'x = 1\n');
    const responses: Record<string, string> = {
      'applied.txt': `<think>\n${block('    a = 1.5', '    a = 9.9')}</think>\nRaise a, and keep b.\n\n${block('    a = 1.5', '    a = 1.75')}\n${block('    c = 3', '    c = 4')}`,
      'nodiff.txt': 'I think it is already optimal.\n',
      'comment.txt': block('    b = 2', '    b = 2  # double'),
      'outside.txt': block('LIMIT = 5', 'LIMIT = 50'),
      'long.txt': block('    b = 2', `    b = 2\n    pad = "${'x'.repeat(60_000)}"`),
      'simple.txt': block('    b = 2', '    b = 3'),
    };
    for (const [name, text] of Object.entries(responses)) writeFileSync(path.join(dir, name), text);
  });

  async function applyJson(parent: string, response: string): Promise<z.infer<typeof ApplyOutput>> {
    const run = await cli(['apply', parent, response, '--json'], dir);
    assert.equal(run.code, 0, run.stderr);
    return ApplyOutput.parse(JSON.parse(run.stdout));
  }

  it('prints every status as JSON and exits 0 whenever it ran', async () => {
    const [applied, nodiff, comment, outside, long, noBlock] = await Promise.all([
      applyJson('parent.py', 'applied.txt'),
      applyJson('parent.py', 'nodiff.txt'),
      applyJson('parent.py', 'comment.txt'),
      applyJson('parent.py', 'outside.txt'),
      applyJson('parent.py', 'long.txt'),
      applyJson('nomarkers.py', 'simple.txt'),
    ]);
    assert.equal(applied.status, 'applied');
    assert.equal(applied.applied, 1);
    assert.equal(applied.child, PARENT.replace('a = 1.5', 'a = 1.75'), 'the block inside <think> is ignored');
    assert.deepEqual(
      applied.skipped.map((s) => [s.index, s.reason, s.search]),
      [[1, 'no_match', '    c = 3']],
    );
    assert.match(applied.skipped[0]?.detail ?? '', /matches no lines/);

    assert.deepEqual([nodiff.status, nodiff.child, nodiff.applied, nodiff.skipped], ['no_diff_blocks', null, 0, []]);
    assert.equal(comment.status, 'no_valid_change');
    assert.equal(outside.status, 'outside_evolve_block');
    assert.equal(outside.child, null);
    assert.equal(outside.skipped[0]?.reason, 'outside_evolve_block');
    assert.equal(long.status, 'too_long');
    assert.equal(noBlock.status, 'no_evolve_block');
  });

  it('prints the child on stdout and a summary on stderr without --json', async () => {
    const run = await cli(['apply', path.join(dir, 'parent.py'), path.join(dir, 'simple.txt')], REPO);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout, PARENT.replace('b = 2', 'b = 3'));
    assert.match(run.stderr, /^applied: applied 1 of 1 blocks/);
  });

  it('applies the section 3 robustness cases byte for byte (diffRobustness.test.ts has them at unit level)', async () => {
    const parser = [
      '# EVOLVE-BLOCK-START',
      'def answer_of(text):',
      "    if '<think>' in text:",
      '        return text',
      '    return text.strip()',
      '# EVOLVE-BLOCK-END',
      '',
    ].join('\n');
    const readme = ['# Usage', '<!-- EVOLVE-BLOCK-START -->', '```bash', 'make run', '```', '<!-- EVOLVE-BLOCK-END -->', ''].join('\n');
    const mixed = 'import os\r\n# EVOLVE-BLOCK-START\nx = 1\r\ny = 2\n# EVOLVE-BLOCK-END\r\nprint(x)';
    const twoRegions = [
      '// EVOLVE-BLOCK-START',
      'const a = 1;',
      '// EVOLVE-BLOCK-END',
      'const fixed = 0;',
      '// EVOLVE-BLOCK-START',
      'const b = 2;',
      '// EVOLVE-BLOCK-END',
      '',
    ].join('\n');
    const cases: { name: string; parent: [string, string]; response: string; child: string | null }[] = [
      {
        name: 'think-in-code',
        parent: ['parser.py', parser],
        response: `<think>plan</think>\n${block("    if '<think>' in text:\n        return text", "    if '</think>' in text:\n        return text.split('</think>')[-1]")}`,
        child: parser.replace(
          "    if '<think>' in text:\n        return text",
          "    if '</think>' in text:\n        return text.split('</think>')[-1]",
        ),
      },
      {
        name: 'markdown-fences',
        parent: ['readme.md', readme],
        response: block('```bash\nmake run\n```', '```sh\nmake run\n```'),
        child: readme.replace('```bash', '```sh'),
      },
      { name: 'mixed-endings', parent: ['mixed.py', mixed], response: block('y = 2', 'y = 3'), child: mixed.replace('y = 2', 'y = 3') },
      {
        name: 'marker-context',
        parent: ['parent.py', PARENT],
        response: block('# EVOLVE-BLOCK-START\ndef f():', '# EVOLVE-BLOCK-START\ndef f(k=2):'),
        child: PARENT.replace('def f():', 'def f(k=2):'),
      },
      {
        name: 'two-regions',
        parent: ['two.js', twoRegions],
        response: `${block('const a = 1;', 'const a = 10;')}\n${block('const b = 2;', 'const b = 20;')}`,
        child: twoRegions.replace('a = 1', 'a = 10').replace('b = 2', 'b = 20'),
      },
      {
        name: 'blank-before-divider',
        parent: ['parent.py', PARENT],
        response: block('    a = 1.5\n', '    a = 2.5\n'),
        child: PARENT.replace('a = 1.5', 'a = 2.5'),
      },
      {
        name: 'unterminated',
        parent: ['parent.py', PARENT],
        response: `<<<<<<< SEARCH\n    a = 1.5\n=======\n    a = 0\n${block('    b = 2', '    b = 4')}`,
        child: PARENT.replace('b = 2', 'b = 4'),
      },
    ];
    for (const c of cases) {
      writeFileSync(path.join(dir, c.parent[0]), c.parent[1]);
      writeFileSync(path.join(dir, `${c.name}.txt`), c.response);
    }
    const results = await Promise.all(cases.map((c) => applyJson(c.parent[0], `${c.name}.txt`)));
    cases.forEach((c, i) => {
      const result = results[i];
      assert.ok(result);
      assert.equal(result.status, 'applied', `${c.name}: ${JSON.stringify(result)}`);
      assert.equal(result.child, c.child, c.name);
      assert.doesNotMatch(result.child ?? '', /^(<{7}|={7}|>{7})/m, `${c.name}: no conflict marker in the child`);
    });
  });

  it('fails with exit 1 and one line on stderr for a missing file, 2 for bad usage', async () => {
    const missing = await cli(['apply', 'parent.py', 'absent.txt', '--json'], dir);
    assert.equal(missing.code, 1);
    assert.equal(missing.stdout, '');
    assert.match(missing.stderr, /^thetaevolve apply: cannot read the response absent\.txt: no such file\n$/);
    const usage = await cli(['apply', 'parent.py'], dir);
    assert.equal(usage.code, 2);
  });
});
