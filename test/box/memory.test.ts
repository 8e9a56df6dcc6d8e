import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ROSTER_BIN } from "../support/cli.ts";
import { testDocker } from "../support/docker.ts";
import { ModelServer, type ScriptStep, textOf } from "../support/model-server.ts";
import { spawnInPty } from "../support/pty.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";

const docker = await testDocker();

/**
 * Memory recall end to end: a worker writes notes into its own
 * ~/store/memory/memory.jsonl with an ordinary tool, and its next run's
 * prompt (or its next session's first turn) carries them — minus what it
 * forgot, with what it rewrote, and never a host file it linked to.
 */
const bash = (command: string): ScriptStep => ({
  toolCalls: [{ name: "bash", arguments: { command } }],
});
const note = (record: object) => `echo '${JSON.stringify(record)}' >> ~/store/memory/memory.jsonl`;

describe.skipIf(!docker)("memory recall in real boxes", () => {
  let model: ModelServer;
  let deployment: RosterRoot;
  let host: string;

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), { modelKey: "MEMORY-KEY" });
    host = await mkdtemp(join(tmpdir(), "roster-memory-host-"));
  });
  // requests accumulate across tests: each test reads the ones it caused, from `seen` on
  let seen = 0;
  beforeEach(() => {
    model.reset();
    seen = model.requests.length;
  });
  afterAll(async () => {
    await model?.stop();
    await deployment?.cleanup();
    if (host) await rm(host, { recursive: true, force: true });
  });

  const systemOf = (index: number) =>
    (model.requests[seen + index]?.body.messages ?? [])
      .filter((m) => m.role === "system" || m.role === "developer")
      .map((m) => textOf(m.content))
      .join("\n");
  const turnInput = (index: number) => {
    const messages = model.requests[seen + index]?.body.messages ?? [];
    return textOf([...messages].reverse().find((m) => m.role === "user")?.content);
  };
  /** A run whose model runs `command` with bash, then answers "done". */
  const runWith = async (command: string) => {
    model.play(bash(command), { text: "done" });
    const result = await deployment.roster(["run", "elf", "keep notes"]);
    expect(result.code, result.stderr).toBe(0);
  };
  /** A run that only answers; its system prompt is what the model was told. */
  const nextPrompt = async () => {
    model.play({ text: "ok" });
    const result = await deployment.roster(["run", "elf", "who is who?"]);
    expect(result.code, result.stderr).toBe(0);
    return systemOf(model.requests.length - 1 - seen);
  };

  it("run 1 writes a note, run 2's prompt carries it; a forget drops one, a later record replaces one", async () => {
    await runWith(
      [
        "mkdir -p ~/store/memory",
        note({ id: "ann", text: "Ann runs payments; prefers short answers", pinned: true }),
        note({ id: "bob", text: "Bob is on call on Fridays" }),
        note({ id: "cy", text: "Cy asked for weekly summaries" }),
      ].join(" && "),
    );
    const second = await nextPrompt();
    expect(second).toContain("[ROSTER SYSTEM BLOCK: MEMORY]");
    expect(second).toContain("consult your memory");
    expect(second).toContain(
      '{"id":"ann","pinned":true,"text":"Ann runs payments; prefers short answers"}',
    );
    expect(second).toContain("Bob is on call on Fridays");
    expect(second.indexOf('"id":"ann"')).toBeLessThan(second.indexOf('"id":"cy"'));
    expect(second.indexOf('"id":"cy"')).toBeLessThan(second.indexOf('"id":"bob"'));

    await runWith(
      [
        note({ id: "bob", op: "forget" }),
        note({ id: "cy", text: "Cy wants monthly summaries now" }),
        "echo 'this line is not a note' >> ~/store/memory/memory.jsonl",
      ].join(" && "),
    );
    const third = await nextPrompt();
    expect(third).not.toContain("Bob is on call");
    expect(third).not.toContain("weekly summaries");
    expect(third).toContain("Cy wants monthly summaries now");
    expect(third).toContain("Ann runs payments");
    expect(third).toContain("(1 line of the file is not a note and was skipped");
  });

  it("a session's first turn carries the notes, and only the first", async () => {
    model.play({ text: "First answer." }, { text: "Second answer." });
    const pty = spawnInPty([process.execPath, ROSTER_BIN, "talk", "elf", "--idle", "60"], {
      ROSTER_ROOT: deployment.root,
    });
    try {
      await pty.waitFor(/Ctrl-D ends/);
      pty.write("who runs payments?\n");
      await pty.waitFor(/elf> First answer\./);
      const [head, ...rest] = turnInput(0).split("\n");
      expect(JSON.parse(head ?? "{}")).toMatchObject({
        block: "memory",
        notes: [{ id: "ann", pinned: true, text: "Ann runs payments; prefers short answers" }, {}],
      });
      expect(rest.join("\n")).toContain('"text":"who runs payments?"');
      expect(systemOf(0)).toContain("consult your memory");
      expect(systemOf(0)).not.toContain("Ann runs payments");
      pty.write("and on Fridays?\n");
      await pty.waitFor(/elf> Second answer\./);
      expect(turnInput(1)).not.toContain('"block":"memory"');
    } finally {
      // a failed assertion must not leave the session's box running
      pty.write("\x04");
    }
    expect(await pty.exited).toBe(0);
  });

  it("a memory file symlinked to a host file is not read", async () => {
    const secret = join(host, "memory.jsonl");
    await writeFile(
      secret,
      `${JSON.stringify({ id: "x", text: "HOST-FILE-CONTENT", pinned: true })}\n`,
    );
    await runWith(`ln -sf ${secret} ~/store/memory/memory.jsonl && ls -l ~/store/memory`);
    const prompt = await nextPrompt();
    expect(prompt).not.toContain("HOST-FILE-CONTENT");
    expect(prompt).toContain("memory.jsonl was not read");
    expect(prompt).not.toContain("Ann runs payments");
  });
});
