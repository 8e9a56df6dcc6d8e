/**
 * roster under each engine it supports, side by side in one run: Docker/runc,
 * Docker/runsc (gVisor), Podman rootful and Podman rootless. For each, against
 * that engine's own bare `run --rm <image> true`: `roster box exec elf -- true`
 * and a one-turn `roster run` (the scripted model); and an idle session's
 * memory as the engine's stats API reports it (usage less page cache). An
 * engine this machine can't run gets its reason in the table, not a number.
 * Each engine is measured in a child process of its own (its DOCKER_HOST, its
 * deployment), one after the other, so all see the same machine. Needs root,
 * Docker with the box image, and for the other rows Podman's socket (with the
 * image loaded) and runsc registered (`roster box doctor --fix`).
 *   npx tsx bench/engines.ts            # every engine
 *   ENGINE=podman npx tsx bench/engines.ts   # one engine's row as JSON
 *   ROUNDS=3 npx tsx bench/engines.ts        # fewer rounds
 */
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { appendFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { connectEngine } from "../runner/boundary/box/connect.ts";
import type { DockerEngine } from "../runner/boundary/box/docker-engine.ts";
import { BOX_IMAGE } from "../runner/boundary/box/layout.ts";
import { errorMessage } from "../runner/ground/errors.ts";
import { ensureChannel } from "../runner/records/channels/store.ts";
import { termChannelId } from "../runner/services/chat/terminal/ids.ts";
import { Session } from "../runner/work/sessions/session.ts";
import { ModelServer, makeRosterRoot, ROSTER_BIN } from "./harness.ts";
import { median, timed } from "./timing.ts";

const ROUNDS = Number(process.env.ROUNDS ?? 5);
const ROOTLESS_USER = "rosteruser";

interface EngineCase {
  label: string;
  env: Record<string, string>;
  /** Extra org.toml for this engine's deployment. */
  org: string;
  /** The engine's own bare run of the image. */
  floor: string[];
  /** Why this machine can't run it, or undefined. */
  unavailable(): string | undefined;
}

function uidOf(user: string): number | undefined {
  const found = spawnSync("id", ["-u", user], { encoding: "utf8" });
  return found.status === 0 ? Number(found.stdout.trim()) : undefined;
}

const rootlessUid = uidOf(ROOTLESS_USER);
const rootlessSocket = `/run/user/${rootlessUid ?? 0}/podman/podman.sock`;
// Podman's default ulimits are above what this host lets it set (the box fails at
// init): its floor gets the limits roster gives every box
const PODMAN_LIMITS = ["--ulimit", "nofile=4096:4096", "--ulimit", "nproc=32768:32768"];

const CASES: Record<string, EngineCase> = {
  runc: {
    label: "Docker/runc",
    env: {},
    org: "",
    floor: ["docker", "run", "--rm", "--network", "none", BOX_IMAGE, "true"],
    unavailable: () => undefined,
  },
  runsc: {
    label: "Docker/runsc (gVisor)",
    // the test roots' own switch: [box] runtime = "runsc" in their org.toml
    env: { ROSTER_TEST_RUNTIME: "runsc" },
    org: "",
    floor: ["docker", "run", "--rm", "--runtime", "runsc", "--network", "none", BOX_IMAGE, "true"],
    unavailable: () =>
      /"runsc"/.test(execFileSync("docker", ["info", "--format", "{{json .Runtimes}}"]).toString())
        ? undefined
        : "dockerd lists no runsc (roster box doctor --fix)",
  },
  podman: {
    label: "Podman rootful",
    env: { DOCKER_HOST: "unix:///run/podman/podman.sock" },
    org: "",
    floor: ["podman", "run", "--rm", "--network", "none", ...PODMAN_LIMITS, BOX_IMAGE, "true"],
    unavailable: () =>
      existsSync("/run/podman/podman.sock") ? undefined : "no Podman socket at /run/podman",
  },
  rootless: {
    label: "Podman rootless",
    env: { DOCKER_HOST: `unix://${rootlessSocket}` },
    org: "",
    floor: [
      "su",
      ROOTLESS_USER,
      "-c",
      `XDG_RUNTIME_DIR=/run/user/${rootlessUid} podman run --rm --network none ${BOX_IMAGE} true`,
    ],
    unavailable: () =>
      rootlessUid === undefined || !existsSync(rootlessSocket)
        ? `no rootless Podman service (user ${ROOTLESS_USER}, ${rootlessSocket})`
        : undefined,
  },
};

interface Row {
  engine: string;
  refused?: string;
  floorMs?: number;
  execMs?: number;
  execRatio?: number;
  runMs?: number;
  runRatio?: number;
  idleSessionMiB?: number;
}

/** One engine, measured in this process. */
async function measure(name: string, spec: EngineCase): Promise<Row> {
  const row: Row = { engine: spec.label };
  const why = spec.unavailable();
  if (why) return { ...row, refused: `not run: ${why}` };
  Object.assign(process.env, spec.env);
  const model = await new ModelServer().start("127.0.0.1");
  const deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), { extraOrg: spec.org });
  const env = { ...spec.env, ROSTER_ROOT: deployment.root };
  // the idle session is opened in this process: it reads the roots from here
  process.env.ROSTER_ROOT = deployment.root;
  try {
    // one governed box first: an engine that refuses roster is a finding, not a crash
    const probe = await deployment.roster(["box", "exec", "elf", "--", "true"]);
    if (probe.code !== 0) {
      const said = `${probe.stderr}${probe.stdout}`.trim().split("\n").at(-1) ?? "";
      return { ...row, refused: `roster refuses: ${said}` };
    }
    const floors: number[] = [];
    const execs: number[] = [];
    const runs: number[] = [];
    const execRatios: number[] = [];
    const runRatios: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const floor = await timed(spec.floor);
      floors.push(floor);
      const exec = await timed([ROSTER_BIN, "box", "exec", "elf", "--", "true"], env);
      execs.push(exec);
      execRatios.push(exec / floor);
      model.play({ text: "ok" });
      const run = await timed([ROSTER_BIN, "run", "elf", "hi"], env);
      runs.push(run);
      runRatios.push(run / floor);
    }
    row.floorMs = median(floors);
    row.execMs = median(execs);
    row.execRatio = median(execRatios);
    row.runMs = median(runs);
    row.runRatio = median(runRatios);
    row.idleSessionMiB = await idleSession(deployment.paths, name);
    return row;
  } finally {
    await deployment.cleanup();
    await model.stop();
  }
}

