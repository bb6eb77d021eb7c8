import assert from 'node:assert/strict';
import { buildPrompt, formatMetric, type PromptTask, SYSTEM_PROMPT } from '../../src/engine/prompt';
import { fillTemplate } from '../../src/engine/task/task';
import { Rng } from '../../src/engine/common/rng';

const PROGRAM = [
  'import numpy as np',
  '',
  '# EVOLVE-BLOCK-START',
  'def pack():',
  '    r = 0.1',
  '    return r',
  '# EVOLVE-BLOCK-END',
  '',
  'print(pack())',
  '',
].join('\n');

const TASK: PromptTask = {
  language: 'py',
  metaInformation: [
    { id: 'constructor', weight: 0.3, text: 'Place {n_circles} circles by hand within {MAX_RUNTIME} s; keep {unknown_thing} as is.' },
    { id: 'optimizer', weight: 0.7, text: 'Beat {target_value} with an optimizer.' },
  ],
  variables: { n_circles: 26, MAX_RUNTIME: 60, target_value: 2.635983 },
};

const PARENT = { code: PROGRAM, score: 2.635983, objective: 2.635983, metrics: { sum_radii: 2.635983, valid: true } };

function userText(prompt: ReturnType<typeof buildPrompt>): string {
  return prompt.messages.find((m) => m.role === 'user')?.content ?? '';
}

/** The fenced code blocks of a markdown text, with their bodies. */
function fencedBlocks(text: string): string[] {
  const blocks: string[] = [];
  const re = /^(`{3,})[^\n`]*\n([\s\S]*?)\n\1\s*$/gm;
  for (const m of text.matchAll(re)) blocks.push(m[2] ?? '');
  return blocks;
}

