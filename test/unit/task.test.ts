import assert from 'node:assert/strict';
import { readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startTestServer } from '../server/openaiTestServer';
import { runCli } from '../support/cli';
import { getLanguageService, TextDocument } from 'vscode-json-languageservice';
import { taskJsonSchema, taskJsonSchemaText } from '../../src/engine/task/schema';
import { evolveBlockProblem, fillTemplate, listBundledTasks, loadTask, placeholdersOf, TaskError } from '../../src/engine/task/task';
import { tempDir } from '../support/tempDirs';

const REPO = join(__dirname, '../..');

const MINIMAL = {
  name: 'tiny',
  title: 'Tiny task',
  direction: 'maximize',
  initialProgram: 'initial.py',
  candidate: { command: ['/usr/bin/python3', '{program}'], runtimeLimitSec: 5 },
  evaluator: { command: ['/usr/bin/python3', '{taskDir}/evaluate.py', '{solution}'], timeLimitSec: 5 },
  metaInformation: [{ id: 'only', weight: 1, text: 'Finish within {MAX_RUNTIME} s.' }],
};
const PROGRAM = '# EVOLVE-BLOCK-START\nx = 1\n# EVOLVE-BLOCK-END\n';

describe('task format', () => {
  let dir: string;
  before(() => {
    dir = tempDir('te-task-');
  });

  let cases = 0;
  async function taskFolder(spec: unknown, program = PROGRAM): Promise<string> {
    const folder = join(dir, `case-${cases++}`);
    await mkdir(folder);
    await writeFile(join(folder, 'task.json'), typeof spec === 'string' ? spec : JSON.stringify(spec));
    await writeFile(join(folder, 'initial.py'), program);
    return folder;
  }

  async function loadError(spec: unknown, program = PROGRAM): Promise<string> {
    const folder = await taskFolder(spec, program);
    try {
      await loadTask(folder);
    } catch (err) {
      assert.ok(err instanceof TaskError, `not a TaskError: ${String(err)}`);
      assert.ok(err.message.startsWith(join(folder, 'task.json')), `the message names the file: ${err.message}`);
      return err.message;
    }
    assert.fail('the task loaded');
  }

  it('loads a minimal task with defaults filled in', async () => {
    const task = await loadTask(await taskFolder(MINIMAL));
    assert.equal(task.name, 'tiny');
    assert.equal(task.language, 'py');
    assert.equal(task.initialProgram, PROGRAM);
    assert.equal(task.runtimeLimitSec, 5);
    assert.equal(task.evaluatorTimeLimitSec, 5);
    assert.equal(task.targetValue, null);
    assert.equal(task.maxCodeLength, 50000);
    assert.equal(task.solutionFile, 'solution.json');
    assert.equal(task.solutionMaxBytes, 16 * 1024 * 1024);
    assert.deepEqual(task.rewardShaping, { enabled: false, lower: 0, upper: 1, alpha: 1, k: 1 });
    assert.deepEqual(task.variables, { MAX_RUNTIME: 5 });
  });

  it('accepts a path to task.json as well as its folder', async () => {
    const folder = await taskFolder(MINIMAL);
    assert.equal((await loadTask(join(folder, 'task.json'))).dir, folder);
  });

  it('names the field and what is wrong', async () => {
    const { direction: _direction, ...noDirection } = MINIMAL;
    assert.match(await loadError(noDirection), /field direction: .*got nothing/);
    assert.match(await loadError({ ...MINIMAL, direction: 'up' }), /field direction: .*"maximize".*"minimize".*got "up"/);
    assert.match(
      await loadError({ ...MINIMAL, candidate: { ...MINIMAL.candidate, runtimeLimitSec: -1 } }),
      /field candidate\.runtimeLimitSec: .*got -1/,
    );
    assert.match(await loadError({ ...MINIMAL, colour: 'blue' }), /field colour: unknown field/);
    assert.match(await loadError({ ...MINIMAL, metaInformation: [] }), /field metaInformation: needs at least one text/);
    assert.match(
      await loadError({ ...MINIMAL, metaInformation: [{ id: 'a', weight: 0, text: 'x' }] }),
      /field metaInformation\[0\]\.weight/,
    );
    assert.match(await loadError({ ...MINIMAL, name: 'Has Spaces' }), /field name: must be lower-case/);
    assert.match(
      await loadError({ ...MINIMAL, rewardShaping: { enabled: true, lower: 2, upper: 1 } }),
      /field rewardShaping\.upper: upper must be greater than lower/,
    );
    assert.match(await loadError('{"name": "tiny",'), /not valid JSON/);
  });

  it('reads only regular files under a size cap: a program linked to /dev/zero or a huge one is refused, naming it', async () => {
    const zero = await taskFolder({ ...MINIMAL, initialProgram: 'zero.py' }, PROGRAM);
    symlinkSync('/dev/zero', join(zero, 'zero.py'));
    await assert.rejects(
      loadTask(zero),
      /field initialProgram: cannot read .*zero\.py: it resolves to \/dev\/zero, outside the task folder/,
    );
    const huge = await taskFolder({ ...MINIMAL, initialProgram: 'huge.py' }, PROGRAM);
    writeFileSync(join(huge, 'huge.py'), `${PROGRAM}\n#${'x'.repeat(5 * 1024 * 1024)}\n`);
    await assert.rejects(
      loadTask(huge),
      /field initialProgram: cannot read .*huge\.py: it is \d+ bytes, over the 4194304 a task's file may hold/,
    );
    // A link to a regular file inside the folder is fine (git stores links).
    const linked = await taskFolder({ ...MINIMAL, initialProgram: 'linked.py' }, PROGRAM);
    symlinkSync(join(linked, 'initial.py'), join(linked, 'linked.py'));
    assert.equal((await loadTask(linked)).initialProgram, PROGRAM);
  });

  it('checks placeholders, the initial program and the commands', async () => {
    assert.match(
      await loadError({ ...MINIMAL, metaInformation: [{ id: 'a', weight: 1, text: 'Pack {n_circles} circles' }] }),
      /field metaInformation\[0\]\.text: uses \{n_circles\}, which is not a variable/,
    );
    assert.match(
      await loadError(MINIMAL, 'x = 1\n'),
      /field initialProgram: initial\.py: no EVOLVE-BLOCK-START \/ EVOLVE-BLOCK-END markers/,
    );
    assert.match(
      await loadError(MINIMAL, '# EVOLVE-BLOCK-START\nx = 1\n'),
      /field initialProgram: initial\.py: EVOLVE-BLOCK-START on line 1 has no EVOLVE-BLOCK-END after it/,
    );
    assert.match(await loadError({ ...MINIMAL, initialProgram: 'missing.py' }), /field initialProgram: cannot read/);
    assert.match(
      await loadError({ ...MINIMAL, initialProgram: '../outside.py' }),
      /field initialProgram: must stay inside the task folder/,
    );
    assert.match(
      await loadError({ ...MINIMAL, candidate: { ...MINIMAL.candidate, command: ['/usr/bin/python3', 'x.py'] } }),
      /field candidate\.command: must pass the program with \{program\}/,
    );
    assert.match(
      await loadError({ ...MINIMAL, evaluator: { ...MINIMAL.evaluator, command: ['/usr/bin/python3', '{program}', '{solution}'] } }),
      /field evaluator\.command\[1\]: uses \{program\}, which is not a placeholder here/,
    );
    assert.match(await loadError({ ...MINIMAL, maxCodeLength: 10 }), /field maxCodeLength: the initial program is \d+ characters/);
    await assert.rejects(loadTask(join(dir, 'no-such-folder')), /no such task folder/);
  });

  it('loads and evolves a task whose initial program holds two EVOLVE-BLOCK regions (thetaevolve run against a test server)', async function () {
    this.timeout(60_000);
    const folder = await taskFolder(
      {
        ...MINIMAL,
        evaluator: { ...MINIMAL.evaluator, command: ['/usr/bin/python3', `${REPO}/test/fixtures/hostile/evaluate.py`, '{solution}'] },
      },
      [
        'import json',
        '# EVOLVE-BLOCK-START',
        'A = 1.5',
        '# EVOLVE-BLOCK-END',
        'x = 0',
        '# EVOLVE-BLOCK-START',
        'B = 2.0',
        '# EVOLVE-BLOCK-END',
        'json.dump({"value": A + B}, open("solution.json", "w"))',
        '',
      ].join('\n'),
    );
    const task = await loadTask(folder);
    assert.equal(evolveBlockProblem(task.initialProgram), null);
    const server = await startTestServer();
    try {
      const run = await runCli(
        [
          'run',
          folder,
          '--endpoint',
          server.baseURL,
          '--steps',
          '2',
          '--batch',
          '2',
          '--samples',
          '2',
          '--db',
          join(folder, 'run.sqlite'),
          '--json',
        ],
        folder,
      );
      assert.equal(run.code, 0, run.stderr);
      const steps = run.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { step: number; best: number; counts: Record<string, number> });
      assert.deepEqual(
        steps.map((s) => s.step),
        [1, 2],
      );
      assert.ok(
        steps.every((s) => (s.counts.valid ?? 0) > 0),
        run.stdout,
      );
      assert.ok((steps[0]?.best ?? 0) > 3.5, 'an improved program: the sum of both regions grew');
    } finally {
      await server.close();
    }
  });

  it('fills template variables, leaving other braces alone', () => {
    assert.deepEqual(placeholdersOf('write {"centers": ...} for {n_circles} circles in {MAX_RUNTIME} s; c_{m-1}'), [
      'n_circles',
      'MAX_RUNTIME',
    ]);
    assert.equal(fillTemplate('{n} of {n}, {"x": 1}, {unknown}', { n: 26 }), '26 of 26, {"x": 1}, {unknown}');
    assert.match(
      evolveBlockProblem('# EVOLVE-BLOCK-END\n# EVOLVE-BLOCK-START\n') ?? '',
      /EVOLVE-BLOCK-END on line 1 without an EVOLVE-BLOCK-START before it/,
    );
    assert.equal(evolveBlockProblem(PROGRAM), null);
    // A program may hold several regions (algorithm.md): a task's initial program too.
    assert.equal(evolveBlockProblem(`${PROGRAM}\nx = 2\n${PROGRAM}`), null);
  });

  it('provides MAX_RUNTIME, target_value and the tolerances as variables', async () => {
    const task = await loadTask(await taskFolder({ ...MINIMAL, targetValue: 2.5, tolerances: { tolerance: 1e-6 }, variables: { n: 3 } }));
    assert.deepEqual(task.variables, { MAX_RUNTIME: 5, target_value: 2.5, tolerance: 1e-6, n: 3 });
  });
});

