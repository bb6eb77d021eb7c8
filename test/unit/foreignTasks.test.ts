// Task folders in other systems' layouts, unchanged: three in OpenEvolve's
// (test/fixtures/openevolve/, written here as its AlphaEvolve problems are
// laid out) and two in ShinkaEvolve's (one through its run_shinka_eval),
// through `thetaevolve evaluate` and `run --sampler mutate`. Every score is
// compared with what the folder's own evaluator returns when python3 runs it
// directly, outside ThetaEvolve.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ProgramDatabase } from '../../src/engine/database/programDatabase';
import { parseRunMeta } from '../../src/engine/common/runMeta';
import { Evaluator } from '../../src/engine/sandbox/evaluator';
import { scoreOfObjective } from '../../src/engine/common/scoring';
import { detectForeignLayout, taskFilesBeside } from '../../src/engine/task/foreignTasks';
import { leadingDocText } from '../../src/engine/task/scaffold';
import { loadTask, TaskError } from '../../src/engine/task/task';
import { OUTCOME_PENALTY } from '../../src/engine/common/types';
import { FEEDBACK_METRIC } from '../../src/engine/common/feedback';
import { runCli } from '../support/cli';
import { tempDir } from '../support/tempDirs';

const FIXTURES = resolve(__dirname, '../fixtures');
const OPENEVOLVE = ['point_dispersion/3', 'triangle_area', 'binary_code'].map((p) => join(FIXTURES, 'openevolve', p));
const SHINKA = join(FIXTURES, 'shinka/spread-points');
/** A ShinkaEvolve-layout folder whose evaluate.py goes through shinka.core's run_shinka_eval, with a text_feedback. */
const SHINKA_SQUARES = join(FIXTURES, 'shinka/square-tiles');
/** Our stand-in `shinka` package (ShinkaEvolve is not installed here), for running its evaluate.py directly. */
const STAND_INS = resolve(__dirname, '../../src/engine/task/foreign');
const PYTHON = '/usr/bin/python3';
/** Metrics that measure time, different on every run. */
const TIMING_METRICS = new Set(['eval_time', 'runtime_seconds', 'execution_time_mean', 'execution_time_std']);
const OPTIONS = { concurrency: 2, memoryLimitMb: 2048, outputLimitBytes: 65536 };

type Metrics = Record<string, unknown>;

/** The folder's own evaluator, run directly by python3 as its system would: OpenEvolve's evaluate(path), ShinkaEvolve's evaluate.py CLI. */
function directEvaluation(taskDir: string, code: string, scratch: string): Metrics {
  const dir = mkdtempSync(join(scratch, 'direct-'));
  const program = join(dir, 'program.py');
  writeFileSync(program, code);
  const env = { PATH: '/usr/bin:/bin', PYTHONDONTWRITEBYTECODE: '1', OMP_NUM_THREADS: '1', OPENBLAS_NUM_THREADS: '1' };
  if (taskDir === SHINKA || taskDir === SHINKA_SQUARES) {
    execFileSync(PYTHON, [join(taskDir, 'evaluate.py'), '--program_path', program, '--results_dir', join(dir, 'results')], {
      env: { ...env, PYTHONPATH: STAND_INS },
      cwd: dir,
    });
    return JSON.parse(readFileSync(join(dir, 'results/metrics.json'), 'utf8')) as Metrics;
  }
  const script = [
    'import importlib.util, json, sys',
    'sys.path.insert(0, sys.argv[1])',
    'spec = importlib.util.spec_from_file_location("evaluation_module", sys.argv[1] + "/evaluator.py")',
    'module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)',
    'result = module.evaluate(sys.argv[2])',
    'print(json.dumps(result if isinstance(result, dict) else result.metrics))',
  ].join('\n');
  return JSON.parse(execFileSync(PYTHON, ['-c', script, taskDir, program], { env, cwd: dir, encoding: 'utf8' })) as Metrics;
}

