/**
 * Where the door's CPU goes: `roster gateway start` under V8's sampling
 * profiler (--cpu-prof) while hey drives 1 KB requests through the
 * intercepted tunnel (8 clients, as bench/gateway.ts; answers of the KiB
 * asked for, 1 by default), then the profile's
 * busy time sorted into what it was spent on. Prints the CPU per request
 * measured from /proc (the profiler's own cost included: read it as a share,
 * not a speed) and the table; keeps the .cpuprofile for Chrome's or VS
 * Code's viewer. Needs hey on PATH.
 *   npx tsx bench/door-profile.ts [requests] [KiB]
 */
import { execFile, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { mintToken } from "../runner/boundary/gateway/doors/identity.ts";
import { PROJECT_ROOT } from "../runner/ground/version.ts";
import { benchRoot, gatewayHealthy } from "./gateway-process.ts";
import { freePort } from "./harness.ts";
import { startKbUpstream } from "./kb-upstream.ts";

const REQUESTS = Number(process.argv[2] ?? 20_000);
const KIB = Number(process.argv[3] ?? 1);
const work = mkdtempSync(join(tmpdir(), "roster-bench-profile-"));
const upstream = await startKbUpstream(["127.0.0.1"], work, KIB * 1024);
const root = join(work, "root");
const paths = benchRoot(root, upstream.caFile);
const profiles = join(work, "profiles");
const port = await freePort();
const gateway = spawn(
  join(PROJECT_ROOT, "bin/roster.mjs"),
  ["gateway", "start", "--addr", `127.0.0.1:${port}`],
  {
    env: {
      ...process.env,
      ROSTER_ROOT: root,
      NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${profiles} --cpu-prof-interval=100`,
    },
    stdio: "ignore",
  },
);
await gatewayHealthy(port, gateway);
const token = await mintToken(paths.identity, { subject: "org/bench", runId: "bench" });
const trust = join(work, "trust.pem");
writeFileSync(trust, readFileSync(join(paths.ca, "ca.crt"), "utf8") + upstream.caPem);
const origin = `https://127.0.0.1:${upstream.port}/1k`;
const cpuMs = () => {
  const fields = readFileSync(`/proc/${gateway.pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
  return (Number(fields[11]) + Number(fields[12])) * 10;
};
const drive = (requests: number) =>
  new Promise<string>((done, fail) =>
    execFile(
      "hey",
      [
        "-c",
        "8",
        "-n",
        String(requests),
        "-t",
        "10",
        "-x",
        `http://${token}:x@127.0.0.1:${port}`,
        origin,
      ],
      { env: { ...process.env, SSL_CERT_FILE: trust }, maxBuffer: 1 << 24 },
      (error, stdout) => (error ? fail(error) : done(String(stdout))),
    ),
  );
const WARM = Math.min(2000, REQUESTS);
await drive(WARM); // warm
const before = cpuMs();
const text = await drive(REQUESTS);
const perRequest = (cpuMs() - before) / REQUESTS;
gateway.kill("SIGTERM");
await new Promise((gone) => gateway.once("exit", gone));
upstream.server.close();

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}
const file = readdirSync(profiles).find((name) => name.endsWith(".cpuprofile"));
if (!file) throw new Error("the gateway wrote no profile");
const profile = JSON.parse(readFileSync(join(profiles, file), "utf8")) as Profile;
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const parent = new Map<number, number>();
for (const node of profile.nodes)
  for (const child of node.children ?? []) parent.set(child, node.id);

/** What a sample was spent on, from its own frame and the frames that called it. */
function category(id: number): string | undefined {
  const frame = byId.get(id)?.callFrame;
  if (!frame || frame.functionName === "(idle)") return undefined;
  const stack: string[] = [];
  for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
    const node = byId.get(at);
    if (node) stack.push(`${node.callFrame.functionName}@${node.callFrame.url}`);
  }
  const callers = stack.join(" ");
  const name = frame.functionName;
  if (/^(writeString|writeSync)$/.test(name) && /\brecord@/.test(callers))
    return "the audit line: its write(2)";
  if (/^(writeLatin1String|writev|writeUtf8String|writeBuffer)$/.test(name))
    return "TLS: encrypting and writing to the sockets";
  if (/tls\/wrap|stream_base_commons/.test(frame.url) || /^(readStart|onStreamRead)$/.test(name))
    return "TLS: reading and decrypting";
  if (/\brecord@/.test(callers)) return "the audit line: building it";
  if (name === "existsSync" && /\bresolve@/.test(callers))
    return "the token's live file, checked each request (revocation)";
  if (name === "(garbage collector)") return "garbage collection";
  if (/_http_|node:https/.test(frame.url))
    return "Node's HTTP (the box's server, the upstream client)";
  if (/\/dist\/|\/runner\//.test(frame.url)) return "roster's own code (judging, facts, relay)";
  if (frame.url.startsWith("node:")) return "Node's events, streams and timers";
  return "other";
}
const spent = new Map<string, number>();
let busy = 0;
profile.samples.forEach((id, index) => {
  const what = category(id);
  const micros = profile.timeDeltas[index] ?? 0;
  if (!what) return;
  busy += micros;
  spent.set(what, (spent.get(what) ?? 0) + micros);
});
const rps = /Requests\/sec:\s+([\d.]+)/.exec(text)?.[1];
const lines = [
  `The door under --cpu-prof, ${REQUESTS} requests (hey, 8 clients, ${KIB} KiB): ${perRequest.toFixed(3)} ms of CPU a request with the profiler on, ${rps} req/s; ${(busy / 1000).toFixed(0)} ms busy in the profile (${join(profiles, file)})`,
  "",
  "| spent on | share of the busy time | ms a request |",
  "|---|---|---|",
  ...[...spent]
    .sort((a, b) => b[1] - a[1])
    .map(
      ([what, micros]) =>
        `| ${what} | ${((100 * micros) / busy).toFixed(1)}% | ${(micros / 1000 / (REQUESTS + WARM)).toFixed(3)} |`,
    ),
  "",
];
process.stdout.write(lines.join("\n"));
process.exit(0);
