/**
 * The door's added latency behind a company proxy: hey (8 clients, 1 KB
 * through an intercepted tunnel) against the same upstream (a) straight
 * through a real Squid, as a host without roster would go, and (b) through
 * `roster gateway start` whose `[gateway] upstream_proxy` is that Squid, in
 * alternating rounds of one run. Reports p50, p99 and requests/s of each and
 * the ratios. For "the door adds little behind a parent proxy".
 * Needs hey and squid on PATH (Debian's packages).
 *   npx tsx bench/parent-proxy.ts [rounds]
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { mintToken } from "../runner/boundary/gateway/doors/identity.ts";
import { rosterPaths } from "../runner/ground/config/paths.ts";
import { PROJECT_ROOT } from "../runner/ground/version.ts";
import { Squid } from "../test/support/squid.ts";
import { gatewayHealthy } from "./gateway-process.ts";
import { freePort } from "./harness.ts";
import { hey } from "./hey.ts";
import { startKbUpstream } from "./kb-upstream.ts";

const ROUNDS = Number(process.argv[2] ?? 3);
const REQUESTS = 4_000;
const NAME = "api.bench.test";

const work = mkdtempSync(join(tmpdir(), "roster-bench-proxy-"));
const upstream = await startKbUpstream([NAME], work);
const upstreamCa = upstream.caFile;
const upstreamPort = upstream.port;
const origin = `https://${NAME}:${upstreamPort}/1k`;
// Squid's hosts file and the door's `resolve` both say loopback (the door judges the
// address before it asks the proxy for the name)
const squid = await Squid.start({ hosts: { [NAME]: "127.0.0.1" }, ports: [upstreamPort] });

interface Result {
  p50: number;
  p99: number;
  rps: number;
}
type Measured = Result;
/** One round through `proxy`, every request answered 200, or the bench stops. */
async function round(requests: number, proxy: string, trust: string): Promise<Measured> {
  const got = await hey({ url: origin, requests, concurrency: 8, trustFile: trust, proxy });
  if (got.failures > 0) throw new Error(`${got.failures} of ${requests} were not answered 200`);
  return { p50: got.p50, p99: got.p99, rps: got.rps };
}

const root = join(work, "root");
const paths = rosterPaths({ ROSTER_ROOT: root });
mkdirSync(paths.config, { recursive: true });
writeFileSync(
  join(paths.config, "org.toml"),
  `[gateway]\nupstream_ca = ["${upstreamCa}"]\nupstream_proxy = "${squid.url}"\nresolve = { "${NAME}" = "127.0.0.1" }\n\n[[grant]]\nname = "bench"\nverdict = "allow"\nmatch = { host = "${NAME}" }\n`,
);
const port = await freePort();
const gateway = spawn(
  join(PROJECT_ROOT, "bin/roster.mjs"),
  ["gateway", "start", "--addr", `127.0.0.1:${port}`],
  {
    env: { ...process.env, ROSTER_ROOT: root },
    stdio: "ignore",
  },
);
const exited = new Promise((gone) => gateway.once("exit", gone));
const rounds: Record<"squid" | "door", Result[]> = { squid: [], door: [] };
try {
  await gatewayHealthy(port, gateway);
  const token = await mintToken(paths.identity, { subject: "org/bench", runId: "bench" });
  const doorTrust = join(work, "door-trust.pem");
  writeFileSync(doorTrust, readFileSync(join(paths.ca, "ca.crt"), "utf8"));
  const routes = {
    squid: { proxy: squid.url, trust: upstreamCa },
    door: { proxy: `http://${token}:x@127.0.0.1:${port}`, trust: doorTrust },
  };
  for (const route of Object.values(routes)) await round(500, route.proxy, route.trust); // warm
  for (let r = 0; r < ROUNDS; r++)
    for (const [name, route] of Object.entries(routes) as [
      "squid" | "door",
      { proxy: string; trust: string },
    ][])
      rounds[name].push(await round(REQUESTS, route.proxy, route.trust));
} finally {
  if (gateway.exitCode === null) gateway.kill("SIGTERM");
  await exited;
  await squid.stop();
  upstream.server.close();
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
const med = (name: "squid" | "door", pick: (r: Result) => number) => median(rounds[name].map(pick));
const row = (name: "squid" | "door", label: string) =>
  `| ${label} | ${med(name, (r) => r.p50).toFixed(2)} | ${med(name, (r) => r.p99).toFixed(2)} | ${med(name, (r) => r.rps).toFixed(0)} |`;
process.stdout.write(
  [
    `Through a company proxy (Squid), ${ROUNDS} alternating rounds of ${REQUESTS} requests (hey, 8 clients, 1 KB, HTTPS), medians:`,
    "",
    "| route | p50 ms | p99 ms | req/s |",
    "|---|---|---|---|",
    row("squid", "client → Squid → upstream"),
    row("door", "client → door → Squid → upstream"),
    "",
    `door / direct: p50 ${(med("door", (r) => r.p50) / med("squid", (r) => r.p50)).toFixed(2)}x, p99 ${(med("door", (r) => r.p99) / med("squid", (r) => r.p99)).toFixed(2)}x, req/s ${(med("door", (r) => r.rps) / med("squid", (r) => r.rps)).toFixed(2)}x`,
    "",
  ].join("\n"),
);
process.exit(0);
