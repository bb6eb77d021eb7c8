// Inside a ThetaEvolve release checkout the release's own `openevolve`
// package scores the run's children (docs/architecture.md "Release task
// folders"): a checkout made here of the tiny_sum fixture and a package of our
// own in the release's shape (test/fixtures/release/own_package), run against
// the test server with evaluations in parallel (warm interpreters among them),
// each child's score compared with the package's own evaluation of its code,
// outside the sandbox; the rewards the atropos test server receives under
// rl_normalized_reward compared with the package's; and failures of the
// package's or the evaluator's own code kept with their traceback, never scored.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ProgramDatabase, type ProgramRecord } from '../../src/engine/database/programDatabase';
import { startAtroposTestServer } from '../server/atroposTestServer';
import { startTestServer, type TestServer } from '../server/openaiTestServer';
import { runCli } from '../support/cli';
import { tempDir } from '../support/tempDirs';

const FIXTURES = resolve(__dirname, '../fixtures/release');
const OWN_PACKAGE = join(FIXTURES, 'own_package/openevolve');
const CONFIG = 'configs/config_tiny_sum_it_S.yaml';
const EVALUATED = ['valid', 'invalid_solution', 'no_solution', 'timeout'];

/** A release checkout in `dir`: openevolve_adapted/openevolve (the fixture package) and examples/tiny_sum; the task folder. */
function checkout(dir: string): string {
  const root = join(dir, 'openevolve_adapted');
  cpSync(OWN_PACKAGE, join(root, 'openevolve'), { recursive: true, filter: (src) => !src.includes('__pycache__') });
  cpSync(join(FIXTURES, 'tiny_sum'), join(root, 'examples/tiny_sum'), { recursive: true });
  return join(root, 'examples/tiny_sum');
}

interface OwnEvaluation {
  combined_score: number;
  rl_normalized_reward: number;
}

/** The package's own evaluate() of each program, as the release runs it: its evaluator imported with the checkout's package. */
function ownEvaluations(task: string, programs: readonly string[]): OwnEvaluation[] {
  const script = [
    'import importlib.util, json, sys',
    'spec = importlib.util.spec_from_file_location("evaluator_modular", sys.argv[1])',
    'module = importlib.util.module_from_spec(spec)',
    'spec.loader.exec_module(module)',
    'out = []',
    'for path in sys.argv[2:]:',
    '    m = module.evaluate(path).metrics',
    '    out.append({"combined_score": m["combined_score"], "rl_normalized_reward": m["rl_normalized_reward"]})',
    'print(json.dumps(out))',
  ].join('\n');
  const stdout = execFileSync('/usr/bin/python3', ['-c', script, join(task, 'evaluators/evaluator_modular.py'), ...programs], {
    env: { PATH: '/usr/bin:/bin', PYTHONPATH: join(task, '../..'), OPENEVOLVE_CONFIG_PATH: join(task, CONFIG) },
    encoding: 'utf8',
  });
  return JSON.parse(stdout) as OwnEvaluation[];
}

/** Every program of a run's database, in order. */
async function programsOf(file: string): Promise<ProgramRecord[]> {
  const db = await ProgramDatabase.openReadOnly(file);
  try {
    const out: ProgramRecord[] = [];
    for (let seq = 0; ; seq++) {
      const program = db.get(seq.toString(36));
      if (!program) break;
      out.push(program);
    }
    return out;
  } finally {
    await db.close();
  }
}

/** The starting program and every evaluated child, with the package's own evaluation of each. */
function withOwnEvaluations(task: string, dir: string, programs: readonly ProgramRecord[]): [ProgramRecord, OwnEvaluation][] {
  const scored = programs.filter((p) => p.origin !== 'migration' && EVALUATED.includes(p.outcome));
  const paths = scored.map((p) => {
    const path = join(dir, `program-${p.id}.py`);
    writeFileSync(path, p.code);
    return path;
  });
  const own = ownEvaluations(task, paths);
  return scored.map((p, i) => [p, own[i] as OwnEvaluation]);
}

