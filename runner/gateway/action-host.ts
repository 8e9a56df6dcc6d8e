import type { Identity } from "./identity.ts";

/**
 * Requests to actions.roster.internal never leave the gateway: they go to the
 * action host through this interface, with the caller's identity taken from
 * the run token (never from the body). The action host itself lives in
 * runner/actions/.
 */
export const ACTIONS_HOST = "actions.roster.internal";

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

export interface ActionHandler {
  handle(request: ActionRequest): Promise<ActionResponse>;
}
