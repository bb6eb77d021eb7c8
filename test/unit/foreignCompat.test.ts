// Other systems' folders as their systems read them (issue 28): OpenEvolve's
// ranking of a program without combined_score, an evaluator under another
// name, a program without EVOLVE-BLOCK markers, convert's reasons, and the
// `openevolve` stand-in beside a converted evaluator. The folders in
// test/fixtures/openevolve/ are written here in OpenEvolve's layout.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, mkdtempSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { stage } from '../../src/engine/evaluation/slurmStaging';
import { taskFilesBeside } from '../../src/engine/task/foreignTasks';
import { loadTask } from '../../src/engine/task/task';
import { runCli } from '../support/cli';
import { tempDir } from '../support/tempDirs';

const FIXTURES = resolve(__dirname, '../fixtures/openevolve');
/** No combined_score, a cascade (evaluate_stage1/2), scipy imported, the program's function handed to a timeout helper. */
const SMOOTHING = join(FIXTURES, 'smoothing_filter');
const CODE = join(FIXTURES, 'binary_code');
/** Its evaluator holds the program as `module` and calls module.configure_pipeline(). */
const PIPELINE = join(FIXTURES, 'pipeline_choices');
/** Its evaluator imports openevolve.evaluation_result and runs the program in a subprocess. */
const ARTIFACTS = join(FIXTURES, 'disk_radii');
/** Our stand-in `openevolve` package, for running such an evaluator directly. */
const STAND_INS = resolve(__dirname, '../../src/engine/task/foreign');
/** Its initial program has no EVOLVE-BLOCK markers. */
const WHOLE = join(FIXTURES, 'whole_program');
const PYTHON = '/usr/bin/python3';
/** The built CLI a SLURM job runs (npm test builds it first). */
const DIST = resolve(__dirname, '../../dist');

type Metrics = Record<string, unknown>;
interface EvaluateOut {
  status: string;
  score: number | null;
  objective: number | null;
  metrics: Metrics;
  reason: string;
  protected: boolean;
  solution?: string;
}

/** The folder's own evaluate(program_path), run by python3 as OpenEvolve would. */
function directMetrics(taskDir: string, program: string, env: NodeJS.ProcessEnv = process.env): Metrics {
  const script = [
    'import importlib.util, json, sys',
    'sys.path.insert(0, sys.argv[1])',
    'spec = importlib.util.spec_from_file_location("evaluation_module", sys.argv[1] + "/evaluator.py")',
    'module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)',
    'result = module.evaluate(sys.argv[2])',
    'print(json.dumps(result if isinstance(result, dict) else result.metrics, default=str))',
  ].join('\n');
  const out = execFileSync(PYTHON, ['-c', script, taskDir, program], { encoding: 'utf8', cwd: taskDir, env });
  return JSON.parse(out.trim().split('\n').pop() as string) as Metrics;
}

