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
import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { SENTINEL } from "../runner/box/box-env.ts";
import { BOX_IMAGE, RUN_PI } from "../runner/box/layout.ts";
import { piAgentConfig } from "../runner/config/model.ts";
import { ModelServer } from "../test/support/model-server.ts";

const ROUNDS = Number(process.env.ROUNDS ?? 7);
const image = process.env.IMAGE ?? BOX_IMAGE;
const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
const model = await new ModelServer().start("0.0.0.0");
const work = mkdtempSync(join(tmpdir(), "roster-bench-engine-"));
const home = join(work, "home");
mkdirSync(join(home, "agent"), { recursive: true });
const agent = piAgentConfig(
  {
    provider: "openai-compatible",
    model: "scripted-1",
    base_url: `http://host.docker.internal:${model.port}/v1`,
  },
  SENTINEL,
);
writeFileSync(join(home, "agent/models.json"), JSON.stringify(agent.models));
writeFileSync(join(home, "agent/settings.json"), JSON.stringify(agent.settings));
execFileSync("chown", ["-R", "1000:1000", work]);

async function once(extra: string[], cold = false): Promise<{ first: number; exit: number }> {
  const asked = model.requests.length;
  model.reset();
  model.play({ text: "ok" });
  const started = performance.now();
  const child = spawn(
    "docker",
    [
      "run",
      "--rm",
      "--read-only",
      "--cap-drop",
      "ALL",
      "--security-opt",
      "no-new-privileges",
      "--user",
      "1000:1000",
      "--tmpfs",
      "/tmp:rw,exec,mode=1777",
      "--add-host",
      "host.docker.internal:host-gateway",
      "-v",
      `${home}:/home/worker`,
      "-e",
      "PI_CODING_AGENT_DIR=/home/worker/agent",
      ...extra,
      image,
      // cold: an empty jiti folder in /tmp stops run-pi from copying the baked one in
      ...(cold ? ["sh", "-c", 'mkdir -p /tmp/jiti && exec "$@"', "sh"] : []),
      RUN_PI,
      "--mode",
      "json",
      "--no-session",
      "-p",
      "hi",
    ],
    { stdio: "ignore" },
  );
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
  rmSync(work, { recursive: true, force: true });
}
