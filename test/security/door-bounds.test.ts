import { existsSync, readFileSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BOX_HOME, DOOR_MOUNT, DOOR_SOCKET } from "../../runner/boundary/box/layout.ts";
import { readDecisions } from "../../runner/boundary/gateway/audit/view.ts";
import {
  DOOR_CAP_RULE,
  DOOR_CONNECTION_CAP,
} from "../../runner/boundary/gateway/doors/run-doors.ts";
import { listRuns, readRecord } from "../../runner/records/run-records/run-record.ts";
import { until } from "../support/chat-turns.ts";
import { testDocker } from "../support/docker.ts";
import { ModelServer } from "../support/model-server.ts";
import { listeningPort, makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";

/**
 * What one box can take from what all boxes share, tried from real boxes
 * through the real gateway, as a compromised worker would:
 * - 20,000 connections straight to its door's socket, held without a byte:
 *   the box holds no more than its cap, the cap is audited once for its run,
 *   another box's requests go on answering, and the server stays under a
 *   stated memory bound;
 * (40 uploads of 60 MB at once, each under the body limit, stream through and
 * leave memory flat: test/gateway/body-memory.test.ts, through the same server
 * the door hands its sockets to, with every byte counted upstream);
 * - a 100 MB upload past the limit, sized or chunked: the client reads the
 *   413 and its hint, not a reset.
 */
const docker = await testDocker();

/** The file the test leaves in the hog's $HOME once it has tried its own box alongside. */
const RELEASE = "release";

/**
 * What the hog runs in its box: connect, count what stays open, hold until
 * released, then report once every attempt has its answer (connected or
 * refused). A hog never released reports after 100 seconds, within its box's
 * 120-second timeout, so a test that failed early still ends.
 */
const HOG = `
const fs = require("node:fs");
const net = require("node:net");
const path = "${DOOR_MOUNT}/${DOOR_SOCKET}";
const total = 20000;
let held = 0, opened = 0, failed = 0;
for (let i = 0; i < total; i++) {
  let connected = false;
  const socket = net.connect({ path });
  socket.on("connect", () => { connected = true; opened++; held++; });
  socket.on("error", () => { if (!connected) failed++; });
  socket.on("close", () => { if (connected) held--; });
}
const since = Date.now();
const watch = setInterval(() => {
  const done = fs.existsSync("${BOX_HOME}/${RELEASE}") && opened + failed === total;
  if (!done && Date.now() - since < 100000) return;
  clearInterval(watch);
  console.log(JSON.stringify({ held, opened, failed }));
  process.exit(0);
}, 100);
`;

/** The server and its gateway child hold no more than this under any of these (under 200 MiB together). */
const SERVER_RSS_BOUND_MIB = 450;

describe.skipIf(!docker)("one box can't take the door from the others", () => {
  let model: ModelServer;
  let upstream: Server;
  let deployment: RosterRoot;

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
    // drops every body as it comes and answers at its end, as a real API does (holding
    // 40 x 60 MB in the test's own process would measure the test, not the gateway)
    upstream = createServer((req, res) => {
      req.resume();
      req.on("end", () => res.end("ok"));
    });
    await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
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
    upstream?.closeAllConnections();
    await new Promise((resolve) => upstream?.close(resolve));
    await deployment?.cleanup();
  });

  it("a box holding 20,000 connections keeps its cap; another box's requests go on", async () => {
    const server = await startServer(deployment);
    try {
      const hog = deployment.roster(
        ["box", "exec", "--timeout", "120", "elf", "--", `node -e '${HOG}'`],
        { timeoutMs: 150_000 },
      );
      const hogRun = await until(
        () => listRuns(deployment.paths.state, "elf")[0],
        "the hog's run to start",
        60_000,
      );
      // the hog holds its door's cap once the door has turned one away: the audit says so
      await until(
        () =>
          readDecisions(deployment.paths.audit).some(
            (line) => line.rule === DOOR_CAP_RULE && line.run_id === hogRun.id,
          ),
        "the hog to reach its door's cap",
        60_000,
      );

      const url = `http://allowed.test:${listeningPort(upstream)}/`;
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

      // the run's $HOME on the host is the box's ~
      await writeFile(join(hogRun.dir, "home", RELEASE), "");
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
      await stopServer(server);
    }
  });

  it("an upload past the body limit, sized or chunked, gets a 413 the client reads", async () => {
    const url = `http://allowed.test:${listeningPort(upstream)}/upload`;
    // no Expect: 100-continue, which would let curl hear the refusal before it sends a byte:
    // the body is on its way when the 413 is written, as from most clients
    const upload = (how: string) =>
      `head -c 100000000 /dev/zero | curl -sS -o /tmp/answer -w '%{http_code}' -H 'Expect:' -H 'content-type: application/octet-stream' ${how} ${url}; echo; cat /tmp/answer`;
    for (const how of ["--data-binary @-", "-T -"]) {
      const sent = await deployment.roster(
        ["box", "exec", "--local", "--timeout", "120", "elf", "--", upload(how)],
        { timeoutMs: 150_000 },
      );
      const envelope = JSON.parse(sent.stdout) as { stdout: string; stderr: string };
      const [status, ...answer] = envelope.stdout.split("\n");
      expect(status, `${how}: ${envelope.stderr}`).toBe("413");
      expect(answer.join("\n"), how).toContain("request bodies over 67108864 bytes are refused");
    }
  });
});

/** `roster server start`, once its gateway is up and it takes runs; what it said if it never does. */
async function startServer(deployment: RosterRoot): Promise<ReturnType<RosterRoot["spawnRoster"]>> {
  const server = deployment.spawnRoster(["server", "start", "--no-listen", "--cap", "4"]);
  let said = "";
  server.stderr.on("data", (chunk: Buffer) => {
    said += chunk.toString();
  });
  try {
    await until(() => /gateway on/.test(said), "the server to start");
    await until(
      () => existsSync(join(deployment.paths.state, "server.sock")),
      "the server to take runs",
      10_000,
    );
  } catch (error) {
    await stopServer(server);
    throw new Error(
      `${error instanceof Error ? error.message : String(error)}; the server said: ${said}`,
    );
  }
  return server;
}

/** Stops the server and waits for it, unless it is gone already. */
async function stopServer(server: ReturnType<RosterRoot["spawnRoster"]>): Promise<void> {
  if (server.exitCode !== null || server.signalCode !== null) return;
  const exited = new Promise((resolve) => server.once("exit", resolve));
  server.kill("SIGTERM");
  await exited;
}

/**
 * The server's resident memory with its children's (its gateway is one), from /proc
 * (Linux), in MiB.
 */
function rssMiB(pid: number | undefined): number {
  if (!pid) throw new Error("the server has no pid: nothing to measure");
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = Number(/^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1]);
  if (!kib) throw new Error(`no VmRSS for process ${pid}: nothing to measure`);
  const children = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8")
    .split(" ")
    .filter(Boolean);
  let sum = kib / 1024;
  for (const child of children) {
    try {
      sum += rssMiB(Number(child));
    } catch {
      // a child that ended between the two reads holds nothing
    }
  }
  return sum;
}
