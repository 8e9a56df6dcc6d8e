import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CONVERSATION_TAIL_BYTES, conversation } from "../../runner/work/runs/runs-view.ts";

/**
 * `roster runs show` and the console's run page read the end of a run's event
 * log, which a box wrote and may have made hundreds of MiB: never all of it.
 */
const message = (role: string, text: string) =>
  JSON.stringify({ type: "message_end", message: { role, content: [{ type: "text", text }] } });
const result = (text: string) =>
  JSON.stringify({
    type: "tool_execution_end",
    toolName: "bash",
    result: { content: [{ type: "text", text }] },
  });

describe("a run's conversation", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "roster-conversation-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("is read from the end of a large log, saying how much came before", async () => {
    const filler = Array.from({ length: 6_000 }, (_, i) =>
      result(`line ${i} ${"x".repeat(1_000)}`),
    );
    const lines = [
      message("user", "the very first question"),
      ...filler,
      JSON.stringify({
        type: "tool_execution_start",
        toolName: "write",
        args: { content: "y".repeat(100_000) },
      }),
      message("assistant", "the last answer"),
    ];
    const text = `${lines.join("\n")}\n`;
    expect(text.length).toBeGreaterThan(CONVERSATION_TAIL_BYTES);
    await writeFile(join(dir, "events.jsonl"), text);
    const read = conversation(dir);
    expect(read.unread).toMatch(
      /^\(the first \d+\.\d MiB of events\.jsonl not shown: only its last 4\.0 MiB is read\)$/,
    );
    expect(read.lines.join("\n")).not.toContain("the very first question");
    expect(read.lines.at(-1)).toBe("assistant: the last answer");
    // a whole file written by a tool is one cut line
    const written = read.lines.find((line) => line.startsWith("tool write"));
    expect(written?.length).toBe(2_000);
    expect(written?.endsWith("…")).toBe(true);
  });

  it("reads a small log whole", async () => {
    await writeFile(
      join(dir, "events.jsonl"),
      `${message("user", "hello")}\n${message("assistant", "hi")}\n`,
    );
    expect(conversation(dir)).toEqual({ lines: ["user: hello", "assistant: hi"] });
  });
});
