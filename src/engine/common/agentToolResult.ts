// What an agent tool answers (docs/architecture.md "Agents"): a short text for
// the model and people, and the facts as compact JSON; or, refused, the text
// naming the problem (nothing changed). One shape for the MCP server and the
// editor's language-model tools (the engine worker sends it to the host).
import { z } from 'zod';

export const AgentToolResultSchema = z.union([
  z.object({ ok: z.literal(true), text: z.string(), data: z.record(z.string(), z.unknown()) }),
  z.object({ ok: z.literal(false), text: z.string() }),
]);
export type AgentToolResult = z.infer<typeof AgentToolResultSchema>;

/** The JSON part of a result as the agent reads it: compact, one line. */
export function agentToolResultJson(result: AgentToolResult): string {
  return JSON.stringify(result.ok ? result.data : { error: result.text });
}
