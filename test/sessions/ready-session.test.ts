import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readRecord, runDir } from "../../runner/records/run-records/run-record.ts";
import { REFILL_AFTER_TAKE_MS } from "../../runner/work/ready/pool.ts";
import { discardReadyBox } from "../../runner/work/ready/ready-box.ts";
import { serverReadyPool } from "../../runner/work/ready/server-pool.ts";
import { until } from "../support/chat-turns.ts";
import { testDocker } from "../support/docker.ts";
import { ModelServer, textOf } from "../support/model-server.ts";
import { boxRunning as running } from "../support/ready-server.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";
import { termRouter } from "../support/term-router.ts";

/**
 * A session's first turn in a ready box (docs/ready-boxes.md): a channel whose
 * session ended gets a box made for it (its folder mounted), and the next
 * session in that channel takes it over, told its own run id and channel; no
 * other box is made for the channel while that session lasts, and a box made
 * for one channel never serves another. A run's take holds its slot's next
 * box back, a tick during the take included. Real boxes, the real gateway,
 * roster's own session router and pool, in the test's process.
 */
const docker = await testDocker();

describe.skipIf(!docker)("a session in a ready box", () => {
  let model: ModelServer;
  let deployment: RosterRoot;
  let pool: ReturnType<typeof serverReadyPool>;
  const notes: string[] = [];

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), {
      modelKey: "READY-SESSION-KEY",
      extraOrg: "[server]\nready_boxes = 1\nready_idle_secs = 600\n",
    });
    pool = serverReadyPool({
      paths: deployment.paths,
      env: { ...process.env, ROSTER_ROOT: deployment.root },
      note: (text) => notes.push(text),
      cap: 4,
      busy: () => 0,
    });
  });
  afterAll(async () => {
    await pool?.close();
    await model?.stop();
    await deployment?.cleanup();
  });

  it("the next session in a channel takes the box made for it when the last one ended", async () => {
    const channel = "term-ready-elf";
    const first = termRouter(deployment, { ready: pool.sessions });
    model.play({ text: "first session" });
    expect((await first.send(channel, "hello")).result.texts.join("")).toBe("first session");
    // no box waits for a channel while its session lasts
    expect(await pool.pool.list()).toEqual([]);
    await first.router.closeAll();

    const box = await until(
      async () => (await pool.pool.list()).find((entry) => entry.channel === channel),
      "a ready box for the channel",
      90_000,
    ).catch((error: unknown) => {
      throw new Error(`${String(error)}\nnotes:\n${notes.join("\n")}`);
    });
    expect(running(box.container)).toBe(true);

    const second = termRouter(deployment, { ready: pool.sessions });
    try {
      model.play({ text: "in a ready box" }, { text: "second turn" });
      const delivered = await second.send(channel, "hello again");
      expect(delivered.result.texts.join(""), notes.join("\n")).toBe("in a ready box");
      expect(delivered.runId).toBe(box.run);
      expect(readRecord(runDir(deployment.paths.state, "elf", box.run))).toMatchObject({
        id: box.run,
        kind: "session",
        channel_id: channel,
        state: "running",
      });
      const asked = model.requests.at(-1)?.body.messages ?? [];
      const system = textOf(asked.find((m) => m.role === "system")?.content);
      expect(system).toContain(`run: ${box.run}`);
      expect(system).toContain(channel);
      // a warm session: the next turn goes to the same box
      const again = await second.send(channel, "and again");
      expect(again.result.texts.join("")).toBe("second turn");
      expect(again.runId).toBe(box.run);
      // nothing was made behind it while the session lasts
      await pool.tick();
      expect(await pool.pool.list()).toEqual([]);
    } finally {
      await second.router.closeAll();
    }
    expect(readRecord(runDir(deployment.paths.state, "elf", box.run))).toMatchObject({
      state: "done",
    });
    await until(() => !running(box.container), "the session's box to go");
  }, 240_000);

  it("a box made for one channel does not serve another", async () => {
    const made = await until(
      async () => (await pool.pool.list()).find((entry) => entry.channel === "term-ready-elf"),
      "a ready box for the first channel",
      90_000,
    );
    const other = termRouter(deployment, { ready: pool.sessions });
    try {
      model.play({ text: "elsewhere" });
      const delivered = await other.send("term-other-elf", "hi");
      expect(delivered.result.texts.join("")).toBe("elsewhere");
      expect(delivered.runId).not.toBe(made.run);
      expect(running(made.container)).toBe(true);
    } finally {
      await other.router.closeAll();
    }
  }, 240_000);

  it("a tick while a run's take checks its box makes none behind it before the hold ends", async () => {
    const slot = { worker: "elf" };
    // asked once for a run: the pool makes elf's runs a box
    expect(await pool.pool.take(slot)).toBeUndefined();
    await until(
      async () =>
        (await pool.pool.list()).find((entry) => entry.worker === "elf" && !entry.channel),
      "a ready box for elf's runs",
      90_000,
    );
    const before = pool.pool.count();
    const started = Date.now();
    const taking = pool.pool.take(slot);
    // the server's tick, landing while the take checks the box (its config, the engine, git):
    // its refill is decided before its first wait
    const ticking = pool.tick();
    expect(pool.pool.count()).toBe(before - 1);
    const taken = await taking;
    try {
      expect(pool.pool.count()).toBe(before - 1);
      expect(taken?.worker).toBe("elf");
      await ticking;
      // one is made behind it, once the run has had the host for its start
      await until(() => pool.pool.count() === before, "a box made behind the take", 30_000);
      expect(Date.now() - started).toBeGreaterThanOrEqual(REFILL_AFTER_TAKE_MS);
    } finally {
      if (taken) await discardReadyBox(deployment.paths, taken);
    }
  }, 240_000);
});
