// Runs inside the extension host: the agent tools (issue 41) as VS Code
// language-model tools, each called through vscode.lm.invokeTool as an agent
// calls it, on the live run of this window and then on that run stopped. Read
// tools answer at once; a tool that changes a run asks first: invoked outside a
// chat, VS Code 1.100 asks in a modal dialog of the workbench, which the
// in-host runner answers Yes (test/support/runHostTests.ts) and logs, so the
// test checks the dialog said what prepareInvocation says will change.
import assert from 'node:assert/strict';
import * as vscode from 'vscode';
import { AGENT_TOOL_NAMES, type AgentToolName, agentToolJsonSchema, languageModelToolName } from '../../src/engine/agentTools/definitions';
import type { ThetaEvolveApi } from '../../src/extension';
import { agentToolConfirmation } from '../../src/vscode/agentTools';
import { waitFor } from '../support/waitFor';
import { answeredDialogs, closed, liveRun, needDialogRunner, nextEvent, offlineRuns, skipBecause, stopRun } from './support';

/** The text inside an agent tool's data block (the agent reads code between the block's two marker lines). */
function dataOf(value: unknown): string {
  const match = /^<<<DATA n=([0-9a-f]+): [^\n]*\n([\s\S]*)\nDATA n=\1>>>$/.exec(String(value));
  assert.ok(match, `not a data block: ${String(value).slice(0, 80)}`);
  return match[2] ?? '';
}

const GUIDANCE = 'Agent guidance: keep x an integer.';

interface Answer {
  text: string;
  json: Record<string, unknown>;
}

/** Invoke one of our tools as an agent does (no chat: no invocation token); its short text and its JSON. */
async function invoke(name: AgentToolName, input: Record<string, unknown>): Promise<Answer> {
  const result = await vscode.lm.invokeTool(languageModelToolName(name), { input, toolInvocationToken: undefined });
  const texts = result.content.map((part) => (part instanceof vscode.LanguageModelTextPart ? part.value : ''));
  return { text: texts[0] ?? '', json: JSON.parse(texts[1] ?? 'null') as Record<string, unknown> };
}

const words = (text: string): string => text.replace(/\s+/g, ' ').trim();

