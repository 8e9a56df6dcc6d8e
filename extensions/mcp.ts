/**
 * MCP servers as pi tools. The host lists the servers this worker may use in
 * ROSTER_MCP_JSON (its `kind = "mcp"` connections and worker.toml `[[mcp]]`);
 * at start each is connected and its tools registered as `<server>__<tool>`
 * with the server's JSON Schema (made safe) as parameters. A server that is
 * down, slow or hostile costs at most the listing deadline at start, and a
 * note in the system prompt says what happened; a call that fails comes back
 * as an error the model reads. Nothing here decides anything: the gateway
 * judges, credentials and records every request a remote server gets, and a
 * stdio server's own traffic goes through the same door.
 */
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Type } from "@sinclair/typebox";
import type { Connected, Limits } from "./lib/mcp/connect.ts";
import { renderFailure, renderResult } from "./lib/mcp/result.ts";
import { readServers, type ServerEntry } from "./lib/mcp/servers.ts";
import { shapeTools } from "./lib/mcp/tool-shape.ts";
import { guarded } from "./lib/tool-guard.ts";

// The SDK loads only when this run has MCP servers: every run pays pi's start.
const client = () => import("./lib/mcp/connect.ts");

async function register(
  pi: ExtensionAPI,
  server: ServerEntry,
  limits: Limits,
  notes: string[],
  open: Connected[],
): Promise<void> {
  let connected: Connected;
  try {
    const { connectServer } = await client();
    connected = await connectServer(server, {
      ...limits,
      ...(server.callTimeoutSecs ? { callMs: server.callTimeoutSecs * 1000 } : {}),
    });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    notes.push(`${server.name}: unavailable, no tools from it this run (${message.slice(0, 500)})`);
    return;
  }
  open.push(connected);
  const shaped = shapeTools(server.name, connected.tools);
  notes.push(...shaped.notes);
  for (const tool of shaped.tools) {
    try {
      pi.registerTool({
        name: tool.name,
        label: tool.name,
        description: tool.description,
        parameters: Type.Unsafe<Record<string, unknown>>(tool.parameters),
        async execute(_id, params, signal) {
          const args = typeof params === "object" && params !== null ? { ...params } : {};
          let result: unknown;
          try {
            result = await connected.call(tool.serverTool, args, signal);
          } catch (error) {
            throw new Error(renderFailure(server.name, tool.serverTool, error));
          }
          const { text, isError } = renderResult(result);
          if (isError) throw new Error(`the tool reported an error: ${text}`);
          return { content: [{ type: "text", text }], details: { server: server.name } };
        },
      });
    } catch (error) {
      notes.push(`${server.name}: tool ${tool.name} skipped (${String(error).slice(0, 200)})`);
    }
  }
  notes.push(`${server.name}: ${shaped.tools.length} tools (${server.name}__…)`);
}

async function loadMcp(pi: ExtensionAPI): Promise<void> {
  const { servers, notes } = readServers(process.env.ROSTER_MCP_JSON);
  if (servers.length === 0 && notes.length === 0) return;
  const limits = (await client()).DEFAULT_LIMITS;
  const open: Connected[] = [];
  // all at once: a dead server delays the start by one listing deadline, not one each
  await Promise.all(servers.map((server) => register(pi, server, limits, notes, open)));
  pi.on("session_shutdown", async () => {
    await Promise.all(open.map((server) => server.close()));
  });
  const note = `\n\nMCP servers this run (their tools are named <server>__<tool>; a refusal names the rule that refused it — don't retry a refused call):\n${notes.map((line) => `- ${line}`).join("\n")}`;
  pi.on("before_agent_start", (event) => ({ systemPrompt: `${event.systemPrompt}${note}` }));
}

// every tool call runs guarded: an error its work raises later ends that call, not the run
export default guarded("mcp", loadMcp);
