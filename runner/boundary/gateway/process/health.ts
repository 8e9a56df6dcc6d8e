import { readFileSync } from "node:fs";
import { get } from "node:http";
import { join } from "node:path";
import type { ConfigStatus } from "../settings/config-source.ts";
import type { GatewayState } from "./gateway.ts";

/** What /healthz answers: which deployment, and which config judges (exchange/host-routes.ts). */
export interface HealthAnswer {
  config_root?: string;
  config?: ConfigStatus;
}

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
  // a gateway with no door serves no box
  if (typeof state.door !== "string" || !state.door) return undefined;
  // the server's own gateway runs in this very process, or as its child, restarted by it
  // (supervised.ts): never worth a question that a busy event loop could answer late
  if (ownGateway(state) && state.config_root === configRoot) return state;
  const health = await askHealth(state.port, 2000);
  return health?.config_root === configRoot ? state : undefined;
}

/** This process's own gateway: in it, or its supervised child. */
export function ownGateway(state: GatewayState): boolean {
  return state.pid === process.pid || state.supervisor === process.pid;
}

/**
 * One /healthz question on loopback: the answer when the gateway says ok within
 * `timeoutMs`, else undefined. Cheap enough to ask every few seconds of a run.
 */
export function askHealth(port: number, timeoutMs: number): Promise<HealthAnswer | undefined> {
  // node:http, not undici: it is already loaded, and loading undici cost a run
  // more than the question itself. One socket, no agent, nothing left open.
  return new Promise((resolve) => {
    const request = get(
      { host: "127.0.0.1", port, path: "/healthz", agent: false, timeout: timeoutMs },
      (response) => {
        const chunks: Buffer[] = [];
        let size = 0;
        response.on("data", (chunk: Buffer) => {
          size += chunk.length;
          // an answer this large is not our gateway's
          if (size > 64 * 1024) request.destroy();
          else chunks.push(chunk);
        });
        response.on("end", () => {
          try {
            const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as HealthAnswer & {
              ok?: boolean;
            };
            resolve(response.statusCode === 200 && body.ok ? body : undefined);
          } catch {
            resolve(undefined);
          }
        });
        response.on("error", () => resolve(undefined));
      },
    );
    const deadline = setTimeout(() => request.destroy(), timeoutMs);
    request.on("close", () => {
      clearTimeout(deadline);
      resolve(undefined);
    });
    request.on("error", () => resolve(undefined));
  });
}
