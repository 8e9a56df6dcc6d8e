import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BoxOutput } from "../../runner/work/runs/box-output.ts";

describe("a run's bounds on what its box writes", () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "box-output-"));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const outputOf = (maxBytes: number) => {
    const seen = { lines: [] as string[], stderr: 0, over: [] as string[] };
    const output = new BoxOutput({
      logDir: dir,
      maxBytes,
      onLine: (line) => seen.lines.push(line),
      onStderr: (chunk) => {
        seen.stderr += chunk.length;
      },
      activity: () => undefined,
      onOver: (message) => seen.over.push(message),
    });
    return { output, seen };
  };

  it("a stream past max_output stops the box once; its log holds the bound and says why", async () => {
    const { output, seen } = outputOf(1024);
    output.stdout(Buffer.from('{"type":"a"}\n'));
    for (let i = 0; i < 100; i++) output.stdout(Buffer.alloc(100, "x"));
    output.stderr(Buffer.from("after the bound: not read\n"));
    output.close();
    expect(seen.over).toEqual([
      "the box's output was stopped: it wrote more than 1k to its stdout ([box] max_output)",
    ]);
    expect(seen.lines).toEqual(['{"type":"a"}']);
    expect(seen.stderr).toBe(0);
    const log = await readFile(join(dir, "events.jsonl"), "utf8");
    const [kept, marker] = log.split("\n").filter(Boolean).slice(-2);
    expect(Buffer.byteLength(log)).toBeLessThan(1024 + 200);
    expect(kept).toMatch(/^x+$/);
    expect(JSON.parse(marker ?? "")).toMatchObject({ type: "roster_output_stopped" });
  });

  it("stderr has a bound of its own, and its log ends with the reason", async () => {
    const { output, seen } = outputOf(64);
    output.stderr(Buffer.alloc(200, "e"));
    output.close();
    expect(seen.stderr).toBe(64);
    expect(seen.over[0]).toContain("to its stderr");
    const log = await readFile(join(dir, "stderr.log"), "utf8");
    expect(log).toBe(`${"e".repeat(64)}\n[roster] ${seen.over[0]}\n`);
  });

  it("a line of pi's events past its bound stops the box, whatever the stream's bound", () => {
    const { output, seen } = outputOf(64 * 1024 * 1024);
    const chunk = Buffer.alloc(1024 * 1024, "a");
    for (let i = 0; i < 20; i++) output.stdout(chunk);
    output.stdout(Buffer.from("\n"));
    output.close();
    expect(seen.over).toEqual([
      "the box's output was stopped: it wrote a line of over 16m to its event stream",
    ]);
    expect(seen.lines).toEqual([]);
  });
});
