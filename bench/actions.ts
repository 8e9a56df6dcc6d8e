/**
 * What a proposal costs on the host: submit → answer through the real gateway
 * (its own process, `roster gateway start`) to the action host, for an `auto`
 * action (message-user: one append to the inbox) and a gated one (the gate
 * file written and renamed, journal and audit lines), beside a plain
 * intercepted request to a local upstream through the same gateway — the floor
 * every box request pays. Keep-alive, one client at a time, then 8 at once.
 *   npx tsx bench/actions.ts
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { ProxyAgent, request } from "undici";
import { mintToken } from "../runner/boundary/gateway/doors/identity.ts";
import { rosterPaths } from "../runner/ground/config/paths.ts";
import { PROJECT_ROOT } from "../runner/ground/version.ts";
import { freePort, makeServerCertificate } from "./harness.ts";

const REQUESTS = 1000;
const work = await mkdtemp(join(tmpdir(), "roster-bench-actions-"));
const certificate = await makeServerCertificate(["127.0.0.1"]);
const upstreamCa = join(work, "upstream-ca.pem");
await writeFile(upstreamCa, certificate.caPem);
const upstream = createServer(
  { key: certificate.keyPem, cert: certificate.certPem },
  (_req, res) => {
    res.writeHead(200, { "content-type": "application/json", "content-length": 11 });
    res.end('{"ok":true}');
  },
);
await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
const origin = `https://127.0.0.1:${(upstream.address() as AddressInfo).port}`;

const root = join(work, "roster");
const paths = rosterPaths({ ROSTER_ROOT: root });
await mkdir(join(paths.config, "workers/elf"), { recursive: true });
await writeFile(join(paths.config, "workers/elf/worker.toml"), 'name = "elf"\n');
await writeFile(
  join(paths.config, "org.toml"),
  `[gateway]
upstream_ca = ["${upstreamCa}"]

[[grant]]
name = "bench"
verdict = "allow"
match = { host = "127.0.0.1" }

[[action]]
name = "note"
executor = "message-user"
trust = "auto"

[[action]]
name = "held"
executor = "message-user"
trust = "gate"
`,
);
const port = await freePort();
const gateway = spawn(
  process.execPath,
  [join(PROJECT_ROOT, "bin/roster.mjs"), "gateway", "start", "--addr", `127.0.0.1:${port}`],
  { env: { ...process.env, ROSTER_ROOT: root }, stdio: "ignore" },
);
for (let i = 0; i < 100; i++) {
  try {
    await request(`http://127.0.0.1:${port}/healthz`, { headersTimeout: 500 }).then((r) =>
      r.body.dump(),
    );
    break;
  } catch {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
const token = await mintToken(paths.identity, { subject: "org/elf", runId: "bench" });
const dispatcher = new ProxyAgent({
  uri: `http://${token}:x@127.0.0.1:${port}`,
  requestTls: { ca: readFileSync(join(paths.ca, "ca.crt"), "utf8") },
});

type Call = () => Promise<number>;
const submit =
  (intent: string): Call =>
  async () => {
    const response = await request("https://actions.roster.internal/submit", {
      dispatcher,
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ intent, payload: { text: "benchmark note" } }),
    });
    await response.body.dump();
    return response.statusCode;
  };
const plain: Call = async () => {
  const response = await request(`${origin}/`, { dispatcher });
  await response.body.dump();
  return response.statusCode;
};

async function measure(call: Call, expected: number, concurrency: number) {
  const latencies: number[] = [];
  let next = 0;
  let failures = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < REQUESTS) {
        next++;
        const t0 = performance.now();
        if ((await call()) !== expected) failures++;
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const q = (p: number) =>
    latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? 0;
  return { p50: q(0.5), p99: q(0.99), rps: REQUESTS / seconds, failures };
}

try {
  const routes: Array<[string, Call, number]> = [
    ["plain request through the gateway", plain, 200],
    ["submit, auto (message-user)", submit("note"), 200],
    ["submit, gated (gate filed)", submit("held"), 202],
  ];
  for (const [, call] of routes) for (let i = 0; i < 50; i++) await call(); // warm pools and leaf certs
  console.log(`${REQUESTS} requests per row, keep-alive, Node ${process.version}\n`);
  console.log("| route | clients | p50 ms | p99 ms | req/s | p50 vs plain | failures |");
  console.log("|---|---|---|---|---|---|---|");
  for (const concurrency of [1, 8]) {
    let floor: number | undefined;
    for (const [name, call, expected] of routes) {
      const result = await measure(call, expected, concurrency);
      floor ??= result.p50;
      console.log(
        `| ${name} | ${concurrency} | ${result.p50.toFixed(2)} | ${result.p99.toFixed(2)} | ${result.rps.toFixed(0)} | ${(result.p50 / floor).toFixed(2)}x | ${result.failures} |`,
      );
    }
  }
} finally {
  await dispatcher.close();
  gateway.kill("SIGTERM");
  upstream.close();
  await rm(work, { recursive: true, force: true });
}
