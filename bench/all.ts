/**
 * `npm run bench`: every benchmark, one after another (they share the
 * machine's two cores and one Docker engine, so never at once), each in its
 * own process, and bench/RESULTS.md rewritten from what they print: the
 * machine and the date on top, then each benchmark's tables (every figure
 * beside its peer or floor as a ratio) under the command that made them. A
 * benchmark whose needs are missing (Docker, mitmdump, hey, chromium, the
 * shared corpus) or that fails is listed as such; the rest still run.
 * Analysis and the history of earlier figures live in bench/NOTES.md.
 *   npm run bench                  every benchmark
 *   npm run bench -- gateway repos only those (by file name)
 * Progress goes to stderr; only a run of every benchmark rewrites the file.
 */
import { execFileSync, spawn } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { cpus, totalmem } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { PROJECT_ROOT } from "../runner/ground/version.ts";
import { corpusAvailable } from "./harness.ts";

interface Bench {
  file: string;
  title: string;
  /** What its tables set side by side, said once above them. */
  compares: string;
  needs: Need[];
}

type Need = "docker" | "root" | "mitmdump" | "hey" | "chromium" | "corpus";

const BENCHES: Bench[] = [
  {
    file: "box-image",
    title: "Box image builds",
    compares: "a cold build beside a rebuild after one extension changed",
    needs: ["docker", "root"],
  },
  {
    file: "run-latency",
    title: "A governed run against its floors",
    compares:
      "`roster run` five ways (the last handed to a server that keeps a ready box) beside a bare `docker run … true` and a hardened `docker run` of pi (the floor)",
    needs: ["docker", "root"],
  },
  {
    file: "ready-floors",
    title: "The floors under a ready-box run",
    compares:
      "a bare Node process, `roster --version`, pi alone idle in RPC mode (prompt to request, stdin closed to exit) and one rsync dry-run, each beside pi's floor",
    needs: ["docker", "root"],
  },
  {
    file: "engine-start",
    title: "pi's start inside the box",
    compares: "pi's start with the caches baked into the image beside the same box with them cold",
    needs: ["docker", "root"],
  },
  {
    file: "agents",
    title: "Workers on Claude Code and Codex",
    compares:
      "a one-shot `roster run` of a worker on pi, Claude Code and Codex beside pi's hardened `docker run` floor, in paired rounds; then the box image's size beside each agent's layer and both baked in, and a first `roster box build --agent` with npm's fetch cached beside cold",
    needs: ["docker", "root"],
  },
  {
    file: "box-exec",
    title: "`roster box exec` against a bare container",
    compares:
      "`roster box exec` four ways (the last handed to a server that keeps a ready box) beside a bare `docker run --rm <image> true` (the floor)",
    needs: ["docker", "root"],
  },
  {
    file: "toolchain",
    title: "A declared toolchain: first run against the next",
    compares: "the first run (image built) beside the runs that reuse it",
    needs: ["docker", "root"],
  },
  {
    file: "sessions",
    title: "Warm session turns against cold runs",
    compares: "a warm session turn beside a cold `roster run`",
    needs: ["docker", "root"],
  },
  {
    file: "prompt-cache",
    title: "A provider's prompt cache across ten runs",
    compares:
      "the share of each run's prompt a provider's prefix cache serves, run 1 beside runs 2–10",
    needs: ["docker"],
  },
  {
    file: "chat-commands",
    title: "Chat commands against chat replies",
    compares:
      "a Discord slash command's round trip beside a warm chat reply's on one running server, and the listener's RSS with 1,000 channels known beside none",
    needs: ["docker", "root"],
  },
  {
    file: "gateway",
    title: "The gateway against a direct connection and mitmproxy",
    compares: "roster's gateway beside direct HTTPS and mitmproxy",
    needs: ["mitmdump"],
  },
  {
    file: "door-floors",
    title: "The door against Node's own floors",
    compares:
      "roster's door beside a bare Node TLS relay and a bare Node HTTP relay (Node's https server and client, nothing else), CPU a request",
    needs: ["hey"],
  },
  {
    file: "usage-meter",
    title: "Model usage metering",
    compares: "a metered model stream beside the same stream unmetered",
    needs: [],
  },
  {
    file: "telemetry-overhead",
    title: "The door with telemetry (metrics and traces) on and off",
    compares:
      "a gateway counting every audit line for Prometheus and sending a span per decision over OTLP (`[telemetry]`) beside the same gateway without it, in paired rounds",
    needs: [],
  },
  {
    file: "mcp",
    title: "MCP tool calls through the gateway",
    compares: "per-call latency through the gateway beside the same calls straight at the server",
    needs: [],
  },
  {
    file: "actions",
    title: "Proposals through the gateway",
    compares: "proposals beside a plain request through the same gateway",
    needs: [],
  },
  {
    file: "tasks",
    title: "The dispatcher's tick with 1,000 recurring templates",
    compares: "a tick with no history beside ticks with 200 and 2,000 finished tasks per worker",
    needs: [],
  },
  {
    file: "repos",
    title: "Gated repos: per-run clones and push checks",
    compares: "roster's shared clone beside a full local copy",
    needs: [],
  },
  {
    file: "store",
    title: "Store snapshots against a plain copy",
    compares:
      "the snapshot after a run that changed 10 files of a 10,000-file, 200 MB store beside `cp -a` of the same store",
    needs: [],
  },
  {
    file: "extraction",
    title: "Main-content extraction",
    compares: "fetch_pages' extractor beside Readability, Defuddle and a naive one",
    needs: ["corpus"],
  },
  {
    file: "extraction-rendered",
    title: "Pages their scripts make: read as served against rendered in the box",
    compares:
      "fetch_pages reading three app shells as served beside rendering them in the box's browser (word-F1 and the tool's time, beside the same call with nothing to fetch), and whether it renders them unasked",
    needs: ["docker"],
  },
  {
    file: "console",
    title: "The web console",
    compares: "the server with the console beside the server without it",
    needs: ["docker", "root", "chromium"],
  },
  {
    file: "door-summary",
    title: "The door's running counts against reading the whole audit log",
    compares:
      "the console's running counts of door traffic beside the whole-log read the door page does, on 1,000,000 audit lines",
    needs: [],
  },
  {
    file: "console-overview",
    title: "The console's overview over 10,000 runs and 1,000,000 audit lines",
    compares:
      "rendering the overview (cards, spend, door and runs pictures) beside one read of the whole audit log",
    needs: [],
  },
  {
    file: "policy-replay",
    title: "Replaying the audit log, and a policy check's cold start",
    compares:
      "`roster policy replay` over 1,000,000 audit lines beside the same log only streamed and parsed, and `roster policy check` as one cold process beside `roster --version`",
    needs: [],
  },
];

