// Runs inside the extension host: the editor's order for the run's
// interpreter (docs/architecture.md "The researcher's Python"). Each venv
// sits below a private (0700) folder and holds the only copy of the module
// the task's program and evaluator import; the run announces the one it
// uses and its starting program scores (the module imported in the
// sandbox). The Python extension is the stand-in of test/host/pythonExtension.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as vscode from 'vscode';
import type { EngineEvent } from '../../src/engine/common/events';
import type { ThetaEvolveApi } from '../../src/extension';
import { PYTHON_EXTENSION_ID } from '../../src/vscode/pythonInterpreter';
import type { StandInPythonApi } from './pythonExtension/extension';
import { api, closed, nextEvent, skipBecause, workspaceDir } from './support';

const MODULE = 'thetaevolve_host_private_module';

describe("the researcher's Python in the editor", function () {
  this.timeout(120_000);
  let theta: ThetaEvolveApi;
  let standIn: StandInPythonApi['standIn'];
  let privateDir: string;
  let program: vscode.Uri;
  const venvs: Record<'setting' | 'extension' | 'defaultPath', string> = { setting: '', extension: '', defaultPath: '' };

  before(async function () {
    const extension = vscode.extensions.getExtension<StandInPythonApi>(PYTHON_EXTENSION_ID);
    if (!extension) skipBecause(this, 'the stand-in Python extension is installed only by npm run test:host (code-server)');
    standIn = (extension.isActive ? extension.exports : await extension.activate()).standIn;
    theta = await api();
    privateDir = mkdtempSync(join(tmpdir(), 'thetaevolve-host-python-'));
    for (const name of Object.keys(venvs) as (keyof typeof venvs)[]) {
      const venv = join(privateDir, name);
      execFileSync('/usr/bin/python3', ['-m', 'venv', '--without-pip', venv]);
      const purelib = execFileSync(join(venv, 'bin', 'python'), ['-c', 'import sysconfig; print(sysconfig.get_paths()["purelib"])'], {
        encoding: 'utf8',
      }).trim();
      writeFileSync(join(purelib, `${MODULE}.py`), 'def double(x):\n    return 2 * x\n');
      venvs[name] = join(venv, 'bin', 'python');
    }
    const taskDir = join(workspaceDir(), 'private-module');
    mkdirSync(taskDir, { recursive: true });
    writeFileSync(
      join(taskDir, 'task.json'),
      JSON.stringify({
        name: 'private-module',
        title: 'Private module',
        direction: 'maximize',
        initialProgram: 'program.py',
        candidate: { command: ['{python}', '{program}'], runtimeLimitSec: 30 },
        evaluator: { command: ['{python}', '{taskDir}/evaluate.py', '{solution}'], timeLimitSec: 30 },
        metaInformation: [{ id: 'only', weight: 1, text: 'Make the number larger.' }],
      }),
    );
    writeFileSync(
      join(taskDir, 'program.py'),
      `import ${MODULE}\n# EVOLVE-BLOCK-START\nx = 3\n# EVOLVE-BLOCK-END\nopen("solution.json", "w").write(str(${MODULE}.double(x)))\n`,
    );
    writeFileSync(
      join(taskDir, 'evaluate.py'),
      `import json, sys\nimport ${MODULE}\nprint(json.dumps({"valid": True, "objective": float(open(sys.argv[1]).read()), "metrics": {}}))\n`,
    );
    program = vscode.Uri.file(join(taskDir, 'program.py'));
    const config = vscode.workspace.getConfiguration('thetaevolve');
    const target = vscode.ConfigurationTarget.Workspace;
    await config.update('sampler', 'mutate', target);
    await config.update('batchSize', 1, target);
    await config.update('samplesPerPrompt', 1, target);
    await theta.rememberTaskFor(program, join(taskDir, 'task.json'));
  });

  after(async () => {
    standIn?.setActiveInterpreter(null);
    await vscode.workspace.getConfiguration('thetaevolve').update('python', undefined, vscode.ConfigurationTarget.Global);
    await vscode.workspace.getConfiguration('python').update('defaultInterpreterPath', undefined, vscode.ConfigurationTarget.Global);
    if (privateDir) rmSync(privateDir, { recursive: true, force: true });
  });

  /** Start Run on the program: the interpreter run_started names, once its starting program scored. */
  async function interpreterOfRun(): Promise<{ executable: string; source: string }> {
    const started = nextEvent(theta.controller, (e) => e.type === 'run_started', 'run_started');
    const initial = nextEvent(
      theta.controller,
      (e) => e.type === 'evaluation_finished' && e.jobKey === 'initial',
      'the starting program scored',
    );
    await vscode.window.showTextDocument(program);
    await vscode.commands.executeCommand('thetaevolve.startRun', program);
    const event = (await started) as Extract<EngineEvent, { type: 'run_started' }>;
    const scored = (await initial) as Extract<EngineEvent, { type: 'evaluation_finished' }>;
    const done = closed(theta.controller);
    await vscode.commands.executeCommand('thetaevolve.stopRun');
    await done;
    assert.equal(scored.outcome, 'valid', `the module imported in the sandbox: ${scored.reason ?? ''}`);
    assert.ok(event.python, 'run_started names the interpreter');
    return { executable: event.python.executable, source: event.python.source };
  }

  it('python.defaultInterpreterPath, when the Python extension has no environment', async () => {
    await vscode.workspace
      .getConfiguration('python')
      .update('defaultInterpreterPath', venvs.defaultPath, vscode.ConfigurationTarget.Global);
    assert.deepEqual(await interpreterOfRun(), { executable: venvs.defaultPath, source: 'python.defaultInterpreterPath' });
  });

  it("the Python extension's active environment for the program's folder comes before it", async () => {
    standIn.setActiveInterpreter(venvs.extension);
    const asked = standIn.askedFor.length;
    assert.deepEqual(await interpreterOfRun(), { executable: venvs.extension, source: 'python extension' });
    assert.ok(standIn.askedFor.slice(asked).includes(program.toString()), `asked for ${standIn.askedFor.slice(asked).join(', ')}`);
  });

  it('the setting thetaevolve.python comes first, and a workspace cannot set it', async () => {
    const config = vscode.workspace.getConfiguration('thetaevolve');
    await assert.rejects(Promise.resolve(config.update('python', venvs.extension, vscode.ConfigurationTarget.Workspace)));
    await config.update('python', venvs.setting, vscode.ConfigurationTarget.Global);
    assert.deepEqual(await interpreterOfRun(), { executable: venvs.setting, source: 'thetaevolve.python' });
  });
});