async function idleSession(paths: Parameters<typeof ensureChannel>[0], name: string) {
  const channel = termChannelId("bench", `engines-${name}`);
  ensureChannel(paths, channel);
  const session = await Session.open({
    paths,
    worker: "elf",
    channel,
    provider: "term",
    replyBy: "write your reply as plain text",
    queueBound: 4,
    note: () => undefined,
    idleMs: 600_000,
  });
  try {
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const client = ((await connectEngine()) as unknown as DockerEngine).client;
    const stats = (await client.getContainer(session.containerId).stats({ stream: false })) as {
      memory_stats?: { usage?: number; stats?: Record<string, number> };
    };
    const memory = stats.memory_stats ?? {};
    const bytes =
      (memory.usage ?? 0) - (memory.stats?.total_inactive_file ?? memory.stats?.inactive_file ?? 0);
    return bytes / 1024 / 1024;
  } finally {
    await session.close();
  }
}

const only = process.env.ENGINE;
if (only) {
  const spec = CASES[only];
  if (!spec) throw new Error(`ENGINE=${only}: one of ${Object.keys(CASES).join(", ")}`);
  const row = await measure(only, spec).catch(
    (error: unknown): Row => ({ engine: spec.label, refused: `failed: ${errorMessage(error)}` }),
  );
  process.stdout.write(`${JSON.stringify(row)}\n`);
  process.exit(0);
}

const rows: Row[] = [];
for (const name of Object.keys(CASES)) {
  const child = spawnSync("npx", ["tsx", fileURLToPath(import.meta.url)], {
    env: { ...process.env, ENGINE: name },
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
    maxBuffer: 64 * 1024 * 1024,
  });
  const last = child.stdout.trim().split("\n").at(-1) ?? "";
  rows.push(last.startsWith("{") ? (JSON.parse(last) as Row) : { engine: name, refused: "no row" });
}

const f = (value: number | undefined, digits = 0) =>
  value === undefined ? "-" : value.toFixed(digits);
const lines = [
  `\n## Engines (\`npx tsx bench/engines.ts\`, ${new Date().toISOString().slice(0, 10)})\n`,
  `Medians of ${ROUNDS} rounds; each roster command is paired with its engine's bare \`run --rm ${BOX_IMAGE} true\` just before it.\n`,
  "| engine | floor ms | box exec ms | × floor | one-turn run ms | × floor | idle session MiB |",
  "|---|---|---|---|---|---|---|",
  ...rows.map((row) =>
    row.refused
      ? `| ${row.engine} | ${row.refused} ||||||`
      : `| ${row.engine} | ${f(row.floorMs)} | ${f(row.execMs)} | ${f(row.execRatio, 2)}x | ${f(row.runMs)} | ${f(row.runRatio, 2)}x | ${f(row.idleSessionMiB, 1)} |`,
  ),
];
console.log(lines.join("\n"));
if (process.env.BENCH_NOTES)
  await appendFile(join(process.cwd(), "bench/NOTES.md"), `${lines.join("\n")}\n`);
