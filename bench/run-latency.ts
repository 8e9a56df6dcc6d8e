/**
 * How long `roster run` takes to get a worker talking, against the floor of a
 * bare `docker run --rm <image> true` on the same machine, and how much memory
 * a running box holds. Needs Docker, root (for the firewall rule) and the box
 * image.
 *   npx tsx bench/run-latency.ts
 */
import { execFileSync } from "node:child_process";
import { performance } from "node:perf_hooks";
import { connectDocker } from "../runner/box/docker.ts";
import { BOX_IMAGE } from "../runner/box/layout.ts";
import { ModelServer } from "../test/support/model-server.ts";
import { makeRosterRoot } from "../test/support/roster-root.ts";

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
const { client } = await connectDocker();

const floors: number[] = [];
for (let i = 0; i < 5; i++) {
  const started = performance.now();
  execFileSync("docker", ["run", "--rm", BOX_IMAGE, "true"]);
  floors.push(performance.now() - started);
}

const model = await new ModelServer().start("127.0.0.1");
const deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"));
const toFirstRequest: number[] = [];
let memoryBytes = 0;
try {
  for (let i = 0; i < 4; i++) {
    const asked = model.requests.length;
    model.reset();
    model.play(
      i === 3
        ? { toolCalls: [{ name: "bash", arguments: { command: "sleep 4" } }] }
        : { text: "ok" },
      { text: "done" },
    );
    const started = performance.now();
    const child = deployment.spawnRoster(["run", "elf", "hi"]);
    while (model.requests.length === asked) await new Promise((resolve) => setTimeout(resolve, 5));
    toFirstRequest.push(performance.now() - started);
    if (i === 3) {
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const [box] = await client.listContainers({ filters: { label: ["roster.worker=elf"] } });
      if (box) {
        const stats = (await client.getContainer(box.Id).stats({ stream: false })) as {
          memory_stats?: { usage?: number; stats?: Record<string, number> };
        };
        const memory = stats.memory_stats ?? {};
        // what `docker stats` shows: usage less the page cache (cgroup v1: total_cache; v2: inactive_file)
        memoryBytes =
          (memory.usage ?? 0) -
          (memory.stats?.total_inactive_file ?? memory.stats?.inactive_file ?? 0);
      }
    }
    await new Promise((resolve) => child.once("exit", resolve));
  }
} finally {
  await model.stop();
  await deployment.cleanup();
}

const floor = median(floors);
const first = toFirstRequest[0] ?? 0;
const warm = median(toFirstRequest.slice(1));
console.log(`Docker ${(await client.version()).Version}, Node ${process.version}\n`);
console.log("| measure | ms | vs floor |");
console.log("|---|---|---|");
console.log(
  `| floor: docker run --rm ${BOX_IMAGE} true (median of 5) | ${floor.toFixed(0)} | 1.00x |`,
);
console.log(
  `| roster run → model's first request, first run in a fresh root (creates the CA) | ${first.toFixed(0)} | ${(first / floor).toFixed(2)}x |`,
);
console.log(
  `| roster run → model's first request, warm (median of 3) | ${warm.toFixed(0)} | ${(warm / floor).toFixed(2)}x |`,
);
console.log(
  `\nmemory of a running box (pi idle in a tool call, cache excluded): ${(memoryBytes / 1024 / 1024).toFixed(0)} MiB`,
);
