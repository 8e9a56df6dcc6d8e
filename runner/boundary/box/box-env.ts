import { sendToolList } from "../../ground/chat/terms.ts";
import { SENTINEL } from "../../ground/config/sentinel.ts";
import { BOX_HOME } from "./layout.ts";

export { SENTINEL };

/**
 * The environment every box gets (the box contract): the proxy with the run's
 * token, CA trust for every ecosystem, and where things are. No real secret is
 * ever part of it — credentials appear only as sentinels.
 */
export const BOX_CA = "/opt/roster/ca.crt";
export const BOX_CA_BUNDLE = "/opt/roster/ca-bundle.crt";

export interface BoxEnvInput {
  token: string;
  /** Host and port the box reaches the gateway at. */
  gatewayHost: string;
  gatewayPort: number;
  runId: string;
  taskId?: string;
  /** Env names that carry a sentinel in place of a real credential. */
  sentinels?: string[];
  reposJson?: string;
  /** The worker's MCP servers (config/mcp-servers.ts), for extensions/mcp.ts. */
  mcpJson?: string;
}

export function boxEnvironment(input: BoxEnvInput): Record<string, string> {
  const proxy = `http://${input.token}:x@${input.gatewayHost}:${input.gatewayPort}`;
  const env: Record<string, string> = {
    HTTP_PROXY: proxy,
    HTTPS_PROXY: proxy,
    http_proxy: proxy,
    https_proxy: proxy,
    NO_PROXY: "",
    no_proxy: "",
    // Node's own fetch and http honour the proxy variables only when asked
    NODE_USE_ENV_PROXY: "1",
    // git sends proxy credentials up front (the gateway never answers 407)
    GIT_CONFIG_COUNT: "1",
    GIT_CONFIG_KEY_0: "http.proxyAuthMethod",
    GIT_CONFIG_VALUE_0: "basic",
    NODE_EXTRA_CA_CERTS: BOX_CA,
    SSL_CERT_FILE: BOX_CA_BUNDLE,
    CURL_CA_BUNDLE: BOX_CA_BUNDLE,
    REQUESTS_CA_BUNDLE: BOX_CA_BUNDLE,
    GIT_SSL_CAINFO: BOX_CA_BUNDLE,
    PIP_CERT: BOX_CA_BUNDLE,
    ROSTER_RUN_ID: input.runId,
    ROSTER_STORE_DIR: `${BOX_HOME}/store`,
    ROSTER_TASKS_FILE: `${BOX_HOME}/self/schedule.json`,
    ROSTER_SELF_DIR: `${BOX_HOME}/self`,
    // the chat platforms' send tools, which extensions/proposals.ts offers the model
    ROSTER_CHAT_SENDS: sendToolList(),
  };
  if (input.taskId) env.ROSTER_TASK_ID = input.taskId;
  if (input.reposJson) env.ROSTER_REPOS_JSON = input.reposJson;
  if (input.mcpJson) env.ROSTER_MCP_JSON = input.mcpJson;
  for (const name of input.sentinels ?? []) env[name] = SENTINEL;
  return env;
}
