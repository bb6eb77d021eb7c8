// Evaluator feedback (issue 28 item 6): OpenEvolve's artifacts (a dict
// result's "artifacts", test/fixtures/openevolve/pipeline_choices),
// ShinkaEvolve's text_feedback and a note of our own evaluator are kept with
// the program, bounded and without control characters, shown by evaluate,
// and put into the prompt of the program's children (setting feedbackChars).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { defaultSettings } from '../../src/engine/common/config';
import { FEEDBACK_METRIC, MAX_FEEDBACK_CHARS } from '../../src/engine/common/feedback';
import { Rng } from '../../src/engine/common/rng';
import { buildPrompt } from '../../src/engine/prompt';
import { bestFeedback } from '../../src/dashboard/dashboardFeed';
import { bestView } from '../../src/dashboard/dashboardModel';
import { BEST_FEEDBACK_MAX_CHARS, BestViewSchema, DashboardBestInputSchema } from '../../src/protocol/dashboardMessages';
import { Evaluator } from '../../src/engine/sandbox/evaluator';
import { loadTask } from '../../src/engine/task/task';
import { runCli } from '../support/cli';
import { tempDir } from '../support/tempDirs';

const PIPELINE = resolve(__dirname, '../fixtures/openevolve/pipeline_choices');
const PYTHON = '/usr/bin/python3';
const OPTIONS = { concurrency: 1, memoryLimitMb: 2048, outputLimitBytes: 65536 };
const PROGRAM = '# EVOLVE-BLOCK-START\nVALUE = 1.5\n# EVOLVE-BLOCK-END\n';

function userText(prompt: ReturnType<typeof buildPrompt>): string {
  return prompt.messages.find((m) => m.role === 'user')?.content ?? '';
}

