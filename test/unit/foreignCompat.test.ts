// Other systems' folders as their systems read them (issue 28): OpenEvolve's
// ranking of a program without combined_score, an evaluator under another
// name, a program without EVOLVE-BLOCK markers, convert's reasons, and the
// `openevolve` stand-in beside a converted evaluator. Public folders are
// vendored unchanged with their licence (test/fixtures/openevolve/NOTICE).
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
const SIGNAL_PROCESSING = join(FIXTURES, 'signal_processing');
const KISSING = join(FIXTURES, 'kissing_number');
/** OpenEvolve's k_module_problem: its evaluator holds the program as `module` and calls module.configure_pipeline(). */
const K_MODULE = join(FIXTURES, 'k_module_problem');
/** OpenEvolve's circle_packing_with_artifacts: its evaluator imports openevolve.evaluation_result. */
const ARTIFACTS = join(FIXTURES, 'circle_packing_with_artifacts');
/** Our stand-in `openevolve` package, for running such an evaluator directly. */
const STAND_INS = resolve(__dirname, '../../src/engine/task/foreign');
/** OpenEvolve's attention_optimization: its initial program has no EVOLVE-BLOCK markers (its evaluator needs MLIR tools). */
const ATTENTION = join(FIXTURES, 'attention_optimization');
/** OpenEvolve's own openevolve/utils/metrics_utils.py (vendored, Apache-2.0). */
const OPENEVOLVE_UTILS = join(FIXTURES, 'openevolve_utils');
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

