// Task folders of the ThetaEvolve release, unchanged (docs/architecture.md
// "Release task folders"): two folders written here in its layout
// (test/fixtures/release), loaded, evaluated in the real sandbox by
// /usr/bin/python3 (Debian's, with PyYAML) with the release's own
// `openevolve` package found around the folder and without it, and run
// against the test server and the slime test buffer. Objectives, shaped
// rewards and error codes are worked out by hand below.
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { defaultSettings } from '../../src/engine/common/config';
import { rewardOfChild } from '../../src/engine/common/scoring';
import { taskFilesBeside, taskFilesIn } from '../../src/engine/task/foreignTasks';
import { releasePackageNear } from '../../src/engine/task/releaseTasks';
import { loadTask, TaskError } from '../../src/engine/task/task';
import { listTaskChoicesFrom } from '../../src/vscode/taskChoices';
import { startTestServer, type TestServer } from '../server/openaiTestServer';
import { startSlimeTestServer, type SlimeTestServer } from '../server/slimeTestServer';
import { runCli } from '../support/cli';
import { tempDir } from '../support/tempDirs';

const FIXTURES = resolve(__dirname, '../fixtures/release');
const TINY = join(FIXTURES, 'tiny_sum');
const TINY_CONFIG = join(TINY, 'configs/config_tiny_sum_it_S.yaml');
const SIGNS = join(FIXTURES, 'sign_matrix');
const SIGNS_SMALL = join(SIGNS, 'configs/config_sign_matrix_small.yaml');
const SIGNS_LARGE = join(SIGNS, 'configs/config_sign_matrix_large.yaml');
const STAND_IN = resolve(__dirname, '../../src/engine/task/foreign/openevolve');

interface EvaluateJson {
  status: string;
  score: number;
  objective: number | null;
  metrics: Record<string, unknown>;
  reason: string;
  stderr: string;
}

async function evaluate(task: string, program: string, cwd: string): Promise<{ result: EvaluateJson; stderr: string }> {
  const { code, stdout, stderr } = await runCli(['evaluate', task, program, '--json'], cwd);
  assert.equal(code, 0, stderr);
  return { result: JSON.parse(stdout) as EvaluateJson, stderr };
}

function writeProgram(dir: string, name: string, from: string, replace: [string, string]): string {
  const text = readFileSync(from, 'utf8');
  assert.ok(text.includes(replace[0]), `${from} holds ${replace[0]}`);
  const path = join(dir, name);
  writeFileSync(path, text.replace(replace[0], replace[1]));
  return path;
}

