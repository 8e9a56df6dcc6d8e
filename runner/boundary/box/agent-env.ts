import { modelEndpoint } from "../../ground/config/model.ts";
import type { WorkerView } from "../../ground/config/worker-view.ts";
import { boxEnvironment } from "./box-env.ts";
import { toolsEnvironment } from "./tools-volume.ts";

/**
 * What an agent other than pi is told through its environment (docs/agents.md):
 * where its model is (the worker's endpoint; the key it reads is a sentinel,
 * set with the others in box-env.ts), and its own calls home switched off by
 * the settings it documents, so the door sees only the model's traffic and
 * ours. Whatever it still sends is judged like any request and refused by the
 * agent's deny rule (config/agent.ts) or by default.
 */
export function agentEnvironment(worker: WorkerView): Record<string, string> {
  if (worker.agent === "claude") {
    return {
      ...(worker.model ? { ANTHROPIC_BASE_URL: modelEndpoint(worker.model).baseUrl } : {}),
      // its feature flags, event logging, settings sync, update checks and error reports
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      DISABLE_AUTOUPDATER: "1",
      DISABLE_TELEMETRY: "1",
      DISABLE_ERROR_REPORTING: "1",
      // every tool (ours over MCP too) in the request with its schema, not behind a search
      ENABLE_TOOL_SEARCH: "false",
    };
  }
  return {};
}

/**
 * The names of every variable the box contract gives a box (box-env.ts, the
 * run's own, the toolchain's): what an agent that starts its MCP servers
 * with a scrubbed environment (Codex) is told to pass on to ours, which
 * reaches the door and the action host by them.
 */
export function boxEnvNames(worker: WorkerView): string[] {
  const contract = boxEnvironment({
    token: "-",
    gatewayHost: "-",
    gatewayPort: 0,
    runId: "-",
    taskId: "-",
    reposJson: "-",
    mcpJson: "-",
  });
  return [
    ...new Set([
      ...Object.keys(contract),
      ...Object.keys(toolsEnvironment()),
      ...RUN_ENV_NAMES,
      ...worker.sentinels,
    ]),
  ];
}

/** What a run, its trace or the image add beside the contract's (start-3-launch.ts, worker-box.ts, the Dockerfile). */
const RUN_ENV_NAMES = [
  "ROSTER_CEILING_MIN",
  "ROSTER_STALL_AFTER_SECS",
  "ROSTER_RENDER_SECS",
  "TRACEPARENT",
  "NODE_COMPILE_CACHE",
  "TMPDIR",
];