describe('prompt', () => {
  it('has one fixed system line and the parent in a python-tagged fenced block', () => {
    const prompt = buildPrompt({ task: TASK, parent: PARENT, rng: Rng.fromSeed(1) });
    assert.equal(prompt.messages.length, 2);
    assert.deepEqual(prompt.messages[0], { role: 'system', content: SYSTEM_PROMPT });
    assert.ok(!SYSTEM_PROMPT.includes('\n'));
    const text = userText(prompt);
    assert.ok(text.includes('```python\n' + PROGRAM.trimEnd() + '\n```'));
    const withMarker = fencedBlocks(text).filter((b) => b.includes('EVOLVE-BLOCK-START'));
    assert.equal(withMarker.length, 1, 'only the parent is a fenced block holding the marker');
    assert.equal(withMarker[0], PROGRAM.trimEnd());
  });

  it('prints metrics on a line above the code with enough digits that 1e-7 shows', () => {
    const a = userText(buildPrompt({ task: TASK, parent: PARENT, rng: Rng.fromSeed(1) }));
    const better = { ...PARENT, score: PARENT.score + 1e-7, objective: PARENT.objective + 1e-7 };
    const b = userText(buildPrompt({ task: TASK, parent: better, rng: Rng.fromSeed(1) }));
    const metricsLine = (t: string): string => t.split('\n').find((l) => l.startsWith('Metrics')) ?? '';
    assert.notEqual(metricsLine(a), metricsLine(b));
    assert.match(metricsLine(b), /score = 2\.6359831/);
    assert.ok(a.indexOf('Metrics') < a.indexOf('```python'));
    assert.match(metricsLine(a), /sum_radii = 2\.635983\b/);
    assert.match(metricsLine(a), /valid = true/);
    assert.equal(formatMetric(100.0000001), '100.0000001');
    assert.equal(formatMetric(0.9055), '0.9055');
    assert.equal(formatMetric(-0.3), '-0.3');
    assert.equal(formatMetric(26), '26');
    assert.notEqual(formatMetric(1.5030331), formatMetric(1.5030332));
  });

  it('fills known placeholders and leaves unknown ones', () => {
    assert.equal(fillTemplate('{n_circles} in {MAX_RUNTIME}s {nope}', TASK.variables), '26 in 60s {nope}');
    // Own variables only: an Object.prototype name stays as written.
    assert.equal(fillTemplate('{constructor} {toString}', TASK.variables), '{constructor} {toString}');
    const rng = Rng.fromSeed(3);
    for (let i = 0; i < 20; i++) {
      const prompt = buildPrompt({ task: TASK, parent: PARENT, rng });
      const text = userText(prompt);
      if (prompt.metaInfoId === 'constructor')
        assert.ok(text.includes('Place 26 circles by hand within 60 s; keep {unknown_thing} as is.'));
      else assert.ok(text.includes('Beat 2.635983 with an optimizer.'));
    }
  });

  it('draws meta-information in proportion to the weights, reproducibly', () => {
    const rng = Rng.fromSeed(11);
    let constructor = 0;
    const draws = 4000;
    for (let i = 0; i < draws; i++) if (buildPrompt({ task: TASK, parent: PARENT, rng }).metaInfoId === 'constructor') constructor++;
    assert.ok(Math.abs(constructor / draws - 0.3) < 0.03, `constructor drawn ${constructor} of ${draws}`);
    const ids = (seed: number): (string | null)[] => {
      const r = Rng.fromSeed(seed);
      return Array.from({ length: 10 }, () => buildPrompt({ task: TASK, parent: PARENT, rng: r }).metaInfoId);
    };
    assert.deepEqual(ids(5), ids(5));
  });

  it('works without meta-information and ignores zero weights', () => {
    const none = buildPrompt({ task: { ...TASK, metaInformation: [] }, parent: PARENT, rng: Rng.fromSeed(1) });
    assert.equal(none.metaInfoId, null);
    const zero = buildPrompt({
      task: {
        ...TASK,
        metaInformation: [
          { id: 'a', weight: 0, text: 'A' },
          { id: 'b', weight: 1, text: 'B' },
        ],
      },
      parent: PARENT,
      rng: Rng.fromSeed(1),
    });
    assert.equal(zero.metaInfoId, 'b');
  });

  it('states the answer rules with SEARCH/REPLACE examples that hold no marked fenced block', () => {
    const text = userText(buildPrompt({ task: TASK, parent: PARENT, rng: Rng.fromSeed(1) }));
    assert.match(text, /<<<<<<< SEARCH/);
    assert.match(text, /=======/);
    assert.match(text, />>>>>>> REPLACE/);
    assert.match(text, /exactly/);
    assert.match(text, /EVOLVE-BLOCK-START and EVOLVE-BLOCK-END/);
    assert.match(text, /whole program/);
    assert.match(text, /Example 1/);
  });

  it('shows k best programs only when asked, without their markers', () => {
    const other = { ...PARENT, code: PROGRAM.replace('r = 0.1', 'r = 0.2'), score: 2.7 };
    const text = userText(buildPrompt({ task: TASK, parent: PARENT, rng: Rng.fromSeed(1), topPrograms: [other] }));
    assert.ok(text.includes('    r = 0.2'));
    assert.equal(fencedBlocks(text).filter((b) => b.includes('EVOLVE-BLOCK-START')).length, 1);
    assert.ok(text.indexOf('r = 0.1') < text.indexOf('r = 0.2'), 'the parent comes first');
    assert.ok(!userText(buildPrompt({ task: TASK, parent: PARENT, rng: Rng.fromSeed(1) })).includes('Strong programs'));
  });

  it('shows each EVOLVE-BLOCK region of a strong program with several, in order and without markers', () => {
    const code = [
      'import math',
      '# EVOLVE-BLOCK-START',
      'a = 1',
      '# EVOLVE-BLOCK-END',
      'fixed = 0',
      '# EVOLVE-BLOCK-START',
      'b = 2',
      'c = 3',
      '# EVOLVE-BLOCK-END',
      '',
    ].join('\n');
    const text = userText(
      buildPrompt({ task: TASK, parent: PARENT, rng: Rng.fromSeed(1), topPrograms: [{ ...PARENT, code, score: 2.8 }] }),
    );
    const shown = text.slice(text.indexOf('Strong programs'));
    assert.ok(shown.indexOf('Region 1 of 2:') < shown.indexOf('Region 2 of 2:'));
    const blocks = fencedBlocks(shown);
    assert.ok(
      blocks.some((b) => b.includes('a = 1') && !b.includes('b = 2')),
      JSON.stringify(blocks),
    );
    assert.ok(
      blocks.some((b) => b.includes('b = 2\nc = 3') && !b.includes('a = 1')),
      JSON.stringify(blocks),
    );
    assert.ok(!shown.includes('fixed = 0') && !shown.includes('import math'), 'only region content is shown');
    assert.equal(fencedBlocks(text).filter((b) => b.includes('EVOLVE-BLOCK-START')).length, 1);
  });

  it('uses the task language for the fence and a longer fence when the code holds backticks', () => {
    const code = '// EVOLVE-BLOCK-START\nconst s = ```x```;\n// EVOLVE-BLOCK-END';
    const text = userText(buildPrompt({ task: { ...TASK, language: 'ts' }, parent: { ...PARENT, code }, rng: Rng.fromSeed(1) }));
    assert.ok(text.includes('````typescript\n' + code + '\n````'));
  });
});
