/**
 * Workers on Claude Code and Codex (issue 57) beside workers on pi, in two
 * parts.
 *
 * runs: per agent (pi, claude, codex) a one-shot `roster run` whose model
 * answers a plain text turn at once, beside pi's floor (a hardened `docker
 * run` of pi against the scripted model, bench/pi-floor.ts). Each agent's
 * stand-in speaks its provider's API (Chat Completions, Messages, Responses)
 * and is reached through the real gateway. Paired rounds: each round runs all
 * four once, in the reverse order of the round before, so drift and other
 * load on the machine fall on all of them alike, and a ratio is the median of
 * the rounds' own ratios. Measured: spawn to the stand-in's first model call,
 * spawn to exit, and the host CPU (user+sys) and peak RSS of `roster run` and
 * the children it waited for (GNU time; the box's own CPU is the engine's,
 * not counted). One unmeasured round first.
 *
 * images: the box image's size and each agent layer's (what a worker on that
 * agent adds to the disk), a throwaway box image with both agents baked in
 * (what that choice would add to every box image), and the time of a first
 * `roster box build --agent X`: on a changed box image with the npm fetch
 * cached (what every box rebuild costs such a worker), and once with the
 * fetch cold (a first install, or a new pin). Everything built is removed.
 *   npx tsx bench/agents.ts            both parts
 *   npx tsx bench/agents.ts runs       one part (runs or images)
 * Needs Docker, root and the box image; builds an agent's layer if missing.
 */
import { execFileSync, spawn } from "node:child_process";
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { agentPackageDir, ensureAgentImage } from "../runner/boundary/box/agent-image.ts";
import { connectEngine } from "../runner/boundary/box/connect.ts";
import { formatBytes } from "../runner/boundary/box/image-build.ts";
import { AGENTS_DIR, BOX_IMAGE } from "../runner/boundary/box/layout.ts";
import { type Progress, silentProgress } from "../runner/boundary/box/progress.ts";
import {
  AnthropicModelServer,
  agentDeployment,
  ModelServer,
  makeRosterRoot,
  ResponsesModelServer,
  ROSTER_BIN,
} from "./harness.ts";
import { piFloor } from "./pi-floor.ts";
import { median } from "./timing.ts";

const ROUNDS = 5;
const BUILD_ROUNDS = 3;
const ANSWER = "bench-answer-57";
type Agent = "claude" | "codex";
const AGENTS: Agent[] = ["claude", "codex"];
const NAMES: Record<Agent, string> = { claude: "Claude Code", codex: "Codex" };

const parts = process.argv.slice(2);
const wanted = (part: string) => parts.length === 0 || parts.includes(part);
const engine = await connectEngine();
const loadAtStart = loadavg()[0] ?? 0;
const ratio = (value: number) => `${value.toFixed(2)}x`;

// the layers the runs use, built now if missing so that no measured run waits on one
const layers = {} as Record<Agent, string>;
for (const agent of AGENTS)
  layers[agent] = (
    await ensureAgentImage({ engine, baseImage: BOX_IMAGE, agent, progress: silentProgress })
  ).tag;

interface Sample {
  first: number;
  exit: number;
  cpu: number;
  rssMb: number;
}

/** A model stand-in as the runs use it: tells when a model call arrives, answers the next with ANSWER. */
interface StandIn {
  listen(hook: ((arrivedAt: number) => void) | undefined): void;
  answer(): void;
}

function standIn<R extends { arrivedAt: number }>(server: {
  onRequest: ((request: R) => void) | undefined;
  reset(): void;
  play(turn: { text: string }): void;
}): StandIn {
  return {
    listen: (hook) => {
      server.onRequest = hook ? (request) => hook(request.arrivedAt) : undefined;
    },
    answer: () => {
      server.reset();
      server.play({ text: ANSWER });
    },
  };
}

interface Subject {
  label: string;
  argv: string[];
  env: NodeJS.ProcessEnv;
  model: StandIn;
  samples: Sample[];
}

