import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { SessionError } from "../../runner/work/sessions/session.ts";
import { until } from "../support/chat-turns.ts";
import { testDocker } from "../support/docker.ts";
import { ModelServer, type ScriptStep } from "../support/model-server.ts";
import { latestRecord, makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";
import { termRouter } from "../support/term-router.ts";

const docker = await testDocker();

const bash = (command: string): ScriptStep => ({
  toolCalls: [{ name: "bash", arguments: { command } }],
});
/** Well past pi's start (about a second here, two on a slow machine): it stops nothing early. */
const STALL_SECS = 4;

/**
 * The activity watchdog: a run whose tool sits silent past `[box] stall_after`
 * is stopped as stalled (well before its ceiling); a tool that keeps printing,
 * or a silent command run under roster-busy, is left to finish.
 */
describe.skipIf(!docker)("the stall watchdog", () => {
  let model: ModelServer;
  let deployment: RosterRoot;

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), { modelKey: "STALL-KEY" });
    const org = join(deployment.paths.config, "org.toml");
    const text = await readFile(org, "utf8");
    expect(text).toContain('stall_after = "5m"');
    await writeFile(org, text.replace('stall_after = "5m"', `stall_after = "${STALL_SECS}s"`));
  });
  beforeEach(() => model.reset());
  afterAll(async () => {
    await model?.stop();
    await deployment?.cleanup();
  });

  it("stops a run whose tool sleeps silently past stall_after: exit 2, ended_by stalled", async () => {
    model.play(bash("sleep 90; echo woke"), { text: "never reached" });
    let asked = 0;
    model.onRequest = () => {
      asked ||= Date.now();
    };
    const result = await deployment.roster(["run", "elf", "sleep quietly"]);
    const stopped = Date.now() - asked;
    model.onRequest = undefined;
    expect(result.code, result.stderr).toBe(2);
    // the sleep starts once the model has answered: the watchdog stops it one window
    // later (plus the box's teardown), not at the sleep's 90 seconds or the ceiling
    expect(asked).toBeGreaterThan(0);
    expect(stopped).toBeGreaterThanOrEqual(STALL_SECS * 1000);
    expect(stopped).toBeLessThan(STALL_SECS * 1000 + 10_000);
    expect(result.stderr).toMatch(new RegExp(`stopped as stalled: .*for ${STALL_SECS} seconds`));
    expect(latestRecord(deployment.paths, "elf")).toMatchObject({
      state: "failed",
      ended_by: "stalled",
      error: expect.stringContaining("stall_after"),
    });
    expect(model.remaining).toBe(1);
  });

  it("lets a tool that prints every half second run longer than stall_after, to the end", async () => {
    // twice the window, a line every half second
    const ticks = STALL_SECS * 4;
    model.play(bash(`for i in $(seq 1 ${ticks}); do echo tick $i; sleep 0.5; done`), (request) => ({
      text: `done after ${JSON.stringify(request.body.messages?.at(-1)?.content)}`,
    }));
    const result = await deployment.roster(["run", "elf", "count slowly"]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain(`tick ${ticks}`);
    expect(latestRecord(deployment.paths, "elf")).toMatchObject({
      state: "done",
      ended_by: "exit",
    });
  });

  it("lets a silent command run under roster-busy, and keeps its exit code", async () => {
    model.play(bash(`roster-busy -- sleep ${STALL_SECS * 2}; echo "status=$?"`), (request) => ({
      text: `said ${JSON.stringify(request.body.messages?.at(-1)?.content)}`,
    }));
    const result = await deployment.roster(["run", "elf", "build quietly"]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain("status=0");
    expect(latestRecord(deployment.paths, "elf")).toMatchObject({ ended_by: "exit" });
  });

  it("stops a stalled session turn, tells the sender, and the next message gets a fresh box", async () => {
    const { router, send: sendTo } = termRouter(deployment);
    const send = (text: string) => sendTo("term-stall-elf", text);
    try {
      model.play(bash("sleep 90"), { text: "never reached" });
      const stalled = send("wait around");
      await expect(stalled).rejects.toBeInstanceOf(SessionError);
      await expect(stalled).rejects.toThrow(/stopped as stalled/);
      // the sender hears at once; the record is finished once the box is gone
      const record = await until(() => {
        const latest = latestRecord(deployment.paths, "elf");
        return latest?.state !== "running" && latest;
      }, "the stalled session's record to be finished");
      expect(record).toMatchObject({ kind: "session", state: "failed", ended_by: "stalled" });

      model.reset();
      model.play({ text: "awake again" });
      const next = await send("hello?");
      expect(next.result.texts.join("")).toBe("awake again");
      expect(next.runId).not.toBe(record.id);
    } finally {
      await router.closeAll();
    }
  });
});
