/**
 * `roster policy replay` over a long audit log, beside the floor of reading
 * the same log (the same bounded stream, each line parsed with JSON.parse and
 * nothing judged); and `roster policy check`'s cold start, one process per
 * question, beside `roster --version` (the floor every command pays). No
 * Docker.
 *
 * The log is LINES lines (1,000,000) in the gateway's line format, written in
 * large buffered writes: 112 distinct requests (7 workers, 16 kinds of
 * request, channels known, unknown and none, MCP calls, the action host, a
 * redacted header) whose recorded verdict is what the door's own ruling gives
 * them under the config, each line with its own time, run and path. The
 * replay judges it under a draft that drops a deny rule, gates a tool, widens
 * a write grant and adds a rule on a redacted header. Each measurement is its
 * own process (so its peak RSS is its own), ROUNDS times, alternating.
 *   npx tsx bench/policy-replay.ts           LINES=… ROUNDS=… CHECKS=… to change the sizes
 */
import { spawn } from "node:child_process";
import {
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import type { DecisionRecord } from "../runner/boundary/gateway/audit/audit.ts";
import { replayLog } from "../runner/boundary/gateway/policy/replay.ts";
import { Rejudge } from "../runner/boundary/gateway/policy/replay-judge.ts";
import { loadConfig } from "../runner/ground/config/load.ts";
import { eachBoundedLine } from "../runner/ground/files/bounded-lines.ts";
import { PROJECT_ROOT } from "../runner/ground/version.ts";
import { median, timed } from "./timing.ts";

// the command itself, not the test kit (bench/harness.ts): each measuring process loads only what it measures
const ROSTER_BIN = join(PROJECT_ROOT, "bin/roster.mjs");
const LINES = Number(process.env.LINES ?? 1_000_000);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const CHECKS = Number(process.env.CHECKS ?? 9);

const grants = (draft: boolean) => `
${draft ? "" : '[[grant]]\nname = "api-no-admin"\nverdict = "deny"\nmatch = { host = "api.example.com", pathPrefix = "/admin" }\n'}
${draft ? '[[grant]]\nname = "token-only"\nverdict = "deny"\nmatch = { host = "api.example.com", headerContains = { authorization = "Bearer admin" } }\n' : ""}
[[grant]]
name = "tools-hold-deletes"
verdict = "gate"
match = { host = "mcp.example.com", mcp = { tool = ${draft ? '["delete_*", "create_*"]' : '"delete_*"'} } }

[[grant]]
name = "tools"
verdict = "allow"
match = { host = "mcp.example.com", pathPrefix = "/mcp", method = ["POST"] }

[[grant]]
name = "api-write"
verdict = "allow"
match = { host = "api.example.com", pathPrefix = "/v1/items", method = ${draft ? '["POST", "PUT", "PATCH"]' : '["POST", "PUT"]'} }

[[grant]]
name = "dm-notes"
verdict = "allow"
match = { host = "notes.example.com" }
channels = { surfaces = ["dm"] }

[[grant]]
name = "web-read"
verdict = "allow"
match = { host = ["*.example.com", "*.example.org"], method = ["GET", "HEAD"] }
${Array.from(
  { length: 12 },
  (_, i) =>
    `\n[[grant]]\nname = "svc-${i}"\nverdict = "allow"\nmatch = { host = "svc${i}.example.net", pathPrefix = "/v${i}" }\n`,
).join("")}`;

const WORKERS = Array.from({ length: 7 }, (_, i) => `worker${i}`);

/** The 16 kinds of request each worker sends (the path gets each line's number appended). */
const KINDS: Array<Partial<DecisionRecord["request"]> & { origins?: string[] | "none" }> = [
  { method: "GET", host: "api.example.com", path: "/v1/items/" },
  { method: "POST", host: "api.example.com", path: "/v1/items/" },
  { method: "PATCH", host: "api.example.com", path: "/v1/items/" },
  { method: "GET", host: "api.example.com", path: "/admin/users/" },
  { method: "DELETE", host: "api.example.com", path: "/v1/items/" },
  {
    method: "GET",
    host: "api.example.com",
    path: "/v1/me/",
    headers: { authorization: "<redacted>" },
  },
  { method: "GET", host: "docs.example.org", path: "/guide/" },
  { method: "GET", host: "notes.example.com", path: "/today/", origins: [] },
  { method: "GET", host: "notes.example.com", path: "/today/", origins: "none" },
  { method: "POST", host: "svc3.example.net", path: "/v3/jobs/" },
  { method: "POST", host: "svc7.example.net", path: "/v1/jobs/" },
  {
    method: "POST",
    host: "mcp.example.com",
    path: "/mcp/",
    mcp: { method: "tools/call", tool: "echo" },
  },
  {
    method: "POST",
    host: "mcp.example.com",
    path: "/mcp/",
    mcp: { method: "tools/call", tool: "create_issue" },
  },
  {
    method: "POST",
    host: "mcp.example.com",
    path: "/mcp/",
    mcp: { method: "tools/call", tool: "delete_repo" },
  },
  { method: "POST", host: "mcp.example.com", path: "/mcp/", mcp: { method: "tools/list" } },
  { method: "POST", host: "actions.roster.internal", path: "/proposals/" },
];

/** The line the gateway would write for request `i`, its verdict the door's ruling under `judge`. */
function recordOf(i: number, decided: Array<{ verdict: string; rule: string | null }>): string {
  const kind = KINDS[i % KINDS.length] ?? {};
  const worker = WORKERS[Math.floor(i / KINDS.length) % WORKERS.length] ?? "worker0";
  const said = decided[i % decided.length] ?? { verdict: "deny", rule: null };
  const record: DecisionRecord = {
    decision_id: `${(1e12 + i).toString(16)}-${i.toString(16)}`,
    ts: new Date(Date.UTC(2030, 0, 1) + i * 600).toISOString(),
    verdict: said.verdict as DecisionRecord["verdict"],
    rule: said.rule,
    subject: `org/${worker}`,
    run_id: `run-${worker}-${Math.floor(i / 500)}`,
    ...(kind.origins === "none" ? {} : { origins: kind.origins ?? [] }),
    request: {
      protocol: "https",
      method: kind.method ?? "GET",
      host: kind.host ?? "api.example.com",
      port: 443,
      path: `${kind.path ?? "/"}${i}`,
      query: i % 3 ? "" : `page=${i % 7}`,
      headers: {
        "user-agent": "node",
        accept: "*/*",
        ...(kind.mcp ? { "content-type": "application/json" } : {}),
        ...kind.headers,
      },
      bodySize: kind.mcp ? 96 : kind.method === "GET" ? 0 : 320,
      mcp: kind.mcp ?? null,
    },
    status: said.verdict === "allow" ? 200 : 403,
  };
  return JSON.stringify(record);
}

/** A config root and a draft beside it, and the log: one line per request, written in large writes. */
function prepare(dir: string): { lines: number; bytes: number; ms: number } {
  for (const [name, draft] of [
    ["config", false],
    ["draft", true],
  ] as const) {
    mkdirSync(join(dir, name), { recursive: true });
    writeFileSync(join(dir, name, "org.toml"), grants(draft));
  }
  const config = loadConfig(join(dir, "config"), { vaultDir: join(dir, "vault") });
  if (config.errors.length) throw new Error(JSON.stringify(config.errors[0]));
  const started = performance.now();
  // each distinct request's verdict, from the door's own ruling under the config
  const rejudge = new Rejudge(config);
  const decided = Array.from({ length: KINDS.length * WORKERS.length }, (_, i) => {
    const says = rejudge.judge(JSON.parse(recordOf(i, [])) as DecisionRecord);
    if (says.kind === "decided") return says.decided;
    // what the door said of the two a replay can't judge again: the action host's own
    // answer, and a notes read from a run whose token named no channels (not a DM's)
    return KINDS[i % KINDS.length]?.host === "actions.roster.internal"
      ? { verdict: "allow", rule: "action-host" }
      : { verdict: "allow", rule: "web-read" };
  });
  const fd = openSync(join(dir, "decisions.jsonl"), "w");
  let batch: string[] = [];
  for (let i = 0; i < LINES; i++) {
    batch.push(recordOf(i, decided));
    if (batch.length === 10_000 || i === LINES - 1) {
      writeSync(fd, `${batch.join("\n")}\n`);
      batch = [];
    }
  }
  closeSync(fd);
  return {
    lines: LINES,
    bytes: statSync(join(dir, "decisions.jsonl")).size,
    ms: performance.now() - started,
  };
}

type Mode = "idle" | "floor" | "replay";

/** One measurement in this process: its time, and the process's peak RSS. */
function measure(mode: Mode, dir: string): void {
  const file = join(dir, "decisions.jsonl");
  const draft = loadConfig(join(dir, "draft"), { vaultDir: join(dir, "vault") });
  const started = performance.now();
  let out: Record<string, number> = {};
  if (mode === "floor") {
    let parsed = 0;
    eachBoundedLine(file, 256 * 1024, {
      line: (text) => {
        if (JSON.parse(text)) parsed++;
      },
      tooLong: () => undefined,
    });
    out = { parsed };
  } else if (mode === "replay") {
    const report = replayLog(file, draft);
    out = {
      replayed: report.replayed,
      flipped: report.flipped,
      notReplayed: report.notReplayed.reduce((sum, one) => sum + one.count, 0),
    };
  }
  const ms = performance.now() - started;
  const rssMb = process.resourceUsage().maxRSS / 1024;
  process.stdout.write(`${JSON.stringify({ ms, rssMb, ...out })}\n`);
}

async function child(
  mode: Mode,
  dir: string,
): Promise<{ ms: number; rssMb: number } & Record<string, number>> {
  const proc = spawn(
    process.execPath,
    ["--import", "tsx", fileURLToPath(import.meta.url), "--measure", mode, dir],
    {
      // tsx is resolved from the project, wherever the bench was started from
      cwd: PROJECT_ROOT,
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  let text = "";
  proc.stdout.on("data", (chunk: Buffer) => {
    text += chunk.toString();
  });
  const code = await new Promise((resolve) => proc.once("exit", resolve));
  if (code !== 0) throw new Error(`${mode} exited ${String(code)}`);
  return JSON.parse(text);
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "roster-bench-replay-"));
  try {
    const made = prepare(dir);
    console.error(
      `log: ${made.lines} lines, ${(made.bytes / 2 ** 20).toFixed(0)} MiB in ${(made.ms / 1000).toFixed(1)} s`,
    );
    const runs: Record<Mode, Array<Awaited<ReturnType<typeof child>>>> = {
      idle: [],
      floor: [],
      replay: [],
    };
    for (let round = 0; round < ROUNDS; round++)
      for (const mode of (round % 2
        ? ["replay", "floor", "idle"]
        : ["idle", "floor", "replay"]) as Mode[]) {
        runs[mode].push(await child(mode, dir));
        console.error(`round ${round + 1}: ${mode} done`);
      }
    const ms = (mode: Mode) => median(runs[mode].map((run) => run.ms));
    const rss = (mode: Mode) => Math.max(...runs[mode].map((run) => run.rssMb));
    const replay = runs.replay[0] ?? { ms: 0, rssMb: 0 };
    console.log(
      `Node ${process.version}; ${made.lines.toLocaleString("en")} lines (${(made.bytes / 2 ** 20).toFixed(0)} MiB, written in ${(made.ms / 1000).toFixed(1)} s); medians of ${ROUNDS}, each its own process\n`,
    );
    console.log("| what | s | lines/s | vs floor | peak RSS MiB | over the idle process MiB |");
    console.log("| --- | --- | --- | --- | --- | --- |");
    console.log(
      `| a process that loads the draft and reads nothing | ${(ms("idle") / 1000).toFixed(2)} | - | - | ${rss("idle").toFixed(0)} | - |`,
    );
    for (const [label, mode] of [
      ["floor: the log streamed, each line JSON.parse'd", "floor"],
      ["replay under the draft", "replay"],
    ] as const)
      console.log(
        `| ${label} | ${(ms(mode) / 1000).toFixed(2)} | ${Math.round(made.lines / (ms(mode) / 1000)).toLocaleString("en")} | ${(ms(mode) / ms("floor")).toFixed(2)}x | ${rss(mode).toFixed(0)} | ${(rss(mode) - rss("idle")).toFixed(0)} |`,
      );
    console.log(
      `\nthe replay: ${replay.replayed} replayed, ${replay.flipped} would flip, ${replay.notReplayed} not replayed\n`,
    );
    await checkLatency(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `roster policy check`, a fresh process each time, against a fresh `roster init` root; `roster --version` beside it. */
async function checkLatency(dir: string): Promise<void> {
  const env = { ROSTER_ROOT: join(dir, "root") };
  await timed([process.execPath, ROSTER_BIN, "init"], env);
  const check = [
    process.execPath,
    ROSTER_BIN,
    "policy",
    "check",
    "elf",
    "GET",
    "https://api.github.com/repos/acme/app",
  ];
  const version = [process.execPath, ROSTER_BIN, "--version"];
  // one of each first: the file system's caches (and tsx's, if the runner runs uncompiled)
  await timed(check, env);
  await timed(version, env);
  const times = { check: [] as number[], version: [] as number[] };
  for (let i = 0; i < CHECKS; i++) {
    const order = i % 2 ? (["check", "version"] as const) : (["version", "check"] as const);
    for (const which of order)
      times[which].push(await timed(which === "check" ? check : version, env));
  }
  const floor = median(times.version);
  console.log(`a fresh \`roster init\` root; medians of ${CHECKS}, alternating\n`);
  console.log("| command | ms | vs floor |");
  console.log("| --- | --- | --- |");
  console.log(`| floor: roster --version | ${floor.toFixed(0)} | 1.00x |`);
  console.log(
    `| roster policy check elf GET https://api.github.com/repos/acme/app | ${median(times.check).toFixed(0)} | ${(median(times.check) / floor).toFixed(2)}x |`,
  );
}

const at = process.argv.indexOf("--measure");
if (at >= 0) measure(process.argv[at + 1] as Mode, process.argv[at + 2] ?? "");
else await main();
