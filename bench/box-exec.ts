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
import { BOX_IMAGE } from "../runner/box/layout.ts";
import { ROSTER_BIN } from "../test/support/cli.ts";
import { makeRosterRoot } from "../test/support/roster-root.ts";
import { median, timed } from "./timing.ts";

const ROUNDS = 5;

const floors: number[] = [];
for (let i = 0; i < ROUNDS; i++)
  floors.push(await timed(["docker", "run", "--rm", BOX_IMAGE, "true"]));

const root = await makeRosterRoot("http://127.0.0.1:9/v1");
const env = { ROSTER_ROOT: root.root };
const exec = [process.execPath, ROSTER_BIN, "box", "exec", "elf", "--", "true"];
const embedded: number[] = [];
const standalone: number[] = [];
try {
  await timed(exec, env); // the first one creates the CA and remembers the network
  for (let i = 0; i < ROUNDS; i++) embedded.push(await timed(exec, env));
  const gateway = spawn(process.execPath, [ROSTER_BIN, "gateway", "start"], {
    env: { ...process.env, ...env },
    stdio: "ignore",
  });
  try {
    for (let i = 0; i < 100; i++) {
      try {
        readFileSync(join(root.paths.state, "gateway.json"));
        break;
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    for (let i = 0; i < ROUNDS; i++) standalone.push(await timed(exec, env));
  } finally {
    gateway.kill("SIGTERM");
    await new Promise((resolve) => gateway.once("exit", resolve));
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
  ["roster box exec elf -- true (embedded gateway)", embedded],
  ["roster box exec elf -- true (gateway running)", standalone],
] as const) {
  const value = median(samples);
  console.log(`| ${label} | ${value.toFixed(0)} | ${(value / floor).toFixed(2)}x |`);
}
