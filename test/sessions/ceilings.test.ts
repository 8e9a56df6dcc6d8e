import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { SessionError } from "../../runner/sessions/session.ts";
import { testDocker } from "../support/docker.ts";
import { ModelServer } from "../support/model-server.ts";
import { latestRecord, makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";
import { termRouter } from "../support/term-router.ts";

const docker = await testDocker();

/**
 * The two ceilings of a warm session ([box] turn_ceiling_min and
 * session_ceiling_min), through a real box and gateway. Both take fractions
 * of a minute, so a worker.toml that lowers them makes each test seconds long.
 */
describe.skipIf(!docker)("a warm session's ceilings", () => {
  let model: ModelServer;
  let deployment: RosterRoot;

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), { modelKey: "CEILING-KEY" });
  });
  beforeEach(() => model.reset());
  afterAll(async () => {
    await model?.stop();
    await deployment?.cleanup();
  });

  /** The worker lowers one [box] ceiling; the org's stays as it is. */
  const lowerCeiling = (line: string) =>
    writeFile(
      join(deployment.paths.config, "workers/elf/worker.toml"),
      `name = "elf"\n\n[box]\n${line}\n`,
    );
  const boxesOf = async (runId: string) =>
    docker?.listContainers({ all: true, filters: { name: [`roster-box-${runId}`] } });

  it("ends the session when a turn runs past turn_ceiling_min, and tells the sender", async () => {
    // long enough for pi to start and ask the model even on a loaded machine (the turn's clock
    // starts when the message is handed over), far shorter than the model's 60 seconds
    await lowerCeiling("turn_ceiling_min = 0.25");
    model.play({ text: "far too late", delayMs: 60_000 });
    const { router, send } = termRouter(deployment);
    try {
      const turn = send("term-turn-ceiling-elf", "take your time");
      turn.catch(() => undefined);
      for (let i = 0; i < 600 && model.requests.length === 0; i++)
        await new Promise((resolve) => setTimeout(resolve, 100));
      const asked = Date.now();
      const [session] = await router.sessions();
      await expect(turn).rejects.toBeInstanceOf(SessionError);
      await expect(turn).rejects.toThrow("a turn passed the 0.25-minute turn ceiling");
      // 15 seconds of turn ceiling, not the model's 60 seconds
      expect(Date.now() - asked).toBeLessThan(30_000);
      // the sender hears at once; the box is then stopped and the record finished
      expect(await session?.ended).toMatchObject({ endedBy: "ceiling", turns: 1 });
      const record = latestRecord(deployment.paths, "elf");
      expect(record).toMatchObject({
        kind: "session",
        state: "failed",
        ended_by: "ceiling",
        error: "a turn passed the 0.25-minute turn ceiling",
        turns: 1,
      });
      expect(await boxesOf(record?.id ?? "")).toHaveLength(0);
    } finally {
      await router.closeAll();
    }
  });

  it("ends a quiet session at session_ceiling_min; its record says it reached the ceiling", async () => {
    await lowerCeiling("session_ceiling_min = 0.3");
    model.play({ text: "hello back" });
    const { router, send } = termRouter(deployment);
    try {
      const opened = Date.now();
      const delivered = await send("term-session-ceiling-elf", "hello");
      expect(delivered.result.texts.join("")).toBe("hello back");
      const [session] = await router.sessions();
      expect(session).toBeDefined();
      // the talk idle window is 300 s: only the 18-second ceiling can end it this soon
      const end = await session?.ended;
      expect(end).toMatchObject({ endedBy: "ceiling", turns: 1 });
      expect(Date.now() - opened).toBeLessThan(60_000);
      expect(latestRecord(deployment.paths, "elf")).toMatchObject({
        id: delivered.runId,
        kind: "session",
        state: "done",
        ended_by: "ceiling",
        ceiling_min: 0.3,
        error: "the session reached its 0.3-minute ceiling",
        turns: 1,
      });
      expect(await boxesOf(delivered.runId)).toHaveLength(0);
    } finally {
      await router.closeAll();
    }
  });
});