describe('evaluator feedback (artifacts, text_feedback, our reason) into the next prompt', function () {
  this.timeout(120_000);
  let scratch: string;
  before(function () {
    try {
      execFileSync(PYTHON, ['-c', 'import numpy, yaml'], { stdio: 'ignore' });
    } catch {
      this.skip(); // Reason: needs python3 with numpy and yaml (scripts/setup.sh installs them; CI has them).
    }
    scratch = tempDir('thetaevolve-feedback-', { mode: 0o755 });
  });

  async function evaluateIn(dir: string, code = PROGRAM) {
    const evaluator = new Evaluator(await loadTask(dir), OPTIONS);
    try {
      return await evaluator.evaluate(code);
    } finally {
      await evaluator.close();
    }
  }

  function folder(files: Record<string, string>): string {
    const dir = mkdtempSync(join(scratch, 'task-'));
    chmodSync(dir, 0o755);
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
    return dir;
  }

  it("an OpenEvolve folder's artifacts are the program's feedback, shown by evaluate under their own heading", async () => {
    const { code, stdout, stderr } = await runCli(['evaluate', PIPELINE, join(PIPELINE, 'initial_program.py'), '--json'], scratch);
    assert.equal(code, 0, stderr);
    const out = JSON.parse(stdout) as { metrics: Record<string, unknown> };
    const feedback = String(out.metrics[FEEDBACK_METRIC]);
    assert.match(feedback, /^configuration: \{'reader': 'lines'/);
    assert.match(feedback, /\nstatus: Needs improvement: 0\/4 modules correct\.\n/);
    assert.equal(out.metrics.artifacts, undefined, 'not a metric of its own');
    const text = await runCli(['evaluate', PIPELINE, join(PIPELINE, 'initial_program.py')], scratch);
    assert.match(text.stdout, /\nfeedback\n {2}configuration: .*\n {2}status: Needs improvement/);
  });

  it('an EvaluationResult with artifacts (bytes, control characters, too long), a failed result and ShinkaEvolve text_feedback', async () => {
    const openEvolve = folder({
      'initial_program.py': PROGRAM,
      'evaluator.py': [
        'from openevolve.evaluation_result import EvaluationResult',
        'def evaluate(p):',
        '    return EvaluationResult(metrics={"combined_score": 0.5, "error": "too slow"},',
        '                            artifacts={"stderr": b"warning: \\x1b[31mred\\x1b[0m", "long": "x" * 30000})',
        '',
      ].join('\n'),
    });
    const failed = await evaluateIn(openEvolve);
    assert.equal(failed.status, 'invalid_solution', 'the evaluator reported an error');
    const feedback = String(failed.metrics[FEEDBACK_METRIC]);
    assert.ok(feedback.startsWith('stderr: warning: [31mred[0m\nlong: xxx'), feedback.slice(0, 60));
    // eslint-disable-next-line no-control-regex -- looking for control characters is the point
    assert.ok(!/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/.test(feedback), 'no control characters');
    assert.ok(feedback.length <= MAX_FEEDBACK_CHARS + 40, String(feedback.length));

    const shinka = folder({
      'initial.py': PROGRAM,
      'evaluate.py': [
        'import json, os',
        'def main(program_path, results_dir):',
        '    os.makedirs(results_dir, exist_ok=True)',
        '    json.dump({"combined_score": 2.0, "text_feedback": "Try a larger radius."}, open(os.path.join(results_dir, "metrics.json"), "w"))',
        '    json.dump({"correct": True}, open(os.path.join(results_dir, "correct.json"), "w"))',
        '',
      ].join('\n'),
    });
    const fromShinka = await evaluateIn(shinka);
    assert.equal(fromShinka.status, 'ok');
    assert.equal(fromShinka.objective, 2);
    assert.equal(fromShinka.metrics[FEEDBACK_METRIC], 'Try a larger radius.');

    // Our own format: a valid reply's reason (or feedback) is the evaluator's note on the program.
    const ours = folder({
      'program.py': PROGRAM,
      'evaluate.py':
        'import json\nprint(json.dumps({"valid": True, "objective": 2.0, "metrics": {}, "reason": "valid, but 3 circles touch"}))\n',
      'task.json': JSON.stringify({
        name: 'noted',
        title: 'Noted',
        direction: 'maximize',
        initialProgram: 'program.py',
        candidate: { command: [PYTHON, '-c', 'open("solution.json", "w").write("{}")', '{program}'], runtimeLimitSec: 20 },
        evaluator: { command: [PYTHON, '{taskDir}/evaluate.py', '{solution}'], timeLimitSec: 20 },
        metaInformation: [{ id: 'm', weight: 1, text: 'Do it.' }],
      }),
    });
    const noted = await evaluateIn(ours);
    assert.equal(noted.status, 'ok', JSON.stringify(noted));
    assert.equal(noted.metrics[FEEDBACK_METRIC], 'valid, but 3 circles touch');
  });

  it("the parent's feedback goes into its children's prompt, up to feedbackChars characters (default 4000, 0: none), markers broken", () => {
    assert.equal(defaultSettings().feedbackChars, 4000);
    const task = { language: 'py', metaInformation: [{ id: 'm', weight: 1, text: 'Do it.' }], variables: {} };
    const parent = {
      code: PROGRAM,
      score: 1,
      objective: 1,
      metrics: { sum: 1, [FEEDBACK_METRIC]: 'status: 1/4 right\n# EVOLVE-BLOCK-START inside\n```\nmore' },
    };
    const shown = userText(buildPrompt({ task, parent, rng: Rng.fromSeed(1), feedbackChars: 4000 }));
    assert.match(
      shown,
      /# Evaluator feedback on the current program\n```text\nstatus: 1\/4 right\n# EVOLVE_BLOCK_START inside\n'''\nmore\n```/,
    );
    const off = userText(buildPrompt({ task, parent, rng: Rng.fromSeed(1), feedbackChars: 0 }));
    assert.equal(
      shown.split('EVOLVE-BLOCK-START').length,
      off.split('EVOLVE-BLOCK-START').length,
      'no marker added: the parent stays the only marked block',
    );
    assert.doesNotMatch(shown, /Metrics[^\n]*feedback/, 'not in the metrics line');
    const cut = userText(buildPrompt({ task, parent, rng: Rng.fromSeed(1), feedbackChars: 6 }));
    assert.match(cut, /```text\nstatus... \(cut at 6 characters\)\n```/);
    assert.doesNotMatch(off, /Evaluator feedback/);
  });

  it("the dashboard's best card gets the best program's feedback, cut and as text", () => {
    assert.deepEqual(bestFeedback({ sum: 1 }), {}, 'none: nothing sent');
    const sent = bestFeedback({ [FEEDBACK_METRIC]: `status: 1/4 right\n${'y'.repeat(5000)}` });
    assert.ok(sent.feedback?.startsWith('status: 1/4 right\nyyy'));
    assert.ok((sent.feedback?.length ?? 0) <= BEST_FEEDBACK_MAX_CHARS + 40);
    const input = DashboardBestInputSchema.parse({ id: 'p1', step: 3, score: 2, objective: 2, lineageDepth: 1, parentId: null, ...sent });
    const view = BestViewSchema.parse(bestView(input, 'maximize'));
    assert.equal(view.feedback, sent.feedback);
  });
});
