import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { applyResponse, parseDiffBlocks } from '../../src/engine/common/diff';
import { guessLanguageFromMarker, MutateSampler, numericLiteralsInEvolveBlock } from '../../src/engine/llm/mutateSampler';
import type { GenerationJob, Sample, SampleResponse } from '../../src/engine/common/types';

const FIXTURE = [
  'import math',
  'N = 26  # outside: never touched',
  '',
  '# EVOLVE-BLOCK-START',
  'def construct():',
  '    """Rings of 8 and 16 around a centre circle (radius 0.1 in the docstring stays)."""',
  '    centre_radius = 0.13',
  '    ring1 = [(0.5 + 0.25 * math.cos(2 * math.pi * k / 8), 0.5 + 0.25 * math.sin(2 * math.pi * k / 8)) for k in range(8)]',
  '    ring2 = [(0.5 + 0.42 * math.cos(2 * math.pi * k / 16), 0.5 + 0.42 * math.sin(2 * math.pi * k / 16)) for k in range(16)]',
  '    # a comment with 3.5 in it is not code',
  '    label = "x1 0.75"',
  '    shrink = 1e-3',
  '    return centre_radius, ring1, ring2, shrink, label',
  '# EVOLVE-BLOCK-END',
  '',
  'print(construct())',
  '',
].join('\n');

function job(key: string, seed: number, n: number, parentCode = FIXTURE): GenerationJob {
  return { key, messages: [], n, seed, parentId: 'p0', parentCode };
}

async function collect(sampler: MutateSampler, jobs: GenerationJob[]): Promise<SampleResponse[]> {
  const samples: Sample[] = [];
  await sampler.generate(jobs, new AbortController().signal, (s) => samples.push(s));
  return samples.map((s) => {
    assert.ok(s.ok);
    return s;
  });
}

/** Initial programs of the bundled tasks, once they exist (files holding the start marker under tasks/). */
/** The children parse as Python (python3's ast); without python3 the test is skipped, saying so (CI has python3). */
function assertPython(test: Mocha.Context, children: string[]): void {
  const check = spawnSync('python3', ['-c', 'import ast, json, sys\nfor c in json.load(sys.stdin): ast.parse(c)\nprint("ok")'], {
    input: JSON.stringify(children),
    encoding: 'utf8',
  });
  if (check.error !== undefined) {
    console.warn(`      skipped: python3 is not installed, so the children could not be parsed as Python (${check.error.message})`);
    test.skip();
  }
  assert.equal(check.stdout.trim(), 'ok', check.stderr);
}

function bundledPrograms(): string[] {
  const root = path.resolve(__dirname, '../../tasks');
  const found: string[] = [];
  const walk = (dir: string, depth: number): void => {
    let entries: string[] = [];
    try {
      entries = readdirSync(dir);
    } catch {
      return;
    }
    for (const name of entries) {
      const full = path.join(dir, name);
      if (statSync(full).isDirectory()) {
        if (depth < 3) walk(full, depth + 1);
      } else if (
        /\.(py|c|cpp|js|ts)$/.test(name) &&
        statSync(full).size < 200_000 &&
        readFileSync(full, 'utf8').includes('EVOLVE-BLOCK-START')
      ) {
        found.push(full);
      }
    }
  };
  walk(root, 0);
  return found;
}

