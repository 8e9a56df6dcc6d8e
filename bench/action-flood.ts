/**
 * One box's door while another box floods each action-host route: `roster
 * gateway start` from this checkout and from another (built: its dist/
 * current), on fresh roots identical but for the checkout, alternating. A
 * flooding run (64 keep-alive connections, as fast as they go) sends one
 * route for FLOOD_MS; meanwhile a quiet run makes one request after another
 * through the door to a granted upstream, and its latencies are the figure:
 * p50 and p99 of each, and of a round with no flood for the floor. The
 * flooding worker has lived a while: its journal holds JOURNAL_MB of lines
 * and its gates folder GATES gates, as a long-lived deployment's would.
 *   npx tsx bench/action-flood.ts <other checkout, built> [rounds]
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { Agent, createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { mintToken } from "../runner/boundary/gateway/doors/identity.ts";
import { rosterPaths } from "../runner/ground/config/paths.ts";
import { PROJECT_ROOT } from "../runner/ground/version.ts";
import { gatewayHealthy, stopGateway } from "./gateway-process.ts";
import { freePort } from "./harness.ts";

const other = process.argv[2] ? resolve(process.argv[2]) : undefined;
if (!other)
  throw new Error("usage: npx tsx bench/action-flood.ts <other checkout, built> [rounds]");
const ROUNDS = Number(process.argv[3] ?? 2);
const FLOOD_MS = 5_000;
const CONNECTIONS = 64;
const JOURNAL_MB = 64;
const GATES = 2_000;
const trees = { other, this: PROJECT_ROOT };
const NOTE = `${"\u0001".repeat(200)}${"n".repeat(7_790)}`;

type Route = "none" | "POST /outcome" | "POST /submit" | "GET /journal" | "GET /gates";
const ROUTES: Route[] = ["none", "POST /outcome", "POST /submit", "GET /journal", "GET /gates"];

const upstream = createServer((_req, res) => res.end("ok"));
await new Promise<void>((ready) => upstream.listen(0, "127.0.0.1", ready));
const upstreamPort = (upstream.address() as AddressInfo).port;
const work = mkdtempSync(join(tmpdir(), "roster-bench-flood-"));

const auth = (token: string) => `Basic ${Buffer.from(`${token}:x`).toString("base64")}`;

function ask(
  port: number,
  agent: Agent,
  token: string,
  url: string,
  method = "GET",
  body?: string,
): Promise<number> {
  return new Promise((done) => {
    const sent = request(
      {
        host: "127.0.0.1",
        port,
        method,
        path: url,
        agent,
        headers: {
          host: new URL(url).host,
          "proxy-authorization": auth(token),
          ...(body ? { "content-type": "application/json" } : {}),
        },
      },
      (response) => {
        response.resume();
        response.on("end", () => done(response.statusCode ?? 0));
      },
    );
    sent.on("error", () => done(0));
    sent.setTimeout(60_000, () => sent.destroy());
    sent.end(body);
  });
}

function floodOnce(route: Route): { url: string; method: string; body?: string } {
  const base = "http://actions.roster.internal";
  if (route === "POST /outcome")
    return {
      url: `${base}/outcome`,
      method: "POST",
      body: JSON.stringify({ status: "completed", note: NOTE }),
    };
  if (route === "POST /submit")
    return {
      url: `${base}/submit`,
      method: "POST",
      body: JSON.stringify({
        intent: "message-user",
        payload: { text: "hi" },
        rationale: NOTE.slice(0, 3999),
      }),
    };
  return { url: `${base}${route.slice(4)}`, method: "GET" };
}

/** CONNECTIONS keep-alive connections sending one request as fast as they go for FLOOD_MS, in a process of their own; resolves to how many were answered. */
function floodFrom(
  port: number,
  token: string,
  one: { url: string; method: string; body?: string },
): Promise<number> {
  const script = `
const http = require("node:http");
const { port, auth, url, method, body, connections, ms } = JSON.parse(process.env.FLOOD);
const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
const until = Date.now() + ms;
let answered = 0;
const once = () => new Promise((done) => {
  const sent = http.request({ host: "127.0.0.1", port, method, path: url, agent,
    headers: { host: new URL(url).host, "proxy-authorization": auth, ...(body ? { "content-type": "application/json" } : {}) } },
    (response) => { response.resume(); response.on("end", () => { answered++; done(); }); });
  sent.on("error", () => done());
  sent.end(body);
});
const loop = async () => { while (Date.now() < until) await once(); };
Promise.all(Array.from({ length: connections }, loop)).then(() => { process.stdout.write(String(answered)); agent.destroy(); });
`;
  const flood = JSON.stringify({
    port,
    auth: auth(token),
    ...one,
    connections: CONNECTIONS,
    ms: FLOOD_MS,
  });
  return new Promise((done) => {
    const child = spawn(process.execPath, ["-e", script], {
      env: { ...process.env, FLOOD: flood },
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.on("exit", () => done(Number(out) || 0));
  });
}

/** Seeds what a worker that lived a while leaves: a long journal, a folder of decided gates. */
function seed(root: string): void {
  const paths = rosterPaths({ ROSTER_ROOT: root });
  const journal = join(paths.data, "workers", "flood", "journal");
  mkdirSync(journal, { recursive: true });
  const line = `${JSON.stringify({ ts: "2026-12-01T00:00:00.000Z", worker: "flood", run_id: "old", kind: "outcome-reported", summary: "completed", detail: NOTE })}\n`;
  const chunk = line.repeat(Math.ceil((1 << 20) / line.length));
  writeFileSync(join(journal, "events.jsonl"), chunk.repeat(JOURNAL_MB));
  const gates = join(paths.data, "workers", "flood", "gates");
  mkdirSync(gates, { recursive: true });
  for (let i = 0; i < GATES; i++) {
    const id = `g-${i.toString(16).padStart(8, "0")}`;
    writeFileSync(
      join(gates, `${id}.json`),
      JSON.stringify({
        id,
        worker: "org/flood",
        intent: "message-user",
        executor: "inbox",
        payload: { text: NOTE.slice(0, 500) },
        rationale: "",
        run_id: "old",
        task_id: null,
        state: "executed",
        filed_at: "2026-12-01T00:00:00.000Z",
      }),
    );
  }
}

const pick = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? 0;
interface Figure {
  p50: number;
  p99: number;
  max: number;
  quiet: number;
  flood: number;
}
const figures: Record<string, Record<Route, Figure[]>> = {};

for (let round = 0; round < ROUNDS; round++) {
  for (const [name, tree] of Object.entries(trees)) {
    const root = join(work, `${name}-${round}`);
    const paths = rosterPaths({ ROSTER_ROOT: root });
    mkdirSync(paths.config, { recursive: true });
    writeFileSync(
      join(paths.config, "org.toml"),
      `[gateway]\nresolve = { "quiet.test" = "127.0.0.1" }\n\n[[grant]]\nname = "quiet"\nverdict = "allow"\nmatch = { host = "quiet.test" }\n`,
    );
    seed(root);
    const port = await freePort();
    const gateway = spawn(
      join(tree, "bin/roster.mjs"),
      ["gateway", "start", "--addr", `127.0.0.1:${port}`],
      {
        env: { ...process.env, ROSTER_ROOT: root },
        stdio: "ignore",
      },
    );
    const exited = new Promise((gone) => gateway.once("exit", gone));
    try {
      await gatewayHealthy(port, gateway);
      const quietToken = await mintToken(paths.identity, { subject: "org/quiet", runId: "quiet" });
      for (const route of ROUTES) {
        const floodToken = await mintToken(paths.identity, {
          subject: "org/flood",
          runId: `flood-${route.replace(/\W/g, "")}`,
        });
        const quietAgent = new Agent({ keepAlive: true, maxSockets: 1 });
        const until = performance.now() + FLOOD_MS;
        // the flooding box is a process of its own: its loop is not the one timing the quiet box
        const flood =
          route === "none" ? Promise.resolve(0) : floodFrom(port, floodToken, floodOnce(route));
        const latencies: number[] = [];
        while (performance.now() < until) {
          const started = performance.now();
          await ask(port, quietAgent, quietToken, `http://quiet.test:${upstreamPort}/`);
          latencies.push(performance.now() - started);
        }
        const flooded = await flood;
        quietAgent.destroy();
        latencies.sort((a, b) => a - b);
        const byRoute = figures[name] ?? ({} as Record<Route, Figure[]>);
        figures[name] = byRoute;
        const list = byRoute[route] ?? [];
        byRoute[route] = list;
        list.push({
          p50: pick(latencies, 0.5),
          p99: pick(latencies, 0.99),
          max: latencies.at(-1) ?? 0,
          quiet: latencies.length,
          flood: flooded,
        });
      }
    } finally {
      await stopGateway(gateway, exited);
    }
  }
}
upstream.close();

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
const lines = [
  `The quiet box's door while another box floods one action-host route (${CONNECTIONS} connections, ${FLOOD_MS / 1000} s; its worker's journal ${JOURNAL_MB} MB, ${GATES} gates), this checkout against ${other}, ${ROUNDS} alternating rounds (medians of the rounds):`,
  "",
  "| flooded route | other p50 / p99 / max ms | this p50 / p99 / max ms | quiet requests (other / this) | flood requests answered (other / this) |",
  "|---|---|---|---|---|",
];
for (const route of ROUTES) {
  const of = (name: string, key: keyof Figure) =>
    median((figures[name]?.[route] ?? []).map((one) => one[key]));
  lines.push(
    `| ${route} | ${of("other", "p50").toFixed(1)} / ${of("other", "p99").toFixed(1)} / ${of("other", "max").toFixed(0)} | ${of("this", "p50").toFixed(1)} / ${of("this", "p99").toFixed(1)} / ${of("this", "max").toFixed(0)} | ${of("other", "quiet")} / ${of("this", "quiet")} | ${of("other", "flood")} / ${of("this", "flood")} |`,
  );
}
process.stdout.write(`${lines.join("\n")}\n`);
process.exit(0);
