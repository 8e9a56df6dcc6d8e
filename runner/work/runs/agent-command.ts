import { RUN_CLAUDE, RUN_ROSTER_MCP } from "../../boundary/box/layout.ts";
import { AGENTS } from "../../ground/config/agent.ts";
import type { AgentKind } from "../../ground/config/agent-schema.ts";
import type { WorkerView } from "../../ground/config/worker-view.ts";
import type { CompiledPrompt } from "../prompt/compile.ts";
import { codexCommand } from "./codex-command.ts";
import { type EngineDrive, piCommand } from "./engine-prompt.ts";

/**
 * The command line of the worker's agent for this run (docs/agents.md): pi's
 * own, or Claude Code's or Codex's told the same things — the run's part of
 * the system prompt, the task, the model — with our tools from the MCP server
 * beside run-pi (engine/roster-mcp.ts), and nothing of its own that would
 * reach past the door on its own terms.
 */

/** Claude Code's built-in web tools: fetched or searched from Anthropic's side, past the door's web policy. */
const CLAUDE_REFUSED_TOOLS = ["WebFetch", "WebSearch"];

/**
 * The agent that runs this drive of the worker's box: its own, but for a
 * warm session (rpc mode) of an agent whose turns roster can't feed one by
 * one (config/agent.ts `sessions`; every agent's can today), which runs pi.
 */
export function runAgent(worker: WorkerView, mode: EngineDrive["mode"]): AgentKind {
  return mode === "rpc" && !AGENTS[worker.agent].sessions ? "pi" : worker.agent;
}

export function agentCommand(
  worker: WorkerView,
  mode: EngineDrive["mode"],
  prompt: CompiledPrompt,
): string[] {
  const agent = runAgent(worker, mode);
  if (agent === "claude") return claudeCommand(worker, mode, prompt);
  if (agent === "codex") return codexCommand(worker, mode, prompt);
  return piCommand(mode, prompt);
}

function claudeCommand(
  worker: WorkerView,
  mode: EngineDrive["mode"],
  prompt: CompiledPrompt,
): string[] {
  const mcp = { mcpServers: { roster: { type: "stdio", command: RUN_ROSTER_MCP, args: [] } } };
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
  // a session's turns arrive on stdin, one JSON line each (sessions/pi-rpc.ts)
  if (mode === "rpc") return [...args, "--input-format", "stream-json"];
  // after `--`, a task that starts with "-" is still the task
  return [...args, "--", prompt.input];
}