describe('MutateSampler', () => {
  it('is labelled as the offline sampler and always passes check()', async () => {
    const sampler = new MutateSampler({ seed: 0 });
    assert.equal(sampler.kind, 'mutate');
    assert.match(sampler.label, /offline mutate sampler/);
    assert.match(sampler.label, /no model/);
    await sampler.check();
  });

  it('finds numeric literals in code inside the EVOLVE-BLOCK only', () => {
    const { literals } = numericLiteralsInEvolveBlock(FIXTURE, 'py');
    const texts = literals.map((l) => l.text);
    assert.ok(texts.includes('0.13'));
    assert.ok(texts.includes('1e-3'));
    assert.ok(!texts.includes('26'), 'outside the block');
    assert.ok(!texts.includes('3.5'), 'inside a comment');
    assert.ok(!texts.includes('0.75'), 'inside a string');
    assert.ok(!texts.includes('0.1'), 'inside a docstring');
    assert.ok(literals.every((l) => l.line > 3 && l.line < 13));
    assert.equal(guessLanguageFromMarker(FIXTURE), 'py');
    assert.equal(guessLanguageFromMarker('// EVOLVE-BLOCK-START\n'), 'c');
  });

  it('delivers n samples per job asynchronously, with zero tokens and finish reason stop', async () => {
    const sampler = new MutateSampler({ seed: 1 });
    const seen: Sample[] = [];
    const pending = sampler.generate([job('s1-p0', 100, 3), job('s1-p1', 200, 2)], new AbortController().signal, (s) => seen.push(s));
    assert.equal(seen.length, 0, 'nothing delivered synchronously');
    const stats = await pending;
    assert.equal(seen.length, 5);
    assert.equal(stats.requests, 5);
    assert.equal(stats.completionTokens, 0);
    assert.deepEqual(
      seen.map((s) => `${s.jobKey}#${s.index}`),
      ['s1-p0#0', 's1-p0#1', 's1-p0#2', 's1-p1#0', 's1-p1#1'],
    );
    for (const s of seen) {
      assert.ok(s.ok);
      assert.equal(s.finishReason, 'stop');
      assert.equal(s.promptTokens, 0);
      assert.equal(s.completionTokens, 0);
      assert.equal(s.reasoning, null);
      assert.equal(s.truncated, false);
    }
  });

  it('stops delivering when aborted', async () => {
    const sampler = new MutateSampler({ seed: 1 });
    const controller = new AbortController();
    let delivered = 0;
    await sampler.generate([job('a', 1, 50)], controller.signal, () => {
      delivered++;
      if (delivered === 3) controller.abort();
    });
    assert.equal(delivered, 3);
  });

  it('is deterministic: same seeds give the same responses, different seeds differ', async () => {
    const jobs = [job('s1-p0', 7, 8), job('s1-p1', 99, 8)];
    const a = (await collect(new MutateSampler({ seed: 5 }), jobs)).map((s) => s.content);
    const b = (await collect(new MutateSampler({ seed: 5 }), jobs)).map((s) => s.content);
    const c = (await collect(new MutateSampler({ seed: 6 }), jobs)).map((s) => s.content);
    const d = (await collect(new MutateSampler({ seed: 5 }), [job('s1-p0', 8, 8), job('s1-p1', 100, 8)])).map((s) => s.content);
    assert.deepEqual(a, b);
    assert.notDeepEqual(a, c);
    assert.notDeepEqual(a, d);
    assert.ok(new Set(a).size >= 12, 'samples of one job differ from each other');
    // job.seed + index: sample 1 of seed 7 is sample 0 of seed 8.
    assert.equal(a[1], d[0]);
  });

  it('proposes an explanation and 1-3 blocks that apply cleanly inside the EVOLVE-BLOCK', async function () {
    const samples = await collect(new MutateSampler({ seed: 3 }), [job('k', 0, 300)]);
    const blockCounts = new Set<number>();
    const kinds = new Set<string>();
    const children: string[] = [];
    for (const s of samples) {
      const parsed = parseDiffBlocks(s.content);
      assert.ok(parsed.blocks.length >= 1 && parsed.blocks.length <= 3, s.content);
      blockCounts.add(parsed.blocks.length);
      assert.match(s.content.split('\n')[0] ?? '', /offline mutate sampler/i);
      for (const m of s.content.matchAll(/\((multiplicative|additive|large|step) change\)/g)) kinds.add(m[1] as string);
      const result = applyResponse(FIXTURE, s.content, { language: 'py' });
      assert.equal(result.status, 'applied', `${result.message}\n${s.content}`);
      assert.deepEqual(result.skipped, []);
      const child = result.child as string;
      assert.equal(
        child.split('\n').slice(0, 4).join('\n'),
        FIXTURE.split('\n').slice(0, 4).join('\n'),
        'lines before the block unchanged',
      );
      assert.equal(child.split('\n').slice(-4).join('\n'), FIXTURE.split('\n').slice(-4).join('\n'), 'lines after the block unchanged');
      assert.ok(child.includes('# a comment with 3.5 in it is not code'));
      assert.ok(child.includes('label = "x1 0.75"'));
      children.push(child);
    }
    assert.deepEqual([...blockCounts].sort(), [1, 2, 3]);
    for (const kind of ['multiplicative', 'additive', 'large']) assert.ok(kinds.has(kind), `some ${kind} changes`);

    // The children are still Python.
    assertPython(this, children);
  });

  it('works on CRLF and //-marked programs', async () => {
    const c = [
      '#include <stdio.h>',
      '// EVOLVE-BLOCK-START',
      'double r = 0.5; // 9.9 in a comment',
      'int iters = 100;',
      '// EVOLVE-BLOCK-END',
      'int main(void) { return 0; }',
      '',
    ].join('\r\n');
    for (const s of await collect(new MutateSampler({ seed: 2 }), [job('c', 0, 40, c)])) {
      const result = applyResponse(c, s.content, { language: 'c' });
      assert.equal(result.status, 'applied', s.content);
      assert.ok(result.child?.includes('// 9.9 in a comment'));
      assert.ok(result.child?.includes('\r\n'));
    }
  });

  it('answers without blocks when the block has no literal (a no_diff sample)', async () => {
    const [sample] = await collect(new MutateSampler({ seed: 0 }), [job('x', 0, 1, '# EVOLVE-BLOCK-START\nx = y\n# EVOLVE-BLOCK-END\n')]);
    assert.equal(applyResponse('# EVOLVE-BLOCK-START\nx = y\n# EVOLVE-BLOCK-END\n', sample?.content ?? '').status, 'no_diff_blocks');
  });

  it("applies cleanly to the bundled tasks' initial programs (when present)", async function () {
    const pythonChildren: string[] = [];
    for (const file of bundledPrograms()) {
      const code = readFileSync(file, 'utf8');
      const language = path.extname(file).slice(1);
      for (const s of await collect(new MutateSampler({ seed: 0 }), [job('t', 0, 30, code)])) {
        const result = applyResponse(code, s.content, { language });
        assert.ok(result.status === 'applied' || result.status === 'no_diff_blocks', `${file}: ${result.message}`);
        assert.deepEqual(result.skipped, [], file);
        if (language === 'py' && result.child !== null) pythonChildren.push(result.child);
      }
    }
    assertPython(this, pythonChildren);
  });
});
