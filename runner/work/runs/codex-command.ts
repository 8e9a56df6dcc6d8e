import { stringify } from "smol-toml";
import { boxEnvNames } from "../../boundary/box/agent-env.ts";
import { BOX_HOME, RUN_CODEX, RUN_ROSTER_MCP } from "../../boundary/box/layout.ts";
import { modelEndpoint } from "../../ground/config/model.ts";
import type { WorkerView } from "../../ground/config/worker-view.ts";
import type { CompiledPrompt } from "../prompt/compile.ts";
import type { EngineDrive } from "./engine-prompt.ts";

/**
 * Codex's command line (docs/agents.md): `codex exec` with JSON events for a
 * one-shot run or a task, `codex app-server` for a warm session (its turns
 * arrive over JSON-RPC on stdin, sessions/codex-app-server.ts). Both are
 * given the model on a provider of roster's own naming (not Codex's
 * built-in OpenAI one, which tries a WebSocket first and asks chatgpt.com for
 * its model list), our tools over MCP, and every switch for Codex's own
 * traffic off. Each setting is one `-c key=value` whose value is TOML,
 * written by a TOML writer so no prompt can end a string early.
 */

/** How long our MCP server may take to list its tools, and one of its calls (fetch_pages renders pages). */
const MCP_START_SECS = 60;
const MCP_CALL_SECS = 900;

/** Codex's features that reach past the model on their own: plugin sync, update prompts, model discovery. */
const CODEX_OFF = ["plugins", "in_app_updates", "api_key_model_discovery"];

/** Where Codex works: the box's workspace, for a run as for a session's thread. */
const CODEX_CWD = `${BOX_HOME}/workspace`;

const setting = (key: string, value: unknown): string[] => [
  "-c",
  `${key}=${stringify({ v: value }).replace(/^v = /, "").trimEnd()}`,
];

/** What both of Codex's modes are told the same way: its provider, its switches off, our tools. */
function codexSettings(worker: WorkerView): string[] {
  const endpoint = worker.model ? modelEndpoint(worker.model) : undefined;
  return [
    // every key below must be one Codex knows
    "--strict-config",
    ...setting("model_provider", "roster"),
    ...setting("model_providers.roster.name", "roster"),
    ...(endpoint ? setting("model_providers.roster.base_url", endpoint.baseUrl) : []),
    // no key variable: the door adds the credential in transit, and a keyless endpoint gets none
    ...setting("model_providers.roster.wire_api", "responses"),
    ...setting("model_providers.roster.request_max_retries", 2),
    ...setting("model_providers.roster.stream_max_retries", 2),
    ...setting("check_for_update_on_startup", false),
    ...setting("analytics.enabled", false),
    ...setting("feedback.enabled", false),
    ...setting("otel.exporter", "none"),
    ...setting("otel.trace_exporter", "none"),
    ...setting("otel.metrics_exporter", "none"),
    // its web search runs at OpenAI, past the door's web policy: ours is web_search over MCP
    ...setting("web_search", "disabled"),
    ...CODEX_OFF.flatMap((feature) => ["--disable", feature]),
    // a refused connection fails the call rather than waiting for a network that won't come
    "--disable",
    "unbounded_connection_retries",
    ...setting("mcp_servers.roster.command", RUN_ROSTER_MCP),
    ...setting("mcp_servers.roster.args", []),
    // Codex starts MCP servers with a scrubbed environment: ours needs the box's own
    ...setting("mcp_servers.roster.env_vars", boxEnvNames(worker)),
    ...setting("mcp_servers.roster.required", true),
    ...setting("mcp_servers.roster.startup_timeout_sec", MCP_START_SECS),
    ...setting("mcp_servers.roster.tool_timeout_sec", MCP_CALL_SECS),
  ];
}

export function codexCommand(
  worker: WorkerView,
  mode: EngineDrive["mode"],
  prompt: CompiledPrompt,
): string[] {
  // the model, the sandbox, approvals and the instructions go in the session's thread/start
  // (codexThread); app-server has no --ignore-user-config, but a box's $HOME starts empty
  if (mode === "rpc") return [RUN_CODEX, "app-server", ...codexSettings(worker)];
  return [
    RUN_CODEX,
    "exec",
    "--json",
    "--color",
    "never",
    "--skip-git-repo-check",
    // the box is the sandbox: Codex's own (bubblewrap) can't make namespaces in it, and isn't needed
    "--dangerously-bypass-approvals-and-sandbox",
    // a config.toml the box wrote is not read
    "--ignore-user-config",
    "-C",
    CODEX_CWD,
    ...(worker.model ? ["-m", worker.model.model] : []),
    ...codexSettings(worker),
    ...setting("developer_instructions", prompt.system),
    // after `--`, a task that starts with "-" is still the task
    "--",
    prompt.input,
  ];
}

/**
 * A session's `thread/start` parameters, `instructions` being the system
 * prompt's part: what exec is told by its flags. The box is the sandbox
 * (Codex's own can't run in it), so commands run without one and nothing
 * waits for an approval no one would give.
 */
export function codexThread(worker: WorkerView, instructions: string): Record<string, unknown> {
  return {
    ...(worker.model ? { model: worker.model.model } : {}),
    cwd: CODEX_CWD,
    approvalPolicy: "never",
    sandbox: "danger-full-access",
    developerInstructions: instructions,
  };
}
