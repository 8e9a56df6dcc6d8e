/**
 * The gateway's cost, side by side in one run on loopback with keep-alive:
 * direct HTTPS, through roster's gateway (TLS intercepted, judged, audited), and
 * through mitmproxy (Debian's `mitmproxy`, also intercepting). Small (1 KB) and
 * large (1 MB) responses; requests/s, p50/p99 latency, and the proxy process's
 * CPU per request. Then each proxy's memory (RSS): idle, at its peak under 200
 * concurrent clients × 50 requests, and holding 1000 idle connections. Needs
 * mitmdump on PATH; with `hey` on PATH the exchanges are also driven by it, a
 * client in its own process, beside the floor for any Node proxy: a bare TLS
 * relay with no HTTP (bench/tls-relay.ts).
 *   npx tsx bench/gateway.ts          (PROFILE=<dir> also profiles the gateway)
 */
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:https";
import { type AddressInfo, connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { Agent, type Dispatcher, ProxyAgent, request } from "undici";
import { mintToken } from "../runner/boundary/gateway/doors/identity.ts";
import { GATEWAY_NODE_FLAGS } from "../runner/boundary/gateway/settings/defaults.ts";
import { rosterPaths } from "../runner/ground/config/paths.ts";
import { PROJECT_ROOT } from "../runner/ground/version.ts";
import { freePort, makeServerCertificate } from "./harness.ts";
import { type HeyResult, hey, heyAvailable } from "./hey.ts";
import { startTlsRelay } from "./tls-relay.ts";

const CONCURRENCY = 8;
const SIZES = [
  { name: "1 KB", bytes: 1024, requests: 3000 },
  { name: "1 MB", bytes: 1024 * 1024, requests: 300 },
];

const work = await mkdtemp(join(tmpdir(), "roster-bench-gw-"));
const certificate = await makeServerCertificate(["127.0.0.1"]);
const upstreamCa = join(work, "upstream-ca.pem");
await writeFile(upstreamCa, certificate.caPem);
const bodies = new Map(SIZES.map((size) => [`/${size.bytes}`, Buffer.alloc(size.bytes, 0x61)]));
const upstream = createServer(
  { key: certificate.keyPem, cert: certificate.certPem },
  (req, res) => {
    const body = bodies.get(req.url ?? "") ?? Buffer.alloc(0);
    res.writeHead(200, {
      "content-type": "application/octet-stream",
      "content-length": body.length,
    });
    res.end(body);
  },
);
upstream.keepAliveTimeout = 60_000;
await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
const origin = `https://127.0.0.1:${(upstream.address() as AddressInfo).port}`;

function cpuMs(pid: number | undefined): number {
  if (!pid) return 0;
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime + stime, in clock ticks of 1/100 s
}

/** Resident memory of a process, in MiB. */
function rssMiB(pid: number | undefined): number {
  if (!pid) return 0;
  const line = readFileSync(`/proc/${pid}/status`, "utf8")
    .split("\n")
    .find((entry) => entry.startsWith("VmRSS:"));
  return Number(line?.replace(/\D+/g, "") ?? 0) / 1024;
}

async function waitForPort(port: number): Promise<void> {
  for (let i = 0; i < 100; i++) {
    try {
      await request(`http://127.0.0.1:${port}/healthz`, { headersTimeout: 500 }).then((r) =>
        r.body.dump(),
      );
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  throw new Error(`nothing answered on ${port}`);
}

// roster's gateway, as its own process (`roster gateway start`)
const root = join(work, "roster");
const paths = rosterPaths({ ROSTER_ROOT: root });
await mkdir(paths.config, { recursive: true });
await writeFile(
  join(paths.config, "org.toml"),
  `[gateway]\nupstream_ca = ["${upstreamCa}"]\n\n[[grant]]\nname = "bench"\nverdict = "allow"\nmatch = { host = "127.0.0.1" }\n`,
);
const gatewayPort = await freePort();
// run as a shell runs it (its own first line sets the gateway's V8 flags); PROFILE=<dir>
// runs node directly with those flags, and the gateway writes a CPU profile there when it stops
const gatewayArgs = ["gateway", "start", "--addr", `127.0.0.1:${gatewayPort}`];
const rosterBin = join(PROJECT_ROOT, "bin/roster.mjs");
const gateway = spawn(
  process.env.PROFILE ? process.execPath : rosterBin,
  process.env.PROFILE
    ? [
        "--cpu-prof",
        `--cpu-prof-dir=${process.env.PROFILE}`,
        ...GATEWAY_NODE_FLAGS,
        rosterBin,
        ...gatewayArgs,
      ]
    : gatewayArgs,
  {
    env: { ...process.env, ROSTER_ROOT: root },
    stdio: "ignore",
  },
);
await waitForPort(gatewayPort);
const token = await mintToken(paths.identity, { subject: "org/bench", runId: "bench" });
const rosterCa = readFileSync(join(paths.ca, "ca.crt"), "utf8");

// mitmproxy, intercepting too, trusting the same upstream CA
const mitmPort = await freePort();
const mitmDir = join(work, "mitm");
const mitm: ChildProcess = spawn(
  "mitmdump",
  [
    "-q",
    "--listen-host",
    "127.0.0.1",
    "--listen-port",
    String(mitmPort),
    "--set",
    `confdir=${mitmDir}`,
    "--set",
    `ssl_verify_upstream_trusted_ca=${upstreamCa}`,
  ],
  { stdio: "ignore" },
);
for (let i = 0; i < 100; i++) {
  try {
    readFileSync(join(mitmDir, "mitmproxy-ca-cert.pem"));
    break;
  } catch {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
await new Promise((resolve) => setTimeout(resolve, 1000));
const mitmCa = readFileSync(join(mitmDir, "mitmproxy-ca-cert.pem"), "utf8");

interface Route {
  name: string;
  dispatcher: Dispatcher;
  pid: number | undefined;
}
const routes: Route[] = [
  {
    name: "direct HTTPS",
    dispatcher: new Agent({ connect: { ca: certificate.caPem }, keepAliveTimeout: 60_000 }),
    pid: undefined,
  },
  {
    name: "roster gateway",
    dispatcher: new ProxyAgent({
      uri: `http://${token}:x@127.0.0.1:${gatewayPort}`,
      requestTls: { ca: rosterCa },
    }),
    pid: gateway.pid,
  },
  {
    name: "mitmproxy",
    dispatcher: new ProxyAgent({ uri: `http://127.0.0.1:${mitmPort}`, requestTls: { ca: mitmCa } }),
    pid: mitm.pid,
  },
];

async function load(route: Route, path: string, total: number, concurrency = CONCURRENCY) {
  const latencies: number[] = [];
  let next = 0;
  let failures = 0;
  const cpuBefore = cpuMs(route.pid);
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        next++;
        const t0 = performance.now();
        try {
          const response = await request(`${origin}${path}`, { dispatcher: route.dispatcher });
          await response.body.arrayBuffer();
          if (response.statusCode !== 200) failures++;
        } catch {
          failures++;
        }
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const q = (p: number) =>
    latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? 0;
  return {
    rps: total / seconds,
    p50: q(0.5),
    p99: q(0.99),
    cpuPerRequest: (cpuMs(route.pid) - cpuBefore) / total,
    failures,
  };
}

// idle: started, its CA and config loaded, nothing served yet
const idleRss = new Map(routes.map((route) => [route.name, rssMiB(route.pid)]));

try {
  console.log(`loopback, keep-alive, ${CONCURRENCY} concurrent clients, Node ${process.version}\n`);
  console.log(
    "| response | route | req/s | p50 ms | p99 ms | added p50 ms | proxy CPU ms/req | req/s vs direct | failures |",
  );
  console.log("|---|---|---|---|---|---|---|---|---|");
  for (const size of SIZES) {
    for (const route of routes) await load(route, `/${size.bytes}`, Math.min(200, size.requests)); // warm up pools and leaf certs
    let direct: Awaited<ReturnType<typeof load>> | undefined;
    for (const route of routes) {
      const result = await load(route, `/${size.bytes}`, size.requests);
      direct ??= result;
      console.log(
        `| ${size.name} | ${route.name} | ${result.rps.toFixed(0)} | ${result.p50.toFixed(2)} | ${result.p99.toFixed(2)} | ${(result.p50 - direct.p50).toFixed(2)} | ${route.pid ? result.cpuPerRequest.toFixed(3) : "-"} | ${(result.rps / direct.rps).toFixed(2)}x | ${result.failures} |`,
      );
    }
  }
  if (heyAvailable()) {
    // the same exchanges driven by hey, a client in a process (and threads) of its own;
    // beside them the floor: a bare Node TLS relay with no HTTP at all (bench/tls-relay.ts)
    const trustFile = join(work, "trust.pem");
    await writeFile(trustFile, [certificate.caPem, rosterCa, mitmCa].join("\n"));
    const relay = await startTlsRelay({
      keyPem: certificate.keyPem,
      certPem: certificate.certPem,
      caPem: certificate.caPem,
      upstreamPort: Number(new URL(origin).port),
    });
    const targets = [
      { name: "direct HTTPS", pid: undefined, origin, proxy: undefined },
      {
        name: "roster gateway",
        pid: gateway.pid,
        origin,
        proxy: `http://${token}:x@127.0.0.1:${gatewayPort}`,
      },
      { name: "mitmproxy", pid: mitm.pid, origin, proxy: `http://127.0.0.1:${mitmPort}` },
      {
        name: "Node TLS relay, no HTTP (floor)",
        pid: relay.pid,
        origin: `https://127.0.0.1:${relay.port}`,
        proxy: undefined,
      },
    ];
    try {
      console.log(`\nThe same, driven by hey (${CONCURRENCY} concurrent clients):\n`);
      console.log(
        "| response | route | req/s | p50 ms | p99 ms | added p50 ms | proxy CPU ms/req | req/s vs direct | peak RSS MiB | failures |",
      );
      console.log("|---|---|---|---|---|---|---|---|---|---|");
      for (const size of SIZES) {
        let direct: HeyResult | undefined;
        for (const target of targets) {
          const requests = size.requests * 3;
          const cpuBefore = cpuMs(target.pid);
          let peak = rssMiB(target.pid);
          const sampler = setInterval(() => {
            peak = Math.max(peak, rssMiB(target.pid));
          }, 50);
          const result = await hey({
            url: `${target.origin}/${size.bytes}`,
            requests,
            concurrency: CONCURRENCY,
            trustFile,
            ...(target.proxy ? { proxy: target.proxy } : {}),
          }).finally(() => clearInterval(sampler));
          const cpu = (cpuMs(target.pid) - cpuBefore) / requests;
          direct ??= result;
          console.log(
            `| ${size.name} | ${target.name} | ${result.rps.toFixed(0)} | ${result.p50.toFixed(2)} | ${result.p99.toFixed(2)} | ${(result.p50 - direct.p50).toFixed(2)} | ${target.pid ? cpu.toFixed(3) : "-"} | ${(result.rps / direct.rps).toFixed(2)}x | ${target.pid ? peak.toFixed(1) : "-"} | ${result.failures} |`,
          );
        }
      }
      // one client, one request at a time: the latency the proxy adds when nothing queues for the CPU
      console.log("\nOne client, sequential requests (hey -c 1), 1 KB:\n");
      console.log("| route | p50 ms | p99 ms | added p50 ms |");
      console.log("|---|---|---|---|");
      let alone: HeyResult | undefined;
      for (const target of targets) {
        const result = await hey({
          url: `${target.origin}/1024`,
          requests: 1000,
          concurrency: 1,
          trustFile,
          ...(target.proxy ? { proxy: target.proxy } : {}),
        });
        alone ??= result;
        console.log(
          `| ${target.name} | ${result.p50.toFixed(2)} | ${result.p99.toFixed(2)} | ${(result.p50 - alone.p50).toFixed(2)} |`,
        );
      }
    } finally {
      relay.stop();
    }
  } else console.log("\n(hey is not on PATH: `apt-get install hey` adds rows driven by it)");
  console.log(
    "\n| route | RSS idle MiB | RSS peak, 200 clients × 50 req MiB | req/s at 200 clients | failures | RSS with 1000 idle connections MiB |",
  );
  console.log("|---|---|---|---|---|---|");
  for (const route of routes.slice(1)) {
    const port = route.name === "mitmproxy" ? mitmPort : gatewayPort;
    const idle = idleRss.get(route.name) ?? 0;
    // 200 clients, each on its own connection through the proxy
    const crowd: Route = {
      ...route,
      dispatcher: new ProxyAgent({
        uri:
          route.name === "mitmproxy"
            ? `http://127.0.0.1:${mitmPort}`
            : `http://${token}:x@127.0.0.1:${gatewayPort}`,
        requestTls: { ca: route.name === "mitmproxy" ? mitmCa : rosterCa },
        connections: 200,
      }),
    };
    let peak = rssMiB(route.pid);
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssMiB(route.pid));
    }, 50);
    const loaded = await load(crowd, "/1024", 200 * 50, 200);
    clearInterval(sampler);
    peak = Math.max(peak, rssMiB(route.pid));
    await crowd.dispatcher.close();
    const sockets = await Promise.all(
      Array.from(
        { length: 1000 },
        () =>
          new Promise<Socket>((resolve) => {
            const socket = connect(port, "127.0.0.1", () => resolve(socket));
            socket.on("error", () => undefined);
          }),
      ),
    );
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const withIdle = rssMiB(route.pid);
    for (const socket of sockets) socket.destroy();
    console.log(
      `| ${route.name} | ${idle.toFixed(1)} | ${peak.toFixed(1)} | ${loaded.rps.toFixed(0)} | ${loaded.failures} | ${withIdle.toFixed(1)} |`,
    );
  }
} finally {
  for (const route of routes) await route.dispatcher.close();
  gateway.kill("SIGTERM");
  mitm.kill("SIGTERM");
  upstream.closeAllConnections();
  upstream.close();
  await rm(work, { recursive: true, force: true });
}
