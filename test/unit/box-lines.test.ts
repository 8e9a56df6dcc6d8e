import { describe, expect, it } from "vitest";
import { BoxLines } from "../../runner/work/runs/box-lines.ts";

/** The box's stream as the engine hands it over: pieces of 64 KiB. */
const CHUNK = 64 * 1024;

function feed(reader: BoxLines, bytes: Buffer, chunk = CHUNK): void {
  for (let at = 0; at < bytes.length; at += chunk) reader.push(bytes.subarray(at, at + chunk));
}

describe("reading a box's lines", () => {
  it("splits on \\n only, across chunks, and decodes a character cut between two", () => {
    const lines: string[] = [];
    const reader = new BoxLines(1024, (line) => lines.push(line));
    // U+2028 is legal inside a JSON string; "é" is two bytes, cut between chunks below
    const text = Buffer.from('{"a":"x\u2028y"}\né\n\nlast');
    const cut = text.indexOf(Buffer.from("é")) + 1;
    reader.push(text.subarray(0, cut));
    reader.push(text.subarray(cut));
    expect(lines).toEqual(['{"a":"x\u2028y"}', "é", ""]);
    reader.flush();
    expect(lines.at(-1)).toBe("last");
  });

  it("a line past its bound is told once, and nothing after it is read", () => {
    const lines: string[] = [];
    const over: number[] = [];
    const reader = new BoxLines(
      10,
      (line) => lines.push(line),
      (max) => over.push(max),
    );
    reader.push(Buffer.from("short\n0123456789"));
    expect(over).toEqual([]);
    reader.push(Buffer.from("x\nnever\n"));
    reader.flush();
    expect(lines).toEqual(["short"]);
    expect(over).toEqual([10]);
    expect(reader.stopped).toBe(true);
  });

  it("a 50 MB line is read in linear time: refused at its bound, or read whole under a larger one", () => {
    const flood = Buffer.alloc(50 * 1024 * 1024, "a");
    const heldBefore = process.memoryUsage().arrayBuffers;
    let started = performance.now();
    let refusedAt = 0;
    const bounded = new BoxLines(
      16 * 1024 * 1024,
      () => expect.unreachable("no line ends"),
      () => {
        refusedAt = performance.now() - started;
      },
    );
    feed(bounded, flood);
    const refusedMs = performance.now() - started;
    const heldMiB = (process.memoryUsage().arrayBuffers - heldBefore) / 1024 / 1024;

    started = performance.now();
    let length = 0;
    const whole = new BoxLines(64 * 1024 * 1024, (line) => {
      length = line.length;
    });
    feed(whole, flood);
    whole.push(Buffer.from("\n"));
    const wholeMs = performance.now() - started;
    console.log(
      `50 MB line: refused at its 16 MiB bound after ${refusedAt.toFixed(0)} ms (whole stream ${refusedMs.toFixed(0)} ms, buffers held +${heldMiB.toFixed(0)} MiB); read whole under 64 MiB in ${wholeMs.toFixed(0)} ms`,
    );
    expect(refusedAt).toBeGreaterThan(0);
    expect(length).toBe(flood.length);
    // re-splitting the whole buffer on each chunk (the old reader) takes minutes here;
    // one pass takes tens of milliseconds: the bound leaves room for a loaded machine
    expect(refusedMs).toBeLessThan(2_000);
    expect(wholeMs).toBeLessThan(5_000);
    // nothing past the bound is kept (the 50 MB would be, by a reader that held it)
    expect(heldMiB).toBeLessThan(40);
  });
});
