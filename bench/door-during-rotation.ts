/**
 * What rotating the audit log costs the door while it serves: `roster
 * gateway start` on a fresh root, driven by hey (8 clients, 1 KB through an
 * intercepted tunnel), in alternating rounds (a) with nothing else going on
 * and (b) while this process sweeps the logs as the server does, but every
 * 100 ms, with `[retention] max_file = "256k"` so the live decisions.jsonl is
 * renamed aside and gzipped many times a round (the door's writer follows
 * each rename; settled files are gzipped beside it). Reports p50/p99 and
 * requests/s of each and how many rotations a round saw.
 *   npx tsx bench/door-during-rotation.ts [rounds]
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { mintToken } from "../runner/boundary/gateway/doors/identity.ts";
import { rosterPaths } from "../runner/ground/config/paths.ts";
import { PROJECT_ROOT } from "../runner/ground/version.ts";
import { sweepLogs } from "../runner/records/retention/sweep.ts";
import { gatewayHealthy } from "./gateway-process.ts";
import { freePort } from "./harness.ts";
import { hey } from "./hey.ts";
import { startKbUpstream } from "./kb-upstream.ts";

const ROUNDS = Number(process.argv[2] ?? 3);
const REQUESTS = 8_000;

const work = mkdtempSync(join(tmpdir(), "roster-bench-rotation-"));
const upstream = await startKbUpstream(["127.0.0.1"], work);
const upstreamCa = upstream.caFile;
const origin = `https://127.0.0.1:${upstream.port}/1k`;

interface Result {
  p50: number;
  p99: number;
  rps: number;
  rotations: number;
}
type Measured = Omit<Result, "rotations">;
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
  `[gateway]\nupstream_ca = ["${upstreamCa}"]\n\n[retention]\nmax_file = "256k"\n\n[[grant]]\nname = "bench"\nverdict = "allow"\nmatch = { host = "127.0.0.1" }\n`,
);
const retention = { max_file: "256k" };
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
const rounds: Record<"quiet" | "rotating", Result[]> = { quiet: [], rotating: [] };
try {
  await gatewayHealthy(port, gateway);
  const token = await mintToken(paths.identity, { subject: "org/bench", runId: "bench" });
  const trust = join(work, "trust.pem");
  writeFileSync(trust, readFileSync(join(paths.ca, "ca.crt"), "utf8") + upstream.caPem);
  const proxy = `http://${token}:x@127.0.0.1:${port}`;
  await round(1000, proxy, trust); // warm
  for (let r = 0; r < ROUNDS; r++) {
    rounds.quiet.push({ ...(await round(REQUESTS, proxy, trust)), rotations: 0 });
    let sweeping = true;
    let rotations = 0;
    const sweeper = (async () => {
      while (sweeping) {
        for (const log of await sweepLogs(paths, retention, { settleMs: 2_000 }))
          if (log.rotated) rotations++;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
    const result = await round(REQUESTS, proxy, trust);
    sweeping = false;
    await sweeper;
    rounds.rotating.push({ ...result, rotations });
  }
} finally {
  if (gateway.exitCode === null) gateway.kill("SIGTERM");
  await exited;
  upstream.server.close();
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
const med = (name: "quiet" | "rotating", pick: (r: Result) => number) =>
  median(rounds[name].map(pick));
const row = (name: "quiet" | "rotating") =>
  `| ${name} | ${med(name, (r) => r.p50).toFixed(2)} | ${med(name, (r) => r.p99).toFixed(2)} | ${med(name, (r) => r.rps).toFixed(0)} | ${rounds[name].map((r) => r.rotations).join(", ")} |`;
process.stdout.write(
  [
    `The door while its audit log rotates, ${ROUNDS} alternating rounds of ${REQUESTS} requests (hey, 8 clients, 1 KB), medians:`,
    "",
    "| phase | p50 ms | p99 ms | req/s | rotations per round |",
    "|---|---|---|---|---|",
    row("quiet"),
    row("rotating"),
    "",
    `rotating / quiet: p50 ${(med("rotating", (r) => r.p50) / med("quiet", (r) => r.p50)).toFixed(2)}x, p99 ${(med("rotating", (r) => r.p99) / med("quiet", (r) => r.p99)).toFixed(2)}x, req/s ${(med("rotating", (r) => r.rps) / med("quiet", (r) => r.rps)).toFixed(2)}x`,
    "",
  ].join("\n"),
);
process.exit(0);
