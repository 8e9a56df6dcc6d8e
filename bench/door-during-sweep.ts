/**
 * The door's latency for one box while the server takes a snapshot pass of
 * every store (its daily sweep), this checkout beside another, in one run:
 * `roster server start` from each tree on a fresh root whose stores hold many
 * small files; one client asks through the door every 10 ms with a run token,
 * first with the server idle, then from the moment the sweep is made due
 * until every store has its snapshot. Reports p50, p99 and the longest answer
 * of each phase. For "a snapshot pass can't stall another box's requests".
 *   npx tsx bench/door-during-sweep.ts <other checkout, built> [files per store]
 */
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { mintToken } from "../runner/boundary/gateway/doors/identity.ts";
import { initRoots } from "../runner/cli/does/init.ts";
import { rosterPaths } from "../runner/ground/config/paths.ts";
import { PROJECT_ROOT } from "../runner/ground/version.ts";
import { freePort } from "./harness.ts";

const other = process.argv[2] ? resolve(process.argv[2]) : undefined;
if (!other || !existsSync(join(other, "bin/roster.mjs")))
  throw new Error("usage: npx tsx bench/door-during-sweep.ts <other checkout, built> [files]");
const FILES = Number(process.argv[3] ?? 20_000);
const STORES = 3;
const trees = { other, this: PROJECT_ROOT };

const upstream = createServer((req, res) => {
  req.resume();
  req.on("end", () => res.end("ok"));
});
await new Promise<void>((ready) => upstream.listen(0, "127.0.0.1", ready));
const upstreamPort = (upstream.address() as AddressInfo).port;
const work = mkdtempSync(join(tmpdir(), "roster-bench-sweep-"));

/** One request through the door, as a box sends it; its time in ms. */
function ask(port: number, token: string): Promise<number> {
  const started = performance.now();
  return new Promise((done, fail) => {
    const asking = request(
      {
        host: "127.0.0.1",
        port,
        path: `http://127.0.0.1:${upstreamPort}/`,
        headers: {
          host: `127.0.0.1:${upstreamPort}`,
          "proxy-authorization": `Basic ${Buffer.from(`${token}:x`).toString("base64")}`,
        },
        agent: false,
      },
      (response) => {
        response.resume();
        response.on("end", () =>
          response.statusCode === 200
            ? done(performance.now() - started)
            : fail(new Error(`the door answered ${response.statusCode}`)),
        );
      },
    );
    asking.on("error", fail);
    asking.end();
  });
}

const quantile = (values: number[], q: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * q))] ??
  0;
const summary = (values: number[]) =>
  `${values.length} requests: p50 ${quantile(values, 0.5).toFixed(1)} ms, p99 ${quantile(values, 0.99).toFixed(1)} ms, longest ${Math.max(...values).toFixed(1)} ms`;

const results: string[] = [];
for (const [name, tree] of Object.entries(trees)) {
  const root = join(work, name);
  const paths = rosterPaths({ ROSTER_ROOT: root });
  await initRoots(paths);
  const port = await freePort();
  // each tree's own example: a key one knows may be unknown to the other
  const org = readFileSync(join(tree, "org.example.toml"), "utf8").replace(
    "port = 7300",
    `port = ${port}`,
  );
  writeFileSync(
    join(paths.config, "org.toml"),
    `${org}\n[[grant]]\nname = "bench"\nverdict = "allow"\nmatch = { host = "127.0.0.1" }\n`,
  );
  for (let store = 0; store < STORES; store++) {
    const dir = join(paths.data, "workers", `w${store}`, "store");
    for (let file = 0; file < FILES; file++) {
      const sub = join(dir, `d${file % 100}`);
      if (file < 100) mkdirSync(sub, { recursive: true });
      writeFileSync(join(sub, `f${file}.txt`), `${file}\n`.repeat(100));
    }
  }
  // the sweep is not due until the baseline is taken
  writeFileSync(
    join(paths.state, "store-sweep.json"),
    `${JSON.stringify({ at: new Date().toISOString() })}\n`,
  );
  let said = "";
  const server = spawn(
    join(tree, "bin/roster.mjs"),
    ["server", "start", "--no-listen", "--no-console", "--cap", "1"],
    { env: { ...process.env, ROSTER_ROOT: root }, stdio: ["ignore", "pipe", "pipe"] },
  );
  server.stdout.on("data", (chunk: Buffer) => {
    said += chunk.toString();
  });
  server.stderr.on("data", (chunk: Buffer) => {
    said += chunk.toString();
  });
  try {
    const token = await mintToken(paths.identity, { subject: "org/elf", runId: "bench-sweep" });
    const until = Date.now() + 60_000;
    for (;;) {
      if (
        await ask(port, token).then(
          () => true,
          () => false,
        )
      )
        break;
      if (Date.now() > until || server.exitCode !== null)
        throw new Error(`${name}: the server's door never answered:\n${said}`);
      await new Promise((wait) => setTimeout(wait, 100));
    }
    const sample = async (keepGoing: () => boolean): Promise<number[]> => {
      const times: number[] = [];
      while (keepGoing()) {
        times.push(await ask(port, token));
        await new Promise((wait) => setTimeout(wait, 10));
      }
      return times;
    };
    const idleUntil = Date.now() + 5_000;
    const idle = await sample(() => Date.now() < idleUntil);
    const sweptFrom = Date.now();
    rmSync(join(paths.state, "store-sweep.json"));
    const swept = () => (said.match(/sweep: /g) ?? []).length >= STORES;
    const during = await sample(() => !swept() && Date.now() - sweptFrom < 300_000);
    if (!swept()) throw new Error(`${name}: the sweep did not finish in 5 min:\n${said}`);
    results.push(
      `| ${name === "this" ? "this checkout" : "the other"} | ${summary(idle)} | ${summary(during)} | ${((Date.now() - sweptFrom) / 1000).toFixed(1)} s |`,
    );
  } finally {
    if (server.exitCode === null && server.signalCode === null) {
      const gone = new Promise((ended) => server.once("exit", ended));
      server.kill("SIGTERM");
      await gone;
    }
  }
}
upstream.close();
rmSync(work, { recursive: true, force: true });
console.log(`${STORES} stores of ${FILES} files each; one request every 10 ms through the door\n`);
console.log("| server | idle | during the sweep | sweep took |");
console.log("| --- | --- | --- | --- |");
for (const line of results) console.log(line);