/** OpenEvolve's own get_fitness_score of a metrics dict (its code, run by python3). */
function openEvolveFitness(metrics: Metrics): number {
  const script =
    'import json, sys\nfrom metrics_utils import get_fitness_score\nprint(repr(get_fitness_score(json.loads(sys.argv[1]), ["complexity", "diversity"])))';
  return Number(execFileSync(PYTHON, ['-c', script, JSON.stringify(metrics)], { cwd: OPENEVOLVE_UTILS, encoding: 'utf8' }).trim());
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

  /** A copy of a vendored folder, readable by the sandbox user. */
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

  it("OpenEvolve's signal_processing (no combined_score): ranked by the mean of its numeric metrics, as OpenEvolve ranks it, and evaluate --json says so", async () => {
    const { code, stdout, stderr } = await runCli(
      ['evaluate', SIGNAL_PROCESSING, join(SIGNAL_PROCESSING, 'initial_program.py'), '--json'],
      scratch,
    );
    assert.equal(code, 0, stderr);
    const out = JSON.parse(stdout) as EvaluateOut;
    assert.equal(out.status, 'ok', JSON.stringify(out));
    assert.equal(out.protected, false);
    assert.match(String(out.metrics.score_rule), /no combined_score: the mean of the numeric metrics, as OpenEvolve ranks it/);
    // What the folder's evaluator returned (its cascade, merged as OpenEvolve merges it), ranked by OpenEvolve's own code.
    const returned = (JSON.parse(out.solution ?? '{}') as { metrics: Metrics }).metrics;
    assert.equal(returned.combined_score, undefined);
    const expected = openEvolveFitness(returned);
    assert.ok(Math.abs((out.objective as number) - expected) <= 1e-9, `${out.objective} vs OpenEvolve's ${expected}`);
    assert.ok(expected > 13 && expected < 14.5, `OpenEvolve ranks the initial program at about 13.73 (got ${expected})`);
    assert.equal(out.score, out.objective);
  });

  it('resuming a run of another evaluator without --evaluator names the evaluator the run used', async () => {
    const dir = copyOf(KISSING);
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
    const original = await evaluateJson([KISSING, join(KISSING, 'initial_program.py')]);
    assert.equal(original.status, 'ok', JSON.stringify(original));
    const dir = copyOf(KISSING);
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

    const withDefault = copyOf(KISSING);
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
      / evaluate "\$stage\/task" .* --evaluator "\$stage\/task\/"'evaluator_phase_1\.py' --result-files/,
    );
    const plain = await stage(
      await loadTask(withDefault),
      { stagingDirectory: mkdtempSync(join(scratch, 'staging-')), setupCommands: [], nodeCommand: process.execPath, bundleDirectory: DIST },
      'job',
      10,
    );
    assert.doesNotMatch(readFileSync(plain.jobScript, 'utf8'), /--evaluator/);
    const outside = await runCli(['evaluate', dir, program, '--evaluator', join(KISSING, 'evaluator.py')], scratch);
    assert.equal(outside.code, 1);
    assert.match(outside.stderr, /must be a file in the task folder/);
    const converted = await runCli(['convert', dir, '--evaluator', join(dir, 'evaluator_phase_2.py'), '--json'], scratch);
    assert.equal(converted.code, 0, converted.stderr);
    const protectedOut = await evaluateJson([dir, program]);
    assert.equal(protectedOut.protected, true);
    assert.equal(protectedOut.objective, original.objective, 'converted with evaluator_phase_2.py, the same score');
  });

  it('a program without EVOLVE-BLOCK markers is evolved whole, as OpenEvolve does, with a line that says so', async () => {
    const text = readFileSync(join(ATTENTION, 'initial_program.py'), 'utf8');
    const task = await loadTask(ATTENTION);
    assert.ok(text.startsWith('#!/usr/bin/env python3\n'));
    assert.equal(
      task.initialProgram,
      `#!/usr/bin/env python3\n# EVOLVE-BLOCK-START\n${text.slice('#!/usr/bin/env python3\n'.length)}${text.endsWith('\n') ? '' : '\n'}# EVOLVE-BLOCK-END\n`,
      'the shebang kept first, the rest of the text unchanged between the markers',
    );
    assert.deepEqual(task.notices, [
      'initial_program.py has no EVOLVE-BLOCK markers: the whole program is evolved, as OpenEvolve does (put # EVOLVE-BLOCK-START / # EVOLVE-BLOCK-END lines around the code to evolve to narrow it).',
    ]);
    assert.deepEqual((await loadTask(KISSING)).notices, [], 'a program with markers keeps them');

    // Scored as the folder's evaluator scores the file itself (a folder in the same style whose evaluator runs here).
    const dir = copyOf(KISSING);
    const program = join(dir, 'initial_program.py');
    writeFileSync(program, readFileSync(program, 'utf8').replace(/^.*EVOLVE-BLOCK-(START|END).*\n/gm, ''));
    const original = await evaluateJson([KISSING, join(KISSING, 'initial_program.py')]);
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
    const dir = copyOf(K_MODULE);
    const converted = await runCli(['convert', dir], scratch);
    assert.equal(converted.code, 0, converted.stderr);
    // A program with two of the four modules right: the folder's own evaluator gives 0.5.
    const program = join(scratch, 'two-right.py');
    writeFileSync(
      program,
      readFileSync(join(K_MODULE, 'initial_program.py'), 'utf8')
        .replace("'loader': 'json_reader'", "'loader': 'csv_reader'")
        .replace("'preprocess': 'standardize'", "'preprocess': 'normalize'"),
    );
    const direct = directMetrics(K_MODULE, program);
    assert.equal(direct.combined_score, 0.5);
    const out = await evaluateJson([dir, program]);
    assert.equal(out.protected, true);
    assert.equal(out.status, 'ok', JSON.stringify(out));
    assert.equal(out.objective, direct.combined_score);

    const signal = await runCli(['convert', copyOf(SIGNAL_PROCESSING)], scratch);
    assert.equal(signal.code, 1);
    assert.match(signal.stderr, /evaluator\.py line 296 hands program\.run_signal_processing on uncalled \(e\.g\. to a timeout helper\)/);

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
    assert.ok(Math.abs((out.objective as number) - 0.3642) < 1e-4);
  });
});
