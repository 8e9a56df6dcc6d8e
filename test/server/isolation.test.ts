import { spawn } from "node:child_process";
import { readdirSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readDecisions } from "../../runner/boundary/gateway/audit/view.ts";
import {
  listRuns,
  type RunRecord,
  readRecord,
} from "../../runner/records/run-records/run-record.ts";
import { ROSTER_BIN } from "../support/cli.ts";
import { testDocker } from "../support/docker.ts";
import { ModelServer, type RecordedRequest, type Turn, textOf } from "../support/model-server.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";

const docker = await testDocker();

/** Answers with who the system prompt says is asking, slowly enough that the three overlap. */
const whoAmI = (request: RecordedRequest): Turn => {
  const system = textOf(request.body.messages?.find((m) => m.role === "system")?.content);
  const worker = /worker: (\S+)/.exec(system)?.[1] ?? "?";
  const run = /run: (\S+)/.exec(system)?.[1] ?? "?";
  return { text: `I am ${worker} in ${run}`, delayMs: 2_000 };
};

function talkPiped(deployment: RosterRoot, worker: string, line: string) {
  const child = spawn(process.execPath, [ROSTER_BIN, "talk", worker], {
    env: { ...process.env, ROSTER_ROOT: deployment.root },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  child.stdin.end(`${line}\n`);
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.once("exit", (code) => resolve({ code, stdout, stderr })),
  );
}

describe.skipIf(!docker)("two sessions and a one-shot run at once, under one server", () => {
  let model: ModelServer;
  let deployment: RosterRoot;

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), { modelKey: "ISOLATION-KEY" });
    await mkdir(join(deployment.paths.config, "workers/bob"), { recursive: true });
    await writeFile(join(deployment.paths.config, "workers/bob/worker.toml"), 'name = "bob"\n');
  });
  afterAll(async () => {
    await model?.stop();
    await deployment?.cleanup();
  });

  it("keeps their boxes, tokens, records and audit lines apart", async () => {
    const server = deployment.spawnRoster(["server", "start", "--cap", "3"]);
    let serverLog = "";
    server.stderr.on("data", (chunk: Buffer) => {
      serverLog += chunk.toString();
    });
    for (let i = 0; i < 600 && !/gateway on/.test(serverLog); i++)
      await new Promise((resolve) => setTimeout(resolve, 100));
    model.play(...Array.from({ length: 6 }, () => whoAmI));

    const [elfTalk, bobTalk, oneShot] = await Promise.all([
      talkPiped(deployment, "elf", "who are you?"),
      talkPiped(deployment, "bob", "and you?"),
      deployment.roster(["run", "elf", "say who you are"]),
    ]);
    for (const result of [elfTalk, bobTalk, oneShot]) expect(result.code, result.stderr).toBe(0);

    const records = listRuns(deployment.paths.state)
      .map((run) => readRecord(run.dir))
      .filter((record): record is RunRecord => record !== undefined);
    expect(records).toHaveLength(3);
    const find = (worker: string, kind: RunRecord["kind"]) =>
      records.find((record) => record.worker === worker && record.kind === kind);
    const elfSession = find("elf", "session");
    const bobSession = find("bob", "session");
    const elfRun = find("elf", "box");
    // each heard its own worker and run, and nobody else's
    expect(elfTalk.stdout).toContain(`elf> I am elf in ${elfSession?.id}`);
    expect(bobTalk.stdout).toContain(`bob> I am bob in ${bobSession?.id}`);
    expect(oneShot.stdout.trim()).toBe(`I am elf in ${elfRun?.id}`);
    for (const record of [elfSession, bobSession, elfRun])
      expect(record).toMatchObject({ state: "done" });
    expect(bobSession?.channel_id).toMatch(/^term-.*-bob$/);
    expect(elfSession?.channel_id).toMatch(/^term-.*-elf$/);
    // they really ran at the same time
    const spans = [elfSession, bobSession, elfRun].map((r) => [
      Date.parse(r?.started_at ?? ""),
      Date.parse(r?.ended_at ?? ""),
    ]);
    const latestStart = Math.max(...spans.map(([start]) => start ?? 0));
    const earliestEnd = Math.min(...spans.map(([, end]) => end ?? 0));
    expect(latestStart).toBeLessThan(earliestEnd);
    // three boxes
    expect(new Set([elfSession?.container, bobSession?.container, elfRun?.container]).size).toBe(3);

    // every model request the gateway let through is attributed to its own run and worker
    const modelCalls = readDecisions(deployment.paths.audit).filter(
      (line) => line.request.host === "127.0.0.1" && line.request.port === model.port,
    );
    const byRun = new Map<string, Set<string | null>>();
    for (const line of modelCalls) {
      const subjects = byRun.get(line.run_id ?? "none") ?? new Set();
      subjects.add(line.subject);
      byRun.set(line.run_id ?? "none", subjects);
    }
    expect([...byRun.keys()].sort()).toEqual([elfSession?.id, bobSession?.id, elfRun?.id].sort());
    expect([...(byRun.get(elfSession?.id ?? "") ?? [])]).toEqual(["org/elf"]);
    expect([...(byRun.get(bobSession?.id ?? "") ?? [])]).toEqual(["org/bob"]);
    expect([...(byRun.get(elfRun?.id ?? "") ?? [])]).toEqual(["org/elf"]);
    // and every run token is revoked now that they are over (the door control key stays)
    expect(readdirSync(deployment.paths.identity)).toEqual(["control.key"]);

    const exited = new Promise<number | null>((resolve) => server.once("exit", resolve));
    server.kill("SIGTERM");
    expect(await exited).toBe(0);
  });
});
