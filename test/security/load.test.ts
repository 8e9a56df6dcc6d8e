import { readFileSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testDocker } from "../support/docker.ts";
import { ModelServer, type RecordedRequest, type Turn } from "../support/model-server.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";
import { stopProcess } from "../support/stop-process.ts";
import { termRouter } from "../support/term-router.ts";

/**
 * Load: ten boxes at once, each sending a hundred requests through one
 * gateway (a running server's), while three warm sessions take turns that do
 * the same. Every request leaves exactly one whole audit line, and every line
 * names the run that sent it: each request carries its sender's run id in its
 * query, which the box can't forge into another run's token.
 */
const docker = await testDocker();
const BOXES = 10;
const PER_BOX = 100;
const SESSIONS = 3;
const PER_TURN = 20;

interface AuditLine {
  run_id: string | null;
  subject: string | null;
  status: number;
  request: { host: string; query: string };
}

describe.skipIf(!docker)("load: ten boxes and three sessions through one gateway", () => {
  let deployment: RosterRoot;
  let model: ModelServer;
  let upstream: Server;
  let served = 0;
  let server: ReturnType<RosterRoot["spawnRoster"]> | undefined;
  let serverLog = "";

  beforeAll(async () => {
    upstream = createServer((_req, res) => {
      served++;
      res.end("ok");
    });
    upstream.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
    model = await new ModelServer().start("127.0.0.1");
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), { modelKey: "LOAD-KEY" });
    const org = join(deployment.paths.config, "org.toml");
    const text = await readFile(org, "utf8");
    await writeFile(
      org,
      `${text.replace(/^port = (\d+)$/m, 'port = $1\nresolve = { "load.test" = "127.0.0.1" }')}
[[grant]]
name = "load"
verdict = "allow"
match = { host = "load.test" }
`,
    );
    server = deployment.spawnRoster(["server", "start", "--no-listen", "--no-console"]);
    server.stderr.on("data", (chunk: Buffer) => {
      serverLog += chunk.toString();
    });
    for (let i = 0; i < 300 && !/gateway on/.test(serverLog); i++)
      await new Promise((resolve) => setTimeout(resolve, 100));
    expect(serverLog).toMatch(/gateway on/);
  }, 60_000);

  afterAll(async () => {
    await stopProcess(server);
    await model?.stop();
    upstream?.close();
    await deployment?.cleanup();
  });

  it("loses, tears and misattributes no audit line, and the server's memory stays bounded", async () => {
    const port = (upstream.address() as AddressInfo).port;
    const requests = (count: number) =>
      `for i in $(seq ${count}); do curl -s -o /dev/null -w '%{http_code}\\n' "http://load.test:${port}/?run=$ROSTER_RUN_ID&i=$i"; done | sort | uniq -c`;
    // each session turn: a tool call that sends its requests, then an answer
    const turn = (request: RecordedRequest): Turn =>
      request.body.messages?.at(-1)?.role === "tool"
        ? { text: "sent" }
        : { toolCalls: [{ name: "bash", arguments: { command: requests(PER_TURN) } }] };
    model.play(...Array.from({ length: SESSIONS * 2 * 2 + 4 }, () => turn));
    const { router, send: sendTo } = termRouter(deployment);
    const talk = async (index: number) => {
      const send = (text: string) => sendTo(`term-load${index}-elf`, text);
      const first = await send("send them");
      const second = await send("again");
      return [first, second];
    };
    const boxes = Array.from({ length: BOXES }, () =>
      deployment.roster(["box", "exec", "elf", "--", requests(PER_BOX)], { timeoutMs: 300_000 }),
    );
    const sessions = Array.from({ length: SESSIONS }, (_, index) => talk(index));
    const execs = await Promise.all(boxes);
    const turns = (await Promise.all(sessions)).flat();
    await router.closeAll();

    for (const exec of execs) {
      expect(exec.code, exec.stderr).toBe(0);
      const envelope = JSON.parse(exec.stdout.trim()) as { stdout: string };
      expect(envelope.stdout.trim()).toBe(`${PER_BOX} 200`);
    }
    expect(turns.map((done) => done.result.texts.join(""))).toEqual(
      Array.from({ length: SESSIONS * 2 }, () => "sent"),
    );

    const expected = BOXES * PER_BOX + SESSIONS * 2 * PER_TURN;
    expect(served).toBe(expected);
    const lines = readFileSync(join(deployment.paths.audit, "decisions.jsonl"), "utf8")
      .split("\n")
      .filter((line) => line.includes('"host":"load.test"'));
    // every line whole: each parses on its own
    const parsed = lines.map((line) => JSON.parse(line) as AuditLine);
    expect(parsed).toHaveLength(expected);
    const senders = new Map<string, number>();
    for (const line of parsed) {
      expect(line.status).toBe(200);
      const sender = new URLSearchParams(line.request.query).get("run");
      // the run the gateway attributed it to is the run that sent it
      expect(line.run_id).toBe(sender);
      expect(line.subject).toBe("org/elf");
      senders.set(sender ?? "", (senders.get(sender ?? "") ?? 0) + 1);
    }
    expect(senders.size).toBe(BOXES + SESSIONS);
    expect([...senders.values()].sort((a, b) => a - b)).toEqual([
      ...Array.from({ length: SESSIONS }, () => 2 * PER_TURN),
      ...Array.from({ length: BOXES }, () => PER_BOX),
    ]);

    // the server that held the gateway for all of it is still small
    const status = readFileSync(`/proc/${server?.pid}/status`, "utf8");
    const rssMiB = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
    console.log(
      `server RSS after ${expected} requests from ${BOXES + SESSIONS} boxes: ${rssMiB.toFixed(0)} MiB`,
    );
    expect(rssMiB).toBeGreaterThan(0);
    expect(rssMiB).toBeLessThan(512);
  }, 600_000);
});
