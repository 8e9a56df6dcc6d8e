/**
 * pi's own start inside the box: a hardened `docker run` of `run-pi -p`
 * against the scripted model, to the model's first request and to exit, with
 * the caches pi could use warm or cold. Each run starts with an empty /tmp
 * (a tmpfs), so unless the image brings them, both of pi's caches — Node's
 * module compile cache (pi calls enableCompileCache(): $NODE_COMPILE_CACHE or
 * /tmp) and jiti's transpile cache for the .ts extensions (/tmp/jiti) — start
 * cold every run. The image bakes both; the cold row turns them off.
 *   npx tsx bench/engine-start.ts      (Docker, root, the box image)
 */
import { spawn } from "node:child_process";
import { performance } from "node:perf_hooks";
import { BOX_IMAGE } from "../runner/boundary/box/layout.ts";
import { ModelServer } from "./harness.ts";
import { piFloor } from "./pi-floor.ts";

const ROUNDS = Number(process.env.ROUNDS ?? 7);
const image = process.env.IMAGE ?? BOX_IMAGE;
const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
const model = await new ModelServer().start("0.0.0.0");
const floor = piFloor(model.port);

async function once(extra: string[], cold = false): Promise<{ first: number; exit: number }> {
  const asked = model.requests.length;
  model.reset();
  model.play({ text: "ok" });
  const started = performance.now();
  // cold: an empty jiti folder in /tmp stops run-pi from copying the baked one in
  const argv = floor.argv(
    image,
    extra,
    cold ? ["sh", "-c", 'mkdir -p /tmp/jiti && exec "$@"', "sh"] : [],
  );
  const child = spawn(argv[0] as string, argv.slice(1), { stdio: "ignore" });
  let first = 0;
  const watch = setInterval(() => {
    if (!first && model.requests.length > asked) first = performance.now() - started;
  }, 2);
  await new Promise((resolve) => child.once("exit", resolve));
  clearInterval(watch);
  return { first, exit: performance.now() - started };
}

const variants: Array<{ name: string; args: string[]; cold?: boolean }> = [
  {
    name: "both caches cold (every run before they were baked)",
    args: ["-e", "NODE_COMPILE_CACHE=/tmp/cc"],
    cold: true,
  },
  { name: "caches baked into the image (what runs now)", args: [] },
];
try {
  console.log(`image ${image}; medians of ${ROUNDS}\n`);
  console.log("| pi in the box | to first model request ms | to exit ms |");
  console.log("| --- | --- | --- |");
  for (const variant of variants) {
    await once(variant.args, variant.cold); // unmeasured: warms the page cache, not pi's caches
    const samples = [];
    for (let i = 0; i < ROUNDS; i++) samples.push(await once(variant.args, variant.cold));
    console.log(
      `| ${variant.name} | ${median(samples.map((s) => s.first)).toFixed(0)} | ${median(samples.map((s) => s.exit)).toFixed(0)} |`,
    );
  }
} finally {
  await model.stop();
  floor.cleanup();
}
