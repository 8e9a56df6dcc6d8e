import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { SessionError } from "../../runner/work/sessions/session.ts";
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
    // 3 seconds from the message being handed over: pi starts and asks the model in about
    // one, whose answer would take 60; a turn ended before pi asked is past its ceiling too
    await lowerCeiling("turn_ceiling_min = 0.05");
    model.play({ text: "far too late", delayMs: 60_000 });
    const { router, send } = termRouter(deployment);
    try {
      const turn = send("term-turn-ceiling-elf", "take your time");
      turn.catch(() => undefined);
      await expect(turn).rejects.toBeInstanceOf(SessionError);
      await expect(turn).rejects.toThrow("a turn passed the 0.05-minute turn ceiling");
      const [session] = await router.sessions();
      // the sender hears at once; the box is then stopped and the record finished
      expect(await session?.ended).toMatchObject({ endedBy: "ceiling", turns: 1 });
      const record = latestRecord(deployment.paths, "elf");
      expect(record).toMatchObject({
        kind: "session",
        state: "failed",
        ended_by: "ceiling",
        error: "a turn passed the 0.05-minute turn ceiling",
        turns: 1,
      });
      expect(await boxesOf(record?.id ?? "")).toHaveLength(0);
    } finally {
      await router.closeAll();
    }
  });

  it("ends a quiet session at session_ceiling_min; its record says it reached the ceiling", async () => {
    // 9 seconds from the box's start: room for pi to start and answer the one turn (about
    // two seconds), so the ceiling finds the session quiet between turns
    await lowerCeiling("session_ceiling_min = 0.15");
    model.play({ text: "hello back" });
    const { router, send } = termRouter(deployment);
    try {
      const delivered = await send("term-session-ceiling-elf", "hello");
      expect(delivered.result.texts.join("")).toBe("hello back");
      const [session] = await router.sessions();
      expect(session).toBeDefined();
      // the talk idle window is 300 s: what ends it is the ceiling, as the end and the record say
      const end = await session?.ended;
      expect(end).toMatchObject({ endedBy: "ceiling", turns: 1 });
      expect(latestRecord(deployment.paths, "elf")).toMatchObject({
        id: delivered.runId,
        kind: "session",
        state: "done",
        ended_by: "ceiling",
        ceiling_min: 0.15,
        error: "the session reached its 0.15-minute ceiling",
        turns: 1,
      });
      expect(await boxesOf(delivered.runId)).toHaveLength(0);
    } finally {
      await router.closeAll();
    }
  });
});
