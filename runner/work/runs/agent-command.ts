import { ENGINE_DIR, RUN_CLAUDE } from "../../boundary/box/layout.ts";
import type { WorkerView } from "../../ground/config/worker-view.ts";
import type { CompiledPrompt } from "../prompt/compile.ts";
import { type EngineDrive, piCommand } from "./engine-prompt.ts";

/**
 * The command line of the worker's agent for this run (docs/agents.md): pi's
 * own, or Claude Code's or Codex's told the same things — the run's part of
 * the system prompt, the task, the model — with our tools from the MCP server
 * beside run-pi (engine/roster-mcp.ts), and nothing of its own that would
 * reach past the door on its own terms.
 */

/** The box's MCP server of our tools, as each agent is told of it. */
export const ROSTER_MCP = `${ENGINE_DIR}/run-roster-mcp`;

/** Claude Code's built-in web tools: fetched or searched from Anthropic's side, past the door's web policy. */
const CLAUDE_REFUSED_TOOLS = ["WebFetch", "WebSearch"];

export function agentCommand(
  worker: WorkerView,
  mode: EngineDrive["mode"],
  prompt: CompiledPrompt,
): string[] {
  if (worker.agent === "claude") return claudeCommand(worker, mode, prompt);
  return piCommand(mode, prompt);
}

function claudeCommand(
  worker: WorkerView,
  mode: EngineDrive["mode"],
  prompt: CompiledPrompt,
): string[] {
  const mcp = { mcpServers: { roster: { type: "stdio", command: ROSTER_MCP, args: [] } } };
  const args = [
    RUN_CLAUDE,
    "-p",
    "--output-format",
    "stream-json",
    "--verbose",
    // the box is the sandbox: every tool runs without asking (refused as root, and the box is not)
    "--dangerously-skip-permissions",
    "--append-system-prompt",
    prompt.system,
    "--mcp-config",
    JSON.stringify(mcp),
    "--strict-mcp-config",
    ...(worker.model ? ["--model", worker.model.model] : []),
    `--disallowedTools=${CLAUDE_REFUSED_TOOLS.join(",")}`,
  ];
  // a session's turns arrive on stdin, one JSON line each (sessions/claude-stream.ts)
  if (mode === "rpc") return [...args, "--input-format", "stream-json"];
  // after `--`, a task that starts with "-" is still the task
  return [...args, "--", prompt.input];
}
