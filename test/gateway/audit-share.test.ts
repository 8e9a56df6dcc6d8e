import { readFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DecisionRecord } from "../../runner/boundary/gateway/audit/audit.ts";
import { type GatewayEnv, startGatewayEnv } from "../support/gateway-env.ts";

/**
 * Each request a box makes is a line on the host's disk: a run that loops on
 * refused requests gets its share of the audit log ([gateway]
 * audit_max_per_run), its last line says the share is spent, and the door
 * refuses its later requests without writing them, while another run is
 * served and recorded as before.
 */
let env: GatewayEnv;
const SHARE = 16 * 1024;

beforeAll(async () => {
  env = await startGatewayEnv(`[gateway]\naudit_max_per_run = "16k"\n`);
});
afterAll(async () => {
  await env?.cleanup();
});

/** One absolute-form request through the gateway: its status and deciding rule. */
function send(token: string, path: string): Promise<{ status: number; rule: string }> {
  return new Promise((resolve, reject) => {
    const ask = request(
      {
        host: "127.0.0.1",
        port: env.gateway.port,
        method: "GET",
        path: `http://blocked.test:9${path}`,
        headers: {
          host: "blocked.test:9",
          "proxy-authorization": `Basic ${Buffer.from(`${token}:x`).toString("base64")}`,
        },
        agent: false,
      },
      (response) => {
        response.resume();
        response.on("end", () =>
          resolve({
            status: response.statusCode ?? 0,
            rule: String(response.headers["x-roster-rule"] ?? ""),
          }),
        );
      },
    );
    ask.on("error", reject);
    ask.end();
  });
}

const linesOf = (runId: string) =>
  readFileSync(join(env.paths.audit, "decisions.jsonl"), "utf8")
    .split("\n")
    .filter((line) => line.includes(`"run_id":"${runId}"`));

describe("a run's share of the audit log", () => {
  it("is spent by a loop of refused requests; the rest are refused unwritten, another run is not", async () => {
    const looping = await env.token("elf", "run-loop");
    const quiet = await env.token("elf", "run-quiet");
    const statuses: number[] = [];
    for (let i = 0; i < 200 && !statuses.includes(429); i++)
      statuses.push((await send(looping, `/page/${i}`)).status);
    // refused by the grants (none) until the share was spent, then by the share
    expect(statuses.at(-1)).toBe(429);
    expect(statuses.slice(0, -1).every((status) => status === 403)).toBe(true);

    const written = linesOf("run-loop");
    const bytes = written.reduce((sum, line) => sum + Buffer.byteLength(line) + 1, 0);
    const last = JSON.parse(written.at(-1) ?? "{}") as DecisionRecord;
    expect(bytes - Buffer.byteLength(written.at(-1) ?? "") - 1).toBeLessThanOrEqual(SHARE);
    expect(last.note).toMatch(
      /this run's audit is full \(\d+ bytes; audit_max_per_run 16384\): its later requests are refused and not written/,
    );

    // the rest: refused, named, and not one more line
    for (let i = 0; i < 20; i++)
      expect(await send(looping, `/more/${i}`)).toEqual({ status: 429, rule: "audit-full" });
    expect(linesOf("run-loop")).toHaveLength(written.length);

    // another run is judged and recorded as before
    expect((await send(quiet, "/one")).status).toBe(403);
    expect(linesOf("run-quiet")).toHaveLength(1);
  });
});
