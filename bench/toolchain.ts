import { appendFile } from "node:fs/promises";
import { join } from "node:path";
import { connectEngine } from "../runner/boundary/box/connect.ts";
import type { DockerEngine } from "../runner/boundary/box/docker-engine.ts";
import { BOX_IMAGE } from "../runner/boundary/box/layout.ts";
import { TOOLCHAIN_LABEL } from "../runner/boundary/box/toolchain-image.ts";
import { makeRosterRoot, ROSTER_BIN } from "./harness.ts";
import { median, timed } from "./timing.ts";

const ROUNDS = 3;
const WORKER_PACKAGES = 'apt = ["figlet", "sl"]';

const engine = await connectEngine();
const client = (engine as unknown as DockerEngine).client;
const removeDerived = async () => {
  for (const image of await client.listImages({ filters: { label: [`${TOOLCHAIN_LABEL}=elf`] } }))
    await client.getImage(image.Id).remove({ force: true });
};

const floors: number[] = [];
for (let i = 0; i < ROUNDS; i++)
  floors.push(await timed(["docker", "run", "--rm", BOX_IMAGE, "true"]));
const root = await makeRosterRoot("http://127.0.0.1:9/v1");
const env = { ROSTER_ROOT: root.root };
const exec = [ROSTER_BIN, "box", "exec", "elf", "--", "true"];
let first = 0;
const reused: number[] = [];
try {
  await timed(exec, env); // the CA, the remembered network: not what is measured
  await removeDerived();
  await appendFile(
    join(root.paths.config, "workers/elf/worker.toml"),
    `\n[toolchain]\n${WORKER_PACKAGES}\n`,
  );
  first = await timed(exec, env);
  for (let i = 0; i < ROUNDS; i++) reused.push(await timed(exec, env));
} finally {
  await root.cleanup();
  await removeDerived();
}
console.log(`toolchain: ${WORKER_PACKAGES}; medians of ${ROUNDS}\n`);
console.log("| run | ms | vs reuse |");
console.log("| --- | --- | --- |");
console.log(`| floor: docker run --rm ${BOX_IMAGE} true | ${median(floors).toFixed(0)} | - |`);
console.log(
  `| first run: image built | ${first.toFixed(0)} | ${(first / median(reused)).toFixed(1)}x |`,
);
console.log(`| next runs: image reused | ${median(reused).toFixed(0)} | 1.0x |`);
