/** Talking to the action host the way a box does: through the gateway, with a run's token. */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type GatewayEnv, proxyUrlFor } from "./gateway-env.ts";
import { viaProxy } from "./proxy-clients.ts";

export interface ActionReply {
  status: number;
  body: Record<string, unknown>;
}

/** POST `body` (JSON, or a raw string) to https://actions.roster.internal`path`. */
export async function postAction(
  env: GatewayEnv,
  token: string,
  path: string,
  body: unknown,
): Promise<ActionReply> {
  const response = await viaProxy(
    proxyUrlFor(env, token),
    `https://actions.roster.internal${path}`,
    {
      ca: readFileSync(join(env.paths.ca, "ca.crt"), "utf8"),
      method: "POST",
      body: typeof body === "string" ? body : JSON.stringify(body),
      headers: { "content-type": "application/json" },
    },
  );
  return { status: response.status, body: JSON.parse(response.body) as Record<string, unknown> };
}

export const submitAction = (env: GatewayEnv, token: string, envelope: unknown) =>
  postAction(env, token, "/submit", envelope);
