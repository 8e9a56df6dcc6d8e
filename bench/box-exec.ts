/**
 * `roster box exec <worker> -- true` against a bare `docker run --rm <image>
 * true`, side by side in one run (medians of 5): what the governed envelope
 * (config, $HOME and mounts, the gateway, the lockdown, the run record) costs
 * on top of the container itself. Needs Docker, root and the box image.
 *   npx tsx bench/box-exec.ts
 */
import { execFileSync, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { BOX_IMAGE, LOCKED_NETWORK } from "../runner/box/layout.ts";
import { ROSTER_BIN } from "../test/support/cli.ts";
import { makeRosterRoot } from "../test/support/roster-root.ts";
import { median, timed } from "./timing.ts";

const ROUNDS = 5;

const floors: number[] = [];
const lockedFloors: number[] = [];
for (let i = 0; i < ROUNDS; i++) {
  floors.push(await timed(["docker", "run", "--rm", BOX_IMAGE, "true"]));
  // the same on roster's own network: a user-defined bridge costs Docker its embedded resolver
  lockedFloors.push(
    await timed(["docker", "run", "--rm", "--network", LOCKED_NETWORK, BOX_IMAGE, "true"]),
  );
}
const nodeFloor: number[] = [];
for (let i = 0; i < ROUNDS; i++) nodeFloor.push(await timed([process.execPath, "-e", "0"]));

const root = await makeRosterRoot("http://127.0.0.1:9/v1");
const env = { ROSTER_ROOT: root.root };
const exec = [process.execPath, ROSTER_BIN, "box", "exec", "elf", "--", "true"];
const embedded: number[] = [];
const standalone: number[] = [];
const handed: number[] = [];

/** Starts a long-lived roster command and waits for the file that says it is up. */
async function background(args: string[], readyFile: string) {
  const child = spawn(process.execPath, [ROSTER_BIN, ...args], {
    env: { ...process.env, ...env },
    stdio: "ignore",
  });
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
  await timed(exec, env); // the first one creates the CA and remembers the network
  for (let i = 0; i < ROUNDS; i++) embedded.push(await timed(exec, env));
  const stopGateway = await background(["gateway", "start"], "gateway.json");
  try {
    for (let i = 0; i < ROUNDS; i++) standalone.push(await timed(exec, env));
  } finally {
    await stopGateway();
  }
  const stopServer = await background(["server", "start", "--no-listen"], "server.sock");
  try {
    await timed(exec, env); // the server loads its box modules on its first one
    for (let i = 0; i < ROUNDS; i++) handed.push(await timed(exec, env));
  } finally {
    await stopServer();
  }
} finally {
  await root.cleanup();
}

const floor = median(floors);
const docker = execFileSync("docker", ["version", "--format", "{{.Server.Version}}"], {
  encoding: "utf8",
}).trim();
console.log(`Docker ${docker}, Node ${process.version}, medians of ${ROUNDS}\n`);
console.log("| command | ms | vs floor |");
console.log("| --- | --- | --- |");
console.log(`| floor: docker run --rm ${BOX_IMAGE} true | ${floor.toFixed(0)} | 1.00x |`);
for (const [label, samples] of [
  [`docker run --rm --network ${LOCKED_NETWORK} ${BOX_IMAGE} true`, lockedFloors],
  ["node -e 0 (a Node process starting, which every roster command pays)", nodeFloor],
] as const) {
  const value = median(samples);
  console.log(`| ${label} | ${value.toFixed(0)} | ${(value / floor).toFixed(2)}x |`);
}
for (const [label, samples] of [
  ["roster box exec elf -- true (embedded gateway)", embedded],
  ["roster box exec elf -- true (gateway running)", standalone],
  ["roster box exec elf -- true (handed to a running server)", handed],
] as const) {
  const value = median(samples);
  console.log(`| ${label} | ${value.toFixed(0)} | ${(value / floor).toFixed(2)}x |`);
}
