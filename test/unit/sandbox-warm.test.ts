// Warm interpreters (src/engine/sandbox/warmPool.ts): a candidate run in a
// sandbox started ahead of need behaves as one started for it, and shares
// nothing with the candidates before and after it.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { Evaluator, type EvaluatorOptions } from '../../src/engine/sandbox/evaluator';
import type { ProcessOutcome } from '../../src/engine/sandbox/process';
import {
  keepingAlive,
  learnedModules,
  modulesToWarm,
  warmableCommand,
  warmInput,
  type WarmProcess,
  WarmRefill,
} from '../../src/engine/sandbox/warmPool';
import { loadTask, type Task } from '../../src/engine/task/task';
import { processesMatching } from '../fixtures/hostile/processes';
import { tempDir } from '../support/tempDirs';
import { workScriptWarmPool } from '../support/workScriptWarmPool';

const FIXTURE = join(__dirname, '../fixtures/hostile');
const MARKER = `te-warm-candidate-${process.pid}-${Date.now()}`;
const OPTIONS: EvaluatorOptions = {
  concurrency: 2,
  memoryLimitMb: 2048,
  outputLimitBytes: 64 * 1024,
  runtimeLimitSec: 5,
  warmInterpreters: 'auto',
};
const WRITE = (value: number): string => `with open("solution.json", "w") as f:\n    f.write('{"value": ${value}}')\n`;

describe('sandbox: warm interpreters', function () {
  this.timeout(60000);
  let task: Task;
  let evaluator: Evaluator;

  before(async function () {
    const fixture = await loadTask(FIXTURE);
    task = { ...fixture, candidateCommand: [...fixture.candidateCommand, MARKER] };
    evaluator = new Evaluator(task, OPTIONS);
    if (!evaluator.warmInterpreters) {
      console.log(`      (skipped: warm interpreters need the bwrap sandbox: ${evaluator.isolation.summary})`);
      this.skip();
    }
  });
  after(async () => {
    await evaluator?.close();
  });

  it('warms only `<python> <script.py>` commands, and imports the program’s modules ahead', () => {
    assert.deepEqual(warmableCommand(['/usr/bin/python3', '/p/program.py', 'x']), {
      interpreter: '/usr/bin/python3',
      script: '/p/program.py',
      args: ['x'],
    });
    assert.equal(warmableCommand(['/opt/venv/bin/python3.12', 'run.py'])?.interpreter, '/opt/venv/bin/python3.12');
    assert.equal(warmableCommand(['/usr/bin/python3', '-u', 'program.py']), null);
    assert.equal(warmableCommand(['/usr/bin/node', 'program.js']), null);
    assert.deepEqual(modulesToWarm('from __future__ import annotations\nimport scipy.optimize\nfrom math import pi\n  import os\n'), [
      'scipy',
      'math',
    ]);
    // numpy only once something imports it (unused, importing it ahead costs each warm process CPU a cold one would not spend).
    assert.deepEqual(learnedModules('import json\n', []), []);
    assert.deepEqual(learnedModules('import json\n  import numpy as np\n', []), ['numpy']);
    assert.deepEqual(learnedModules('import numpy as np\n', ['numpy']), []);
  });

  it("runs the candidate as its own script: argv, __file__, __main__, its command line, numpy already loaded once candidates import it; idle ones carry no candidate's arguments", async () => {
    await evaluator.warmed();
    assert.deepEqual(processesMatching(MARKER), [], 'an idle warm process carries the candidate command');
    // Two candidates importing numpy use the two warmed before; those started after them import it ahead.
    const numpy = 'import numpy\n' + WRITE(1);
    const imported = await Promise.all([evaluator.evaluate(numpy), evaluator.evaluate(numpy)]);
    for (const r of imported) assert.equal(r.status, 'ok', r.reason);
    await evaluator.warmed();
    const result = await evaluator.evaluate(
      'import sys\n' +
        'print("argv", sys.argv)\n' +
        'print("file", __file__, __name__)\n' +
        'print("warm", "numpy" in sys.modules)\n' +
        'print("cmdline", open("/proc/self/cmdline", "rb").read().rstrip(b"\\0").split(b"\\0"))\n' +
        WRITE(3),
    );
    assert.equal(result.status, 'ok', result.reason);
    assert.match(result.stdout, new RegExp(`argv \\['/sandbox/program/program.py', '${MARKER}'\\]`));
    assert.match(result.stdout, /file \/sandbox\/program\/program.py __main__/);
    assert.match(result.stdout, /warm True/);
    assert.match(result.stdout, new RegExp(`cmdline \\[b'/usr/bin/python3', b'/sandbox/program/program.py', b'${MARKER}'\\]`));
    assert.deepEqual(processesMatching(MARKER), [], 'a candidate process outlived its evaluation');
  });

  it('shares nothing between candidates: files, environment, modules and processes of one are not there for the next', async () => {
    const first = await evaluator.evaluate(
      'import os, sys, subprocess\n' +
        'open("/tmp/left-behind", "w").write("x")\n' +
        'open("left-behind", "w").write("x")\n' +
        'os.environ["LEFT_BEHIND"] = "1"\n' +
        'sys.modules["left_behind"] = sys\n' +
        `subprocess.Popen(["/bin/sleep", "30"], start_new_session=True)\n` +
        WRITE(1),
    );
    assert.equal(first.status, 'ok', first.reason);
    const second = await evaluator.evaluate(
      'import os, sys\n' +
        'seen = [p for p in ("/tmp/left-behind", "left-behind") if os.path.exists(p)]\n' +
        'seen += ["env"] if "LEFT_BEHIND" in os.environ else []\n' +
        'seen += ["module"] if "left_behind" in sys.modules else []\n' +
        'seen += [p for p in os.listdir("/proc") if p.isdigit() and b"sleep" in open(f"/proc/{p}/cmdline", "rb").read()]\n' +
        'if seen:\n' +
        '    raise SystemExit(f"seen: {seen}")\n' +
        WRITE(2),
    );
    assert.equal(second.status, 'ok', second.reason);
    assert.equal(second.objective, 2);
  });

  it("finishes as Python would: an unclosed file, a non-daemon thread's write and an atexit handler all land; exit codes and messages are the program's", async () => {
    const unclosed = await evaluator.evaluate('f = open("solution.json", "w")\nf.write(\'{"value": 5}\')\n');
    assert.equal(unclosed.objective, 5, unclosed.reason);
    const thread = await evaluator.evaluate(
      'import threading, time\n' +
        'def later():\n' +
        '    time.sleep(0.2)\n' +
        `    ${WRITE(6).replace(/\n {4}/, '\n        ')}` +
        'threading.Thread(target=later).start()\n',
    );
    assert.equal(thread.objective, 6, thread.reason);
    const atExit = await evaluator.evaluate(
      `import atexit\ndef write():\n    ${WRITE(7).replace(/\n {4}/, '\n        ')}atexit.register(write)\n`,
    );
    assert.equal(atExit.objective, 7, atExit.reason);
    const message = await evaluator.evaluate('import sys\nsys.exit("gave up")\n');
    assert.equal(message.status, 'no_solution');
    assert.match(message.reason, /code 1/);
    assert.match(message.stderr, /gave up/);
    const code = await evaluator.evaluate('raise SystemExit(9)\n');
    assert.match(code.reason, /code 9/);
    const crash = await evaluator.evaluate('def f():\n    raise ValueError("boom")\nf()\n');
    assert.match(crash.stderr, /^Traceback \(most recent call last\):\n {2}File "\/sandbox\/program\/program.py", line 3/);
    assert.doesNotMatch(crash.stderr, /runpy|<string>/);
  });

  it("scores another system's folder as cold (an OpenEvolve folder with artifacts: its evaluator in the warm candidate's process)", async () => {
    const folder = await loadTask(join(__dirname, '../fixtures/openevolve/disk_radii'));
    const warm = new Evaluator(folder, OPTIONS);
    const cold = new Evaluator(folder, { ...OPTIONS, warmInterpreters: 'off' });
    try {
      const [warmResult, coldResult] = await Promise.all([warm.evaluate(folder.initialProgram), cold.evaluate(folder.initialProgram)]);
      assert.equal(warmResult.status, 'ok', warmResult.reason);
      assert.equal(warmResult.score, coldResult.score);
      // The same metrics but the evaluator's own timing (its feedback names its execution time).
      const { feedback: warmFeedback, ...warmMetrics } = warmResult.metrics;
      const { feedback: coldFeedback, ...coldMetrics } = coldResult.metrics;
      assert.deepEqual(warmMetrics, coldMetrics);
      assert.equal(String(warmFeedback).replace(/[\d.]+s/, 'Ns'), String(coldFeedback).replace(/[\d.]+s/, 'Ns'));
    } finally {
      await warm.close();
      await cold.close();
    }
  });

  it('starts the time limit when the candidate comes, and still stops it there', async () => {
    const result = await evaluator.evaluate('while True:\n    pass\n', {});
    assert.equal(result.status, 'timeout');
    assert.ok((result.metrics.runtime_seconds as number) >= 5, String(result.metrics.runtime_seconds));
  });
});