describe('agent tools through vscode.lm.invokeTool (a live run and a stopped one)', function () {
  this.timeout(180_000);
  let theta: ThetaEvolveApi;
  let runId = '';
  let dbFile = '';

  /** A tool that changes the run: the confirmation asked in the dialog is prepareInvocation's, answered Yes; then its answer. */
  async function confirmed(name: AgentToolName, input: Record<string, unknown>): Promise<Answer> {
    const expected = await agentToolConfirmation(theta.controller, name, input);
    assert.ok(expected, `${name} asks for confirmation`);
    const before = answeredDialogs().length;
    const answer = await invoke(name, input);
    const dialog = answeredDialogs()[before];
    assert.ok(dialog, `${name}: no confirmation dialog was answered`);
    assert.equal(dialog.message, expected.title);
    assert.equal(words(dialog.detail), words(typeof expected.message === 'string' ? expected.message : expected.message.value));
    return answer;
  }

  before(async function () {
    needDialogRunner(this);
    theta = await offlineRuns({ batchSize: 2, samplesPerPrompt: 2, evaluationConcurrency: 2, preset: 'small' });
  });

  after(async () => {
    if (theta) await stopRun(theta.controller);
  });

  it('lists the tools of the table in vscode.lm.tools, with its schemas; the read-only ones ask no confirmation', async () => {
    const ours = vscode.lm.tools.filter((tool) => tool.name.startsWith('thetaevolve_'));
    assert.deepEqual(ours.map((tool) => tool.name).sort(), AGENT_TOOL_NAMES.map(languageModelToolName).sort());
    for (const name of AGENT_TOOL_NAMES) {
      const tool = ours.find((t) => t.name === languageModelToolName(name));
      assert.deepEqual(tool?.inputSchema, agentToolJsonSchema(name), name);
    }
    for (const name of ['list_runs', 'run_status', 'get_program', 'get_lineage', 'get_blame', 'diff_programs'] as const)
      assert.equal(await agentToolConfirmation(theta.controller, name, { program: 'best', from: '0', to: 'best' }), undefined, name);
  });

  it("every tool on the live run of this window: read, steered at its next step (recorded as the agent's), paused, resumed, stopped", async () => {
    const { run } = await liveRun(theta, 'agents-live', { show: true });
    runId = run.runId;
    dbFile = run.dbFile;

    const runs = await invoke('list_runs', {});
    assert.ok(
      (runs.json.runs as { id: string; state: string }[]).some((r) => r.id === runId && r.state === 'live'),
      runs.text,
    );
    const status = await invoke('run_status', { run: runId });
    assert.equal(status.json.state, 'live');
    assert.match(String(status.json.waitingFor), /step \d+/);
    const best = await invoke('get_program', { run: runId, program: 'best' });
    assert.match(String(best.json.code), /EVOLVE-BLOCK-START/);
    const lineage = await invoke('get_lineage', { run: runId, program: 'best' });
    assert.ok((lineage.json.programs as unknown[]).length >= 1);
    const blame = await invoke('get_blame', { run: runId, program: 'best' });
    assert.ok((blame.json.lines as unknown[]).length > 0);
    const diff = await invoke('diff_programs', { run: runId, from: '0', to: 'best' });
    assert.match(String(diff.json.diff), /^<<<DATA n=[0-9a-f]+: [^\n]*\n--- 0\n\+\+\+ /);

    const guided = nextEvent(theta.controller, (e) => e.type === 'steered' && e.kind === 'guidance', 'the guidance to be taken');
    assert.equal((await confirmed('set_guidance', { run: runId, text: GUIDANCE })).json.queued, true);
    await guided;
    const code = dataOf(best.json.code).replace(/return [^\n]*/, 'return 3 + 0 * 104729');
    const entered = nextEvent(theta.controller, (e) => e.type === 'steered' && e.kind === 'add', 'the program to enter');
    assert.equal((await confirmed('add_program', { run: runId, code, note: 'agent' })).json.queued, true);
    const add = await entered;
    assert.ok(add.type === 'steered' && add.ok && add.id !== null, JSON.stringify(add));
    assert.equal((await theta.controller.query({ kind: 'program', dbFile, programId: add.id }))?.origin, 'agent');
    for (const [name, input, kind] of [
      ['ban_program', { run: runId, program: add.id }, 'ban'],
      ['unban_program', { run: runId, program: add.id }, 'unban'],
      ['pin_program', { run: runId, program: add.id, share: 0.5, steps: 2 }, 'pin'],
      ['clear_guidance', { run: runId }, 'clearGuidance'],
    ] as const) {
      const taken = nextEvent(theta.controller, (e) => e.type === 'steered' && e.kind === kind, `${name} to be taken`);
      assert.equal((await confirmed(name, input)).json.queued, true, name);
      const event = await taken;
      assert.ok(event.type === 'steered' && event.ok, `${name}: ${JSON.stringify(event)}`);
    }

    const paused = nextEvent(theta.controller, (e) => e.type === 'paused', 'the run to pause');
    await confirmed('pause_run', { run: runId });
    await paused;
    await waitFor(() => theta.controller.active?.state === 'paused', { what: 'the window to show the run paused' });
    const resumed = nextEvent(theta.controller, (e) => e.type === 'resumed', 'the run to resume');
    await confirmed('resume_run', { run: runId });
    await resumed;
    const done = closed(theta.controller);
    await confirmed('stop_run', { run: runId });
    assert.equal((await done).runId, runId);
  });

  it("every tool on the same run stopped: changes applied at once as the agent's, pause and resume refused, bad input named", async function () {
    if (!runId) skipBecause(this, 'the live-run test did not get a run');
    const runs = await invoke('list_runs', {});
    assert.ok((runs.json.runs as { id: string; state: string }[]).some((r) => r.id === runId && r.state === 'stopped'));
    assert.equal((await invoke('run_status', { run: runId })).json.state, 'stopped');
    const best = await invoke('get_program', { run: runId, program: 'best' });
    await invoke('get_lineage', { run: runId, program: 'best' });
    await invoke('get_blame', { run: runId, program: 'best' });
    await invoke('diff_programs', { run: runId, from: '0', to: 'best' });

    const guidance = await confirmed('set_guidance', { run: runId, text: GUIDANCE });
    assert.equal(typeof guidance.json.step, 'number');
    const code = dataOf(best.json.code).replace(/return [^\n]*/, 'return 3 + 0 * 1299709');
    const added = await confirmed('add_program', { run: runId, code });
    assert.equal(typeof added.json.id, 'string', added.text);
    const id = String(added.json.id);
    assert.equal((await theta.controller.query({ kind: 'program', dbFile, programId: id }))?.origin, 'agent');
    assert.deepEqual((await confirmed('ban_program', { run: runId, program: id })).json.ids, [id]);
    assert.deepEqual((await confirmed('unban_program', { run: runId, program: id })).json.ids, [id]);
    assert.equal(typeof (await confirmed('pin_program', { run: runId, program: id })).json.step, 'number');
    assert.equal(typeof (await confirmed('clear_guidance', { run: runId })).json.step, 'number');

    // Refused, naming the problem: the database unchanged.
    const programs = (await theta.controller.query({ kind: 'summary', dbFile })).programs;
    await assert.rejects(confirmed('pause_run', { run: runId }), /not running \(stopped after step \d+\)/);
    await assert.rejects(confirmed('resume_run', { run: runId }), /an agent does not start runs/);
    await assert.rejects(confirmed('stop_run', { run: runId }), /not running/);
    await assert.rejects(confirmed('ban_program', { run: runId, program: 'zzzz' }), /no program zzzz/);
    await assert.rejects(confirmed('add_program', { run: runId, code: 'x = 1\n' }), /EVOLVE-BLOCK/);
    await assert.rejects(invoke('get_program', { run: 'no-such-run', program: 'best' }), /no run "no-such-run"/);
    assert.equal((await theta.controller.query({ kind: 'summary', dbFile })).programs, programs);
  });
});
