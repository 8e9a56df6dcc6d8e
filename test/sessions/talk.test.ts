import { readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  listRuns,
  type RunRecord,
  readRecord,
} from "../../runner/records/run-records/run-record.ts";
import { termChannelId } from "../../runner/services/chat/terminal/ids.ts";
import { talkUser } from "../../runner/services/chat/terminal/talk.ts";
import { ROSTER_BIN } from "../support/cli.ts";
import { testDocker } from "../support/docker.ts";
import { ModelServer, textOf } from "../support/model-server.ts";
import { spawnInPty } from "../support/pty.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";

const docker = await testDocker();

describe.skipIf(!docker)("roster talk in a terminal", () => {
  let model: ModelServer;
  let deployment: RosterRoot;
  const channel = termChannelId(talkUser(), "elf");

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), { modelKey: "TALK-KEY" });
  });
  beforeEach(() => model.reset());
  afterAll(async () => {
    await model?.stop();
    await deployment?.cleanup();
  });

  const talk = (...args: string[]) =>
    spawnInPty([process.execPath, ROSTER_BIN, "talk", "elf", ...args], {
      ROSTER_ROOT: deployment.root,
    });
  const sessions = (): RunRecord[] =>
    listRuns(deployment.paths.state, "elf")
      .map((run) => readRecord(run.dir))
      .filter((record): record is RunRecord => record?.kind === "session");
  const untilRequests = async (count: number) => {
    for (let i = 0; i < 300 && model.requests.length < count; i++)
      await new Promise((resolve) => setTimeout(resolve, 100));
  };
  /** The text of the last user message of a model request: the turn's input. */
  const turnInput = (index: number) => {
    const messages = model.requests[index]?.body.messages ?? [];
    return textOf([...messages].reverse().find((m) => m.role === "user")?.content);
  };

  it("two quick messages are two ordered turns in one box; only the first carries the history", {
    tags: ["runtime"],
  }, async () => {
    const history = join(deployment.paths.data, "channels", channel);
    await mkdir(history, { recursive: true });
    await writeFile(
      join(history, "messages.jsonl"),
      `${JSON.stringify({ ts: "2026-11-01T10:00:00Z", author_id: "term:op", author: "op", role: "user", content: "remember the blue door", attachments: [] })}\n`,
    );
    model.play({ text: "First answer.", delayMs: 300 }, { text: "Second answer." });
    const pty = talk("--idle", "60");
    await pty.waitFor(/Ctrl-D ends/);
    pty.write("what colour was the door?\nand the window?\n");
    await pty.waitFor(/elf> Second answer\.\n/);
    expect(pty.output.indexOf("elf> First answer.")).toBeLessThan(
      pty.output.indexOf("elf> Second answer."),
    );

    expect(model.requests).toHaveLength(2);
    const first = turnInput(0);
    expect(first).toContain('"block":"history"');
    expect(first).toContain("remember the blue door");
    expect(first).toContain('"text":"what colour was the door?"');
    const second = turnInput(1);
    expect(second).not.toContain('"block":"history"');
    expect(second).toContain('"text":"and the window?"');
    // the second turn continues the same conversation in the same pi
    expect(JSON.stringify(model.requests[1]?.body.messages)).toContain("First answer.");

    pty.write("\x04");
    expect(await pty.exited).toBe(0);
    const [record, ...others] = sessions();
    expect(others).toHaveLength(0);
    expect(record).toMatchObject({
      state: "done",
      ended_by: "idle",
      turns: 2,
      channel_id: channel,
    });
    // the terminal's history has both sides of the conversation
    const lines = readFileSync(join(history, "messages.jsonl"), "utf8").trim().split("\n");
    expect(lines.map((line) => JSON.parse(line).content)).toEqual([
      "remember the blue door",
      "what colour was the door?",
      "and the window?",
      "First answer.",
      "Second answer.",
    ]);
  });

  it("the idle window ends the session; the next message starts a fresh box", async () => {
    model.play({ text: "Before the pause." }, { text: "After the pause." });
    const pty = talk("--idle", "2");
    await pty.waitFor(/Ctrl-D ends/);
    pty.write("one\n");
    await pty.waitFor(/elf> Before the pause\./);
    const ended = await pty.waitFor(/\(session (\S+) ended: idle, 1 turn\)/, 30_000);
    pty.write("two\n");
    await pty.waitFor(/elf> After the pause\.\n/);
    const started = [...pty.output.matchAll(/\(session (\S+) started in box (\w+)\)/g)];
    expect(started).toHaveLength(2);
    expect(started[0]?.[1]).toBe(ended[1]);
    expect(started[1]?.[2]).not.toBe(started[0]?.[2]);
    pty.write("\x04");
    expect(await pty.exited).toBe(0);
    const record = sessions().find((r) => r.id === ended[1]);
    expect(record).toMatchObject({ state: "done", ended_by: "idle", turns: 1 });
  });

  it("a box killed mid-turn is reported, and the next message works in a new box", {
    tags: ["engine"],
  }, async () => {
    model.play({ text: "never seen", delayMs: 30_000 }, { text: "Back again." });
    const before = model.requests.length;
    const sessionsBefore = sessions().length;
    const pty = talk("--idle", "60");
    await pty.waitFor(/Ctrl-D ends/);
    pty.write("start something long\n");
    const [, runId] = await pty.waitFor(/\(session (\S+) started in box/);
    // wait until the turn is really under way (the model has the request)
    await untilRequests(before + 1);
    await docker?.getContainer(`roster-box-${runId}`).kill();
    await pty.waitFor(new RegExp(`\\(session ${runId} failed: .*exited`));
    pty.write("are you there?\n");
    await pty.waitFor(/elf> Back again\.\n/);
    pty.write("\x04");
    expect(await pty.exited).toBe(0);
    const killed = sessions().find((r) => r.id === runId);
    expect(killed).toMatchObject({ state: "failed", ended_by: "error" });
    expect(killed?.error).toContain("in the middle of a turn");
    expect(sessions()).toHaveLength(sessionsBefore + 2);
  });

  it("Ctrl-D mid-turn ends at once: box gone, record finished", async () => {
    model.play({ text: "too late", delayMs: 60_000 });
    const before = model.requests.length;
    const pty = talk();
    await pty.waitFor(/Ctrl-D ends/);
    pty.write("take your time\n");
    const [, runId] = await pty.waitFor(/\(session (\S+) started in box/);
    await untilRequests(before + 1);
    const asked = Date.now();
    pty.write("\x04");
    expect(await pty.exited).toBe(0);
    expect(Date.now() - asked).toBeLessThan(15_000);
    expect(sessions().find((r) => r.id === runId)).toMatchObject({
      state: "failed",
      ended_by: "signal",
    });
    const left = await docker?.listContainers({
      all: true,
      filters: { name: [`roster-box-${runId}`] },
    });
    expect(left).toHaveLength(0);
  });

  it("slash commands are answered on the host and never reach the worker", async () => {
    const before = model.requests.length;
    const pty = talk();
    await pty.waitFor(/Ctrl-D ends/);
    pty.write("/help\n/approvals\n/approve g-nope\n");
    await pty.waitFor(/\/approvals approve: no gate "g-nope"/);
    expect(pty.output).toContain("/approvals deny <id>");
    expect(pty.output).toContain("nothing waits for you");
    pty.write("\x04");
    expect(await pty.exited).toBe(0);
    expect(model.requests).toHaveLength(before);
    expect(sessions().filter((r) => r.state === "running")).toHaveLength(0);
  });
});
