/**
 * The door with 0, 1 and 2 shards (`[gateway] shards`), alternating round by
 * round on fresh roots: `roster gateway start` as a process, two runs' doors
 * opened through it, and a box-side client process driving 1 KB HTTPS
 * requests through each run's intercepted tunnel (CONNECT over the door's
 * unix socket, then TLS with the door's CA, connections kept alive) for a
 * fixed time. Reports requests/s, and the CPU per request of the gateway's
 * own process and of its shards (from /proc), so the cost a shard adds and
 * what the gateway itself still spends per request are both read off.
 * With --metered every request is also charged to an org budget (a meter and
 * a limit it never reaches), so a shard asks the gateway before each one: the
 * gateway's CPU per request is then the price of keeping budgets exact.
 *   npx tsx bench/door-shards.ts [rounds] [seconds] [connections per run] [--metered]
 */
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DOOR_SOCKET } from "../runner/boundary/box/layout.ts";
import { mintToken } from "../runner/boundary/gateway/doors/identity.ts";
import { rosterPaths } from "../runner/ground/config/paths.ts";
import { leaseGateway } from "../runner/work/runs/gateway-lease.ts";
import { gatewayHealthy, stopGateway } from "./gateway-process.ts";
import { freePort, ROSTER_BIN } from "./harness.ts";
import { startKbUpstream } from "./kb-upstream.ts";

const METERED = process.argv.includes("--metered");
const [rounds_, seconds_, perRun_] = process.argv.slice(2).filter((arg) => !arg.startsWith("--"));
const ROUNDS = Number(rounds_ ?? 3);
const SECONDS = Number(seconds_ ?? 8);
const PER_RUN = Number(perRun_ ?? 4);
const BUDGET = `\n[budget]\ncurrencies = ["calls"]\n\n[[budget.meter]]\nmatch = { rule = "bench" }\nspend = { calls = 1 }\n\n[[budget.limit]]\ncurrency = "calls"\nwindow = "day"\nmax = 100000000\n`;
const SETTINGS = [0, 1, 2];

const work = mkdtempSync(join(tmpdir(), "roster-bench-shards-"));
const upstream = await startKbUpstream(["upstream.test"], work);

const procStat = (pid: number) =>
  readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
const cpuMs = (pid: number) => (Number(procStat(pid)[11]) + Number(procStat(pid)[12])) * 10;
const childrenOf = (pid: number) =>
  execFileSync("pgrep", ["-P", String(pid)], { encoding: "utf8" })
    .split("\n")
    .filter(Boolean)
    .map(Number);
const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

/** The box side, in a process of its own: keep-alive HTTPS through each door's tunnel. */
const CLIENT = `
const { connect } = require("node:net");
const https = require("node:https");
const { connect: tls } = require("node:tls");
const { doors, ca, seconds, perRun, target } = JSON.parse(process.argv[1]);
let done = 0, failed = 0;
const until = Date.now() + seconds * 1000;
function agentFor(door) {
  const agent = new https.Agent({ keepAlive: true, maxSockets: 1, ca });
  agent.createConnection = (options, made) => {
    const raw = connect({ path: door.socket });
    raw.write("CONNECT " + target + " HTTP/1.1\\r\\nHost: " + target + "\\r\\nProxy-Authorization: Basic " + Buffer.from(door.token + ":x").toString("base64") + "\\r\\n\\r\\n");
    raw.once("data", (chunk) => {
      if (!/^HTTP\\/1\\.1 200/.test(chunk.toString())) return made(new Error("CONNECT refused: " + chunk));
      made(null, tls({ socket: raw, servername: "upstream.test", ca }));
    });
    raw.on("error", (error) => made(error));
  };
  return agent;
}
function loop(agent) {
  if (Date.now() > until) return Promise.resolve();
  return new Promise((next) => {
    const ask = https.request({ agent, host: "upstream.test", port: Number(target.split(":")[1]), path: "/1k" }, (res) => {
      res.resume();
      res.on("end", () => { if (res.statusCode === 200) done++; else failed++; next(); });
    });
    ask.on("error", () => { failed++; next(); });
    ask.end();
  }).then(() => loop(agent));
}
const all = doors.flatMap((door) => Array.from({ length: perRun }, () => loop(agentFor(door))));
Promise.all(all).then(() => { process.stdout.write(JSON.stringify({ done, failed })); process.exit(0); });
`;

interface Round {
  rps: number;
  gatewayCpu: number;
  shardCpu: number;
}
const rounds = new Map<number, Round[]>(SETTINGS.map((setting) => [setting, []]));

