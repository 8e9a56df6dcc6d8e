/**
 * The door's CPU per request against the two floors under any proxy written
 * in Node, in one run, rounds alternating: hey (8 clients, answers of 1 KB, or
 * of the KiB asked for, from an HTTPS upstream on loopback) through
 *   - roster's door (`roster gateway start`: CONNECT, TLS intercepted, judged,
 *     audited, metered),
 *   - a bare Node TLS relay (bench/tls-relay.ts: TLS and bytes, no HTTP),
 *   - a bare Node HTTP relay (bench/http-relay.ts: Node's https server and
 *     client, nothing else).
 * CPU is read from /proc for each proxy's process, so hey and the upstream
 * are not counted. Prints each round and the medians.
 *   npx tsx bench/door-floors.ts [rounds] [requests] [KiB]
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { mintToken } from "../runner/boundary/gateway/doors/identity.ts";
import { PROJECT_ROOT } from "../runner/ground/version.ts";
import { benchRoot, gatewayHealthy, spawnGateway, stopGateway } from "./gateway-process.ts";
import { freePort, makeServerCertificate } from "./harness.ts";
import { heyAvailable } from "./hey.ts";
import { startHttpRelay } from "./http-relay.ts";
import { startKbUpstream } from "./kb-upstream.ts";
import { startTlsRelay } from "./tls-relay.ts";

const ROUNDS = Number(process.argv[2] ?? 5);
const REQUESTS = Number(process.argv[3] ?? 10_000);
const KIB = Number(process.argv[4] ?? 1);
if (!heyAvailable()) throw new Error("hey is not on PATH (Debian's `hey` package)");

const work = mkdtempSync(join(tmpdir(), "roster-bench-floors-"));
const upstream = await startKbUpstream(["127.0.0.1"], work, KIB * 1024);
const root = join(work, "root");
const paths = benchRoot(root, upstream.caFile);
const port = await freePort();
const { gateway, exited } = spawnGateway(PROJECT_ROOT, root, port);
await gatewayHealthy(port, gateway);
const token = await mintToken(paths.identity, { subject: "org/bench", runId: "bench" });

// the relays answer as 127.0.0.1 with a certificate of their own, and trust the upstream's CA
const relayCertificate = await makeServerCertificate(["127.0.0.1"]);
const relayOptions = {
  keyPem: relayCertificate.keyPem,
  certPem: relayCertificate.certPem,
  caPem: upstream.caPem,
  upstreamPort: upstream.port,
};
const tlsRelay = await startTlsRelay(relayOptions);
const httpRelay = await startHttpRelay(relayOptions);
const trust = join(work, "trust.pem");
writeFileSync(
  trust,
  [readFileSync(join(paths.ca, "ca.crt"), "utf8"), upstream.caPem, relayCertificate.caPem].join(
    "\n",
  ),
);

const routes = [
  {
    name: "roster's door",
    pid: gateway.pid,
    url: `https://127.0.0.1:${upstream.port}/1k`,
    proxy: `http://${token}:x@127.0.0.1:${port}`,
  },
  {
    name: "Node TLS relay, no HTTP",
    pid: tlsRelay.pid,
    url: `https://127.0.0.1:${tlsRelay.port}/1k`,
  },
  {
    name: "Node HTTP relay, no policy",
    pid: httpRelay.pid,
    url: `https://127.0.0.1:${httpRelay.port}/1k`,
  },
];

function cpuMs(pid: number | undefined): number {
  if (!pid) return 0;
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
  return (Number(fields[11]) + Number(fields[12])) * 10; // utime + stime, in ticks of 1/100 s
}

function drive(url: string, proxy: string | undefined, requests: number): Promise<number> {
  const args = ["-c", "8", "-n", String(requests), ...(proxy ? ["-x", proxy] : []), url];
  return new Promise((done, fail) =>
    execFile(
      "hey",
      args,
      { env: { ...process.env, SSL_CERT_FILE: trust }, maxBuffer: 1 << 24 },
      (error, stdout) => {
        if (error) return fail(error);
        const ok = Number(/\[200\]\s+(\d+) responses/.exec(String(stdout))?.[1] ?? 0);
        if (ok !== requests) return fail(new Error(`${url}: ${ok} of ${requests} answered 200`));
        done(Number(/Requests\/sec:\s+([\d.]+)/.exec(String(stdout))?.[1] ?? Number.NaN));
      },
    ),
  );
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2
    ? (sorted[middle] ?? 0)
    : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
};

const cpu = new Map(routes.map((route) => [route.name, [] as number[]]));
const rates = new Map(routes.map((route) => [route.name, [] as number[]]));
try {
  for (const route of routes) await drive(route.url, route.proxy, Math.min(2_000, REQUESTS)); // pools, leaf certs, JIT
  for (let round = 0; round < ROUNDS; round++) {
    for (const route of routes) {
      const before = cpuMs(route.pid);
      const rate = await drive(route.url, route.proxy, REQUESTS);
      cpu.get(route.name)?.push((cpuMs(route.pid) - before) / REQUESTS);
      rates.get(route.name)?.push(rate);
    }
  }
  const door = median(cpu.get("roster's door") ?? []);
  const lines = [
    `hey -c 8, ${REQUESTS} requests of ${KIB} KiB a round, ${ROUNDS} rounds alternating, Node ${process.version}`,
    "",
    "| route | CPU ms/req per round | median CPU ms/req | vs the door | median req/s |",
    "|---|---|---|---|---|",
    ...routes.map((route) => {
      const rounds = cpu.get(route.name) ?? [];
      return `| ${route.name} | ${rounds.map((value) => value.toFixed(3)).join(", ")} | ${median(rounds).toFixed(3)} | ${(median(rounds) / door).toFixed(2)}x | ${median(rates.get(route.name) ?? []).toFixed(0)} |`;
    }),
    "",
  ];
  process.stdout.write(lines.join("\n"));
} finally {
  tlsRelay.stop();
  httpRelay.stop();
  await stopGateway(gateway, exited);
  upstream.server.close();
}
