// `thetaevolve mcp [--runs DIR | --db FILE]`: the agent tools
// (src/engine/agentTools/) served over stdio to any MCP client (VS Code's
// mcp.json, Claude Code, Codex): docs/architecture.md "Agents". stdout is the
// protocol's channel; everything else goes to stderr. It runs until the
// client closes stdin (or SIGINT/SIGTERM).
import { resolve } from 'node:path';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { agentToolResultJson } from '../engine/common/agentToolResult';
import { AGENT_TOOL_NAMES, AGENT_TOOLS, agentToolJsonSchema, DATA_BLOCK_NOTE } from '../engine/agentTools/definitions';
import { runAgentTool } from '../engine/agentTools/handlers';
import { type AgentToolHost, readRunFile } from '../engine/agentTools/host';
import { runsDirectoryOf } from '../engine/runFiles';
import { type ParsedArgs, stringFlag, UsageError } from './args';
import type { CliIO } from './io';
import { settingsFromArgs } from './settingsSources';
import { openTaskEvaluator } from './steer';

declare const __THETAEVOLVE_VERSION__: string | undefined;

export async function mcpCommand(args: ParsedArgs, io: CliIO): Promise<number> {
  const runs = stringFlag(args, 'runs');
  const db = stringFlag(args, 'db');
  if (runs !== undefined && db !== undefined) throw new UsageError('--runs and --db go one at a time');
  const settings = settingsFromArgs(args, io.cwd);
  const host: AgentToolHost = {
    runsDirectories: db !== undefined ? [] : [runs !== undefined ? resolve(io.cwd, runs) : runsDirectoryOf(io.cwd, settings)],
    runFiles: db !== undefined ? [resolve(io.cwd, db)] : [],
    // Whoever started this server chose to let its client steer these runs.
    trusted: true,
    read: readRunFile,
    // The runs folder served is one place its runs' task folders may be (with the working folder and the bundled tasks).
    openEvaluator: (meta) => openTaskEvaluator(meta.taskDir, args, io, 'mcp', runs !== undefined ? [resolve(io.cwd, runs)] : []),
  };
  const server = new Server(
    { name: 'thetaevolve', version: typeof __THETAEVOLVE_VERSION__ === 'string' ? __THETAEVOLVE_VERSION__ : 'dev' },
    {
      capabilities: { tools: {} },
      instructions:
        'ThetaEvolve evolves programs with a language model. list_runs finds the runs; run_status, get_program, get_lineage, get_blame and diff_programs read one; set_guidance, add_program, ban_program, pin_program and the others steer it (on a live run they take effect at its next step). ' +
        DATA_BLOCK_NOTE,
    },
  );
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: AGENT_TOOL_NAMES.map((name) => {
      const tool = AGENT_TOOLS[name];
      return {
        name,
        title: tool.title,
        description: tool.description,
        inputSchema: agentToolJsonSchema(name) as { type: 'object'; [key: string]: unknown },
        annotations: { title: tool.title, readOnlyHint: !tool.mutating, destructiveHint: tool.mutating, openWorldHint: false },
      };
    }),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const result = await runAgentTool(request.params.name, request.params.arguments ?? {}, host);
    return {
      content: [
        { type: 'text' as const, text: result.text },
        { type: 'text' as const, text: agentToolResultJson(result) },
      ],
      ...(result.ok ? { structuredContent: result.data } : {}),
      isError: !result.ok,
    };
  });
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((done) => {
    transport.onclose = () => done();
    process.stdin.once('end', () => done());
    process.stdin.once('close', () => done());
    io.signal.addEventListener('abort', () => done(), { once: true });
  });
  await server.connect(transport);
  io.stderr(
    `thetaevolve mcp: serving ${AGENT_TOOL_NAMES.length} tools over stdio for ${host.runFiles[0] ?? `the runs in ${host.runsDirectories[0]}`}\n`,
  );
  await closed;
  await server.close();
  return 0;
}
