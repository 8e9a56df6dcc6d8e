import { modelEndpoint } from "../../ground/config/model.ts";
import type { WorkerView } from "../../ground/config/worker-view.ts";

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
