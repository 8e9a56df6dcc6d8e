/**
 * MCP tool calls through the gateway against the same calls made straight at
 * the server, side by side in one run: a real MCP server (the official SDK,
 * streamable HTTP, bearer auth, TLS) on loopback, and the SDK's own client,
 * either through the gateway's proxy (CONNECT, roster's CA, the call judged on
 * its tool name, the bearer injected, the line audited) or direct (holding the
 * bearer itself). Each client opens its own session and calls one tool over
 * and over; latency is per call, from callTool to its result. The gateway runs
 * in its own process (`roster gateway start`); the server and the clients share
 * this one, on both paths alike. Rounds alternate direct and gateway; the
 * ratios are gateway over direct. No Docker; the runner built.
 *   npx tsx bench/mcp.ts [calls per client] [rounds]
 */
import { readFileSync } from "node:fs";
import { chmod, mkdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { connectMcp, McpUpstream, makeGatewayRoot, startGatewayProcess } from "./harness.ts";

const CALLS = Number(process.argv[2] ?? 200);
const ROUNDS = Number(process.argv[3] ?? 2);
const CONCURRENCY = [1, 8];
const TOKEN = "bench-mcp-token";

const mcp = await McpUpstream.start({ names: ["mcp.test", "127.0.0.1"], token: TOKEN });
const { root, paths } = await makeGatewayRoot("");
const caFile = join(root, "mcp-ca.pem");
await writeFile(caFile, mcp.certificate.caPem);
await writeFile(
  join(paths.config, "org.toml"),
  `
[gateway]
resolve = { "mcp.test" = "127.0.0.1" }
upstream_ca = ["${caFile}"]

[[grant]]
name = "mcp-protocol"
verdict = "allow"
match = { host = "mcp.test", mcp = { method = ["initialize", "notifications/*", "tools/list"] } }
inject = { credential = "mcp", headers = [{ header = "authorization", value = "Bearer {token}" }] }

[[grant]]
name = "mcp-session"
verdict = "allow"
match = { host = "mcp.test", method = ["GET", "DELETE"] }
inject = { credential = "mcp", headers = [{ header = "authorization", value = "Bearer {token}" }] }

[[grant]]
name = "mcp-echo"
verdict = "allow"
match = { host = "mcp.test", mcp = { tool = ["echo", "issues_*"] } }
inject = { credential = "mcp", headers = [{ header = "authorization", value = "Bearer {token}" }] }
`,
);
await mkdir(paths.vault, { recursive: true, mode: 0o700 });
await writeFile(join(paths.vault, "mcp.json"), JSON.stringify({ token: TOKEN }), { mode: 0o600 });
await chmod(join(paths.vault, "mcp.json"), 0o600);
// the gateway in its own process, as `roster server` runs it: the clients and the server share this one
const gateway = await startGatewayProcess(root);
const rosterCa = readFileSync(join(paths.ca, "ca.crt"), "utf8");

type Way = "direct" | "gateway";

/** One client's session: `calls` sequential echo calls, each one's latency in ms. */
async function client(way: Way, calls: number): Promise<number[]> {
  const connection =
    way === "direct"
      ? await connectMcp(`https://127.0.0.1:${mcp.port}/mcp`, {
          ca: mcp.certificate.caPem,
          headers: { authorization: `Bearer ${TOKEN}` },
        })
      : await connectMcp(`https://mcp.test:${mcp.port}/mcp`, {
          proxy: await gateway.proxy("bench"),
          ca: rosterCa,
        });
  const latencies: number[] = [];
  try {
    for (let i = 0; i < calls; i++) {
      const started = performance.now();
      await connection.client.callTool({ name: "echo", arguments: { text: `call ${i}` } });
      latencies.push(performance.now() - started);
    }
  } finally {
    await connection.close();
  }
  return latencies;
}

async function round(way: Way, clients: number): Promise<number[]> {
  const each = Math.max(1, Math.round(CALLS / clients));
  const all = await Promise.all(Array.from({ length: clients }, () => client(way, each)));
  return all.flat();
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? 0;
};

const results: Record<Way, Map<number, number[]>> = { direct: new Map(), gateway: new Map() };
try {
  // warm both paths (TLS sessions, the gateway's leaf certificate, JIT)
  await round("direct", 1);
  await round("gateway", 1);
  for (let r = 0; r < ROUNDS; r++) {
    for (const clients of CONCURRENCY) {
      for (const way of ["direct", "gateway"] as const) {
        const pooled = results[way].get(clients) ?? [];
        pooled.push(...(await round(way, clients)));
        results[way].set(clients, pooled);
      }
    }
  }
} finally {
  await gateway.stop();
  await mcp.stop();
  await rm(root, { recursive: true, force: true });
}

const ms = (value: number) => value.toFixed(2);
console.log(
  `MCP tools/call (echo), ${CALLS} calls per round split over the clients, ${ROUNDS} alternating rounds:\n`,
);
console.log(
  "| clients | direct p50 ms | gateway p50 ms | p50 ratio | direct p95 ms | gateway p95 ms | p95 ratio |",
);
console.log("|---|---|---|---|---|---|---|");
for (const clients of CONCURRENCY) {
  const direct = results.direct.get(clients) ?? [];
  const gateway = results.gateway.get(clients) ?? [];
  const [d50, g50, d95, g95] = [
    percentile(direct, 50),
    percentile(gateway, 50),
    percentile(direct, 95),
    percentile(gateway, 95),
  ];
  console.log(
    `| ${clients} | ${ms(d50)} | ${ms(g50)} | ${(g50 / d50).toFixed(2)}x | ${ms(d95)} | ${ms(g95)} | ${(g95 / d95).toFixed(2)}x |`,
  );
}
