import { stringify } from "smol-toml";
import { boxEnvNames } from "../../boundary/box/agent-env.ts";
import { BOX_HOME, RUN_CODEX, RUN_ROSTER_MCP } from "../../boundary/box/layout.ts";
import { modelEndpoint } from "../../ground/config/model.ts";
import type { WorkerView } from "../../ground/config/worker-view.ts";
import type { CompiledPrompt } from "../prompt/compile.ts";

/**
 * Codex's command line for a one-shot run or a task (docs/agents.md): `codex
 * exec` with JSON events, told the run's system prompt as developer
 * instructions, the model on a provider of roster's own naming (not Codex's
 * built-in OpenAI one, which tries a WebSocket first and asks chatgpt.com for
 * its model list), and every switch for its own traffic off. Each setting is
 * one `-c key=value` whose value is TOML, written by a TOML writer so no
 * prompt can end a string early.
 */

/** How long our MCP server may take to list its tools, and one of its calls (fetch_pages renders pages). */
const MCP_START_SECS = 60;
const MCP_CALL_SECS = 900;

/** Codex's features that reach past the model on their own: plugin sync, update prompts, model discovery. */
const CODEX_OFF = ["plugins", "in_app_updates", "api_key_model_discovery"];

const setting = (key: string, value: unknown): string[] => [
  "-c",
  `${key}=${stringify({ v: value }).replace(/^v = /, "").trimEnd()}`,
];

export function codexCommand(worker: WorkerView, prompt: CompiledPrompt): string[] {
  const endpoint = worker.model ? modelEndpoint(worker.model) : undefined;
  return [
    RUN_CODEX,
    "exec",
    "--json",
    "--color",
    "never",
    "--skip-git-repo-check",
    // the box is the sandbox: Codex's own (bubblewrap) can't make namespaces in it, and isn't needed
    "--dangerously-bypass-approvals-and-sandbox",
    // every key below must be one Codex knows; a config.toml the box wrote is not read
    "--strict-config",
    "--ignore-user-config",
    "-C",
    `${BOX_HOME}/workspace`,
    ...(worker.model ? ["-m", worker.model.model] : []),
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
    ...setting("developer_instructions", prompt.system),
    ...setting("mcp_servers.roster.command", RUN_ROSTER_MCP),
    ...setting("mcp_servers.roster.args", []),
    // Codex starts MCP servers with a scrubbed environment: ours needs the box's own
    ...setting("mcp_servers.roster.env_vars", boxEnvNames(worker)),
    ...setting("mcp_servers.roster.required", true),
    ...setting("mcp_servers.roster.startup_timeout_sec", MCP_START_SECS),
    ...setting("mcp_servers.roster.tool_timeout_sec", MCP_CALL_SECS),
    // after `--`, a task that starts with "-" is still the task
    "--",
    prompt.input,
  ];
}
