/**
 * The web console: how long a gate takes from being filed to showing in an
 * open page (the feed's file watch, the event stream, the page's refetch and
 * render, in a real browser), and what the console adds to the server's
 * memory (the server's RSS with `--no-console` against with the console and
 * an open page). Needs Docker (the server connects to it) and Debian's
 * chromium.
 *   npx tsx bench/console.ts
 */
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { type Gate, newGateId, writeGate } from "../runner/services/actions/gates.ts";
import { freePort, makeRosterRoot, testBrowser } from "./harness.ts";
import { median } from "./timing.ts";

const ROUNDS = 15;
const port = await freePort();
const root = await makeRosterRoot("http://127.0.0.1:9/v1", {
  extraOrg: `[console]\nlisten = "127.0.0.1:${port}"\n`,
});
const browser = await testBrowser();
if (!browser) throw new Error("no chromium");

/** Starts the server; resolves with it and its stderr so far once it is up. */
async function server(args: string[]) {
  const child = root.spawnRoster(["server", "start", "--no-listen", ...args]);
  let log = "";
  child.stderr.on("data", (chunk: Buffer) => {
    log += chunk.toString();
  });
  for (let i = 0; i < 300 && !/up to \d+ boxes/.test(log); i++)
    await new Promise((resolve) => setTimeout(resolve, 100));
  for (let i = 0; i < 100 && !args.includes("--no-console") && !/log in with/.test(log); i++)
    await new Promise((resolve) => setTimeout(resolve, 100));
  const rssMb = () => {
    const status = readFileSync(`/proc/${child.pid}/status`, "utf8");
    return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
  };
  const stop = async () => {
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await exited;
  };
  return { log: () => log, rssMb, stop };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 3000));
let without = 0;
let withConsole = 0;
let withPage = 0;
const latencies: number[] = [];
try {
  const bare = await server(["--no-console"]);
  await settle();
  without = bare.rssMb();
  await bare.stop();

  const full = await server([]);
  await settle();
  withConsole = full.rssMb();
  const login = /log in with (\S+)/.exec(full.log())?.[1] ?? "";
  const page = await browser.newPage();
  await page.goto(login);
  await settle();
  withPage = full.rssMb();
  for (let i = 0; i < ROUNDS; i++) {
    const gate: Gate = {
      id: newGateId(),
      worker: "org/elf",
      intent: "email-send",
      executor: "email",
      payload: { to: ["a@example.test"], subject: `round ${i}`, body: "x" },
      rationale: "bench",
      run_id: null,
      task_id: null,
      state: "pending",
      filed_at: new Date().toISOString(),
    };
    const started = performance.now();
    writeGate(root.paths, gate);
    await page.locator(`article[id="${gate.id}"]`).waitFor({ timeout: 10_000 });
    latencies.push(performance.now() - started);
  }
  await page.close();
  await full.stop();
} finally {
  await browser.close();
  await root.cleanup();
}

console.log(`Node ${process.version}, ${ROUNDS} gates, one open page (chromium)\n`);
console.log("| measure | value |");
console.log("| --- | --- |");
console.log(`| gate filed → shown in the open page, median | ${median(latencies).toFixed(0)} ms |`);
console.log(`| … slowest | ${Math.max(...latencies).toFixed(0)} ms |`);
console.log(`| server RSS, --no-console | ${without.toFixed(0)} MiB |`);
console.log(
  `| server RSS, console serving one open page | ${withPage.toFixed(0)} MiB (+${(withPage - without).toFixed(0)} MiB; ${(withConsole - without).toFixed(0)} MiB before the page opened) |`,
);
