import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listGates } from "../../runner/services/actions/gates.ts";
import { termChannelId } from "../../runner/services/chat/terminal/ids.ts";
import { talkUser } from "../../runner/services/chat/terminal/talk.ts";
import { ROSTER_BIN } from "../support/cli.ts";
import { testDocker } from "../support/docker.ts";
import { ModelServer, textOf } from "../support/model-server.ts";
import { spawnInPty } from "../support/pty.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";

const docker = await testDocker();

/**
 * A channel's purpose reaches the worker: in the session's system prompt,
 * and — since that prompt is fixed when pi starts — at the head of the next
 * turn once a purpose edit is approved mid-session.
 */
describe.skipIf(!docker)("the channel's purpose in a warm session", () => {
  let model: ModelServer;
  let deployment: RosterRoot;
  const channel = termChannelId(talkUser(), "elf");

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), {
      modelKey: "PURPOSE-KEY",
      extraOrg: '[[action]]\nname = "purpose-edit"\nexecutor = "purpose"\n',
    });
  });
  afterAll(async () => {
    await model?.stop();
    await deployment?.cleanup();
  });

  /** The text of the last user message of a model request: the turn's input. */
  const turnInput = (index: number) => {
    const messages = model.requests[index]?.body.messages ?? [];
    return textOf([...messages].reverse().find((m) => m.role === "user")?.content);
  };
  const systemOf = (index: number) =>
    (model.requests[index]?.body.messages ?? [])
      .filter((m) => m.role === "system" || m.role === "developer")
      .map((m) => textOf(m.content))
      .join("\n");

  it("a purpose edit approved mid-session: the next turn carries the new purpose, once", async () => {
    const dir = join(deployment.paths.data, "channels", channel);
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, "purpose.md"), "Old purpose: the release notes.\n");
    // an untrusted channel: the worker's purpose edit waits for a person's approval
    await writeFile(
      join(deployment.paths.data, "channels/settings.json"),
      JSON.stringify({ untrusted: [channel] }),
    );
    model.play(
      {
        toolCalls: [
          {
            name: "propose_purpose_edit",
            arguments: {
              channel_id: channel,
              purpose: "New purpose: on-call for payments.",
              rationale: "the channel said so",
            },
          },
        ],
      },
      { text: "Proposed." },
      { text: "Second answer." },
      { text: "Third answer." },
    );
    const pty = spawnInPty([process.execPath, ROSTER_BIN, "talk", "elf", "--idle", "120"], {
      ROSTER_ROOT: deployment.root,
    });
    await pty.waitFor(/Ctrl-D ends/);
    pty.write("this channel is about on-call now\n");
    await pty.waitFor(/elf> Proposed\./);
    const system = systemOf(0);
    expect(system).toContain("[ROSTER SYSTEM BLOCK: PURPOSE]");
    expect(system).toContain("Old purpose: the release notes.");
    expect(turnInput(0)).not.toContain('"block":"purpose"');

    const gate = listGates(deployment.paths, "elf").find(
      (one) => one.intent === "purpose-edit" && one.state === "pending",
    );
    expect(gate, "the purpose edit was gated").toBeDefined();
    const approved = await deployment.roster(["approvals", "approve", gate?.id ?? "?"]);
    expect(approved.code, approved.stderr).toBe(0);

    pty.write("what is this channel for?\n");
    await pty.waitFor(/elf> Second answer\./);
    const second = turnInput(2);
    const [head, ...rest] = second.split("\n");
    expect(JSON.parse(head ?? "{}")).toMatchObject({
      block: "purpose",
      channel,
      text: "New purpose: on-call for payments.",
    });
    expect(rest.join("\n")).toContain('"text":"what is this channel for?"');
    // the same box, the same pi: its system prompt is as it was
    expect(systemOf(2)).toContain("Old purpose: the release notes.");

    pty.write("anything else?\n");
    await pty.waitFor(/elf> Third answer\./);
    expect(turnInput(3)).not.toContain('"block":"purpose"');
    pty.write("\x04");
    expect(await pty.exited).toBe(0);

    // runs context --all shows each turn as the engine was handed it
    const ls = await deployment.roster(["runs", "ls", "--worker", "elf", "--json"]);
    const [session] = JSON.parse(ls.stdout) as Array<{ id: string }>;
    const shown = await deployment.roster([
      "runs",
      "context",
      session?.id ?? "?",
      "--all",
      "--json",
    ]);
    expect(shown.code, shown.stderr).toBe(0);
    const { turns } = JSON.parse(shown.stdout) as { turns: Array<{ turn: number; input: string }> };
    expect(turns.map((one) => one.turn)).toEqual([1, 2, 3]);
    expect(turns[1]?.input).toBe(second);
    const table = await deployment.roster(["runs", "context", session?.id ?? "?", "--all"]);
    expect(table.stdout).toMatch(/^3 turn\(s\) of the session:$/m);
    expect(table.stdout).toMatch(/^── turn 2, \d+ chars ──$/m);
  });
});
