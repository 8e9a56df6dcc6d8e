import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SessionRouter } from "../../runner/work/sessions/router.ts";
import { SessionError } from "../../runner/work/sessions/session.ts";
import { testDocker } from "../support/docker.ts";
import { ModelServer } from "../support/model-server.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";

const docker = await testDocker();

/** A session's queue is bounded: past the bound a message is refused with a reason, never lost quietly. */
describe.skipIf(!docker)("the session queue", () => {
  let model: ModelServer;
  let deployment: RosterRoot;

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), { modelKey: "QUEUE-KEY" });
  });
  afterAll(async () => {
    await model?.stop();
    await deployment?.cleanup();
  });

  it("runs one turn, queues up to the bound, answers the overflow at once, then runs the queue in order", async () => {
    model.play(
      { text: "first done", delayMs: 3_000 },
      { text: "second done" },
      { text: "third done" },
    );
    const router = new SessionRouter({
      paths: deployment.paths,
      note: () => undefined,
      env: { ...process.env, ROSTER_ROOT: deployment.root },
      queueBound: 2,
      replyBy: () => "plain text",
      recordReplies: true,
    });
    const send = (text: string) =>
      router.deliver({
        worker: "elf",
        channel: "term-queue-elf",
        provider: "term",
        author: "op",
        author_id: "term:op",
        standing: "host-op",
        text,
      });
    const first = send("one");
    // the session is open and the first turn under way before the rest arrive
    for (let i = 0; i < 600 && model.requests.length === 0; i++)
      await new Promise((resolve) => setTimeout(resolve, 100));
    const second = send("two");
    const third = send("three");
    const fourth = send("four");
    await expect(fourth).rejects.toBeInstanceOf(SessionError);
    await expect(fourth).rejects.toThrow(/2 messages are already waiting/);
    const results = await Promise.all([first, second, third]);
    expect(results.map((r) => r.result.texts.join(""))).toEqual([
      "first done",
      "second done",
      "third done",
    ]);
    expect(new Set(results.map((r) => r.runId)).size).toBe(1);
    const ends = await router.closeAll();
    expect(ends).toEqual([
      expect.objectContaining({ endedBy: "idle", turns: 3, error: undefined }),
    ]);
  });
});