describe('ThetaEvolve release task folders', () => {
  describe('loading', () => {
    it('a folder with one config is its task: texts substituted as the release does, the config as run settings, unused keys named in one line', async () => {
      const task = await loadTask(TINY);
      assert.equal(task.layout, 'release');
      assert.equal(task.name, 'tiny_sum-it_s');
      assert.equal(task.source, TINY_CONFIG);
      assert.equal(task.direction, 'maximize');
      assert.equal(task.initialProgramPath, join(TINY, 'initial_programs/initial_program.py'));
      assert.deepEqual(
        task.metaInformation.map((m) => [m.weight, m.text]),
        [
          [
            0.25,
            'Tiny sum A: choose 3 weights in [0, 1] whose sum reaches 2.5; each run may take 20 seconds.\n' +
              'Left as written: {not_a_variable} and {score_transform}; nested: 2.0.\n',
          ],
          [0.75, 'Tiny sum B: 3 weights, target 2.5, TinySum_n=3.\n'],
        ],
      );
      assert.deepEqual(task.runSettings, {
        models: [
          { name: 'test-model', weight: 0.75 },
          { name: 'other-model', weight: 0.25 },
        ],
        temperature: 0.55,
        topP: 0.9,
        maxTokens: 1234,
        requestTimeoutSeconds: 120,
        maxRetries: 2,
        'database.populationSize': 50,
        'database.archiveSize': 10,
        'database.numIslands': 2,
        'database.exploitationRatio': 0.5,
        topPrograms: 0,
        feedbackChars: 4096,
      });
      assert.equal(task.runtimeLimitSec, 30, 'evaluator.timeout bounds the whole evaluation');
      assert.equal(task.variables.MAX_RUNTIME, 20);
      assert.equal(task.maxCodeLength, 20000);
      assert.deepEqual(task.rewardShaping, { enabled: false, lower: 0, upper: 2, alpha: 2, k: 4 });
      const unused = task.notices.filter((n) => n.includes('change nothing here'));
      assert.equal(unused.length, 1);
      assert.equal(
        unused[0],
        'config_tiny_sum_it_S.yaml: these keys change nothing here: checkpoint_interval, log_level, llm.api_base, llm.api_key, prompt.use_alphaevolve_style, prompt.use_system_prompt, database.feature_dimensions, evaluator.parallel_evaluations',
      );
      assert.ok(
        task.notices.some(
          (n) =>
            n.startsWith('llm.models lists 2 models (test-model 0.75, other-model 0.25): each prompt draws one by weight') &&
            n.includes("only thetaevolve.trainer.model's rollouts (default test-model) are sent"),
        ),
      );
      assert.ok(!task.notices.join('\n').includes('EMPTY'), 'a key is named, its value never shown');
    });

    it('a folder with several configs is refused naming them; each config is its own task (a minimisation here), large integers keep every digit', async () => {
      await assert.rejects(loadTask(SIGNS), (err: unknown) => {
        assert.ok(err instanceof TaskError);
        assert.match(err.message, /several configs \(config_sign_matrix_large\.yaml, config_sign_matrix_small\.yaml\)/);
        return true;
      });
      const cwd = tempDir('te-release-cli-');
      const refused = await runCli(['evaluate', SIGNS, join(SIGNS, 'initial_programs/initial_program.py')], cwd);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /config_sign_matrix_large\.yaml, config_sign_matrix_small\.yaml/);
      const small = await loadTask(SIGNS_SMALL);
      const large = await loadTask(SIGNS_LARGE);
      assert.deepEqual([small.name, large.name], ['sign_matrix-small', 'sign_matrix-large']);
      assert.equal(small.direction, 'minimize');
      assert.equal(small.scoreRule, 'direction');
      assert.equal(
        small.metaInformation[0]?.text,
        'Sign matrix of size 4: rows as orthogonal as possible; the bound is 1270698346568170340352.\n' +
          'Known ratios: {KNOWN_BOUNDS}; for this size 0.5. Time: 20 s.\n',
      );
      assert.deepEqual(small.rewardShaping, { enabled: false, lower: 1, upper: 49, alpha: 1, k: 3 });
      assert.deepEqual(await taskFilesIn(SIGNS), [SIGNS_LARGE, SIGNS_SMALL]);
      assert.deepEqual(await taskFilesBeside(join(SIGNS, 'initial_programs/initial_program.py')), [SIGNS_LARGE, SIGNS_SMALL]);
    });

    it("the editor's task picker lists each config of a workspace's release folders as a task", async () => {
      const extensionPath = tempDir('te-release-ext-');
      const choices = await listTaskChoicesFrom({
        extensionPath,
        trusted: true,
        findWorkspaceFiles: () =>
          Promise.resolve({ taskFiles: [], evaluators: [], configs: [TINY_CONFIG, SIGNS_SMALL, SIGNS_LARGE, join(FIXTURES, 'README.md')] }),
      });
      assert.deepEqual(
        choices.map((c) => [c.taskFile, c.summary?.name, c.summary?.layout]),
        [
          [SIGNS_LARGE, 'sign_matrix-large', 'release'],
          [SIGNS_SMALL, 'sign_matrix-small', 'release'],
          [TINY_CONFIG, 'tiny_sum-it_s', 'release'],
        ],
      );
    });
  });

  describe('evaluate (the sandbox, /usr/bin/python3)', () => {
    it("without the release's package (ThetaEvolve's stand-in): the raw objective, the release's shaped reward, its error codes", async () => {
      const cwd = tempDir('te-release-eval-');
      assert.equal(await releasePackageNear(TINY), null, 'the fixtures sit in no release checkout');
      // 0.25 + 0.375 + 0.25 = 0.875; reward 4 * (0.875 / 2)^2 = 0.765625.
      const { result, stderr } = await evaluate(TINY, join(TINY, 'initial_programs/initial_program.py'), cwd);
      assert.equal(result.status, 'ok', result.reason);
      assert.equal(result.objective, 0.875);
      assert.equal(result.score, 0.875);
      assert.equal(result.metrics.rl_normalized_reward, 0.765625);
      assert.match(stderr, /ThetaEvolve's stand-in/);
      // A minimisation: all-ones 4 x 4 rows, 6 pairs of dot product 4: 1 + 24 = 25; score 1/25; reward 3 * (49 - 25) / 48 = 1.5.
      const signs = await evaluate(SIGNS_SMALL, join(SIGNS, 'initial_programs/initial_program.py'), cwd);
      assert.equal(signs.result.objective, 25);
      assert.equal(signs.result.score, 1 / 25);
      assert.equal(signs.result.metrics.rl_normalized_reward, 1.5);
      // Invalid (a weight above 1): the release's -0.1; a crash: its -0.2 (no solution).
      const invalid = writeProgram(cwd, 'invalid.py', join(TINY, 'initial_programs/initial_program.py'), ['base = 0.25', 'base = 1.25']);
      const bad = await evaluate(TINY, invalid, cwd);
      assert.deepEqual([bad.result.status, bad.result.score], ['invalid_solution', -0.1]);
      assert.match(bad.result.reason, /weight 0 is 1\.25, outside \[0, 1\]/);
      const crash = writeProgram(cwd, 'crash.py', join(TINY, 'initial_programs/initial_program.py'), ['base = 0.25', 'base = 1 / 0']);
      const crashed = await evaluate(TINY, crash, cwd);
      assert.deepEqual([crashed.result.status, crashed.result.score], ['no_solution', -0.2]);
    });

    it("evaluator.copy_folders: the folders a program imports sit beside it, as the release's evaluator copies them", async () => {
      const cwd = tempDir('te-release-copy-');
      const folder = join(cwd, 'tiny_sum');
      cpSync(TINY, folder, { recursive: true });
      mkdirSync(join(folder, 'initial_programs/ref'));
      writeFileSync(join(folder, 'initial_programs/ref/start.py'), 'BASE = 0.5\n');
      const config = join(folder, 'configs/config_tiny_sum_it_S.yaml');
      writeFileSync(
        config,
        readFileSync(config, 'utf8').replace(
          '  cascade_evaluation: false',
          '  cascade_evaluation: false\n  copy_folders:\n    - "initial_programs/ref"',
        ),
      );
      const program = writeProgram(cwd, 'with_ref.py', join(folder, 'initial_programs/initial_program.py'), [
        '    base = 0.25',
        '    from ref.start import BASE\n\n    base = BASE',
      ]);
      // 0.5 + 0.625 + 0.5
      const { result } = await evaluate(folder, program, cwd);
      assert.equal(result.objective, 1.625, result.reason);
      const task = await loadTask(folder);
      assert.ok(!task.notices.join('\n').includes('copy_folders'), 'copy_folders is used, not named as changing nothing');
    });

    it("inside a release checkout: the release's own package when it imports, the stand-in when it does not", async () => {
      const cwd = tempDir('te-release-checkout-');
      const checkout = (name: string, init: string, marker: boolean): string => {
        const root = join(cwd, name, 'openevolve_adapted');
        cpSync(TINY, join(root, 'examples/tiny_sum'), { recursive: true });
        cpSync(STAND_IN, join(root, 'openevolve'), { recursive: true, filter: (src) => !src.includes('__pycache__') });
        writeFileSync(join(root, 'openevolve/__init__.py'), init);
        if (marker) {
          // A package that is not ours: its results carry a metric ours never gives.
          const controller = join(root, 'openevolve/modular_utils/evaluation_controller.py');
          writeFileSync(
            controller,
            `${readFileSync(controller, 'utf8')}\n_success = UniversalEvaluationController.create_success_result\n\n\n` +
              'def _marked(self, *args, **kwargs):\n    result = _success(self, *args, **kwargs)\n' +
              '    result.metrics["release_package_marker"] = 7.0\n    return result\n\n\n' +
              'UniversalEvaluationController.create_success_result = _marked\n',
          );
        }
        return join(root, 'examples/tiny_sum');
      };
      const found = checkout('importable', '', true);
      assert.equal(await releasePackageNear(found), join(cwd, 'importable/openevolve_adapted/openevolve'));
      const own = await evaluate(found, join(found, 'initial_programs/initial_program.py'), cwd);
      assert.equal(own.result.objective, 0.875);
      assert.equal(own.result.metrics.release_package_marker, 7, "the release's package scored it");
      assert.match(own.stderr, /the release's own package at /);
      // Its __init__ needs a module this Python lacks (the release's imports openai): ours stands in, and says so.
      const broken = checkout('broken', 'import a_module_this_python_lacks\n', true);
      const fallback = await evaluate(broken, join(broken, 'initial_programs/initial_program.py'), cwd);
      assert.equal(fallback.result.objective, 0.875);
      assert.equal(fallback.result.metrics.release_package_marker, undefined);
      assert.match(
        fallback.result.stderr,
        /does not import \(ModuleNotFoundError: No module named 'a_module_this_python_lacks'\); ThetaEvolve's stand-in is used/,
      );
    });
  });

  describe('convert', () => {
    it('writes task.json: the program alone in the sandbox, verify.py outside on its saved solution (scores protected), same objective', async () => {
      const cwd = tempDir('te-release-convert-');
      const folder = join(cwd, 'sign_matrix');
      cpSync(SIGNS, folder, { recursive: true });
      const several = await runCli(['convert', folder], cwd);
      assert.equal(several.code, 1);
      assert.match(several.stderr, /several configs \(config_sign_matrix_large\.yaml, config_sign_matrix_small\.yaml\)/);
      const converted = await runCli(['convert', join(folder, 'configs/config_sign_matrix_small.yaml'), '--json'], cwd);
      assert.equal(converted.code, 0, converted.stderr);
      const task = await loadTask(folder);
      assert.deepEqual([task.layout, task.evaluatorTrust, task.direction], ['task.json', 'separate', 'minimize']);
      assert.equal(task.metaInformation[0]?.text, (await loadTask(SIGNS_SMALL)).metaInformation[0]?.text, 'the same substituted text');
      const { result } = await evaluate(folder, join(folder, 'initial_programs/initial_program.py'), cwd);
      assert.deepEqual([result.status, result.objective, result.score], ['ok', 25, 1 / 25]);
      assert.equal((result as EvaluateJson & { protected: boolean }).protected, true);
      // Entries 2 are not signs: verify.py's validate_solution says no (-0.1).
      const invalid = writeProgram(cwd, 'twos.py', join(folder, 'initial_programs/initial_program.py'), ['fill = 1', 'fill = 2']);
      const bad = await evaluate(folder, invalid, cwd);
      assert.deepEqual([bad.result.status, bad.result.score], ['invalid_solution', -0.1]);
      assert.match(bad.result.reason, /each row needs 4 entries \+1 or -1/);
      // The config path still reads the release layout; a second conversion is refused.
      assert.equal((await loadTask(join(folder, 'configs/config_sign_matrix_large.yaml'))).layout, 'release');
      const again = await runCli(['convert', join(folder, 'configs/config_sign_matrix_large.yaml')], cwd);
      assert.equal(again.code, 1);
      assert.match(again.stderr, /already converted/);
    });
  });

  describe('whose failure', () => {
    it('a module the evaluator cannot import is no score: evaluation_failed naming the interpreter, and a run stops at its start', async () => {
      const cwd = tempDir('te-release-missing-');
      const folder = join(cwd, 'tiny_sum');
      cpSync(TINY, folder, { recursive: true });
      const verify = join(folder, 'evaluators/verify.py');
      writeFileSync(verify, `import a_module_nobody_has  # noqa: F401\n${readFileSync(verify, 'utf8')}`);
      const evaluated = await runCli(['evaluate', folder, join(folder, 'initial_programs/initial_program.py'), '--json'], cwd);
      assert.equal(evaluated.code, 1, 'the evaluation could not run: not a score');
      assert.match(
        evaluated.stderr,
        /not the program's fault.*stderr ends with:\n[\s\S]*verify\.py", line 1, in <module>[\s\S]*\n\/usr\/bin\/python3 \(Python 3\.\d+\.\d+\) cannot import a_module_nobody_has \(imported by evaluators\/evaluator_modular\.py or its verify\.py\)\n/,
      );
      const run = await runCli(['run', folder, '--sampler', 'mutate', '--steps', '1', '--batch', '1', '--samples', '1'], cwd);
      assert.equal(run.code, 1);
      // The traceback the reason now ends with names the module: the run says which interpreter lacks it.
      assert.match(
        run.stderr,
        /the task's evaluator cannot import a_module_nobody_has with the Python interpreter \/usr\/bin\/python3: install it there/,
      );
    });
  });

  describe('rewards: the release reward processes', () => {
    const shaping = { enabled: false, lower: 0, upper: 2, alpha: 2, k: 4 };
    const valid = { score: 0.875, objective: 0.875 };
    it('each process, by hand', () => {
      // original_reward: the score; clipped to [-10, 10] as the release gym does.
      assert.equal(rewardOfChild(valid, 0.5, 'maximize', shaping, 'original_reward'), 0.875);
      assert.equal(rewardOfChild({ score: 25, objective: 25 }, 0.5, 'maximize', shaping, 'original_reward'), 10);
      // rl_normalized_reward: 4 * (0.875 / 2)^2, whatever rewardShaping.mode says; penalties pass.
      assert.equal(rewardOfChild(valid, 0.5, 'maximize', shaping, 'rl_normalized_reward'), 0.765625);
      assert.equal(rewardOfChild({ score: -0.2, objective: null }, 0.5, 'maximize', shaping, 'rl_normalized_reward'), -0.2);
      // A minimisation: 3 * (49 - 25) / (49 - 1) = 1.5; beyond the range: 0 and 3.
      const minShaping = { enabled: false, lower: 1, upper: 49, alpha: 1, k: 3 };
      assert.equal(rewardOfChild({ score: 1 / 25, objective: 25 }, null, 'minimize', minShaping, 'rl_normalized_reward'), 1.5);
      assert.equal(rewardOfChild({ score: 1 / 91, objective: 91 }, null, 'minimize', minShaping, 'rl_normalized_reward'), 0);
      assert.equal(rewardOfChild({ score: 2, objective: 0.5 }, null, 'minimize', minShaping, 'rl_normalized_reward'), 3);
      // format_reward: -0.4 and -0.3 pass, everything else 1.
      const format = (score: number): number => rewardOfChild({ score, objective: null }, 0.5, 'maximize', shaping, 'format_reward');
      assert.deepEqual([-0.4, -0.3, -0.2, -0.1, 0.875].map(format), [-0.4, -0.3, 1, 1, 1]);
      // validation_reward: every penalty passes, a valid child 1.
      const validation = (score: number): number =>
        rewardOfChild({ score, objective: null }, 0.5, 'maximize', shaping, 'validation_reward');
      assert.deepEqual([-0.4, -0.3, -0.2, -0.1, 0.875].map(validation), [-0.4, -0.3, -0.2, -0.1, 1]);
      // improve_reward: 1 above the parent's score + 1e-6, else 0; penalties pass.
      const improve = (score: number, parent: number | null): number =>
        rewardOfChild({ score, objective: score }, parent, 'maximize', shaping, 'improve_reward');
      assert.deepEqual(
        [improve(0.875, 0.8), improve(0.8000005, 0.8), improve(0.8, 0.8), improve(-0.1, 0.8), improve(0.875, null)],
        [1, 0, 0, -0.1, 1],
      );
      // task: ours (rewardShaping.mode), unchanged.
      assert.equal(rewardOfChild(valid, 0.5, 'maximize', shaping, 'task'), 0.875);
      assert.equal(rewardOfChild(valid, 0.5, 'maximize', { ...shaping, enabled: true }, 'task'), 0.765625);
    });

    it('--lazy-penalty-level and --reward-process set the settings; bad values are refused', async () => {
      const { settingsFromArgs } = await import('../../src/cli/settingsSources');
      const parse = (flags: Record<string, string | number>): ReturnType<typeof settingsFromArgs> =>
        settingsFromArgs({ positionals: [], flags }, process.cwd());
      assert.equal(defaultSettings().lazyPenalty, true);
      assert.equal(parse({ 'lazy-penalty-level': 0 }).lazyPenalty, false);
      assert.equal(parse({ 'lazy-penalty-level': 1 }).lazyPenalty, false);
      assert.equal(parse({ 'lazy-penalty-level': 2 }).lazyPenalty, true);
      assert.throws(() => parse({ 'lazy-penalty-level': 3 }), /--lazy-penalty-level must be 0, 1 or 2/);
      assert.equal(parse({ 'reward-process': 'improve_reward' })['rewardShaping.process'], 'improve_reward');
      assert.throws(() => parse({ 'reward-process': 'best_reward' }), /--reward-process must be one of original_reward, /);
    });
  });

  describe('run against the test server', () => {
    let server: TestServer;
    let buffer: SlimeTestServer;
    before(async () => {
      server = await startTestServer({ models: ['test-model', 'other-model'] });
      buffer = await startSlimeTestServer({ groupSize: 2, trainer: { batchGroups: 2 } });
    });
    after(async () => {
      await server.close();
      await buffer.close();
    });

    it("requests carry the config's sampling values and texts; the rollouts' rewards are the release's shaped rewards", async () => {
      const cwd = tempDir('te-release-run-');
      const db = join(cwd, 'run.sqlite');
      const args = ['run', TINY, '--endpoint', server.baseURL, '--steps', '2', '--batch', '2', '--samples', '2', '--db', db];
      const trainer = ['--trainer', buffer.url, '--trainer-protocol', 'slime', '--reward-process', 'rl_normalized_reward'];
      const { code, stderr } = await runCli([...args, ...trainer, '--json'], cwd);
      assert.equal(code, 0, stderr);
      assert.match(stderr, /these keys change nothing here: checkpoint_interval/);
      assert.match(
        stderr,
        /RL on: only the rollouts of test-model go to the trainer; the other models' children stay in the database only/,
      );
      assert.ok(server.requests.length >= 4);
      for (const request of server.requests) {
        assert.ok(['test-model', 'other-model'].includes(request.model), request.model);
        assert.deepEqual([request.temperature, request.topP, request.maxTokens], [0.55, 0.9, 1234]);
        assert.ok(
          request.userText.includes('Tiny sum A: choose 3 weights in [0, 1] whose sum reaches 2.5') ||
            request.userText.includes('Tiny sum B: 3 weights, target 2.5, TinySum_n=3.'),
          'a system text of the config, substituted',
        );
      }
      // Only the trained model's (the first's) groups are rollouts: n per prompt it answered.
      const trainedSamples = server.requests.filter((r) => r.model === 'test-model').reduce((sum, r) => sum + r.n, 0);
      assert.ok(trainedSamples >= 2);
      // A look at the buffer takes its items out and writes them back: each sample counted once.
      assert.equal(new Set(buffer.received.map((r) => r.item.uid)).size, trainedSamples);
      assert.ok(
        buffer.received.some((r) => r.item.extra_info.outcome === 'valid' && r.item.reward !== r.item.extra_info.raw_score),
        'a valid child whose shaped reward differs from its score',
      );
      for (const { item } of buffer.received) {
        const { outcome, objective, raw_score: score } = item.extra_info;
        if (outcome === 'valid') {
          // transform_score_for_rl: clamp to [0, 2], / 2, squared, x 4.
          const clamped = Math.min(2, Math.max(0, objective as number));
          assert.equal(item.reward, 4 * (clamped / 2) ** 2);
        } else assert.equal(item.reward, score);
      }
      // Flags and --set win over the config; a model of the command line drops the config's list whole.
      const before = server.requests.length;
      const again = await runCli(
        ['run', TINY, '--endpoint', server.baseURL, '--steps', '1', '--batch', '4', '--samples', '1', '--db', join(cwd, 'b.sqlite')].concat(
          ['--set', 'temperature=0.3', '--model', 'other-model'],
        ),
        cwd,
      );
      assert.equal(again.code, 0, again.stderr);
      assert.match(
        again.stderr,
        /thetaevolve run: --model other-model overrides the config's llm\.models \(test-model 0\.75, other-model 0\.25\), which this run drops\.\n/,
      );
      const asked = server.requests.slice(before);
      assert.equal(asked.length, 4);
      for (const r of asked) assert.deepEqual([r.model, r.temperature, r.topP], ['other-model', 0.3, 0.9]);
      const set = await runCli(
        ['run', TINY, '--endpoint', server.baseURL, '--steps', '1', '--batch', '1', '--samples', '1', '--db', join(cwd, 'c.sqlite')].concat(
          ['--set', 'model=test-model'],
        ),
        cwd,
      );
      assert.equal(set.code, 0, set.stderr);
      assert.match(set.stderr, /--set model=\.\.\. overrides the config's llm\.models/);
    });

    it('a config with two models runs with both, by weight: db --json has a row for each', async () => {
      const cwd = tempDir('te-release-models-');
      const db = join(cwd, 'run.sqlite');
      const before = server.requests.length;
      const args = ['run', TINY, '--endpoint', server.baseURL, '--steps', '2', '--batch', '6', '--samples', '1', '--db', db];
      const { code, stderr } = await runCli(args, cwd);
      assert.equal(code, 0, stderr);
      assert.doesNotMatch(stderr, /overrides the config's llm\.models/);
      const asked = server.requests.slice(before).map((r) => r.model);
      assert.equal(asked.length, 12);
      const others = asked.filter((m) => m === 'other-model').length;
      // Weights 0.75 / 0.25 over 12 seeded draws: both drawn, the first more often.
      assert.ok(others >= 1 && others < 6, `other-model drawn ${others} of 12`);
      const report = await runCli(['db', db, '--json'], cwd);
      assert.equal(report.code, 0, report.stderr);
      const rows = (JSON.parse(report.stdout) as { models: { name: string; samples: number; probability: number | null }[] }).models;
      assert.deepEqual(
        rows.map((r) => [r.name, r.samples, r.probability]),
        [
          ['test-model', 12 - others, 0.75],
          ['other-model', others, 0.25],
        ],
      );
    });
  });
});