describe('sandbox: warm processes are refilled only with idle CPU', function () {
  this.timeout(60000);
  it('warms at most cores - busy at once, none while evaluations fill the cores, and a burst beyond the pool finds none (it starts cold)', async () => {
    let created = 0;
    const { command, pool } = workScriptWarmPool(tempDir('te-warm-refill-'), 3, () => created++);
    const refill = new WarmRefill([pool], 2);
    try {
      refill.setBusy(0);
      assert.equal(created, 0, 'nothing is warmed before the refill starts');
      refill.start();
      assert.equal(created, 2, 'two cores: two warming at once, not the whole pool');
      // Two evaluations fill both cores: what they take is not replaced, even once it is warm.
      refill.setBusy(2);
      const first = pool.take() as WarmProcess<ProcessOutcome>;
      const second = pool.take() as WarmProcess<ProcessOutcome>;
      assert.equal(pool.take(), null, 'the pool is empty: that candidate starts cold');
      await keepingAlive(Promise.all([first.ready, second.ready]));
      assert.equal(created, 2, 'a warm process was started while evaluations filled the cores');
      const run = await first.start(warmInput(command, ''));
      assert.equal(run.exitCode, 0, run.stderr);
      assert.match(run.stdout, /worked/);
      second.discard();
      // One evaluation left: one core for warming; none: both, up to the pool's size.
      refill.setBusy(1);
      assert.equal(created, 3);
      refill.setBusy(0);
      assert.equal(created, 4);
      await pool.warmed();
      assert.equal(created, 5);
    } finally {
      await pool.close();
    }
  });

  it('a process whose warm pool closes while its processes warm lives until they are gone (exit 0 meant a run ended before its close)', async () => {
    // Waiting for work, a warm process does not keep this process alive; once killed, it is waited for. It once
    // did not: a CLI run that failed (exit 1) ended with 0 when its last warm process was still dying at the close.
    const child = spawn(process.execPath, ['--import', 'tsx', join(__dirname, '../support/warmPoolCloseChild.ts')], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const code = await new Promise<number | null>((resolveExit) => child.on('close', resolveExit));
    assert.equal(code, 0, out);
    assert.equal(out, 'closed\n', 'close() resolved before the process ended');
  });
});