for (let round = 0; round < ROUNDS; round++) {
  for (const shards of SETTINGS) {
    const root = join(work, `s${shards}-${round}`);
    const paths = rosterPaths({ ROSTER_ROOT: root });
    mkdirSync(paths.config, { recursive: true });
    writeFileSync(
      join(paths.config, "org.toml"),
      `[gateway]\nshards = ${shards}\nupstream_ca = ["${upstream.caFile}"]\nresolve = { "upstream.test" = "127.0.0.1" }\n\n[[grant]]\nname = "bench"\nverdict = "allow"\nmatch = { host = "upstream.test" }\n${METERED ? BUDGET : ""}`,
    );
    const port = await freePort();
    const gateway = spawn(ROSTER_BIN, ["gateway", "start", "--addr", `127.0.0.1:${port}`], {
      env: { ...process.env, ROSTER_ROOT: root },
      stdio: "ignore",
    });
    const exited = new Promise((gone) => gateway.once("exit", gone));
    try {
      await gatewayHealthy(port, gateway);
      // the lease finds it by its state file, written once its doors are ready
      while (!existsSync(join(paths.state, "gateway.json")))
        await new Promise((resolve) => setTimeout(resolve, 20));
      const lease = await leaseGateway({ paths, port, env: { ...process.env, ROSTER_ROOT: root } });
      const doors: { socket: string; token: string }[] = [];
      for (const runId of ["bench-a", "bench-b"]) {
        const token = await mintToken(paths.identity, { subject: "org/bench", runId });
        doors.push({ socket: join(await lease.openDoor(runId), DOOR_SOCKET), token });
      }
      const ca = readFileSync(join(paths.ca, "ca.crt"), "utf8");
      const drive = (seconds: number) =>
        new Promise<{ done: number; failed: number }>((resolve, reject) => {
          const args = JSON.stringify({
            doors,
            ca,
            seconds,
            perRun: PER_RUN,
            target: `upstream.test:${upstream.port}`,
          });
          const client = spawn(process.execPath, ["-e", CLIENT, args], {
            stdio: ["ignore", "pipe", "inherit"],
          });
          let out = "";
          client.stdout.on("data", (chunk: Buffer) => {
            out += chunk.toString();
          });
          client.once("exit", (code) =>
            code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`client exit ${code}`)),
          );
        });
      await drive(1); // warm: leaves minted, pools open
      const pid = gateway.pid ?? 0;
      const shardPids = shards > 0 ? childrenOf(pid) : [];
      const before = { gateway: cpuMs(pid), shards: shardPids.map(cpuMs) };
      const started = performance.now();
      const { done, failed } = await drive(SECONDS);
      const seconds = (performance.now() - started) / 1000;
      if (failed > 0) throw new Error(`${shards} shards: ${failed} requests failed`);
      const shardCpu = shardPids.reduce(
        (sum, one, i) => sum + cpuMs(one) - (before.shards[i] ?? 0),
        0,
      );
      rounds.get(shards)?.push({
        rps: done / seconds,
        gatewayCpu: (cpuMs(pid) - before.gateway) / done,
        shardCpu: shardCpu / done,
      });
      await lease.release();
    } finally {
      await stopGateway(gateway, exited);
    }
  }
}
upstream.server.close();

const lines = [
  `The door with 0, 1 and 2 shards, ${ROUNDS} alternating rounds of ${SECONDS} s (2 runs, ${PER_RUN} keep-alive HTTPS connections each, 1 KB${METERED ? ", every request metered" : ""}):`,
  "",
  "| shards | req/s per round | median req/s | gateway CPU ms/req | shards' CPU ms/req | total CPU ms/req |",
  "|---|---|---|---|---|---|",
];
const base = median((rounds.get(0) ?? []).map((one) => one.rps));
for (const [shards, list] of rounds) {
  const gatewayCpu = median(list.map((one) => one.gatewayCpu));
  const shardCpu = median(list.map((one) => one.shardCpu));
  lines.push(
    `| ${shards} | ${list.map((one) => one.rps.toFixed(0)).join(", ")} | ${median(list.map((one) => one.rps)).toFixed(0)} (${(median(list.map((one) => one.rps)) / base).toFixed(2)}x) | ${gatewayCpu.toFixed(3)} | ${shardCpu.toFixed(3)} | ${(gatewayCpu + shardCpu).toFixed(3)} |`,
  );
}
process.stdout.write(`${lines.join("\n")}\n`);
process.exit(0);
