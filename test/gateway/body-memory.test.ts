import { readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readDecisions } from "../../runner/boundary/gateway/audit/view.ts";
import { mintToken } from "../../runner/boundary/gateway/doors/identity.ts";
import {
  type EmbeddedGateway,
  launchEmbeddedGateway,
} from "../../runner/boundary/gateway/process/embedded.ts";
import { rosterPaths } from "../../runner/ground/config/paths.ts";
import { uploadBurst } from "../support/upload-burst.ts";

/**
 * A box that sends 40 uploads of 60 MB at once (each under the 64 MB limit)
 * must not take the gateway's memory: a body no rule reads streams through,
 * and bodies held for judging stay under their per-box and overall bounds.
 * Meanwhile another box's requests are answered as usual. The gateway runs in
 * a process of its own (as a run embeds it), whose resident memory is read
 * from /proc all along.
 */
const MiB = 1024 * 1024;
const UPLOADS = 40;
const UPLOAD_BYTES = 60 * MiB;
/**
 * What the gateway process may reach during either burst: its own ~100 MiB plus
 * the 256 MiB it may hold for judging, and the slack of 40 sockets' buffers and
 * garbage not yet collected (467 MiB seen on Node 24 with both test lanes busy;
 * holding every body would be 2.4 GB).
 */
const RSS_BOUND = 512 * MiB;
/**
 * What it must come back under once a burst is over: it starts near 90 MiB,
 * and Node 24's allocator keeps up to about 110 MiB of freed socket buffers
 * mapped for a while after 2.4 GB has passed (settled at 169–201 MiB on the
 * commit before this bound, in two runs of three). Holding even four of the
 * 60 MB bodies would be past it.
 */
const RSS_AFTER = 256 * MiB;

let root: string;
let gateway: EmbeddedGateway;
let upstream: Server;
let upstreamPort: number;
let burstToken: string;
let calmToken: string;

beforeAll(async () => {
  // the calm box's upstream (the burst brings its own)
  upstream = createServer((req, res) => {
    req.resume();
    req.on("end", () => res.end("{}"));
  });
  await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
  upstreamPort = (upstream.address() as AddressInfo).port;
  root = await mkdtemp(join(tmpdir(), "roster-gw-"));
  const paths = rosterPaths({ ROSTER_ROOT: root });
  await mkdir(paths.config, { recursive: true });
  await writeFile(
    join(paths.config, "org.toml"),
    `
[gateway]
resolve = { "model.test" = "127.0.0.1", "mcp.test" = "127.0.0.1" }

[[grant]]
name = "model"
verdict = "allow"
match = { host = "model.test" }

[[grant]]
name = "mcp-tools"
verdict = "allow"
match = { host = "mcp.test", mcp = { method = "tools/call" } }

[[grant]]
name = "mcp-rest"
verdict = "allow"
match = { host = "mcp.test" }
`,
  );
  burstToken = await mintToken(paths.identity, { subject: "org/elf", runId: "run-burst" });
  calmToken = await mintToken(paths.identity, { subject: "org/gnome", runId: "run-calm" });
  gateway = await launchEmbeddedGateway({
    paths,
    listen: [{ host: "127.0.0.1", port: 0 }],
    env: { ...process.env, ROSTER_ROOT: root },
  });
});
afterAll(async () => {
  await gateway?.stop();
  await new Promise((resolve) => upstream?.close(resolve));
  await rm(root, { recursive: true, force: true });
});

function rss(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return Number(match?.[1] ?? 0) * 1024;
}

/** One small request of the calm box; its status and how long it took. */
function ask(token: string): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const asking = request(
      {
        host: "127.0.0.1",
        port: gateway.port,
        path: `http://model.test:${upstreamPort}/v1/models`,
        headers: {
          host: `model.test:${upstreamPort}`,
          "proxy-authorization": `Basic ${Buffer.from(`${token}:x`).toString("base64")}`,
        },
        agent: false,
      },
      (response) => {
        response.resume();
        response.on("end", () =>
          resolve({ status: response.statusCode ?? 0, ms: performance.now() - started }),
        );
      },
    );
    asking.on("error", reject);
    asking.end();
  });
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1] ?? 0;

