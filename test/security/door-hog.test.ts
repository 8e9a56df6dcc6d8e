import { existsSync, readFileSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DOOR_MOUNT, DOOR_SOCKET } from "../../runner/box/layout.ts";
import { readDecisions } from "../../runner/gateway/audit-view.ts";
import { DOOR_CAP_RULE, DOOR_CONNECTION_CAP } from "../../runner/gateway/run-doors.ts";
import { listRuns, readRecord } from "../../runner/runs/run-record.ts";
import { until } from "../support/chat-turns.ts";
import { testDocker } from "../support/docker.ts";
import { ModelServer } from "../support/model-server.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";
import { Upstream } from "../support/upstream.ts";

/**
 * A compromised box tries to take the door from every other box, as one did
 * before each box had a door of its own: it opens 20,000 connections straight
 * to its door's socket and holds them without sending a byte. With a real
 * server, real boxes and the real gateway: the box holds no more than its
 * cap, the cap is audited once for its run, another box's requests go on
 * answering quickly the whole time, and the server stays under a stated
 * memory bound.
 */
const docker = await testDocker();

/** What the hog runs in its box: connect, count what stays open, hold, report. */
const HOG = `
const net = require("node:net");
const path = "${DOOR_MOUNT}/${DOOR_SOCKET}";
let held = 0, opened = 0, failed = 0;
for (let i = 0; i < 20000; i++) {
  let connected = false;
  const socket = net.connect({ path });
  socket.on("connect", () => { connected = true; opened++; held++; });
  socket.on("error", () => { if (!connected) failed++; });
  socket.on("close", () => { if (connected) held--; });
}
setTimeout(() => {
  console.log(JSON.stringify({ held, opened, failed }));
  setTimeout(() => process.exit(0), 20000);
}, 8000);
`;

/** The server holds no more than this while the hog holds its door (it idles near 100 MiB). */
const SERVER_RSS_BOUND_MIB = 400;

describe.skipIf(!docker)("one box can't take the door from the others", () => {
  let model: ModelServer;
  let upstream: Upstream;
  let deployment: RosterRoot;

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
    upstream = await Upstream.start({ tls: false, handler: (_req, res) => void res.end("ok") });
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), {
      extraOrg: `[[grant]]\nname = "allowed"\nverdict = "allow"\nmatch = { host = "allowed.test" }\n`,
    });
    const org = join(deployment.paths.config, "org.toml");
    const text = await readFile(org, "utf8");
    const line = '# resolve = { "git.internal" = "10.0.0.7" }';
    expect(text).toContain(line);
    await writeFile(org, text.replace(line, 'resolve = { "allowed.test" = "127.0.0.1" }'));
  });
  afterAll(async () => {
    await model?.stop();
    await upstream?.stop();
    await deployment?.cleanup();
  });

  it("a box holding 20,000 connections keeps its cap; another box's requests go on", async () => {
    const server = deployment.spawnRoster(["server", "start", "--no-listen", "--cap", "4"]);
    let serverLog = "";
    server.stderr.on("data", (chunk: Buffer) => {
      serverLog += chunk.toString();
    });
    try {
      await until(() => /gateway on/.test(serverLog), "the server to start");
      await until(
        () => existsSync(join(deployment.paths.state, "server.sock")),
        "the server to take runs",
        10_000,
      );
      const hog = deployment.roster(
        ["box", "exec", "--timeout", "120", "elf", "--", `node -e '${HOG}'`],
        { timeoutMs: 150_000 },
      );
      // the hog's box is up and holding once its run is on record and a moment has passed
      await until(
        () => listRuns(deployment.paths.state, "elf").length > 0,
        "the hog's run to start",
        60_000,
      );
      await new Promise((resolve) => setTimeout(resolve, 10_000));

      const url = `http://allowed.test:${upstream.port}/`;
      const timings: number[] = [];
      let peakMiB = 0;
      for (let i = 0; i < 3; i++) {
        const started = Date.now();
        const calm = await deployment.roster([
          "box",
          "exec",
          "elf",
          "--",
          `curl -s -o /dev/null -w '%{http_code}' ${url}`,
        ]);
        timings.push(Date.now() - started);
        expect(calm.code, calm.stderr).toBe(0);
        expect(JSON.parse(calm.stdout)).toMatchObject({ status: "ok", stdout: "200" });
        peakMiB = Math.max(peakMiB, rssMiB(server.pid));
      }
      // a whole box exec (a fresh box, its door, curl) in well under its usual bound
      for (const ms of timings) expect(ms).toBeLessThan(30_000);
      expect(peakMiB).toBeLessThan(SERVER_RSS_BOUND_MIB);

      const held = await hog;
      const envelope = JSON.parse(held.stdout) as { stdout: string; run_id: string };
      const counts = JSON.parse(envelope.stdout) as { held: number; opened: number };
      console.log(
        `door hog: ${envelope.stdout.trim()}; the calm box's execs took ${timings.join(", ")} ms; server peak ${peakMiB.toFixed(0)} MiB`,
      );
      // the door closed everything past its cap at once; the box kept at most the cap
      expect(counts.held).toBeLessThanOrEqual(DOOR_CONNECTION_CAP);
      expect(counts.held, envelope.stdout).toBeGreaterThan(0);
      // it did try far past the cap: the door let it connect, then hung up
      expect(counts.opened, envelope.stdout).toBeGreaterThan(DOOR_CONNECTION_CAP);
      const capLines = readDecisions(deployment.paths.audit).filter(
        (line) => line.rule === DOOR_CAP_RULE && line.run_id === envelope.run_id,
      );
      expect(capLines).toHaveLength(1);
      expect(readRecord(join(deployment.paths.state, "runs/elf", envelope.run_id))).toMatchObject({
        kind: "exec",
      });
    } finally {
      server.kill("SIGTERM");
      await new Promise((resolve) => server.once("exit", resolve));
    }
  });
});

/** A process's resident memory, from /proc (Linux), in MiB. */
function rssMiB(pid: number | undefined): number {
  if (!pid) throw new Error("the server has no pid: nothing to measure");
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = Number(/^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1]);
  if (!kib) throw new Error(`no VmRSS for process ${pid}: nothing to measure`);
  return kib / 1024;
}
