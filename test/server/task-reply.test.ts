import { readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readTasks } from "../../runner/records/task-list/store.ts";
import { termChannelId } from "../../runner/services/chat/terminal/ids.ts";
import { talkUser } from "../../runner/services/chat/terminal/talk.ts";
import { ROSTER_BIN } from "../support/cli.ts";
import { testDocker } from "../support/docker.ts";
import { ModelServer, type RecordedRequest, textOf } from "../support/model-server.ts";
import { spawnInPty } from "../support/pty.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";

const docker = await testDocker();

/**
 * Replies from tasks: a task a worker files while talking in a channel runs
 * later under the server, with that channel's purpose in its prompt, and its
 * final answer lands back in the channel through the worker's send grant.
 */
describe.skipIf(!docker)("a task filed from a chat session", () => {
  let model: ModelServer;
  let deployment: RosterRoot;
  const channel = termChannelId(talkUser(), "elf");

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), {
      modelKey: "REPLY-KEY",
      extraOrg: [
        '[[action]]\nname = "file-task"\nexecutor = "task"\ntrust = "auto"\n',
        '[[action]]\nname = "term-send"\nexecutor = "term"\n',
      ].join("\n"),
    });
  });
  afterAll(async () => {
    await model?.stop();
    await deployment?.cleanup();
  });

  const systemOf = (request: RecordedRequest | undefined) =>
    (request?.body.messages ?? [])
      .filter((m) => m.role === "system" || m.role === "developer")
      .map((m) => textOf(m.content))
      .join("\n");
  const history = () =>
    readFileSync(join(deployment.paths.data, "channels", channel, "messages.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>);

  it("runs under the server with the channel's purpose, and its answer reaches the channel", async () => {
    const dir = join(deployment.paths.data, "channels", channel);
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, "purpose.md"), "Astronomy club logistics.\n");
    model.play(
      {
        toolCalls: [
          {
            name: "file_task",
            arguments: { prompt: "Count the stars in the club's photo", rationale: "asked" },
          },
        ],
      },
      { text: "Filed it; the answer will come here." },
    );
    const pty = spawnInPty([process.execPath, ROSTER_BIN, "talk", "elf", "--idle", "60"], {
      ROSTER_ROOT: deployment.root,
    });
    await pty.waitFor(/Ctrl-D ends/);
    pty.write("count the stars later please\n");
    await pty.waitFor(/elf> Filed it;/);
    pty.write("\x04");
    expect(await pty.exited).toBe(0);

    const [task, ...others] = readTasks(deployment.paths, "elf").tasks;
    expect(others).toHaveLength(0);
    // asked for in a trusted channel (the operator's own terminal): owner standing, like the operator's
    expect(task).toMatchObject({ state: "pending", channel, reply_to: true, standing: "owner" });
    const shown = await deployment.roster(["task", "show", task?.id ?? "?"]);
    expect(shown.stdout).toContain(`channel   ${channel} (its answer goes back there)`);

    const before = model.requests.length;
    model.play(
      { toolCalls: [{ name: "task_complete", arguments: { note: "counted" } }] },
      { text: "There are 7 stars in the photo." },
    );
    const server = await deployment.roster(["server", "start", "--once"]);
    expect(server.code, server.stderr).toBe(0);
    expect(server.stderr).toContain(`task ${task?.id}: its answer was sent to ${channel}`);
    expect(readTasks(deployment.paths, "elf").tasks[0]).toMatchObject({
      state: "done",
      note: "counted",
    });
    // the task's run was told where it came from, and what that channel is for
    const system = systemOf(model.requests[before]);
    expect(system).toContain(`filed from a chat session in channel ${channel}`);
    expect(system).toContain("[ROSTER SYSTEM BLOCK: PURPOSE]");
    expect(system).toContain("Astronomy club logistics.");
    // a terminal channel is trusted: the answer was sent at once, as the worker's message
    expect(history().at(-1)).toMatchObject({
      author: "elf",
      role: "worker",
      content: "There are 7 stars in the photo.",
    });
  });
});
