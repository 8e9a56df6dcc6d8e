/**
 * The floors under a run handed to a ready box (docs/ready-boxes.md), each
 * measured alone in one run, beside pi's floor (bench/pi-floor.ts) that the
 * issue's targets are ratios of:
 *
 * - a bare Node process (`node -e 0`) and `roster --version`: the least a
 *   `roster run` client costs before it says a word to the server;
 * - pi alone in a hardened box of the same image, started in RPC mode and
 *   left idle as a ready box is, from the prompt written to its stdin to its
 *   request reaching the scripted model (through a plain host proxy, as pi
 *   reaches the door through the proxy variables): what pi itself costs of the
 *   first request;
 * - the same pi from its stdin closed to its own exit (a `date` the box prints
 *   after pi returns) and to `docker run`'s exit: what ending the box costs;
 * - one local rsync dry-run over a one-file store with the store passes'
 *   options: the least a store snapshot after a run costs (rsync's local
 *   processes wait for each other in 20 ms sleeps).
 *
 *   npx tsx bench/ready-floors.ts
 */
import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { type AddressInfo, connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { BOX_IMAGE } from "../runner/boundary/box/layout.ts";
import { STORE_RSYNC_OPTIONS } from "../runner/boundary/store/rsync.ts";
import { ModelServer, ROSTER_BIN } from "./harness.ts";
import { piFloor } from "./pi-floor.ts";
import { median, timed } from "./timing.ts";

const ROUNDS = 7;

const model = await new ModelServer().start("0.0.0.0");

// a plain forward proxy on the host: pi's ProxyAgent tunnels with CONNECT, as it does to the door
const proxy = createServer();
proxy.on("connect", (req, socket, head) => {
  const port = Number((req.url ?? "").split(":")[1]);
  const upstream = connect(port, "127.0.0.1", () => {
    socket.write("HTTP/1.1 200 OK\r\n\r\n");
    upstream.write(head);
    upstream.pipe(socket);
    socket.pipe(upstream);
  });
  upstream.on("error", () => socket.destroy());
  socket.on("error", () => upstream.destroy());
});
await new Promise<void>((resolve) => proxy.listen(0, "0.0.0.0", resolve));
const proxyUrl = `http://host.docker.internal:${(proxy.address() as AddressInfo).port}`;

const floor = piFloor(model.port);

/** pi's floor: a hardened docker run of pi, to its first model request. */
async function piFloorFirst(): Promise<number> {
  const asked = model.requests.length;
  model.play({ text: "ok" });
  const argv = floor.argv(BOX_IMAGE);
  const started = performance.now();
  const child = spawn(argv[0] as string, argv.slice(1), { stdio: "ignore" });
  await new Promise((resolve) => child.once("exit", resolve));
  const request = model.requests[asked];
  if (!request) throw new Error("pi's floor run made no model request: nothing to time");
  return request.arrivedAt - started;
}

interface IdlePi {
  /** The prompt written to the model's request. */
  first: number;
  /** stdin closed to pi's own exit, by the box's clock. */
  piExit: number;
  /** stdin closed to `docker run --rm` returning. */
  boxGone: number;
}

/** pi in RPC mode, idle for a second as a ready box waits, then one prompt and the end of stdin. */
async function idlePi(): Promise<IdlePi> {
  const argv = floor.argv(
    BOX_IMAGE,
    ["-i", "-e", `HTTP_PROXY=${proxyUrl}`, "-e", `http_proxy=${proxyUrl}`],
    ["bash", "-c", '"$@"; echo "pi-exited $(date +%s%3N)" >&2', "--"],
  );
  const command = [...argv.slice(0, argv.indexOf("--mode")), "--mode", "rpc", "--no-session"];
  const asked = model.requests.length;
  model.play({ text: "ok" });
  const child = spawn(command[0] as string, command.slice(1), { stdio: ["pipe", "pipe", "pipe"] });
  let prompted = 0;
  let closed = 0;
  let closedWall = 0;
  let exitedWall = 0;
  child.stderr.on("data", (chunk: Buffer) => {
    const said = /pi-exited (\d+)/.exec(chunk.toString());
    if (said) exitedWall = Number(said[1]);
  });
  let pending = "";
  child.stdout.on("data", (chunk: Buffer) => {
    pending += chunk.toString();
    for (let newline = pending.indexOf("\n"); newline >= 0; newline = pending.indexOf("\n")) {
      const event = JSON.parse(pending.slice(0, newline)) as { type?: string; command?: string };
      pending = pending.slice(newline + 1);
      if (event.type === "response" && event.command === "get_state")
        setTimeout(() => {
          prompted = performance.now();
          child.stdin.write(`${JSON.stringify({ type: "prompt", message: "hi" })}\n`);
        }, 1000);
      if (event.type === "agent_settled") {
        closed = performance.now();
        closedWall = Date.now();
        child.stdin.end();
      }
    }
  });
  child.stdin.write(`${JSON.stringify({ id: "ready", type: "get_state" })}\n`);
  await new Promise((resolve) => child.once("exit", resolve));
  const gone = performance.now();
  const request = model.requests[asked];
  // a round that missed a mark would time something else: it stops the bench
  if (!request || !prompted) throw new Error("idle pi made no model request after its prompt");
  if (!closed || !exitedWall)
    throw new Error("idle pi never settled, or its box never said when pi exited");
  return {
    first: request.arrivedAt - prompted,
    piExit: exitedWall - closedWall,
    boxGone: gone - closed,
  };
}

const store = mkdtempSync(join(tmpdir(), "roster-bench-rsync-"));
mkdirSync(join(store, "store"));
writeFileSync(join(store, "store", "notes.md"), "one note\n");
execFileSync("cp", ["-a", join(store, "store"), join(store, "snapshot")]);
const rsync = [
  "rsync",
  ...STORE_RSYNC_OPTIONS,
  "--dry-run",
  "--delete",
  `${join(store, "store")}/`,
  `${join(store, "snapshot")}/`,
];

const rows = {
  floor: [] as number[],
  node: [] as number[],
  version: [] as number[],
  first: [] as number[],
  piExit: [] as number[],
  boxGone: [] as number[],
  rsync: [] as number[],
};
for (let i = 0; i < ROUNDS; i++) {
  rows.floor.push(await piFloorFirst());
  rows.node.push(await timed([process.execPath, "-e", "0"]));
  rows.version.push(await timed([ROSTER_BIN, "--version"]));
  const pi = await idlePi();
  rows.first.push(pi.first);
  rows.piExit.push(pi.piExit);
  rows.boxGone.push(pi.boxGone);
  rows.rsync.push(await timed(rsync));
}
floor.cleanup();
rmSync(store, { recursive: true, force: true });
proxy.close();
await model.stop();

const piFloorMs = median(rows.floor);
const line = (label: string, values: number[]) => {
  const value = median(values);
  console.log(
    `| ${label} | ${value.toFixed(0)} | ${(value / piFloorMs).toFixed(2)}x | ${Math.min(...values).toFixed(0)}–${Math.max(...values).toFixed(0)} |`,
  );
};
console.log(`medians of ${ROUNDS} rounds, Node ${process.version}\n`);
console.log("| floor | ms | × pi's floor | range |");
console.log("| --- | --- | --- | --- |");
line("pi's floor: a hardened docker run of pi, to its first request", rows.floor);
line("a bare Node process (`node -e 0`)", rows.node);
line("`roster --version`", rows.version);
line("pi idle in RPC mode: prompt to its request (host proxy)", rows.first);
line("pi: stdin closed to its own exit", rows.piExit);
line("pi: stdin closed to `docker run --rm` returning", rows.boxGone);
line("one rsync dry-run of a one-file store (the store pass's options)", rows.rsync);