/** ThetaEvolve's metrics as the folder's evaluator gave them: numeric ones, ShinkaEvolve's public/private as dotted names, its text_feedback as the feedback. */
function expectedMetrics(direct: Metrics): Metrics {
  const out: Metrics = {};
  for (const [name, value] of Object.entries(direct)) {
    if (name === 'combined_score' || TIMING_METRICS.has(name)) continue;
    if (name === 'text_feedback' && typeof value === 'string') out[FEEDBACK_METRIC] = value;
    if (typeof value === 'number') out[name] = value;
    else if (value && typeof value === 'object')
      for (const [inner, v] of Object.entries(value)) if (typeof v === 'number') out[`${name}.${inner}`] = v;
  }
  return out;
}

/** The evaluator's own numeric timing metrics (eval_time, execution_time_mean...): present, with values of their own run. */
function numericTiming(direct: Metrics): Metrics {
  return Object.fromEntries(Object.entries(direct).filter(([name, value]) => TIMING_METRICS.has(name) && typeof value === 'number'));
}

function withoutTiming(metrics: Metrics): Metrics {
  return Object.fromEntries(Object.entries(metrics).filter(([name]) => !TIMING_METRICS.has(name)));
}

describe('task folders of other systems (OpenEvolve, ShinkaEvolve), unchanged', function () {
  this.timeout(120_000);
  let scratch: string;
  before(function () {
    try {
      execFileSync(PYTHON, ['-c', 'import numpy, scipy, yaml'], { stdio: 'ignore' });
    } catch {
      this.skip(); // Reason: needs python3 with numpy, scipy and yaml (scripts/setup.sh installs them; CI has them).
    }
    scratch = tempDir('thetaevolve-foreign-', { mode: 0o755 });
  });

  it('loads the layouts with no file changed: prompt from config.yaml, the evaluator timeout, not protected', async () => {
    const minMax = await loadTask(OPENEVOLVE[0] as string);
    assert.equal(minMax.layout, 'openevolve');
    assert.equal(minMax.evaluatorTrust, 'in-sandbox');
    assert.equal(minMax.direction, 'maximize');
    assert.equal(minMax.name, 'point_dispersion-3');
    assert.equal(minMax.runtimeLimitSec, 240, 'config.yaml evaluator.timeout');
    assert.equal(minMax.metaInformation.length, 1);
    assert.match(minMax.metaInformation[0]?.text ?? '', /^TASK:\nPlace twelve points in three-dimensional space/, 'prompt.system_message');
    assert.equal(minMax.initialProgram, readFileSync(join(OPENEVOLVE[0] as string, 'initial_program.py'), 'utf8'));
    assert.equal(minMax.sandboxReadOnlyDirs.taskDir, OPENEVOLVE[0]);
    if (process.getuid?.() === 0) {
      // As root the candidate runs as nobody, who may not reach our install: the wrapper is read from a copy all can read.
      const runtime = minMax.sandboxReadOnlyDirs.runtimeDir as string;
      assert.ok(runtime.startsWith(tmpdir()) && (statSync(runtime).mode & 0o005) === 0o005, runtime);
    }
    // The folder's evaluator.py path (or config.yaml) names the task too.
    assert.equal((await loadTask(join(OPENEVOLVE[1] as string, 'evaluator.py'))).layout, 'openevolve');

    const shinka = await loadTask(SHINKA);
    assert.equal(shinka.layout, 'shinka');
    assert.equal(shinka.evaluatorTrust, 'in-sandbox');
    assert.equal(shinka.initialProgramPath, join(SHINKA, 'initial.py'));
    assert.match(
      shinka.metaInformation[0]?.text ?? '',
      /^Spread 6 points in the unit square/,
      'drafted from the docstring when the folder has no prompt',
    );

    const ours = await loadTask(join(__dirname, '../../tasks/circle-packing'));
    assert.equal(ours.layout, 'task.json');
    assert.equal(ours.evaluatorTrust, 'separate');
    assert.deepEqual(ours.sandboxReadOnlyDirs, {});
    assert.equal(await detectForeignLayout(join(__dirname, '../../tasks/circle-packing')), null, 'task.json wins');
  });

  it('finds the task folders beside a file in the three layouts: its own folder and the folders next to it', async () => {
    const root = mkdtempSync(join(scratch, 'beside-'));
    writeFileSync(join(root, 'mine.py'), '# EVOLVE-BLOCK-START\nx = 1\n# EVOLVE-BLOCK-END\n');
    cpSync(OPENEVOLVE[2] as string, join(root, 'code'), { recursive: true });
    cpSync(SHINKA, join(root, 'points'), { recursive: true });
    mkdirSync(join(root, 'ours'));
    writeFileSync(join(root, 'ours', 'task.json'), '{}');
    mkdirSync(join(root, 'notes'));
    assert.deepEqual(await taskFilesBeside(join(root, 'mine.py')), [
      join(root, 'code/evaluator.py'),
      join(root, 'ours/task.json'),
      join(root, 'points/evaluate.py'),
    ]);
    // Inside an OpenEvolve folder: the folder itself.
    assert.deepEqual(await taskFilesBeside(join(root, 'code', 'initial_program.py')), [join(root, 'code/evaluator.py')]);
  });

  it('says what is missing in a folder that is none of the three layouts', async () => {
    const empty = mkdtempSync(join(scratch, 'empty-'));
    writeFileSync(join(empty, 'evaluator.py'), 'def evaluate(p):\n    return {}\n');
    await assert.rejects(
      loadTask(empty),
      (err: unknown) =>
        err instanceof TaskError && /no task\.json, nor an OpenEvolve layout \(initial_program\.\* \+ evaluator\.py\)/.test(err.message),
    );
    // No marker at all is the whole program (foreignCompat.test.ts); markers that do not pair are an error.
    writeFileSync(join(empty, 'initial_program.py'), 'def f():\n    return 1\n# EVOLVE-BLOCK-END\n');
    await assert.rejects(loadTask(empty), /EVOLVE-BLOCK-START and # EVOLVE-BLOCK-END lines around the code to evolve/);
    writeFileSync(join(empty, 'initial_program.py'), '# EVOLVE-BLOCK-START\nx = 1\n# EVOLVE-BLOCK-END\n');
    writeFileSync(join(empty, 'evaluator.py'), 'def score(p):\n    return {}\n');
    await assert.rejects(loadTask(empty), /defines no evaluate\(program_path\)/);
    writeFileSync(join(empty, 'evaluator.py'), 'def evaluate(p):\n    return {}\n');
    writeFileSync(join(empty, 'config.yaml'), 'evaluator:\n  timeout: -3\n');
    await assert.rejects(loadTask(empty), /config\.yaml: field evaluator\.timeout/);
    writeFileSync(join(empty, 'config.yaml'), 'evaluator: [unclosed\n');
    await assert.rejects(loadTask(empty), /config\.yaml: cannot read it/);
  });

  for (const taskDir of [...OPENEVOLVE, SHINKA, SHINKA_SQUARES]) {
    const label = taskDir.slice(FIXTURES.length + 1);
    it(`evaluate --json on ${label}: objective = the evaluator's own combined_score, metrics = its other numeric metrics`, async () => {
      const program = taskDir.includes('/shinka/') ? join(taskDir, 'initial.py') : join(taskDir, 'initial_program.py');
      const { code, stdout, stderr } = await runCli(['evaluate', taskDir, program, '--json'], scratch);
      assert.equal(code, 0, stderr);
      const out = JSON.parse(stdout) as {
        status: string;
        score: number;
        objective: number;
        metrics: Metrics;
        protected: boolean;
        unprotectedReason: string;
      };
      const direct = directEvaluation(taskDir, readFileSync(program, 'utf8'), scratch);
      assert.equal(out.status, 'ok', JSON.stringify(out));
      assert.equal(out.objective, direct.combined_score, 'exactly the combined_score');
      assert.deepEqual(withoutTiming(out.metrics), expectedMetrics(direct));
      assert.deepEqual(
        Object.keys(out.metrics).sort(),
        Object.keys({ ...expectedMetrics(direct), ...numericTiming(direct) }).sort(),
        'exactly its metrics, nothing of ours',
      );
      assert.equal(out.protected, false);
      assert.match(out.unprotectedReason, /hostile candidate can fake its score/);
      if ((direct.combined_score as number) > 0) assert.equal(out.score, direct.combined_score);
    });
  }

  it("run --sampler mutate: every valid program scored as the folder's own evaluator scores it, and the run meta says not protected", async () => {
    for (const taskDir of [OPENEVOLVE[0] as string, SHINKA]) {
      const dir = mkdtempSync(join(scratch, 'run-'));
      const args = [
        'run',
        taskDir,
        '--sampler',
        'mutate',
        '--steps',
        '3',
        '--batch',
        '2',
        '--samples',
        '2',
        '--eval-concurrency',
        '2',
        '--seed',
        '3',
        '--db',
        'run.sqlite',
        '--json',
        '--set',
        'database.preset=small',
      ];
      const run = await runCli(args, dir);
      assert.equal(run.code, 0, run.stderr);
      assert.match(run.stderr, /Scores are not protected from a hostile candidate/);
      const db = await ProgramDatabase.openReadOnly(join(dir, 'run.sqlite'));
      try {
        assert.equal(db.lastStep, 3);
        assert.equal(parseRunMeta(db.meta(), 'run.sqlite').evaluatorTrust, 'in-sandbox');
        const programs = db.topPrograms(100);
        const valid = programs.filter((p) => p.outcome === 'valid');
        const invalid = programs.filter((p) => p.outcome === 'invalid_solution');
        assert.ok(valid.length >= 2 && invalid.length >= 1, `valid ${valid.length}, invalid ${invalid.length}`);
        for (const program of [...valid.slice(0, 3), ...invalid.slice(0, 2)]) {
          const direct = directEvaluation(taskDir, program.code, scratch);
          assert.equal(program.objective, direct.combined_score, `${program.id}: objective`);
          if (program.outcome === 'valid') {
            assert.equal(program.score, direct.combined_score, `${program.id}: score`);
            assert.deepEqual(withoutTiming(program.metrics), expectedMetrics(direct), `${program.id}: metrics`);
          } else {
            // The evaluator itself said the program failed: OpenEvolve with an "error" text, ShinkaEvolve in correct.json.
            assert.equal(program.score, OUTCOME_PENALTY.invalid_solution);
            assert.ok(taskDir === SHINKA || typeof direct.error === 'string', JSON.stringify(direct));
          }
        }
      } finally {
        await db.close();
      }
    }
  });

  describe("how results map (a folder of our own per case, in OpenEvolve's layout)", () => {
    const PROGRAM = '# EVOLVE-BLOCK-START\nVALUE = 1.5\n# EVOLVE-BLOCK-END\n';
    async function folder(evaluator: string, config?: string): Promise<string> {
      const dir = mkdtempSync(join(scratch, 'oe-'));
      chmodSync(dir, 0o755);
      writeFileSync(join(dir, 'initial_program.py'), PROGRAM);
      writeFileSync(join(dir, 'evaluator.py'), evaluator);
      if (config !== undefined) writeFileSync(join(dir, 'config.yaml'), config);
      return dir;
    }
    const IMPORT =
      'import importlib.util\ndef load(p):\n    s = importlib.util.spec_from_file_location("program", p)\n    m = importlib.util.module_from_spec(s)\n    s.loader.exec_module(m)\n    return m\n';

    async function evaluateIn(dir: string, code = PROGRAM) {
      const evaluator = new Evaluator(await loadTask(dir), OPTIONS);
      try {
        return await evaluator.evaluate(code);
      } finally {
        await evaluator.close();
      }
    }

    it('an "error" text is invalid_solution (-0.1) with the exact combined_score kept as objective; a crash is no_solution; no number at all is invalid', async () => {
      const failed = await evaluateIn(
        await folder('def evaluate(p):\n    return {"combined_score": 0.0, "error": "points outside the square"}\n'),
      );
      assert.equal(failed.status, 'invalid_solution');
      assert.equal(failed.score, OUTCOME_PENALTY.invalid_solution);
      assert.equal(failed.objective, 0);
      assert.match(failed.reason, /the evaluator reported an error: points outside the square/);

      const crashed = await evaluateIn(
        await folder(`${IMPORT}def evaluate(p):\n    return {"combined_score": load(p).VALUE}\n`),
        '# EVOLVE-BLOCK-START\nraise RuntimeError("boom")\n# EVOLVE-BLOCK-END\n',
      );
      assert.equal(crashed.status, 'no_solution');
      assert.equal(crashed.score, OUTCOME_PENALTY.no_solution);
      assert.match(crashed.reason, /RuntimeError: boom/);

      const none = await evaluateIn(await folder('def evaluate(p):\n    return {"accuracy": "high"}\n'));
      assert.equal(none.status, 'invalid_solution', 'no combined_score and nothing numeric to rank by');
      assert.match(none.reason, /no finite combined_score/);
    });

    it('a valid combined_score of 0 or below keeps its exact value as objective and ranks above every penalty, in its own order', async () => {
      const negative = await evaluateIn(await folder(`${IMPORT}def evaluate(p):\n    return {"combined_score": -load(p).VALUE}\n`));
      assert.equal(negative.status, 'ok');
      assert.equal(negative.objective, -1.5);
      assert.ok(negative.score > 0 && negative.score <= 1e-300, String(negative.score));
      const task = { direction: 'maximize' as const, scoreRule: 'combined_score' as const };
      const ranked = [-1e6, -2, -1.5, -0.1, 0, 1e-12, 0.5, 2].map((c) => scoreOfObjective(c, task));
      for (let i = 1; i < ranked.length; i++) assert.ok((ranked[i] as number) > (ranked[i - 1] as number), `ranked ${ranked.join(', ')}`);
      assert.ok(ranked.every((s) => s > Math.max(...Object.values(OUTCOME_PENALTY))));
      assert.equal(scoreOfObjective(0.5, task), 0.5, 'a positive combined_score is the score as it is');
    });

    it('an EvaluationResult from openevolve.evaluation_result (our stand-in) and the cascade with config.yaml thresholds', async () => {
      const cascade = [
        'from openevolve.evaluation_result import EvaluationResult',
        IMPORT,
        'def evaluate_stage1(p):',
        '    return EvaluationResult(metrics={"combined_score": load(p).VALUE / 10, "stage": 1.0}, artifacts={"note": "quick"})',
        'def evaluate_stage2(p):',
        '    return {"combined_score": load(p).VALUE, "stage": 2.0, "slow_check": 1.0}',
        'def evaluate(p):',
        '    return evaluate_stage2(p)',
        '',
      ].join('\n');
      const passing = await folder(cascade, 'evaluator:\n  timeout: 7\n  cascade_evaluation: true\n  cascade_thresholds: [0.1, 0.9]\n');
      assert.equal((await loadTask(passing)).runtimeLimitSec, 14, 'the timeout per stage, as OpenEvolve gives it');
      const both = await evaluateIn(passing);
      assert.equal(both.objective, 1.5);
      // Stage 1's artifacts are the program's feedback, kept through the later stages as OpenEvolve merges them.
      // The stage reached is said as a cascade of task.json says it (the step's stage counts), never ranked: a text, ours,
      // so the numeric metrics are the evaluator's alone.
      assert.deepEqual(withoutTiming(both.metrics), {
        stage: 2,
        slow_check: 1,
        feedback: 'note: quick',
        cascade_stage: '2 of 2',
      });
      const stopped = await evaluateIn(await folder(cascade, 'evaluator:\n  cascade_thresholds: [0.5]\n'));
      assert.equal(stopped.objective, 0.15, 'below the first threshold: stage 1 stands');
      assert.deepEqual(withoutTiming(stopped.metrics), { stage: 1, feedback: 'note: quick', cascade_stage: '1 of 2' });
      const off = await evaluateIn(await folder(cascade, 'evaluator:\n  cascade_evaluation: false\n'));
      assert.equal(off.objective, 1.5, 'cascade off: evaluate()');
      // Without combined_score a stage passes by the mean of its numeric metrics, true counting as 1 as in
      // OpenEvolve's _passes_threshold: (1 + 0.2) / 2 = 0.6 passes 0.5, where 0.2 alone would not.
      const booleans = [
        IMPORT,
        'def evaluate_stage1(p):',
        '    return {"compiles": True, "partial": 0.2}',
        'def evaluate_stage2(p):',
        '    return {"combined_score": load(p).VALUE}',
        '',
      ].join('\n');
      assert.equal((await evaluateIn(await folder(booleans, 'evaluator:\n  cascade_thresholds: [0.5]\n'))).objective, 1.5);
      const under = await evaluateIn(await folder(booleans, 'evaluator:\n  cascade_thresholds: [0.7]\n'));
      assert.equal(under.objective, 0.6, 'under the threshold: stage 1 stands, ranked by the same mean (the stage metrics left out)');
      assert.equal(under.metrics.cascade_stage, '1 of 2');
      // A later stage that never returns ends at evaluator.timeout (OpenEvolve's per stage) with the earlier stage's
      // result, the timeout said in its metrics and feedback, as OpenEvolve keeps it; the program is not timed out as a
      // whole.
      const slow = [
        IMPORT,
        'import threading',
        'def evaluate_stage1(p):',
        '    return {"combined_score": load(p).VALUE / 10}',
        'def evaluate_stage2(p):',
        '    try:',
        '        threading.Event().wait()  # never set: the stage never returns',
        '    except Exception:',
        '        pass',
        '    return {"combined_score": 100.0}',
        '',
      ].join('\n');
      const timedOut = await evaluateIn(await folder(slow, 'evaluator:\n  timeout: 3\n  cascade_thresholds: [0.1]\n'));
      assert.equal(timedOut.status, 'ok', timedOut.reason);
      assert.equal(timedOut.objective, 0.15, 'stage 1 stands');
      assert.equal(timedOut.metrics.cascade_stage, '2 of 2');
      assert.equal(timedOut.metrics.stage2_passed, 0);
      assert.match(String(timedOut.metrics.feedback), /stage2_timeout: true/);
      // An evaluator that scores in a child process: the stand-in is importable there too.
      const child = [
        'import subprocess, sys',
        'def evaluate(p):',
        '    out = subprocess.run([sys.executable, "-c", "from openevolve.evaluation_result import EvaluationResult; print(EvaluationResult(metrics={}).get_total_artifact_size())"], capture_output=True, text=True, check=True)',
        '    return {"combined_score": 1.0 + float(out.stdout)}',
        '',
      ].join('\n');
      assert.equal((await evaluateIn(await folder(child))).objective, 1);
    });

    it("the evaluator's own timeout applies (config.yaml evaluator.timeout)", async () => {
      const slow = await folder(
        `import time\ndef evaluate(p):\n    time.sleep(60)\n    return {"combined_score": 1.0}\n`,
        'evaluator:\n  timeout: 0.5\n',
      );
      const result = await evaluateIn(slow);
      // Before the evaluator's own 60 s sleep could end: stopped at its 0.5 s.
      assert.equal(result.status, 'timeout');
    });

    it('the folder is read-only to the candidate, and a hostile candidate can fake its score (why it is labelled not protected)', async () => {
      const dir = await folder(`${IMPORT}def evaluate(p):\n    return {"combined_score": float(load(p).VALUE)}\n`);
      const tamper = [
        '# EVOLVE-BLOCK-START',
        'import os, sys',
        'try:',
        '    open(os.path.join(sys.path[0], "..", "evaluator.py"), "a").write("# tampered")',
        'except OSError:',
        '    pass',
        'for folder in sys.path:',
        '    try:',
        '        open(os.path.join(folder, "evaluator.py"), "a").write("# tampered")',
        '    except OSError:',
        '        pass',
        'VALUE = 1e9  # the evaluator believes whatever the program says',
        '# EVOLVE-BLOCK-END',
        '',
      ].join('\n');
      const result = await evaluateIn(dir, tamper);
      assert.equal(result.objective, 1e9);
      assert.equal(readFileSync(join(dir, 'evaluator.py'), 'utf8').includes('tampered'), false, 'the task folder is mounted read-only');
    });

    it("the candidate sees a copy of the folder without its dotfiles and run data (.env, .git, .thetaevolve's databases)", async () => {
      const dir = await folder(`${IMPORT}def evaluate(p):\n    return {"combined_score": float(load(p).VALUE)}\n`);
      writeFileSync(join(dir, '.env'), 'OPENAI_API_KEY=sk-secret\n');
      mkdirSync(join(dir, '.git'));
      writeFileSync(join(dir, '.git', 'config'), '[remote]\n');
      mkdirSync(join(dir, '.thetaevolve', 'runs'), { recursive: true });
      writeFileSync(join(dir, '.thetaevolve', 'runs', 'other.sqlite'), 'other runs');
      writeFileSync(join(dir, 'old-run.sqlite'), 'a run kept beside');
      writeFileSync(join(dir, 'data.txt'), 'the evaluator may need this');
      const snoop = [
        '# EVOLVE-BLOCK-START',
        'import os, sys',
        'seen = sorted(n for folder in sys.path if os.path.isfile(os.path.join(folder, "evaluator.py")) for n in os.listdir(folder))',
        'VALUE = 2.0 if seen == ["config.yaml", "data.txt", "evaluator.py", "initial_program.py"] or seen == ["data.txt", "evaluator.py", "initial_program.py"] else 1.0',
        'print("folder as the candidate sees it:", seen)',
        '# EVOLVE-BLOCK-END',
        '',
      ].join('\n');
      const result = await evaluateIn(dir, snoop);
      assert.equal(result.status, 'ok', result.reason);
      assert.equal(result.objective, 2, `the candidate saw more than the evaluator's files: ${result.stdout}`);
    });

    it('keeps at most 100 metrics of a reply (and 500 characters of a text), counting what it dropped: a candidate cannot bloat the database', async () => {
      const dir = await folder(
        `${IMPORT}def evaluate(p):\n    m = {"combined_score": float(load(p).VALUE), "note": "x" * 100000}\n    m.update({"m%d" % i: i for i in range(9000)})\n    return m\n`,
      );
      const result = await evaluateIn(dir);
      assert.equal(result.status, 'ok', result.reason);
      assert.equal(result.objective, 1.5);
      assert.ok(Object.keys(result.metrics).length <= 101, `${Object.keys(result.metrics).length} metrics kept`);
      assert.ok(
        typeof result.metrics.metrics_dropped === 'number' && result.metrics.metrics_dropped >= 8900,
        String(result.metrics.metrics_dropped),
      );
      assert.ok(JSON.stringify(result.metrics).length < 20_000, `${JSON.stringify(result.metrics).length} characters of metrics`);
    });

    it('works for a folder below a private (0700) folder, as under /root: the sandbox user reads a copy', async () => {
      const hidden = mkdtempSync(join(scratch, 'private-'));
      chmodSync(hidden, 0o700);
      const dir = join(hidden, 'task');
      cpSync(await folder(`${IMPORT}def evaluate(p):\n    return {"combined_score": float(load(p).VALUE)}\n`), dir, { recursive: true });
      const result = await evaluateIn(dir);
      assert.equal(result.status, 'ok', result.reason);
      assert.equal(result.objective, 1.5);
    });
  });

  it('copies of the fixtures keep working: nothing is written into the folder', async () => {
    const copy = join(scratch, 'copy');
    mkdirSync(copy);
    cpSync(OPENEVOLVE[2] as string, join(copy, 'binary_code'), { recursive: true });
    const before = JSON.stringify(
      execFileSync('ls', ['-la', join(copy, 'binary_code')], { encoding: 'utf8' })
        .split('\n')
        .map((l) => l.split(/\s+/).pop()),
    );
    const { code } = await runCli(['evaluate', 'copy/binary_code', 'copy/binary_code/initial_program.py', '--json'], scratch);
    assert.equal(code, 0);
    const after = JSON.stringify(
      execFileSync('ls', ['-la', join(copy, 'binary_code')], { encoding: 'utf8' })
        .split('\n')
        .map((l) => l.split(/\s+/).pop()),
    );
    assert.equal(after, before);
  });

  describe('thetaevolve convert', () => {
    it("writes task.json: the program runs in the sandbox, the folder's own evaluator outside on its values, same scores, protected", async () => {
      for (const source of OPENEVOLVE) {
        const copy = mkdtempSync(join(scratch, 'convert-'));
        chmodSync(copy, 0o755);
        cpSync(source, copy, { recursive: true });
        const converted = await runCli(['convert', copy, '--json'], scratch);
        assert.equal(converted.code, 0, converted.stderr);
        assert.deepEqual(
          (JSON.parse(converted.stdout) as { files: string[] }).files.map((f) => f.slice(copy.length + 1)),
          ['thetaevolve_evaluate.py', 'thetaevolve_foreign.py', 'thetaevolve_evaluation_result.py', 'task.json'],
        );
        const task = await loadTask(copy);
        assert.equal(task.layout, 'task.json');
        assert.equal(task.evaluatorTrust, 'separate');
        assert.deepEqual(task.sandboxReadOnlyDirs, {}, 'the candidate sees only its program again');
        const { stdout } = await runCli(['evaluate', copy, join(copy, 'initial_program.py'), '--json'], scratch);
        const out = JSON.parse(stdout) as { status: string; objective: number | null; metrics: Metrics; protected: boolean };
        const direct = directEvaluation(source, readFileSync(join(source, 'initial_program.py'), 'utf8'), scratch);
        assert.equal(out.protected, true);
        if ((direct.combined_score as number) > 0) {
          assert.equal(out.status, 'ok', JSON.stringify(out));
          assert.equal(out.objective, direct.combined_score);
          assert.deepEqual(withoutTiming(out.metrics), expectedMetrics(direct));
        } else {
          // Our format's rule: a valid objective is positive (docs/guide.md "Bring your own problem").
          assert.equal(out.status, 'invalid_solution');
        }
        const again = await runCli(['convert', copy], scratch);
        assert.equal(again.code, 1);
        assert.match(again.stderr, /task\.json already exists/);
      }
    });

    it('refuses, saying why, where the evaluator needs the program itself', async () => {
      const shinka = await runCli(['convert', SHINKA], scratch);
      assert.equal(shinka.code, 1);
      assert.match(shinka.stderr, /ShinkaEvolve folder's evaluate\.py runs the program itself/);
      const dir = mkdtempSync(join(scratch, 'args-'));
      writeFileSync(join(dir, 'initial_program.py'), '# EVOLVE-BLOCK-START\ndef solve(n):\n    return n\n# EVOLVE-BLOCK-END\n');
      writeFileSync(
        join(dir, 'evaluator.py'),
        'def evaluate(p):\n    program = __import__("program")\n    return {"combined_score": program.solve(3)}\n',
      );
      const withArgs = await runCli(['convert', dir], scratch);
      assert.equal(withArgs.code, 1);
      assert.match(withArgs.stderr, /calls program\.solve\(\.\.\.\) with arguments/);
    });
  });

  it('drafts a meta-information text from a docstring or a leading comment', () => {
    assert.equal(leadingDocText('"""Pack circles.\n\n    More text.\n    """\nx = 1\n'), 'Pack circles.\n\nMore text.');
    assert.equal(
      leadingDocText('#!/usr/bin/env python3\n# Find a matrix.\n# With a large determinant.\n# EVOLVE-BLOCK-START\n'),
      'Find a matrix.\nWith a large determinant.',
    );
    assert.equal(leadingDocText('// EVOLVE-BLOCK-START\n// Sort fast.\nint main() {}\n'), 'Sort fast.');
    assert.equal(leadingDocText('x = 1\n'), null);
  });
});
