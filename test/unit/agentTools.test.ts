// The agent tool table (src/engine/agentTools/definitions.ts) is the one
// source of the VS Code language-model tools: package.json says what it says
// (npx tsx scripts/sync-agent-tools.ts), each tool that changes a run has a
// confirmation that names the run and what changes, and the diff an agent
// reads is a unified diff.
import * as assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  AGENT_TOOL_INPUTS,
  AGENT_TOOL_NAMES,
  AGENT_TOOLS,
  agentToolJsonSchema,
  contributedLanguageModelTools,
  contributedMcpServerDefinitionProviders,
} from '../../src/engine/agentTools/definitions';
import { unifiedLineDiff } from '../../src/engine/common/lineDiff';

describe('agent tool table', () => {
  it('package.json contributes exactly the tools of the table (npx tsx scripts/sync-agent-tools.ts)', () => {
    const manifest = JSON.parse(readFileSync(join(__dirname, '../../package.json'), 'utf8'));
    assert.deepEqual(manifest.contributes.languageModelTools, contributedLanguageModelTools());
    assert.deepEqual(manifest.contributes.mcpServerDefinitionProviders, contributedMcpServerDefinitionProviders());
    assert.deepEqual(manifest.contributes.modelContextServerCollections, contributedMcpServerDefinitionProviders());
    assert.deepEqual(
      manifest.contributes.languageModelTools.map((t: { name: string }) => t.name),
      AGENT_TOOL_NAMES.map((n) => `thetaevolve_${n}`),
    );
  });

  it('has the fifteen tools of the issue, each schema an object that takes `run` (but list_runs)', () => {
    assert.deepEqual(AGENT_TOOL_NAMES, [
      'list_runs',
      'run_status',
      'get_program',
      'get_lineage',
      'get_blame',
      'diff_programs',
      'set_guidance',
      'clear_guidance',
      'add_program',
      'ban_program',
      'unban_program',
      'pin_program',
      'pause_run',
      'resume_run',
      'stop_run',
    ]);
    for (const name of AGENT_TOOL_NAMES) {
      const schema = agentToolJsonSchema(name) as { type: string; properties: Record<string, unknown> };
      assert.equal(schema.type, 'object', name);
      assert.equal('run' in schema.properties, name !== 'list_runs', name);
    }
  });

  it('asks for confirmation exactly for the tools that change a run, naming the run and the change', () => {
    for (const name of AGENT_TOOL_NAMES) {
      const tool = AGENT_TOOLS[name];
      assert.equal(tool.confirmation !== undefined, tool.mutating, name);
    }
    const ban = AGENT_TOOLS.ban_program.confirmation?.(AGENT_TOOL_INPUTS.ban_program.parse({ program: 'a1', descendants: true }), 'run-7');
    assert.equal(
      ban,
      'Ban program a1 and its live descendants in run run-7: from the next step on they are never a parent, an inspiration or a rollout.',
    );
    const pin = AGENT_TOOLS.pin_program.confirmation?.(AGENT_TOOL_INPUTS.pin_program.parse({ program: 'b', share: 0.5, steps: 3 }), 'r');
    assert.equal(pin, "Pin program b in run r as the parent of 50% of each step's prompts for 3 steps from the next step on.");
    const guidance = AGENT_TOOLS.set_guidance.confirmation?.({ text: 'Use symmetry.' }, 'r');
    assert.match(guidance ?? '', /Set the guidance of run r .*\n\nUse symmetry\.$/s);
  });

  it('refuses guidance over the limit and ids that are not ids, in the schema the agent is shown', () => {
    assert.equal(AGENT_TOOL_INPUTS.set_guidance.safeParse({ text: 'x'.repeat(8_001) }).success, false);
    assert.equal(AGENT_TOOL_INPUTS.ban_program.safeParse({ program: 'best' }).success, false);
    assert.equal(AGENT_TOOL_INPUTS.get_program.safeParse({ program: 'best' }).success, true);
    const schema = agentToolJsonSchema('set_guidance') as { properties: { text: { maxLength: number } } };
    assert.equal(schema.properties.text.maxLength, 8_000);
  });

  it('diffs programs as a unified diff with context, and equal texts as nothing', () => {
    const before = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j'];
    const after = ['a', 'b', 'C', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k'];
    assert.equal(unifiedLineDiff(before, before), '');
    assert.equal(
      unifiedLineDiff(before, after, 1),
      ['@@ -2,3 +2,3 @@', ' b', '-c', '+C', ' d', '@@ -10,1 +10,2 @@', ' j', '+k'].join('\n'),
    );
    assert.equal(unifiedLineDiff([], ['x']), '@@ -0,0 +1,1 @@\n+x');
  });
});
