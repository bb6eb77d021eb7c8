// The agent tools (src/engine/agentTools/definitions.ts) as VS Code
// language-model tools, for Copilot's agent mode and any extension that calls
// vscode.lm.invokeTool; and, where this VS Code can register MCP servers
// (1.101+, detected at run time: the engine's floor is 1.100), the
// `thetaevolve mcp` server for each workspace folder. docs/architecture.md
// "Agents". Thin: every tool runs in the engine worker (the `agentTool`
// query), never here; a tool that changes a run asks for confirmation first,
// saying exactly what will change, and is refused in an untrusted workspace.
import { join } from 'node:path';
import * as vscode from 'vscode';
import { agentToolResultJson } from '../engine/common/agentToolResult';
import { defaultSettings, type Settings } from '../engine/common/config';
import {
  AGENT_TOOL_INPUTS,
  AGENT_TOOL_NAMES,
  AGENT_TOOLS,
  type AgentToolInput,
  type AgentToolName,
  languageModelToolName,
  MCP_SERVER_PROVIDER_ID,
} from '../engine/agentTools/definitions';
import type { QueryResult } from '../protocol/workerMessages';
import { type RunController, runsDirectoryOfFolder } from './runController';
import { log } from './log';
import { readSettings } from './settings';
import { workspaceRoots } from './runTrust';

/** add_program evaluates in the sandbox before the reply on a stopped run (the task's own timeout bounds that). */
const TOOL_REPLY_TIMEOUT_MS = 15 * 60_000;

function settingsOf(scope: vscode.Uri | undefined): Settings {
  try {
    return readSettings(scope);
  } catch {
    return defaultSettings();
  }
}

/** The runs directory of each workspace folder: the runs the tools see. */
function workspaceRunsDirectories(): string[] {
  return (vscode.workspace.workspaceFolders ?? []).map((folder) => runsDirectoryOfFolder(folder, settingsOf(folder.uri)));
}

/** Run one tool in the engine worker. */
export function invokeAgentTool(controller: RunController, name: AgentToolName, input: unknown): Promise<QueryResult<'agentTool'>> {
  return controller.query(
    {
      kind: 'agentTool',
      tool: name,
      input,
      runsDirectories: workspaceRunsDirectories(),
      workspaceFolders: workspaceRoots(),
      trusted: vscode.workspace.isTrusted,
      settings: settingsOf(vscode.workspace.workspaceFolders?.[0]?.uri),
    },
    { timeoutMs: TOOL_REPLY_TIMEOUT_MS },
  );
}

/**
 * The confirmation of a tool that changes a run (undefined for a read-only
 * one, or input the tool will refuse anyway). The run it names is the one the
 * tool will act on: when the input names none, the only run there is.
 */
export async function agentToolConfirmation(
  controller: RunController,
  name: AgentToolName,
  input: unknown,
): Promise<vscode.LanguageModelToolConfirmationMessages | undefined> {
  const tool = AGENT_TOOLS[name];
  if (!tool.mutating || !tool.confirmation) return undefined;
  const parsed = AGENT_TOOL_INPUTS[name].safeParse(input ?? {});
  if (!parsed.success) return undefined;
  const data = parsed.data as AgentToolInput<AgentToolName> & { run?: string };
  let runName = data.run;
  if (runName === undefined) {
    const listed = await invokeAgentTool(controller, 'list_runs', {});
    const runs = listed.ok ? (listed.data.runs as { id: string }[]) : [];
    runName = runs.length === 1 ? (runs[0] as { id: string }).id : '(none named: the tool will ask for one)';
  }
  const confirmation = tool.confirmation as (input: unknown, runName: string) => string;
  return { title: `ThetaEvolve: ${tool.title}`, message: confirmation(data, runName) };
}

export function registerAgentTools(context: vscode.ExtensionContext, controller: RunController): void {
  // Language-model tools are there from VS Code 1.95 on; a host without them just has none.
  if (typeof vscode.lm?.registerTool !== 'function') return;
  for (const name of AGENT_TOOL_NAMES) {
    context.subscriptions.push(
      vscode.lm.registerTool<Record<string, unknown>>(languageModelToolName(name), {
        prepareInvocation: async (options) => {
          const confirmationMessages = await agentToolConfirmation(controller, name, options.input);
          return {
            invocationMessage: `ThetaEvolve: ${AGENT_TOOLS[name].title}`,
            ...(confirmationMessages ? { confirmationMessages } : {}),
          };
        },
        invoke: async (options) => {
          const result = await invokeAgentTool(controller, name, options.input);
          // A refusal is an error the model reads (VS Code's way for a tool that could not do what was asked).
          if (!result.ok) throw new Error(result.text);
          return new vscode.LanguageModelToolResult([
            new vscode.LanguageModelTextPart(result.text),
            new vscode.LanguageModelTextPart(agentToolResultJson(result)),
          ]);
        },
      }),
    );
  }
  registerMcpServer(context);
}

/** What VS Code 1.101+ offers for MCP servers (absent from the 1.100 API this extension is built against). */
interface McpApi {
  registerMcpServerDefinitionProvider(
    id: string,
    provider: { onDidChangeMcpServerDefinitions?: vscode.Event<void>; provideMcpServerDefinitions(): unknown[] },
  ): vscode.Disposable;
}
type McpStdioServerDefinitionClass = new (
  label: string,
  command: string,
  args?: string[],
  env?: Record<string, string | number | null>,
  version?: string,
) => unknown;

/** The MCP server of each workspace folder's runs, where this VS Code can take it; none in an untrusted workspace. */
function registerMcpServer(context: vscode.ExtensionContext): void {
  const lm = vscode.lm as unknown as Partial<McpApi>;
  const Definition = (vscode as unknown as { McpStdioServerDefinition?: McpStdioServerDefinitionClass }).McpStdioServerDefinition;
  if (typeof lm.registerMcpServerDefinitionProvider !== 'function' || typeof Definition !== 'function') return;
  const changed = new vscode.EventEmitter<void>();
  const cli = join(context.extensionPath, 'dist', 'cli.js');
  const version = String(context.extension.packageJSON.version);
  context.subscriptions.push(
    changed,
    vscode.workspace.onDidGrantWorkspaceTrust(() => changed.fire()),
    vscode.workspace.onDidChangeWorkspaceFolders(() => changed.fire()),
  );
  let registration: vscode.Disposable;
  try {
    registration = lm.registerMcpServerDefinitionProvider(MCP_SERVER_PROVIDER_ID, {
      onDidChangeMcpServerDefinitions: changed.event,
      provideMcpServerDefinitions: () =>
        vscode.workspace.isTrusted
          ? (vscode.workspace.workspaceFolders ?? []).map((folder) => {
              // The extension host's own Node.js (Electron's runs as Node.js with ELECTRON_RUN_AS_NODE).
              const definition = new Definition(
                `ThetaEvolve runs (${folder.name})`,
                process.execPath,
                [cli, 'mcp', '--runs', runsDirectoryOfFolder(folder, settingsOf(folder.uri))],
                { ELECTRON_RUN_AS_NODE: '1' },
                version,
              );
              // Run in the workspace folder: add_program evaluates with a stopped run's task folder only there (or in the runs folder).
              if (folder.uri.scheme === 'file') (definition as { cwd?: vscode.Uri }).cwd = folder.uri;
              return definition;
            })
          : [],
    });
  } catch (err) {
    // An API still changing between VS Code versions: without it the tools above still work, and mcp.json can name the server.
    log().warn(`the MCP server is not offered to this VS Code: ${err instanceof Error ? err.message : String(err)}`);
    return;
  }
  context.subscriptions.push(registration);
}
