/**
 * The gateway against itself at another commit, in one run: `roster gateway
 * start` from this checkout and from another (built: its dist/ current),
 * alternating round by round on fresh roots, each driven by hey (8 clients,
 * 1 KB responses, or the KiB asked for, through the intercepted tunnel). Reports each round's
 * gateway CPU per request (from /proc), requests/s and peak RSS, and the
 * ratio of the medians, this checkout over the other. For "no slower" claims
 * about a change to the gateway's hot path. With an idle time, each gateway
 * rests that many seconds between its warm-up and the measured burst, as a
 * door does between a run's model calls. Needs hey on PATH.
 *   npx tsx bench/gateway-pair.ts <other checkout> [rounds] [requests] [KiB] [idle s]
 */
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { mintToken } from "../runner/boundary/gateway/doors/identity.ts";
import { PROJECT_ROOT } from "../runner/ground/version.ts";
import { benchRoot, gatewayHealthy, spawnGateway, stopGateway } from "./gateway-process.ts";
import { freePort } from "./harness.ts";
import { startKbUpstream } from "./kb-upstream.ts";

const other = process.argv[2] ? resolve(process.argv[2]) : undefined;
if (!other || !existsSync(join(other, "bin/roster.mjs")))
  throw new Error(
    "usage: npx tsx bench/gateway-pair.ts <other checkout, built> [rounds] [requests] [KiB] [idle s]",
  );
const ROUNDS = Number(process.argv[3] ?? 3);
const REQUESTS = Number(process.argv[4] ?? 20_000);
const KIB = Number(process.argv[5] ?? 1);
const IDLE_S = Number(process.argv[6] ?? 0);
const trees = { other, this: PROJECT_ROOT };

const work = mkdtempSync(join(tmpdir(), "roster-bench-pair-"));
const upstream = await startKbUpstream(["127.0.0.1"], work, KIB * 1024);
const upstreamCa = upstream.caFile;
const origin = `https://127.0.0.1:${upstream.port}/1k`;

const procStat = (pid: number) =>
  readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
const cpuMs = (pid: number) => (Number(procStat(pid)[11]) + Number(procStat(pid)[12])) * 10;
const peakMiB = (pid: number) =>
  Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) / 1024;
const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

function hey(requests: number, proxy: string, trust: string): Promise<string> {
  return new Promise((done, fail) =>
    execFile(
      "hey",
      ["-c", "8", "-n", String(requests), "-t", "10", "-x", proxy, origin],
      { env: { ...process.env, SSL_CERT_FILE: trust }, maxBuffer: 1 << 24 },
      (error, stdout) => (error ? fail(error) : done(String(stdout))),
    ),
  );
}

interface Round {
  cpu: number;
  rps: number;
  rss: number;
}
const rounds: Record<keyof typeof trees, Round[]> = { other: [], this: [] };
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, tree] of Object.entries(trees) as [keyof typeof trees, string][]) {
    const root = join(work, `${name}-${round}`);
    const paths = benchRoot(root, upstreamCa);
    const port = await freePort();
    const { gateway, exited } = spawnGateway(tree, root, port);
    try {
      await gatewayHealthy(port, gateway);
      const token = await mintToken(paths.identity, { subject: "org/bench", runId: "bench" });
      const trust = join(work, `trust-${name}-${round}.pem`);
      writeFileSync(trust, readFileSync(join(paths.ca, "ca.crt"), "utf8") + upstream.caPem);
      const proxy = `http://${token}:x@127.0.0.1:${port}`;
      await hey(Math.min(2000, REQUESTS), proxy, trust); // warm
      await new Promise((rested) => setTimeout(rested, IDLE_S * 1000));
      const pid = gateway.pid ?? 0;
      const before = cpuMs(pid);
      const text = await hey(REQUESTS, proxy, trust);
      const ok = Number(/\[200\]\s+(\d+) responses/.exec(text)?.[1] ?? 0);
      if (ok < REQUESTS) throw new Error(`${name}: only ${ok} of ${REQUESTS} answered 200`);
      rounds[name].push({
        cpu: (cpuMs(pid) - before) / ok,
        rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(text)?.[1]),
        rss: peakMiB(pid),
      });
    } finally {
      await stopGateway(gateway, exited);
    }
  }
}
upstream.server.close();

const row = (name: string, list: Round[]) =>
  `| ${name} | ${list.map((one) => one.cpu.toFixed(3)).join(", ")} | ${median(list.map((one) => one.cpu)).toFixed(3)} | ${median(list.map((one) => one.rps)).toFixed(0)} | ${median(list.map((one) => one.rss)).toFixed(1)} |`;
const ratio = (pick: (one: Round) => number) =>
  (median(rounds.this.map(pick)) / median(rounds.other.map(pick))).toFixed(2);
process.stdout.write(
  [
    `The gateway, this checkout against ${other}, ${ROUNDS} alternating rounds of ${REQUESTS} requests (hey, 8 clients, ${KIB} KiB${IDLE_S ? `, after ${IDLE_S} s idle` : ""}):`,
    "",
    "| checkout | CPU ms/req per round | median CPU ms/req | median req/s | median peak RSS MiB |",
    "|---|---|---|---|---|",
    row("other", rounds.other),
    row("this", rounds.this),
    "",
    `this / other: CPU per request ${ratio((one) => one.cpu)}x, requests/s ${ratio((one) => one.rps)}x, peak RSS ${ratio((one) => one.rss)}x`,
    "",
  ].join("\n"),
);
process.exit(0);