function has(command: string): boolean {
  try {
    execFileSync("sh", ["-c", `command -v ${command}`], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

function dockerVersion(): string | undefined {
  try {
    return execFileSync("docker", ["version", "--format", "{{.Server.Version}}"], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    }).trim();
  } catch {
    return undefined;
  }
}

const docker = dockerVersion();
const missing = (need: Need): string | undefined => {
  if (need === "docker") return docker ? undefined : "no Docker engine answers";
  if (need === "root") return process.getuid?.() === 0 ? undefined : "not root";
  if (need === "mitmdump")
    return has("mitmdump") ? undefined : "mitmdump is not on PATH (apt-get install mitmproxy)";
  if (need === "hey") return has("hey") ? undefined : "hey is not on PATH";
  if (need === "chromium") return has("chromium") ? undefined : "chromium is not on PATH";
  return corpusAvailable() ? undefined : "the shared extraction corpus is absent";
};

function runBench(bench: Bench): Promise<{ code: number | null; stdout: string; seconds: number }> {
  const started = performance.now();
  return new Promise((resolve) => {
    const child = spawn(
      join(PROJECT_ROOT, "node_modules/.bin/tsx"),
      [join(PROJECT_ROOT, "bench", `${bench.file}.ts`)],
      { cwd: PROJECT_ROOT, stdio: ["ignore", "pipe", "inherit"] },
    );
    let stdout = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.on("close", (code) =>
      resolve({ code, stdout, seconds: (performance.now() - started) / 1000 }),
    );
  });
}

const only = process.argv.slice(2);
const chosen = only.length ? BENCHES.filter((bench) => only.includes(bench.file)) : BENCHES;
const unknown = only.filter((name) => !BENCHES.some((bench) => bench.file === name));
if (unknown.length) {
  console.error(
    `no benchmark named ${unknown.join(", ")} (there are: ${BENCHES.map((b) => b.file).join(", ")})`,
  );
  process.exit(2);
}

const date = new Date().toISOString().slice(0, 10);
const sections: string[] = [];
for (const bench of chosen) {
  const why = bench.needs.map(missing).find(Boolean);
  const command = `npx tsx bench/${bench.file}.ts`;
  if (why) {
    console.error(`bench: ${bench.file} skipped: ${why}`);
    sections.push(`## ${bench.title}\n\n\`${command}\`: not run here (${why}).\n`);
    continue;
  }
  console.error(`bench: ${bench.file} …`);
  const result = await runBench(bench);
  console.error(
    `bench: ${bench.file} ${result.code === 0 ? "done" : `failed (exit ${result.code})`} in ${result.seconds.toFixed(0)} s`,
  );
  sections.push(
    [
      `## ${bench.title}`,
      "",
      `\`${command}\` (${result.seconds.toFixed(0)} s): ${bench.compares}.${result.code === 0 ? "" : ` **Failed (exit ${result.code})**; its output so far:`}`,
      "",
      result.stdout.trim() || "(no output)",
      "",
    ].join("\n"),
  );
}

const cpu = cpus();
const header = [
  "# Benchmark results",
  "",
  `Written by \`npm run bench\` on ${date}. Machine: ${cpu.length} × ${cpu[0]?.model.trim() ?? "unknown CPU"}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Docker ${docker ?? "absent"}, Node ${process.version}.`,
  "Every table was produced in one run by the command above it, peers side by side in that run; compare the ratios, since absolute numbers move with the machine. What the figures mean, and how they moved over time, is in bench/NOTES.md.",
  "",
].join("\n");
const text = `${header}\n${sections.join("\n")}`;
if (only.length) {
  process.stdout.write(text);
  console.error("bench: a partial run; bench/RESULTS.md left as it was");
} else {
  await writeFile(join(PROJECT_ROOT, "bench/RESULTS.md"), text);
  console.error("bench: bench/RESULTS.md rewritten");
}