/** One run under GNU time: spawn to the stand-in's first model call, to exit, and its CPU and RSS. */
async function sample(subject: Subject): Promise<Sample> {
  const stats = join(tmpdir(), `roster-bench-agents-time-${process.pid}`);
  let first: number | undefined;
  subject.model.answer();
  subject.model.listen((arrivedAt) => {
    first ??= arrivedAt;
  });
  const started = performance.now();
  const child = spawn("/usr/bin/time", ["-o", stats, "-f", "%U %S %M", ...subject.argv], {
    env: { ...process.env, ...subject.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => {
    output += chunk.toString("utf8");
  });
  child.stderr.on("data", (chunk: Buffer) => {
    output += chunk.toString("utf8");
  });
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  const exit = performance.now() - started;
  subject.model.listen(undefined);
  // a run that failed, or answered without the model, measures nothing
  if (code !== 0 || first === undefined || !output.includes(ANSWER))
    throw new Error(
      `${subject.label}: exit ${code}, model called: ${first !== undefined}\n${output}`,
    );
  const [user, sys, rss] =
    (await readFile(stats, "utf8")).trim().split("\n").at(-1)?.split(" ").map(Number) ?? [];
  return { first: first - started, exit, cpu: (user ?? 0) + (sys ?? 0), rssMb: (rss ?? 0) / 1024 };
}

async function runs(): Promise<void> {
  // pi's stand-in serves both its floor (from a box, so on every address) and its run
  const chat = await new ModelServer().start("0.0.0.0");
  const messages = await new AnthropicModelServer().start("127.0.0.1");
  const responses = await new ResponsesModelServer().start("127.0.0.1");
  const floor = piFloor(chat.port);
  const pi = await makeRosterRoot(chat.baseUrl("127.0.0.1"));
  const claude = await agentDeployment({
    agent: "claude",
    provider: "anthropic",
    model: "claude-sonnet-4-5",
    baseUrl: messages.baseUrl("127.0.0.1"),
    key: "sk-ant-api03-bench-key",
  });
  const codex = await agentDeployment({
    agent: "codex",
    provider: "openai",
    model: "gpt-5.5",
    baseUrl: responses.baseUrl("127.0.0.1"),
    key: "sk-proj-bench-key",
    extraOrg: '\n[[budget.price]]\nmodel = "gpt-5*"\ninput = 1.25\noutput = 10\n',
  });
  const run = (root: string) => ({
    argv: [ROSTER_BIN, "run", "elf", "hi"],
    env: { ROSTER_ROOT: root },
  });
  const subjects: Subject[] = [
    {
      label: "floor: hardened docker run of pi -p",
      argv: floor.argv(BOX_IMAGE),
      env: {},
      model: standIn(chat),
      samples: [],
    },
    { label: "roster run, pi", ...run(pi.root), model: standIn(chat), samples: [] },
    {
      label: "roster run, Claude Code",
      ...run(claude.deployment.root),
      model: standIn(messages),
      samples: [],
    },
    {
      label: "roster run, Codex",
      ...run(codex.deployment.root),
      model: standIn(responses),
      samples: [],
    },
  ];
  try {
    for (let round = 0; round <= ROUNDS; round++) {
      const order = round % 2 ? [...subjects].reverse() : subjects;
      for (const subject of order) {
        const taken = await sample(subject);
        // round 0 warms every path up (a deployment's first run makes its CA, its tools volume)
        if (round > 0) subject.samples.push(taken);
      }
      console.error(`agents: round ${round}/${ROUNDS} done`);
    }
  } finally {
    floor.cleanup();
    await pi.cleanup();
    await claude.stop();
    await codex.stop();
    await chat.stop();
    await messages.stop();
    await responses.stop();
  }

  const [floorRow, piRow] = subjects as [Subject, Subject];
  const paired = (subject: Subject, base: Subject, pick: (s: Sample) => number) =>
    ratio(median(subject.samples.map((s, i) => pick(s) / pick(base.samples[i] as Sample))));
  console.log(
    `Node ${process.version}, medians of ${ROUNDS} paired rounds (order reversed every round) after one unmeasured round; 1-minute load average ${loadAtStart.toFixed(1)} at the start, ${(loadavg()[0] ?? 0).toFixed(1)} at the end\n`,
  );
  console.log(
    "| run | to first model call ms | × pi's run | × floor | to exit ms | × pi's run | × floor | host CPU s | × pi's run | peak RSS MB |",
  );
  console.log("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
  for (const subject of subjects) {
    const isFloor = subject === floorRow;
    const first = (s: Sample) => s.first;
    const exit = (s: Sample) => s.exit;
    const cpu = (s: Sample) => s.cpu;
    console.log(
      `| ${subject.label} | ${median(subject.samples.map(first)).toFixed(0)} | ${isFloor ? "-" : paired(subject, piRow, first)} | ${paired(subject, floorRow, first)} | ${median(subject.samples.map(exit)).toFixed(0)} | ${isFloor ? "-" : paired(subject, piRow, exit)} | ${paired(subject, floorRow, exit)} | ${isFloor ? "-" : median(subject.samples.map(cpu)).toFixed(2)} | ${isFloor ? "-" : paired(subject, piRow, cpu)} | ${isFloor ? "-" : median(subject.samples.map((s) => s.rssMb)).toFixed(0)} |`,
    );
  }
  console.log("");
}

const docker = (args: string[], input?: string) =>
  execFileSync("docker", args, {
    encoding: "utf8",
    ...(input === undefined ? {} : { input }),
  }).trim();
const removeImage = (tag: string) => {
  try {
    docker(["rmi", tag]);
  } catch (error) {
    console.error(`agents: could not remove ${tag}: ${String(error)}`);
  }
};
const sizeOf = async (tag: string) => (await engine.image(tag))?.sizeBytes ?? Number.NaN;

/** The layer's only RUN is npm's fetch: the classic builder says "Using cache" right after a cached one. */
const fetchStep = (lines: string[]) => lines.findIndex((line) => / : RUN /.test(line));
const fetchCached = (lines: string[]) => /Using cache/.test(lines[fetchStep(lines) + 1] ?? "");

/** The box image with one label added: a new image id, as a rebuilt box image has. */
function changedBox(n: number): string {
  const tag = `roster-box:bench-agents-${process.pid}-${n}`;
  docker(["build", "-q", "-t", tag, "-"], `FROM ${BOX_IMAGE}\nLABEL org.roster.bench="${tag}"\n`);
  return tag;
}

/** `roster box build --agent` on a changed box image: its wall time, and whether npm's fetch was cached. */
async function firstBuild(agent: Agent, n: number): Promise<{ seconds: number; cached: boolean }> {
  const box = changedBox(n);
  let layer: string | undefined;
  try {
    const started = performance.now();
    const child = spawn(
      ROSTER_BIN,
      ["box", "build", "--agent", agent, "--tag", box, "--json", "--verbose"],
      {
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString("utf8");
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8");
    });
    const code = await new Promise<number | null>((resolve) => child.once("close", resolve));
    const seconds = (performance.now() - started) / 1000;
    const built = JSON.parse(stdout || "{}") as { tag?: string; built?: boolean };
    layer = built.tag;
    if (code !== 0 || built.built !== true)
      throw new Error(`box build --agent ${agent}: exit ${code}\n${stderr}`);
    return { seconds, cached: fetchCached(stderr.split("\n")) };
  } finally {
    if (layer) removeImage(layer);
    removeImage(box);
  }
}

/** The layer's build with npm's fetch cold: the pinned lockfile with one byte added, so no cache has it. */
async function coldBuild(agent: Agent, project: string): Promise<number> {
  const dir = agentPackageDir(agent, project);
  await mkdir(dir, { recursive: true });
  await copyFile(join(agentPackageDir(agent), "package.json"), join(dir, "package.json"));
  await writeFile(
    join(dir, "package-lock.json"),
    `${await readFile(join(agentPackageDir(agent), "package-lock.json"), "utf8")}\n`,
  );
  const lines: string[] = [];
  const progress: Progress = {
    step: (line) => lines.push(line),
    detail: (line) => lines.push(line),
    note: () => undefined,
  };
  const started = performance.now();
  let tag: string | undefined;
  try {
    tag = (
      await ensureAgentImage({
        engine,
        baseImage: BOX_IMAGE,
        agent,
        progress,
        projectRoot: project,
      })
    ).tag;
    const seconds = (performance.now() - started) / 1000;
    if (fetchCached(lines))
      throw new Error(`the ${agent} fetch with a changed lockfile was cached`);
    return seconds;
  } finally {
    if (tag) removeImage(tag);
    // the fetch stage's image is left untagged by the builder: it goes too, with its new parents
    const fetch = fetchStep(lines);
    const id = lines
      .slice(fetch + 1)
      .map((line) => /---> ([0-9a-f]{12})$/.exec(line)?.[1])
      .find(Boolean);
    if (fetch >= 0 && id) removeImage(id);
  }
}

async function images(): Promise<void> {
  const box = await sizeOf(BOX_IMAGE);
  const sizes = { claude: await sizeOf(layers.claude), codex: await sizeOf(layers.codex) };

  // both agents baked into the box image: what every box image would carry
  const baked = `roster-box:bench-agents-baked-${process.pid}`;
  const bakedStarted = performance.now();
  docker(
    ["build", "-q", "-t", baked, "-"],
    `${[`FROM ${BOX_IMAGE}`, ...AGENTS.map((a) => `COPY --from=${layers[a]} ${AGENTS_DIR}/${a} ${AGENTS_DIR}/${a}`)].join("\n")}\n`,
  );
  const bakedSeconds = (performance.now() - bakedStarted) / 1000;
  const bakedSize = await sizeOf(baked);
  removeImage(baked);

  // a first build on a changed box image, fetch cached; one unmeasured round warms the fetch's cache
  const cachedRuns: Record<Agent, { seconds: number; cached: boolean }[]> = {
    claude: [],
    codex: [],
  };
  for (let round = 0; round <= BUILD_ROUNDS; round++) {
    for (const agent of round % 2 ? [...AGENTS].reverse() : AGENTS) {
      const built = await firstBuild(agent, round);
      if (round > 0) cachedRuns[agent].push(built);
    }
    console.error(`agents: build round ${round}/${BUILD_ROUNDS} done`);
  }
  const project = await mkdtemp(join(tmpdir(), "roster-bench-agents-"));
  const cold = {} as Record<Agent, number>;
  try {
    for (const agent of AGENTS) cold[agent] = await coldBuild(agent, project);
  } finally {
    await rm(project, { recursive: true, force: true });
  }

  const over = (bytes: number) => `+${formatBytes(bytes - box)} (${ratio(bytes / box)})`;
  console.log("| image | size | over the box image |");
  console.log("| --- | --- | --- |");
  console.log(`| box image (${BOX_IMAGE}) | ${formatBytes(box)} | - |`);
  for (const agent of AGENTS)
    console.log(
      `| ${NAMES[agent]}'s layer on it (${layers[agent]}) | ${formatBytes(sizes[agent])} | ${over(sizes[agent])} |`,
    );
  console.log(
    `| both agents baked into the box image (a throwaway build) | ${formatBytes(bakedSize)} | ${over(bakedSize)} |`,
  );
  console.log("");
  const cachedMedian = (agent: Agent) => median(cachedRuns[agent].map((b) => b.seconds));
  const allCached = AGENTS.every((agent) => cachedRuns[agent].every((b) => b.cached));
  console.log("| build | Claude Code s | Codex s |");
  console.log("| --- | --- | --- |");
  console.log(
    `| first \`roster box build --agent X\` on a changed box image, npm fetch cached (median of ${BUILD_ROUNDS}${allCached ? "" : "; NOT every fetch was cached"}) | ${cachedMedian("claude").toFixed(1)} | ${cachedMedian("codex").toFixed(1)} |`,
  );
  console.log(
    `| the same layer with npm's fetch cold (once each) | ${cold.claude.toFixed(1)} | ${cold.codex.toFixed(1)} |`,
  );
  console.log(
    `| cold / cached | ${ratio(cold.claude / cachedMedian("claude"))} | ${ratio(cold.codex / cachedMedian("codex"))} |`,
  );
  console.log(
    `\nbaking both agents in instead adds ${formatBytes(bakedSize - box)} to every box image, and to every box image build their copy (${bakedSeconds.toFixed(1)} s here, fetches cached) or, on a build without cache, both fetches`,
  );
}

if (wanted("runs")) await runs();
if (wanted("images")) await images();
