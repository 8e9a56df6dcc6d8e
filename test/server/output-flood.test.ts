import { existsSync, readFileSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listRuns, readRecord } from "../../runner/records/run-records/run-record.ts";
import { until } from "../support/chat-turns.ts";
import { testDocker } from "../support/docker.ts";
import { ModelServer, type RecordedRequest, textOf } from "../support/model-server.ts";
import { listeningPort, makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";
import { stopProcess } from "../support/stop-process.ts";

/**
 * A box's output can't stop the server, from real boxes through a real server:
 * - a box exec writing 600 MB as one line to its own stdout (as a compromised
 *   worker would, past its shell) is stopped at `[box] max_output` with reason
 *   "output", while another box's requests through the door keep their latency
 *   (the bound below) and a third run, started during the flood, completes;
 * - pi's event stream carrying one line past its bound stops that run
 *   (`ended_by: output`), and the run's events.jsonl holds no more than the bound;
 * - the server's gateway is a child process it supervises: killed, or stopped
 *   so it no longer answers, it is started again and a running box is served again.
 */
const docker = await testDocker();

/** The flood: 600 MB of "a", no newline, straight to the box's stdout. */
const FLOOD = "head -c 600000000 /dev/zero | tr '\\0' a > /proc/1/fd/1";

/**
 * The calm box's requests through the door during the flood: p99 under this
 * (its own baseline is some 10 to 30 ms; on the code before, the door did not
 * answer at all for minutes). Generous: the flood itself takes the machine's CPU.
 */
const DOOR_P99_BOUND_MS = 1_000;

/** `[box] max_output` here (the default is 512m). */
const MAX_OUTPUT = "128m";

/** The file that ends the calm box's loop. */
const STOP = "stop";

describe.skipIf(!docker)("one box's output can't stop the server", () => {
  let model: ModelServer;
  let upstream: Server;
  let deployment: RosterRoot;
  let server: ReturnType<RosterRoot["spawnRoster"]> | undefined;
  let said = "";

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
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
    const bound = 'max_output = "512m"';
    expect(text).toContain(bound);
    await writeFile(
      org,
      text
        .replace(line, 'resolve = { "allowed.test" = "127.0.0.1" }')
        // small, so the test is quick: the host reads every byte up to it
        .replace(bound, `max_output = "${MAX_OUTPUT}"`),
    );
    server = deployment.spawnRoster(["server", "start", "--no-listen", "--cap", "4"]);
    server.stderr.on("data", (chunk: Buffer) => {
      said += chunk.toString();
    });
    await until(
      () => existsSync(join(deployment.paths.state, "server.sock")),
      "the server to take runs",
      60_000,
    ).catch((error: unknown) => {
      throw new Error(`${String(error)}; the server said: ${said}`);
    });
  });
  afterAll(async () => {
    await stopProcess(server);
    await model?.stop();
    upstream?.closeAllConnections();
    await new Promise((resolve) => upstream?.close(resolve));
    await deployment?.cleanup();
  });

  it("a box flooding its stdout is stopped; another's door keeps its latency; a third run completes", async () => {
    const url = `http://allowed.test:${listeningPort(upstream)}/`;
    // one line per request: when it ended (ms, the host's clock too) and how long it took (s)
    const calmLoop = `while [ ! -e ~/${STOP} ]; do t=$(curl -s -o /dev/null -w '%{time_total}' ${url}); echo "$(date +%s%3N) $t" >> ~/latency; done`;
    const calm = deployment.roster(["box", "exec", "--timeout", "180", "elf", "--", calmLoop], {
      timeoutMs: 200_000,
    });
    const calmRun = await until(
      () => listRuns(deployment.paths.state, "elf")[0],
      "the calm box's run",
      60_000,
    );
    const latencyFile = join(calmRun.dir, "home", "latency");
    const samples = () =>
      existsSync(latencyFile)
        ? readFileSync(latencyFile, "utf8")
            .split("\n")
            .filter(Boolean)
            .map((line) => line.split(" ").map(Number) as [number, number])
        : [];
    await until(() => samples().length >= 30, "30 requests of the calm box", 60_000);

    const floodStarted = Date.now();
    let floodEnded = 0;
    model.play({ text: "done while the other box flooded" });
    const [flood, third] = await Promise.all([
      deployment
        .roster(["box", "exec", "--timeout", "120", "elf", "--", FLOOD], { timeoutMs: 150_000 })
        .finally(() => {
          floodEnded = Date.now();
        }),
      // started with the flood: the server still starts and finishes runs
      deployment.roster(["run", "elf", "say done"], { timeoutMs: 150_000 }),
    ]);
    const status = await deployment.roster(["server", "status", "--json"]);
    await writeFile(join(calmRun.dir, "home", STOP), "");
    const calmDone = await calm;

    const envelope = JSON.parse(flood.stdout) as {
      status: string;
      reason?: string;
      error?: string;
      run_id: string;
    };
    expect(envelope, flood.stderr).toMatchObject({ status: "failed", reason: "output" });
    expect(envelope.error).toContain(`more than ${MAX_OUTPUT} to its stdout`);
    expect(readRecord(join(deployment.paths.state, "runs/elf", envelope.run_id))).toMatchObject({
      state: "failed",
      ended_by: "output",
    });
    expect(third.code, third.stderr).toBe(0);
    expect(third.stdout).toContain("done while the other box flooded");
    expect(JSON.parse(status.stdout)).toMatchObject({ running: true, gateway: { healthy: true } });
    expect(JSON.parse(calmDone.stdout)).toMatchObject({ status: "ok" });

    const all = samples();
    const before = all.filter(([at]) => at < floodStarted).map(([, s]) => s * 1000);
    const during = all
      .filter(([at]) => at >= floodStarted && at <= floodEnded)
      .map(([, s]) => s * 1000);
    const line = (ms: number[]) =>
      `p50 ${quantile(ms, 0.5).toFixed(0)} ms, p99 ${quantile(ms, 0.99).toFixed(0)} ms, max ${Math.max(...ms).toFixed(0)} ms (${ms.length} requests)`;
    console.log(
      `door latency of the calm box: before the flood ${line(before)}; during the flood (${floodEnded - floodStarted} ms) ${line(during)}`,
    );
    // every request answered, and none failed: curl prints 0 for a request that never connected
    expect(during.length).toBeGreaterThan(5);
    expect(Math.min(...during)).toBeGreaterThan(0);
    expect(quantile(during, 0.99)).toBeLessThan(DOOR_P99_BOUND_MS);
  });

  it("a line of pi's events past its bound stops that run, ended by output", async () => {
    model.play((request: RecordedRequest) => {
      const asked = textOf(request.body.messages?.find((m) => m.role === "user")?.content);
      expect(asked).toContain("flood");
      return {
        toolCalls: [
          { name: "bash", arguments: { command: FLOOD.replace("600000000", "40000000") } },
        ],
      };
    });
    const run = await deployment.roster(["run", "elf", "flood your stdout"], {
      timeoutMs: 150_000,
    });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toMatch(/a line of over 16m to its event stream/);
    const record = listRuns(deployment.paths.state, "elf")
      .map((found) => readRecord(found.dir))
      .find((found) => found?.kind === "box" && found.ended_by === "output");
    expect(record).toMatchObject({ state: "failed", ended_by: "output" });
    const events = join(deployment.paths.state, "runs/elf", record?.id ?? "?", "events.jsonl");
    const log = readFileSync(events, "utf8");
    // the log ends where the box was stopped, and says why
    expect(log.length).toBeLessThan(20 * 1024 * 1024);
    expect(log.trimEnd().split("\n").at(-1)).toContain("roster_output_stopped");
    // and the run still reads back: its record, and the conversation up to the flood
    const shown = await deployment.roster(["runs", "show", record?.id ?? "?"]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain("ended by output");
  });

  it("the server's gateway is a child it restarts, dead or silent: a running box finds its door again", async () => {
    const gatewayPid = () =>
      (
        JSON.parse(readFileSync(join(deployment.paths.state, "gateway.json"), "utf8")) as {
          pid: number;
          supervisor?: number;
        }
      ).pid;
    const first = gatewayPid();
    // its own process, not the server's
    expect(first).not.toBe(server?.pid);
    const url = `http://allowed.test:${listeningPort(upstream)}/`;
    const loop = `while [ ! -e ~/${STOP} ]; do curl -s -o /dev/null -w '%{http_code}\\n' ${url} >> ~/codes; sleep 0.1; done`;
    const known = new Set(listRuns(deployment.paths.state, "elf").map((run) => run.id));
    const calm = deployment.roster(["box", "exec", "--timeout", "120", "elf", "--", loop], {
      timeoutMs: 150_000,
    });
    const run = await until(
      () => listRuns(deployment.paths.state, "elf").find((found) => !known.has(found.id)),
      "the box's run",
      60_000,
    );
    const codes = () => {
      const file = join(run.dir, "home", "codes");
      return existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean) : [];
    };
    await until(() => codes().includes("200"), "the box's first answer", 60_000);

    process.kill(first, "SIGKILL");
    await until(() => /gateway restarted/.test(said), "the server to restart its gateway", 30_000);
    expect(gatewayPid()).not.toBe(first);
    const answered = codes().length;
    // the same box, through the same door folder, answered by the gateway in its place
    await until(
      () => codes().slice(answered).includes("200"),
      "the box's requests to be answered again",
      30_000,
    );

    // alive but not answering (its loop stuck): killed and started again, the box served again
    const second = gatewayPid();
    process.kill(second, "SIGSTOP");
    await until(
      () => new RegExp(`gateway \\(pid ${second}\\) did not answer`).test(said),
      "the server to find its gateway silent",
      30_000,
    );
    await until(() => gatewayPid() !== second, "the silent gateway to be replaced", 30_000);
    const beforeThird = codes().length;
    await until(
      () => codes().slice(beforeThird).includes("200"),
      "the box's requests to be answered by the third gateway",
      30_000,
    );
    await writeFile(join(run.dir, "home", STOP), "");
    expect(JSON.parse((await calm).stdout)).toMatchObject({ status: "ok" });
    const status = await deployment.roster(["server", "status", "--json"]);
    expect(JSON.parse(status.stdout)).toMatchObject({ running: true, gateway: { healthy: true } });
  });
});

function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}
