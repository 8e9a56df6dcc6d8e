import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eachLineAcross } from "../../runner/ground/files/rotation/read-across.ts";
import { logSegments } from "../../runner/ground/files/rotation/segments.ts";
import { sweepLogs } from "../../runner/records/retention/sweep.ts";
import { type GatewayEnv, startGatewayEnv } from "../support/gateway-env.ts";

/**
 * The door's audit log rotated and gzipped again and again while the door
 * writes a line per request, as the server's sweep does it but far more
 * often: every request made is one whole line, once, in the log read across
 * its files, and none is lost to a file gzipped under the door's writer.
 */
let env: GatewayEnv;

beforeAll(async () => {
  env = await startGatewayEnv("");
});
afterAll(async () => {
  await env?.cleanup();
});

/** One absolute-form request the door refuses (no grant): a line in the audit log. */
function send(token: string, seq: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const ask = request(
      {
        host: "127.0.0.1",
        port: env.gateway.port,
        method: "GET",
        path: `http://blocked.test:9/seq-${seq}`,
        headers: {
          host: "blocked.test:9",
          "proxy-authorization": `Basic ${Buffer.from(`${token}:x`).toString("base64")}`,
        },
      },
      (response) => {
        response.resume();
        response.on("end", () => resolve(response.statusCode ?? 0));
      },
    );
    ask.on("error", reject);
    ask.end();
  });
}

describe("the audit log rotated while the door writes", () => {
  it("keeps every request's line whole and once across the rotated and gzipped files", async () => {
    const runId = "run-rotating-1";
    const token = await env.token("elf", runId);
    // requests go on until the log has been rotated and gzipped under them several times
    let sent = 0;
    let enough = false;
    const client = async () => {
      while (!enough) {
        const status = await send(token, sent++);
        expect(status).toBe(403);
      }
    };
    const load = Promise.all(Array.from({ length: 8 }, client));
    // rotate at 24 KiB; gzip what has been still for longer than the door's writer takes to notice a rename
    const retention = { max_file: "24k" };
    const file = `${env.paths.audit}/decisions.jsonl`;
    let rotations = 0;
    const deadline = Date.now() + 60_000;
    while (rotations < 4 || logSegments(file).filter((s) => s.compressed).length < 2) {
      if (Date.now() > deadline) throw new Error(`only ${rotations} rotations in a minute`);
      for (const log of await sweepLogs(env.paths, retention, { settleMs: 1500 }))
        if (log.rotated) rotations++;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    enough = true;
    await load;
    const COUNT = sent;
    // what the writer may still hold settles, then is gzipped like the rest
    await new Promise((resolve) => setTimeout(resolve, 1600));
    await sweepLogs(env.paths, retention, { settleMs: 1500 });

    const seen = new Map<number, number>();
    eachLineAcross(file, (text) => {
      const line = JSON.parse(text) as { run_id?: string; request?: { path?: string } };
      if (line.run_id !== runId) return;
      const seq = Number(/^\/seq-(\d+)$/.exec(line.request?.path ?? "")?.[1]);
      seen.set(seq, (seen.get(seq) ?? 0) + 1);
    });
    expect(seen.size).toBe(COUNT);
    expect([...seen.values()].every((times) => times === 1)).toBe(true);
  }, 120_000);
});
