import type { RosterPaths } from "../../../ground/config/paths.ts";
import type { Identity } from "../doors/identity.ts";
import type { ConfigSource } from "../settings/config-source.ts";

/**
 * Requests to actions.roster.internal never leave the gateway: they go to the
 * action host through this interface, with the caller's identity taken from
 * the run token (never from the body). The action host itself lives in
 * runner/services/actions/.
 */
export const ACTIONS_HOST = "actions.roster.internal";

/** The rule an audit line of a request the action host answered names (a stable name). */
export const ACTION_HOST_RULE = "action-host";

export interface ActionRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: Buffer;
  caller: Identity | undefined;
}

export interface ActionResponse {
  status: number;
  body: unknown;
}

/**
 * An MCP `tools/call` a `verdict = "gate"` grant held for a human: what the
 * gateway judged (server, tool, arguments as the box sent them) and the grant
 * that held it, whose credential the desk injects on approval.
 */
export interface HeldMcpCall {
  caller: Identity;
  rule: string;
  /** The server's origin and path, e.g. https://mcp.example.com:443/mcp. */
  url: string;
  tool: string;
  arguments: Record<string, unknown>;
}

export interface ActionHandler {
  handle(request: ActionRequest): Promise<ActionResponse>;
  /** Files a held MCP call on the approval desk; resolves to its gate id. */
  holdMcpCall?(call: HeldMcpCall): Promise<{ gateId: string }>;
}

/**
 * How a gateway gets its action host: whoever starts the gateway (the CLI, the
 * composition root) passes one in, made from the deployment's paths and the
 * gateway's own view of the config. The gateway never builds the desk itself.
 */
export type ActionHostFactory = (paths: RosterPaths, config: ConfigSource) => ActionHandler;