/** Runs a burst from one box while another box asks on; the peak RSS and the calm box's answers. */
async function burst(host: string) {
  const baseline: number[] = [];
  for (let i = 0; i < 10; i++) baseline.push((await ask(calmToken)).ms);
  let peak = rss(gateway.pid);
  const sampler = setInterval(() => {
    peak = Math.max(peak, rss(gateway.pid));
  }, 50);
  let over = false;
  const calm: { status: number; ms: number }[] = [];
  const calmLoop = (async () => {
    while (!over) {
      calm.push(await ask(calmToken));
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  const results = await uploadBurst({
    gatewayPort: gateway.port,
    token: burstToken,
    host,
    count: UPLOADS,
    bytes: UPLOAD_BYTES,
  });
  over = true;
  await calmLoop;
  clearInterval(sampler);
  return { results, calm, peak, baseline: median(baseline) };
}

/**
 * The gateway's memory once it has given back what the burst left: waited for
 * (a busy machine collects later), up to 30 s; what it holds then if it never does.
 */
async function settledRss(): Promise<number> {
  const until = Date.now() + 30_000;
  let now = rss(gateway.pid);
  while (now >= RSS_AFTER && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    now = rss(gateway.pid);
  }
  return now;
}

describe("a box sending 40 × 60 MB at once", () => {
  it("to a granted endpoint no rule reads the body of: every upload streams through, memory stays flat", async () => {
    const { results, calm, peak, baseline } = await burst("model.test");
    for (const result of results) {
      expect(result.status).toBe(200);
      expect(JSON.parse(result.body)).toEqual({ bytes: UPLOAD_BYTES });
    }
    expect(peak).toBeLessThan(RSS_BOUND);
    expect(calm.length).toBeGreaterThan(0);
    for (const answer of calm) expect(answer.status).toBe(200);
    // the other box is served all along: on two cores the burst's three busy
    // processes share the CPU with it, so "as usual" is within a second or so
    expect(median(calm.map((answer) => answer.ms))).toBeLessThan(Math.max(10 * baseline, 1000));
    expect(Math.max(...calm.map((answer) => answer.ms))).toBeLessThan(5000);
    expect(await settledRss()).toBeLessThan(RSS_AFTER);
  });

  it("to an endpoint whose rules read the body: held within the box's bound, the rest told to retry", async () => {
    const { results, calm, peak, baseline } = await burst("mcp.test");
    const statuses = results.map((result) => result.status);
    // the ones held were read whole and judged: 60 MB of zeros is no MCP message, so refused
    expect(statuses.every((status) => status === 403 || status === 503)).toBe(true);
    const judged = results.find((result) => result.status === 403);
    expect(JSON.parse(judged?.body ?? "{}").hint).toContain("mcp.test speaks MCP");
    const refused = results.find((result) => result.status === 503);
    expect(JSON.parse(refused?.body ?? "{}")).toMatchObject({
      error: "the gateway is holding as many request bodies as it may",
      detail: "this run's bodies held for judging would pass 128 MiB",
      hint: "send fewer large requests at once; retry after 2 s",
    });
    expect(peak).toBeLessThan(RSS_BOUND);
    expect(calm.length).toBeGreaterThan(0);
    for (const answer of calm) expect(answer.status).toBe(200);
    // the other box is served all along: on two cores the burst's three busy
    // processes share the CPU with it, so "as usual" is within a second or so
    expect(median(calm.map((answer) => answer.ms))).toBeLessThan(Math.max(10 * baseline, 1000));
    expect(Math.max(...calm.map((answer) => answer.ms))).toBeLessThan(5000);
    const audited = readDecisions(rosterPaths({ ROSTER_ROOT: root }).audit).filter(
      (line) => line.status === 503 && line.run_id === "run-burst",
    );
    expect(audited.length).toBe(statuses.filter((status) => status === 503).length);
    expect(await settledRss()).toBeLessThan(RSS_AFTER);
  });
});
