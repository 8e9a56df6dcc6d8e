/**
 * `roster box exec <worker> -- true` against a bare `docker run --rm <image>
 * true`, side by side in one run: what the governed envelope (config, $HOME
 * and mounts, the gateway, the lockdown, the run record) costs on top of the
 * container itself. Each round runs the floor and then roster, one after the
 * other, so both see the same machine; a ratio is the median of the rounds'
 * own ratios (each against the floor run just before it). `roster` is run by its own shebang, as a shell runs it. Needs
 * Docker, root and the box image.
 *   npx tsx bench/box-exec.ts
 */
import { execFileSync, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { appendFile } from "node:fs/promises";
import { join } from "node:path";
import { BOX_IMAGE } from "../runner/boundary/box/layout.ts";
import { readReadyStatus } from "../runner/work/ready/server-pool.ts";
import { makeRosterRoot, ROSTER_BIN } from "./harness.ts";
import { median, timed } from "./timing.ts";

const ROUNDS = 9;
const FLOOR = ["docker", "run", "--rm", BOX_IMAGE, "true"];

const root = await makeRosterRoot("http://127.0.0.1:9/v1");
const env = { ROSTER_ROOT: root.root };
const exec = [ROSTER_BIN, "box", "exec", "elf", "--", "true"];

interface Phase {
  label: string;
  ours: number[];
  floors: number[];
}
const phases: Phase[] = [];
let idleMemory: number | undefined;

/** ROUNDS rounds of (floor, command), the command's own warm-up first; `before` waits untimed. */
async function phase(
  label: string,
  command: string[],
  commandEnv: NodeJS.ProcessEnv = env,
  before: () => Promise<void> = async () => undefined,
) {
  await before();
  await timed(command, commandEnv);
  const entry: Phase = { label, ours: [], floors: [] };
  for (let i = 0; i < ROUNDS; i++) {
    // the floor too runs on a quiet machine, not beside a box being made
    await before();
    entry.floors.push(await timed(FLOOR));
    await before();
    entry.ours.push(await timed(command, commandEnv));
  }
  phases.push(entry);
}

/** Starts a long-lived roster command and waits for the file that says it is up. */
async function background(args: string[], readyFile: string) {
  const child = spawn(ROSTER_BIN, args, { env: { ...process.env, ...env }, stdio: "ignore" });
  for (let i = 0; i < 100; i++) {
    try {
      readFileSync(join(root.paths.state, readyFile));
      break;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  return async () => {
    child.kill("SIGTERM");
    await new Promise((resolve) => child.once("exit", resolve));
  };
}

try {
  // a box has no network (its door is a mounted socket): Docker's own cost of that
  await phase(`docker run --rm --network none ${BOX_IMAGE} true`, [
    "docker",
    "run",
    "--rm",
    "--network",
    "none",
    BOX_IMAGE,
    "true",
  ]);
  await phase("node -e 0 (a Node process starting, which every roster command pays)", [
    process.execPath,
    "-e",
    "0",
  ]);
  // the first one creates the CA and remembers the network
  await phase("roster box exec elf -- true (embedded gateway)", exec);
  const stopGateway = await background(["gateway", "start"], "gateway.json");
  try {
    await phase("roster box exec elf -- true (gateway running)", exec);
  } finally {
    await stopGateway();
  }
  const stopServer = await background(["server", "start", "--no-listen"], "server.sock");
  try {
    await phase("roster box exec elf -- true (handed to a running server)", exec);
  } finally {
    await stopServer();
  }
  // the server keeps a box ready for elf's commands (docs/ready-boxes.md); each round
  // waits, untimed, until the one made behind the last command is there
  await appendFile(join(root.paths.config, "org.toml"), "\n[server]\nready_boxes = 1\n");
  const stopReady = await background(["server", "start", "--no-listen"], "server.sock");
  const readyForCommands = async () => {
    for (let i = 0; i < 300 && !readReadyStatus(root.paths).some((box) => box.exec); i++)
      await new Promise((resolve) => setTimeout(resolve, 50));
  };
  try {
    // the first command asks: the pool then keeps one for elf's commands
    await timed(exec, env);
    await phase(
      "roster box exec elf -- true (handed to a server with a ready box)",
      exec,
      env,
      readyForCommands,
    );
    idleMemory = readReadyStatus(root.paths).find((box) => box.exec)?.memory_bytes;
  } finally {
    await stopReady();
  }
} finally {
  await root.cleanup();
}

const docker = execFileSync("docker", ["version", "--format", "{{.Server.Version}}"], {
  encoding: "utf8",
}).trim();
const extraCa = process.env.NODE_EXTRA_CA_CERTS
  ? "; NODE_EXTRA_CA_CERTS is set here, so every Node start parses the whole trust store first (roster's own command defers it)"
  : "";
console.log(`Docker ${docker}, Node ${process.version}, medians of ${ROUNDS}${extraCa}\n`);
console.log("| command | ms | floor ms, same rounds | vs floor (median of the rounds' ratios) |");
console.log("| --- | --- | --- | --- |");
const allFloors = phases.flatMap((entry) => entry.floors);
console.log(`| floor: ${FLOOR.join(" ")} | ${median(allFloors).toFixed(0)} | - | 1.00x |`);
for (const entry of phases) {
  const ratio = median(entry.ours.map((ours, i) => ours / (entry.floors[i] ?? Number.NaN)));
  console.log(
    `| ${entry.label} | ${median(entry.ours).toFixed(0)} | ${median(entry.floors).toFixed(0)} | ${ratio.toFixed(2)}x |`,
  );
}
if (idleMemory !== undefined)
  console.log(`\nan idle ready box for commands holds ${(idleMemory / 2 ** 20).toFixed(1)} MiB`);