describe('bundled tasks', () => {
  it("are the six tasks with the paper's limits, directions and shaping", async () => {
    const tasks = await listBundledTasks(join(REPO, 'tasks'));
    const byName = Object.fromEntries(tasks.map((t) => [t.name, t]));
    assert.deepEqual(Object.keys(byName).sort(), [
      'circle-packing',
      'circle-packing-strict',
      'first-autocorrelation',
      'hadamard-29',
      'second-autocorrelation',
      'third-autocorrelation',
    ]);
    const limits = (name: string): [string, number, number] => {
      const t = byName[name];
      assert.ok(t);
      return [t.direction, t.runtimeLimitSec, t.runtimeLimitSec + t.evaluatorTimeLimitSec];
    };
    // Runtime limit and evaluation timeout as algorithm.md section 7.
    assert.deepEqual(limits('circle-packing'), ['maximize', 60, 70]);
    assert.deepEqual(limits('circle-packing-strict'), ['maximize', 60, 70]);
    assert.deepEqual(limits('first-autocorrelation'), ['minimize', 1000, 1150]);
    assert.deepEqual(limits('second-autocorrelation'), ['maximize', 300, 350]);
    assert.deepEqual(limits('third-autocorrelation'), ['minimize', 60, 70]);
    assert.deepEqual(limits('hadamard-29'), ['maximize', 300, 350]);
    assert.deepEqual(byName['circle-packing']?.tolerances, { tolerance: 1e-6 });
    assert.deepEqual(byName['circle-packing-strict']?.tolerances, { tolerance: 0 });
    assert.deepEqual(byName['third-autocorrelation']?.rewardShaping, { enabled: true, lower: 1.4557, upper: 3.2, alpha: 3, k: 3 });
    assert.deepEqual(byName['second-autocorrelation']?.rewardShaping, { enabled: true, lower: 0.91, upper: 0.96, alpha: 1, k: 3 });
    assert.deepEqual(byName['circle-packing']?.rewardShaping, { enabled: false, lower: 0, upper: 2.635, alpha: 3, k: 5 });
    assert.deepEqual(byName['hadamard-29']?.rewardShaping, { enabled: false, lower: 0, upper: 1, alpha: 1, k: 5 });
    for (const task of tasks) {
      assert.equal(task.language, 'py');
      assert.equal(evolveBlockProblem(task.initialProgram), null);
      assert.ok(task.metaInformation.length >= 1 && task.metaInformation.length <= 3, task.name);
      for (const meta of task.metaInformation) {
        const filled = fillTemplate(meta.text, task.variables);
        assert.deepEqual(placeholdersOf(filled), [], `${task.name}/${meta.id} has unfilled placeholders`);
        assert.ok(!filled.includes('{MAX_RUNTIME}'));
      }
      assert.equal(task.candidateCommand[0], '{python}', "the run's interpreter");
      assert.equal(task.evaluatorCommand[0], '{python}');
    }
  });

  it('media/task.schema.json is the schema generated from the zod schema', () => {
    const committed = readFileSync(join(REPO, 'media/task.schema.json'), 'utf8');
    assert.equal(committed, taskJsonSchemaText(), 'run: npx tsx scripts/generate-task-schema.ts');
  });

  it('the JSON Schema knows every field the bundled task files use', async () => {
    const schema = taskJsonSchema() as {
      properties: Record<string, { properties?: Record<string, unknown> }>;
      required: string[];
      additionalProperties: boolean;
    };
    assert.equal(schema.additionalProperties, false);
    assert.deepEqual(schema.required.sort(), ['candidate', 'direction', 'evaluator', 'initialProgram', 'metaInformation', 'name', 'title']);
    for (const task of await listBundledTasks(join(REPO, 'tasks'))) {
      const raw = JSON.parse(readFileSync(join(task.dir, 'task.json'), 'utf8')) as Record<string, unknown>;
      for (const [key, value] of Object.entries(raw)) {
        assert.ok(key in schema.properties, `${task.name}: ${key}`);
        const nested = schema.properties[key]?.properties;
        if (nested && value && typeof value === 'object' && !Array.isArray(value)) {
          for (const inner of Object.keys(value)) assert.ok(inner in nested, `${task.name}: ${key}.${inner}`);
        }
      }
      // No relative $schema path to break when a task is copied: the extension validates every task.json (jsonValidation).
      assert.equal(raw.$schema, undefined, `${task.name}: $schema`);
    }
    const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as {
      contributes: { jsonValidation: { fileMatch: string; url: string }[] };
    };
    assert.deepEqual(pkg.contributes.jsonValidation, [{ fileMatch: '**/task.json', url: './media/task.schema.json' }]);
  });

  it("VS Code's JSON service flags a mistake in our task.json and leaves another tool's task.json (Azure Pipelines) alone", async () => {
    const schemaUri = 'file:///thetaevolve/media/task.schema.json';
    const service = getLanguageService({
      schemaRequestService: async (uri) => {
        if (uri !== schemaUri) throw new Error(`no schema at ${uri}`);
        return readFileSync(join(REPO, 'media/task.schema.json'), 'utf8');
      },
    });
    // As package.json's jsonValidation associates it.
    service.configure({ validate: true, schemas: [{ uri: schemaUri, fileMatch: ['**/task.json'] }] });
    const problems = async (text: string): Promise<string[]> => {
      const document = TextDocument.create('file:///work/some/task.json', 'json', 1, text);
      return (await service.doValidation(document, service.parseJSONDocument(document))).map((d) =>
        typeof d.message === 'string' ? d.message : d.message.value,
      );
    };
    const ours = JSON.parse(readFileSync(join(REPO, 'tasks/circle-packing/task.json'), 'utf8')) as Record<string, unknown>;
    assert.deepEqual(await problems(JSON.stringify(ours)), []);
    assert.ok((await problems(JSON.stringify({ ...ours, direction: 'up' }))).some((m) => /maximize/.test(m)));
    const azurePipelinesTask = {
      id: '8d8eebd8-2b94-4c97-85af-839254cc6da4',
      name: 'HelloWorld',
      friendlyName: 'Hello world',
      description: 'Says hello',
      category: 'Utility',
      author: 'someone',
      version: { Major: 0, Minor: 1, Patch: 0 },
      instanceNameFormat: 'Echo $(samplestring)',
      inputs: [{ name: 'samplestring', type: 'string', label: 'Sample String', required: true }],
      execution: { Node16: { target: 'index.js' } },
    };
    assert.deepEqual(await problems(JSON.stringify(azurePipelinesTask)), []);
  });
});
