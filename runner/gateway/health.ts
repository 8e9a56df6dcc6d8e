import { readFileSync } from "node:fs";
import { join } from "node:path";
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
  // the server's own gateway runs in this very process: alive as long as we are,
  // and never worth a question that a busy event loop could answer late
  if (state.pid === process.pid && state.config_root === configRoot) return state;
  const health = await askHealth(state.port, 2000);
  return health?.config_root === configRoot ? state : undefined;
}

/**
 * One /healthz question on loopback: the answer when the gateway says ok within
 * `timeoutMs`, else undefined. Cheap enough to ask every few seconds of a run.
 */
export async function askHealth(
  port: number,
  timeoutMs: number,
): Promise<{ config_root?: string } | undefined> {
  try {
    // loaded here, not at the top: most runs never ask (no standalone gateway), and
    // loading undici costs a run more than the question itself
    const { request } = await import("undici");
    const response = await request(`http://127.0.0.1:${port}/healthz`, {
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
    const body = (await response.body.json()) as { ok?: boolean; config_root?: string };
    return response.statusCode === 200 && body.ok ? body : undefined;
  } catch {
    return undefined;
  }
}
