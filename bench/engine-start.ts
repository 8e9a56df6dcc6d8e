/**
 * pi's own start inside the box: a hardened `docker run` of `run-pi -p`
 * against the scripted model, to the model's first request and to exit, with
 * the caches pi could use warm or cold. Each run starts with an empty /tmp
 * (a tmpfs), so by default both of pi's caches — Node's module compile cache
 * (pi calls enableCompileCache(): $NODE_COMPILE_CACHE or /tmp) and jiti's
 * transpile cache for the .ts extensions (/tmp/jiti) — start cold every run.
 * The variants mount a cache filled by an earlier run instead.
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
const compileCache = join(work, "compile-cache");
const jitiTmp = join(work, "jiti-tmp");
mkdirSync(compileCache);
mkdirSync(jitiTmp);
execFileSync("chown", ["-R", "1000:1000", work]);

async function once(extra: string[]): Promise<{ first: number; exit: number }> {
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

const variants: Array<{ name: string; args: string[]; fill?: string[] }> = [
  { name: "as the box runs today (both caches cold)", args: [] },
  {
    name: "Node compile cache warm (read-only mount)",
    fill: ["-v", `${compileCache}:/cc`, "-e", "NODE_COMPILE_CACHE=/cc"],
    args: ["-v", `${compileCache}:/cc:ro`, "-e", "NODE_COMPILE_CACHE=/cc"],
  },
  {
    name: "jiti cache warm",
    // the compile cache kept on the fresh tmpfs, so only jiti's is warm
    fill: ["-v", `${jitiTmp}:/jt`, "-e", "TMPDIR=/jt", "-e", "NODE_COMPILE_CACHE=/tmp/cc"],
    args: ["-v", `${jitiTmp}:/jt`, "-e", "TMPDIR=/jt", "-e", "NODE_COMPILE_CACHE=/tmp/cc"],
  },
  {
    name: "both warm",
    args: [
      "-v",
      `${compileCache}:/cc:ro`,
      "-e",
      "NODE_COMPILE_CACHE=/cc",
      "-v",
      `${jitiTmp}:/jt`,
      "-e",
      "TMPDIR=/jt",
    ],
  },
];
try {
  console.log(`image ${image}; medians of ${ROUNDS}\n`);
  console.log("| pi in the box | to first model request ms | to exit ms |");
  console.log("| --- | --- | --- |");
  for (const variant of variants) {
    if (variant.fill) await once(variant.fill);
    await once(variant.args); // one unmeasured run: the page cache, not the caches, is warm after it
    const samples = [];
    for (let i = 0; i < ROUNDS; i++) samples.push(await once(variant.args));
    console.log(
      `| ${variant.name} | ${median(samples.map((s) => s.first)).toFixed(0)} | ${median(samples.map((s) => s.exit)).toFixed(0)} |`,
    );
  }
} finally {
  await model.stop();
  rmSync(work, { recursive: true, force: true });
}
