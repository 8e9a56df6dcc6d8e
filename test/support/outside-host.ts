/**
 * A host "outside" this machine, for egress tests: a network namespace joined
 * to the host by a veth pair (a /30 in 198.51.100.0/24, a documentation range), with a
 * TCP and a UDP listener inside that write down everything that reaches them.
 * The host routes to it like to any outside address, so a container on
 * Docker's default (masquerading) bridge reaches it: the control that shows a
 * box's failure to reach it is roster's lockdown, not a dead address. Needs
 * root and iproute2.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * Each engine pass has a /30 of its own in 198.51.100.0/24 (the Docker pass
 * .0, Podman .4, runsc .8), so passes that run at once (scripts/test-lanes.mjs)
 * never aim at each other's outside host.
 */
const BLOCKS: Record<string, number> = { podman: 4, runsc: 8 };
const BLOCK = BLOCKS[process.env.ROSTER_TEST_PASS ?? ""] ?? 0;
export const OUTSIDE_ADDRESS = `198.51.100.${BLOCK + 2}`;
const HOST_SIDE = `198.51.100.${BLOCK + 1}`;
export const OUTSIDE_TCP_PORT = 8080;
export const OUTSIDE_UDP_PORT = 5353;

export interface OutsideHost {
  /** Every connection or datagram that arrived, one line each ("tcp <from>", "udp <from> <text>"). */
  hits(): Promise<string[]>;
  stop(): Promise<void>;
}

const LISTENER = `
const net = require("node:net");
const dgram = require("node:dgram");
const fs = require("node:fs");
const log = process.argv[1];
const note = (line) => fs.appendFileSync(log, line + "\\n");
// ready only once both listen: listen() and bind() finish after this script's last line
let bound = 0;
const ready = () => { if (++bound === 2) fs.writeFileSync(log + ".ready", ""); };
net.createServer((socket) => {
  // a peer that resets must not take the listener down: later attempts would look held
  socket.on("error", () => {});
  note("tcp " + socket.remoteAddress);
  socket.end("outside\\n");
}).listen(${OUTSIDE_TCP_PORT}, "0.0.0.0", ready);
const udp = dgram.createSocket("udp4");
udp.on("message", (message, from) => note("udp " + from.address + " " + message.toString().trim()));
udp.bind(${OUTSIDE_UDP_PORT}, "0.0.0.0", ready);
// the test that started it may be killed before its stop(): this listener goes with it
const parent = process.ppid;
setInterval(() => { if (process.ppid !== parent) process.exit(0); }, 500);
`;

/** Connects from the host as a box would try to, and expects the listener's greeting. */
async function answersFromHost(): Promise<void> {
  const greeting = await new Promise<string>((resolve) => {
    const socket = connect(OUTSIDE_TCP_PORT, OUTSIDE_ADDRESS);
    let heard = "";
    socket.setTimeout(3_000, () => socket.destroy());
    socket.on("data", (chunk: Buffer) => {
      heard += chunk.toString();
    });
    socket.on("error", () => undefined);
    socket.on("close", () => resolve(heard));
  });
  if (!greeting.includes("outside"))
    throw new Error(
      `the outside host ${OUTSIDE_ADDRESS}:${OUTSIDE_TCP_PORT} does not answer from the host: attempts aimed at it would test nothing`,
    );
}

/**
 * An outside host left by a run that was killed before its stop() keeps this
 * pass's addresses: the host would route to its dead namespace and every check
 * aimed at the new one would fail. One with no process left is removed; one
 * still in use is another run of this pass, and this one refuses to share.
 */
function clearStaleOutsideHosts(): void {
  const held = execFileSync("ip", ["-o", "-4", "addr", "show", "to", `${HOST_SIDE}/32`], {
    encoding: "utf8",
  });
  for (const link of held.matchAll(/^\d+:\s+ro([0-9a-f]{6})h\b/gm)) {
    const ns = `roster-out-${link[1]}`;
    let pids = "";
    try {
      pids = execFileSync("ip", ["netns", "pids", ns], { encoding: "utf8", stdio: "pipe" }).trim();
    } catch {
      // its namespace is gone already: only the link is left
    }
    // a listener whose test was killed, left to init by a run from before it watched its parent
    for (const pid of pids.split("\n").filter(Boolean))
      if (orphaned(Number(pid))) process.kill(Number(pid), "SIGKILL");
    pids = pids
      .split("\n")
      .filter((pid) => pid && !orphaned(Number(pid)))
      .join("\n");
    if (pids)
      throw new Error(
        `another run's outside host (${ns}, processes ${pids.split("\n").join(" ")}) holds ${HOST_SIDE}: two runs of one engine pass can't share it`,
      );
    execFileSync("ip", ["link", "delete", `ro${link[1]}h`], { stdio: "ignore" });
    execFileSync("ip", ["netns", "delete", ns], { stdio: "ignore" });
  }
}

/** A process init has adopted (its parent died), or one already gone. */
function orphaned(pid: number): boolean {
  try {
    // /proc/<pid>/stat: "pid (comm) state ppid …"; comm may hold spaces, so read after its ")"
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1] === "1";
  } catch {
    return true;
  }
}

export async function startOutsideHost(): Promise<OutsideHost> {
  clearStaleOutsideHosts();
  const id = randomBytes(3).toString("hex");
  const ns = `roster-out-${id}`;
  const hostEnd = `ro${id}h`;
  const nsEnd = `ro${id}o`;
  const ip = (...args: string[]) => execFileSync("ip", args, { stdio: "pipe" });
  ip("netns", "add", ns);
  const dir = await mkdtemp(join(tmpdir(), "roster-outside-"));
  const log = join(dir, "hits.log");
  let listener: ChildProcess | undefined;
  try {
    ip("link", "add", hostEnd, "type", "veth", "peer", "name", nsEnd);
    ip("link", "set", nsEnd, "netns", ns);
    ip("addr", "add", `${HOST_SIDE}/30`, "dev", hostEnd);
    ip("link", "set", hostEnd, "up");
    ip("-n", ns, "addr", "add", `${OUTSIDE_ADDRESS}/30`, "dev", nsEnd);
    ip("-n", ns, "link", "set", nsEnd, "up");
    ip("-n", ns, "link", "set", "lo", "up");
    ip("-n", ns, "route", "add", "default", "via", HOST_SIDE);
    listener = spawn("ip", ["netns", "exec", ns, process.execPath, "-e", LISTENER, log], {
      stdio: "ignore",
    });
    let ready = false;
    for (let i = 0; i < 100 && !ready; i++) {
      ready = await readFile(`${log}.ready`).then(
        () => true,
        () => false,
      );
      if (!ready) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    if (!ready) throw new Error(`the outside host's listener did not start in namespace ${ns}`);
    // the host must reach it, or a box failing to would prove nothing
    await answersFromHost();
  } catch (error) {
    listener?.kill();
    execFileSync("ip", ["netns", "delete", ns], { stdio: "ignore" });
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    // no log yet is no hit; any other failure to read it must not look like silence
    hits: async () =>
      (
        await readFile(log, "utf8").catch((error: NodeJS.ErrnoException) => {
          if (error.code === "ENOENT") return "";
          throw error;
        })
      )
        .split("\n")
        .filter((line) => line.trim()),
    stop: async () => {
      listener?.kill();
      try {
        execFileSync("ip", ["link", "delete", hostEnd], { stdio: "ignore" });
      } catch {
        // gone with the namespace already
      }
      execFileSync("ip", ["netns", "delete", ns], { stdio: "ignore" });
      await rm(dir, { recursive: true, force: true });
    },
  };
}