describe("inside a ThetaEvolve release checkout: the release's own package scores every child", () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(async () => {
    await server.close();
  });

  it("16 children evaluated 8 at a time: each one's score is the package's own evaluation of it", async () => {
    const dir = tempDir('te-release-own-');
    const task = checkout(dir);
    const db = join(dir, 'run.sqlite');
    const args = ['run', task, '--endpoint', server.baseURL, '--model', 'test-model', '--steps', '1', '--batch', '2', '--samples', '8'];
    const { code, stdout, stderr } = await runCli([...args, '--eval-concurrency', '8', '--db', db, '--json'], dir);
    assert.equal(code, 0, stderr);
    assert.match(stderr, /the release's own package at /);
    assert.equal((JSON.parse(stdout.trim().split('\n')[0] as string) as { samples: number }).samples, 16);
    const programs = await programsOf(db);
    const compared = withOwnEvaluations(task, dir, programs);
    assert.ok(compared.filter(([p]) => p.step === 1).length >= 8, 'most children were evaluated');
    assert.ok(
      compared.some(([p]) => p.outcome === 'valid' && p.step === 1),
      'a valid child',
    );
    for (const [program, own] of compared) {
      assert.equal(program.score, own.combined_score, `program ${program.id} (${program.outcome}): ${JSON.stringify(program.metrics)}`);
      if (program.outcome === 'valid') assert.equal(program.metrics.rl_normalized_reward, own.rl_normalized_reward);
    }
  });

  it("with RL on under rl_normalized_reward, the atropos trainer receives the package's transform_score_for_rl of each child", async () => {
    const dir = tempDir('te-release-own-rl-');
    const task = checkout(dir);
    const db = join(dir, 'run.sqlite');
    const trainer = await startAtroposTestServer({ trainer: { batchSize: 16 } });
    try {
      const args = ['run', task, '--endpoint', server.baseURL, '--model', 'test-model', '--steps', '1', '--batch', '2', '--samples', '8'];
      const rl = ['--trainer', trainer.url, '--trainer-protocol', 'atropos', '--reward-process', 'rl_normalized_reward'];
      const { code, stderr } = await runCli([...args, ...rl, '--eval-concurrency', '8', '--db', db], dir);
      assert.equal(code, 0, stderr);
      const received = trainer.received.flatMap((r) => {
        const ours = r.data.group_overrides?.thetaevolve as { outcomes: string[]; raw_scores: number[] };
        return r.data.scores.map((reward, i) => ({ reward, outcome: ours.outcomes[i] as string, score: ours.raw_scores[i] as number }));
      });
      assert.equal(received.length, 16);
      const children = withOwnEvaluations(task, dir, await programsOf(db)).filter(([p]) => p.step === 1);
      // Each evaluated child's (score, reward) is one of the package's own evaluations, and each of those was sent: the trainer
      // names no program, and a code two samples gave is stored once.
      const pair = (score: number, reward: number): string => `${score} -> ${reward}`;
      const sent = new Set(received.filter((r) => EVALUATED.includes(r.outcome)).map((r) => pair(r.score, r.reward)));
      const own = new Set(children.map(([, e]) => pair(e.combined_score, e.rl_normalized_reward)));
      assert.deepEqual([...sent].sort(), [...own].sort());
      assert.ok(
        received.some((r) => r.outcome === 'valid' && r.reward !== r.score),
        'a valid child whose shaped reward is not its score',
      );
    } finally {
      await trainer.close();
    }
  });

  describe("a failure keeps its evidence; one of the package's or the evaluator's own code is no score", () => {
    const evaluate = async (task: string, program: string, cwd: string) => {
      const { code, stdout, stderr } = await runCli(['evaluate', task, program, '--json'], cwd);
      return { code, stderr, result: JSON.parse(stdout) as { status: string; score: number | null; reason: string; stderr: string } };
    };
    const initialWith = (task: string, dir: string, name: string, from: string, to: string): string => {
      const text = readFileSync(join(task, 'initial_programs/initial_program.py'), 'utf8');
      assert.ok(text.includes(from));
      const path = join(dir, name);
      writeFileSync(path, text.replace(from, to));
      return path;
    };

    it("the program's crash: no_solution, its whole traceback in the output and its end in the reason", async () => {
      const dir = tempDir('te-release-own-crash-');
      const task = checkout(dir);
      const program = initialWith(task, dir, 'crash.py', '    base = 0.25', '    base = 0.25 / 0');
      const { code, result } = await evaluate(task, program, dir);
      assert.equal(code, 0);
      assert.deepEqual([result.status, result.score], ['no_solution', -0.2]);
      assert.match(result.reason, /^error: Program execution failed \(exit code: 1\); stderr ends with:\n/);
      assert.match(result.reason, /line \d+, in choose_weights\n[\s\S]*\nZeroDivisionError: (float )?division by zero$/);
      assert.match(
        result.stderr,
        /Traceback \(most recent call last\):\n[\s\S]*in choose_weights[\s\S]*ZeroDivisionError: (float )?division by zero/,
      );
    });

    it("the package's own code failing to import in the program: evaluation_failed naming the package, with the traceback", async () => {
      const dir = tempDir('te-release-own-import-');
      const task = checkout(dir);
      // A module of the package that only the program imports, needing what this Python lacks.
      writeFileSync(
        join(dir, 'openevolve_adapted/openevolve/modular_utils/plotting.py'),
        'import a_module_this_python_lacks  # noqa: F401\n',
      );
      const program = initialWith(
        task,
        dir,
        'plots.py',
        '    main()',
        '    from openevolve.modular_utils.plotting import a_module_this_python_lacks  # noqa: F401\n\n    main()',
      );
      const { code, stderr, result } = await evaluate(task, program, dir);
      assert.equal(code, 1, 'no score');
      assert.deepEqual([result.status, result.score], ['evaluation_failed', null]);
      assert.match(
        result.reason,
        /the program could not import the release's own openevolve package: ModuleNotFoundError: No module named 'a_module_this_python_lacks'\n/,
      );
      assert.match(result.reason, /modular_utils\/plotting\.py", line 1/);
      assert.match(result.stderr, /Traceback \(most recent call last\):\n[\s\S]*plotting\.py", line 1[\s\S]*a_module_this_python_lacks/);
      assert.match(stderr, /not the program's fault/);
    });

    it("the evaluator's own code raising: evaluation_failed naming evaluators/evaluator_modular.py, with the traceback", async () => {
      const dir = tempDir('te-release-own-evaluator-');
      const task = checkout(dir);
      const evaluator = join(task, 'evaluators/evaluator_modular.py');
      writeFileSync(
        evaluator,
        `${readFileSync(evaluator, 'utf8')}\n\ndef evaluate(program_path, temp_dir=None):\n    return {}["no_such_key"]\n`,
      );
      const { code, result } = await evaluate(task, join(task, 'initial_programs/initial_program.py'), dir);
      assert.equal(code, 1);
      assert.equal(result.status, 'evaluation_failed');
      assert.match(result.reason, /evaluators\/evaluator_modular\.py's evaluate\(\) raised KeyError: 'no_such_key'$/);
      assert.match(
        result.stderr,
        /Traceback \(most recent call last\):\n[\s\S]*evaluator_modular\.py", line \d+, in evaluate\n[\s\S]*KeyError/,
      );
    });
  });
});
