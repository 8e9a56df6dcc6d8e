import { readFileSync } from "node:fs";
import { join } from "node:path";
import { request } from "undici";
import type { GatewayState } from "./gateway.ts";

/**
 * Is a gateway already serving this deployment? Read state/gateway.json, then
 * ask /healthz (2 s) and check it serves the same config root.
 */
export async function runningGateway(
  stateRoot: string,
  configRoot: string,
): Promise<GatewayState | undefined> {
  let state: GatewayState;
  try {
    state = JSON.parse(readFileSync(join(stateRoot, "gateway.json"), "utf8")) as GatewayState;
  } catch {
    return undefined;
  }
  if (!state.addrs?.some((addr) => addr !== "127.0.0.1" && addr !== "::1")) return undefined;
  try {
    const response = await request(`http://127.0.0.1:${state.port}/healthz`, {
      headersTimeout: 2000,
      bodyTimeout: 2000,
    });
    const body = (await response.body.json()) as { ok?: boolean; config_root?: string };
    return response.statusCode === 200 && body.ok && body.config_root === configRoot
      ? state
      : undefined;
  } catch {
    return undefined;
  }
}