describe("other systems' folders as their systems read them", function () {
  this.timeout(120_000);
  let scratch: string;
  before(function () {
    try {
      execFileSync(PYTHON, ['-c', 'import numpy, scipy, yaml'], { stdio: 'ignore' });
    } catch {
      this.skip(); // Reason: needs python3 with numpy, scipy and yaml (scripts/setup.sh installs them; CI has them).
    }
    scratch = tempDir('thetaevolve-compat-', { mode: 0o755 });
  });

  /** A copy of a fixture folder, readable by the sandbox user. */
  function copyOf(source: string): string {
    const copy = mkdtempSync(join(scratch, 'copy-'));
    chmodSync(copy, 0o755);
    cpSync(source, copy, { recursive: true });
    return copy;
  }

  async function evaluateJson(args: string[]): Promise<EvaluateOut> {
    const { code, stdout, stderr } = await runCli(['evaluate', ...args, '--json'], scratch);
    assert.equal(code, 0, stderr);
    return JSON.parse(stdout) as EvaluateOut;
  }

  it('a folder without combined_score is ranked by the mean of its numeric metrics, as OpenEvolve ranks it (numbers worked out by hand), and evaluate --json says so', async () => {
    const { code, stdout, stderr } = await runCli(['evaluate', SMOOTHING, join(SMOOTHING, 'initial_program.py'), '--json'], scratch);
    assert.equal(code, 0, stderr);
    const out = JSON.parse(stdout) as EvaluateOut;
    assert.equal(out.status, 'ok', JSON.stringify(out));
    assert.equal(out.protected, false);
    assert.match(String(out.metrics.score_rule), /no combined_score: the mean of the numeric metrics, as OpenEvolve ranks it/);
    // What the evaluator returned (the values are worked out in evaluator.py's docstring), its two stages merged as
    // OpenEvolve merges them: every int, float or bool as a float (stable: true as 1), the text left out.
    const returned = (JSON.parse(out.solution ?? '{}') as { metrics: Metrics }).metrics;
    assert.equal(returned.combined_score, undefined);
    assert.deepEqual(
      { ...returned, fidelity: Number((returned.fidelity as number).toFixed(12)) },
      {
        runs: 1,
        output_length: 15,
        complexity: 8,
        fidelity: Number((2 / 3).toFixed(12)),
        smoothness: 1,
        noise_removed: 0.75,
        peaks: 0,
        stable: 1,
      },
    );
    // The rule: the mean of the numeric metrics, the feature dimensions (OpenEvolve's default: complexity, diversity)
    // left out: (1 + 15 + 2/3 + 1 + 3/4 + 0 + 1) / 7 = 233/84.
    const expected = 233 / 84;
    assert.ok(Math.abs((out.objective as number) - expected) <= 1e-9, `${out.objective} vs ${expected} (233/84)`);
    assert.equal(out.score, out.objective);

    // With complexity counted (config.yaml naming other feature dimensions): (233/12 + 8) / 8 = 329/96.
    const otherFeatures = copyOf(SMOOTHING);
    writeFileSync(
      join(otherFeatures, 'config.yaml'),
      `${readFileSync(join(SMOOTHING, 'config.yaml'), 'utf8')}database:\n  feature_dimensions: [diversity]\n`,
    );
    const counted = await evaluateJson([otherFeatures, join(otherFeatures, 'initial_program.py')]);
    assert.ok(Math.abs((counted.objective as number) - 329 / 96) <= 1e-9, `${counted.objective} vs ${329 / 96} (329/96)`);
  });

  it('resuming a run of another evaluator without --evaluator names the evaluator the run used', async () => {
    const dir = copyOf(CODE);
    cpSync(join(dir, 'evaluator.py'), join(dir, 'evaluator_phase_1.py'));
    const db = join(scratch, 'phase1.sqlite');
    const common = ['--sampler', 'mutate', '--steps', '1', '--batch', '1', '--samples', '1', '--db', db];
    const first = await runCli(['run', dir, '--evaluator', join(dir, 'evaluator_phase_1.py'), ...common], scratch);
    assert.equal(first.code, 0, first.stderr);
    const resumed = await runCli(['run', dir, ...common], scratch);
    assert.equal(resumed.code, 1);
    assert.match(
      resumed.stderr,
      new RegExp(
        `was run with the evaluator evaluator_phase_1\\.py of .*, not its default one: resume it with --evaluator .*evaluator_phase_1\\.py`,
      ),
    );
    assert.equal(resumed.stderr.trim().split('\n').length, 1, 'one line');
    const again = await runCli(['run', dir, '--evaluator', join(dir, 'evaluator_phase_1.py'), ...common], scratch);
    assert.equal(again.code, 0, again.stderr);
  });

  it('an evaluator under another name (evaluator_phase_1.py): --evaluator FILE, its path as the task, or the only one; several without evaluator.py ask which', async () => {
    const original = await evaluateJson([CODE, join(CODE, 'initial_program.py')]);
    assert.equal(original.status, 'ok', JSON.stringify(original));
    const dir = copyOf(CODE);
    const program = join(dir, 'initial_program.py');
    renameSync(join(dir, 'evaluator.py'), join(dir, 'evaluator_phase_1.py'));
    const only = await evaluateJson([dir, program]);
    assert.equal(only.objective, original.objective, "the folder's only evaluator");
    assert.equal((await loadTask(dir)).name.endsWith('-evaluator_phase_1'), true, 'another evaluator is another task');

    cpSync(join(dir, 'evaluator_phase_1.py'), join(dir, 'evaluator_phase_2.py'));
    const ambiguous = await runCli(['evaluate', dir, program], scratch);
    assert.equal(ambiguous.code, 1);
    assert.match(
      ambiguous.stderr,
      /several evaluators \(evaluator_phase_1\.py, evaluator_phase_2\.py\) and no evaluator\.py: name one with --evaluator FILE/,
    );
    const flagged = await evaluateJson([dir, program, '--evaluator', join(dir, 'evaluator_phase_2.py')]);
    assert.equal(flagged.objective, original.objective);
    const asTask = await evaluateJson([join(dir, 'evaluator_phase_1.py'), program]);
    assert.equal(asTask.objective, original.objective);
    assert.deepEqual(
      await taskFilesBeside(program),
      [join(dir, 'evaluator_phase_1.py'), join(dir, 'evaluator_phase_2.py')],
      'the task picker offers each',
    );

    const withDefault = copyOf(CODE);
    cpSync(join(withDefault, 'evaluator.py'), join(withDefault, 'evaluator_phase_1.py'));
    assert.deepEqual(
      await taskFilesBeside(join(withDefault, 'initial_program.py')),
      [join(withDefault, 'evaluator.py'), join(withDefault, 'evaluator_phase_1.py')],
      'the task picker offers each evaluator',
    );
    // A picked task runs (and resumes) by Task.source: the folder for its default evaluator, else the evaluator file.
    assert.equal((await loadTask(join(withDefault, 'evaluator.py'))).source, withDefault);
    const phase1 = await loadTask(join(withDefault, 'evaluator_phase_1.py'));
    assert.equal(phase1.source, join(withDefault, 'evaluator_phase_1.py'));
    assert.equal((await loadTask(phase1.source)).name, phase1.name);
    // A SLURM job evaluates a staged copy of the folder with the same evaluator.
    const staged = await stage(
      phase1,
      { stagingDirectory: mkdtempSync(join(scratch, 'staging-')), setupCommands: [], nodeCommand: process.execPath, bundleDirectory: DIST },
      'job',
      10,
    );
    assert.match(
      readFileSync(staged.jobScript, 'utf8'),
      /\/jobStart\.js" "\$stage\/task" .* --evaluator "\$stage\/task\/"'evaluator_phase_1\.py' --result-files/,
    );
    const plain = await stage(
      await loadTask(withDefault),
      { stagingDirectory: mkdtempSync(join(scratch, 'staging-')), setupCommands: [], nodeCommand: process.execPath, bundleDirectory: DIST },
      'job',
      10,
    );
    assert.doesNotMatch(readFileSync(plain.jobScript, 'utf8'), /--evaluator/);
    const outside = await runCli(['evaluate', dir, program, '--evaluator', join(CODE, 'evaluator.py')], scratch);
    assert.equal(outside.code, 1);
    assert.match(outside.stderr, /must be a file in the task folder/);
    const converted = await runCli(['convert', dir, '--evaluator', join(dir, 'evaluator_phase_2.py'), '--json'], scratch);
    assert.equal(converted.code, 0, converted.stderr);
    const protectedOut = await evaluateJson([dir, program]);
    assert.equal(protectedOut.protected, true);
    assert.equal(protectedOut.objective, original.objective, 'converted with evaluator_phase_2.py, the same score');
  });

  it('a program without EVOLVE-BLOCK markers is evolved whole, as OpenEvolve does, with a line that says so', async () => {
    const text = readFileSync(join(WHOLE, 'initial_program.py'), 'utf8');
    const task = await loadTask(WHOLE);
    assert.ok(text.startsWith('#!/usr/bin/env python3\n'));
    assert.equal(
      task.initialProgram,
      `#!/usr/bin/env python3\n# EVOLVE-BLOCK-START\n${text.slice('#!/usr/bin/env python3\n'.length)}${text.endsWith('\n') ? '' : '\n'}# EVOLVE-BLOCK-END\n`,
      'the shebang kept first, the rest of the text unchanged between the markers',
    );
    assert.deepEqual(task.notices, [
      'initial_program.py has no EVOLVE-BLOCK markers: the whole program is evolved, as OpenEvolve does (put # EVOLVE-BLOCK-START / # EVOLVE-BLOCK-END lines around the code to evolve to narrow it).',
    ]);
    assert.deepEqual((await loadTask(CODE)).notices, [], 'a program with markers keeps them');

    // Scored as the folder's evaluator scores the file itself (a folder in the same style whose evaluator runs here).
    const dir = copyOf(CODE);
    const program = join(dir, 'initial_program.py');
    writeFileSync(program, readFileSync(program, 'utf8').replace(/^.*EVOLVE-BLOCK-(START|END).*\n/gm, ''));
    const original = await evaluateJson([CODE, join(CODE, 'initial_program.py')]);
    const { code, stdout, stderr } = await runCli(['evaluate', dir, (await loadTask(dir)).initialProgramPath, '--json'], scratch);
    assert.equal(code, 0, stderr);
    assert.match(stderr, /initial_program\.py has no EVOLVE-BLOCK markers: the whole program is evolved, as OpenEvolve does/);
    assert.equal((JSON.parse(stdout) as EvaluateOut).objective, original.objective);
    const run = await runCli(
      ['run', dir, '--sampler', 'mutate', '--steps', '1', '--batch', '1', '--samples', '2', '--db', join(dir, 'run.sqlite')],
      scratch,
    );
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stderr, /the whole program is evolved, as OpenEvolve does/, 'the run says so when it starts');
  });

  it('convert follows the name the evaluator gives the program (module.configure_pipeline()) and says exactly why it refuses', async () => {
    const dir = copyOf(PIPELINE);
    const converted = await runCli(['convert', dir], scratch);
    assert.equal(converted.code, 0, converted.stderr);
    // A program with two of the four stages right: the folder's own evaluator gives 0.5.
    const program = join(scratch, 'two-right.py');
    writeFileSync(
      program,
      readFileSync(join(PIPELINE, 'initial_program.py'), 'utf8')
        .replace("'reader': 'lines'", "'reader': 'csv'")
        .replace("'ranker': 'bm25'", "'ranker': 'tfidf'"),
    );
    const direct = directMetrics(PIPELINE, program);
    assert.equal(direct.combined_score, 0.5);
    const out = await evaluateJson([dir, program]);
    assert.equal(out.protected, true);
    assert.equal(out.status, 'ok', JSON.stringify(out));
    assert.equal(out.objective, direct.combined_score);

    const signal = await runCli(['convert', copyOf(SMOOTHING)], scratch);
    assert.equal(signal.code, 1);
    assert.match(signal.stderr, /evaluator\.py line 32 hands program\.run_filter on uncalled \(e\.g\. to a timeout helper\)/);

    const tsp = mkdtempSync(join(scratch, 'tsp-'));
    writeFileSync(
      join(tsp, 'initial_program.py'),
      '# EVOLVE-BLOCK-START\ndef solve(cities):\n    return list(range(len(cities)))\n# EVOLVE-BLOCK-END\n',
    );
    writeFileSync(
      join(tsp, 'evaluator.py'),
      [
        'import importlib.util',
        'CITIES = [(0, 0), (1, 1)]',
        'def load(path):',
        '    spec = importlib.util.spec_from_file_location("candidate", path)',
        '    m = importlib.util.module_from_spec(spec)',
        '    spec.loader.exec_module(m)',
        '    return m',
        'def evaluate(program_path):',
        '    candidate = load(program_path)',
        '    return {"combined_score": 1.0 / (1 + len(candidate.solve(CITIES)))}',
        '',
      ].join('\n'),
    );
    const withArguments = await runCli(['convert', tsp], scratch);
    assert.equal(withArguments.code, 1);
    assert.match(
      withArguments.stderr,
      /evaluator\.py line 10 calls candidate\.solve\(\.\.\.\) with arguments, so the program's values depend on the evaluator's inputs/,
    );
  });

  it('a converted evaluator that imports openevolve.evaluation_result runs outside the sandbox without OpenEvolve installed, same score, protected', async () => {
    const dir = copyOf(ARTIFACTS);
    const converted = await runCli(['convert', dir], scratch);
    assert.equal(converted.code, 0, converted.stderr);
    const program = join(dir, 'initial_program.py');
    const out = await evaluateJson([dir, program]);
    const direct = directMetrics(ARTIFACTS, join(ARTIFACTS, 'initial_program.py'), { ...process.env, PYTHONPATH: STAND_INS });
    assert.equal(out.status, 'ok', JSON.stringify(out));
    assert.equal(out.protected, true);
    assert.ok(
      Math.abs((out.objective as number) - (direct.combined_score as number)) <= 1e-9,
      `${out.objective} vs ${direct.combined_score}`,
    );
    assert.ok(Math.abs((out.objective as number) - 0.92 / 1.35) < 1e-9, 'nine radii summing to 0.92, over 1.35');
  });
});
