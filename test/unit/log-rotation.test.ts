import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startOfLog } from "../../runner/ground/files/appended-lines.ts";
import { compressSettled } from "../../runner/ground/files/rotation/compress.ts";
import { pruneSegments } from "../../runner/ground/files/rotation/prune.ts";
import {
  eachLineAcross,
  linesFromEndAcross,
  ROTATED_OFFSET,
  readAppendedAcross,
} from "../../runner/ground/files/rotation/read-across.ts";
import { type RetentionPolicy, rotateIfDue } from "../../runner/ground/files/rotation/rotate.ts";
import { logSegments, rotatedPath } from "../../runner/ground/files/rotation/segments.ts";

const WRITER = join(import.meta.dirname, "../support/log-writer.ts");

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "roster-rotation-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const policy = (over: Partial<RetentionPolicy> = {}): RetentionPolicy => ({
  maxFileBytes: 32 * 1024,
  rotateAfterMs: 0,
  keepMs: 365 * 86_400_000,
  keepBytes: 1 << 30,
  floorMs: 0,
  ...over,
});

function writer(file: string, name: string, count: number, how: "following" | "append") {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", WRITER, file, name, String(count), how],
    {
      stdio: ["ignore", "ignore", "pipe"],
    },
  );
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise<void>((resolve, reject) =>
    child.on("exit", (code) =>
      code === 0 ? resolve() : reject(new Error(`writer ${name}: ${code} ${stderr}`)),
    ),
  );
}

describe("a log rotated while it is written", () => {
  it("keeps every line whole, once, and each writer's lines in order, across gzipped segments", async () => {
    const file = join(dir, "decisions.jsonl");
    writeFileSync(file, "");
    const COUNT = 3000;
    const writing = Promise.all([
      writer(file, "door", COUNT, "following"),
      writer(file, "journal", COUNT, "append"),
    ]);
    let done = false;
    void writing.finally(() => {
      done = true;
    });
    let rotations = 0;
    // rotate and gzip as fast as the writers fill the file; settle a little longer than the writer looks
    while (!done) {
      if (await rotateIfDue(file, policy())) rotations++;
      await compressSettled(file, 200);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await writing;
    await compressSettled(file, 200, Date.now() + 1000);
    expect(rotations).toBeGreaterThan(5);
    expect(logSegments(file).filter((s) => s.compressed).length).toBeGreaterThan(3);

    const seen = { door: [] as number[], journal: [] as number[] };
    let lines = 0;
    eachLineAcross(file, (text) => {
      lines++;
      const line = JSON.parse(text) as { writer: "door" | "journal"; seq: number };
      seen[line.writer].push(line.seq);
    });
    const all = Array.from({ length: COUNT }, (_, i) => i);
    expect(seen.door).toEqual(all);
    expect(seen.journal).toEqual(all);
    expect(lines).toBe(2 * COUNT);
  }, 120_000);
});

describe("rotated segments", () => {
  function fill(file: string, from: number, to: number) {
    let text = "";
    for (let i = from; i < to; i++) text += `${JSON.stringify({ i })}\n`;
    writeFileSync(file, text, { flag: "a" });
  }

  it("are read newest first from the end, within a byte budget", async () => {
    const file = join(dir, "events.jsonl");
    fill(file, 0, 100);
    await rotateIfDue(file, policy({ maxFileBytes: 10 }), 1_000);
    await compressSettled(file, 0, Date.now() + 1000);
    fill(file, 100, 200);
    await rotateIfDue(file, policy({ maxFileBytes: 10 }), 3_000);
    fill(file, 200, 250);
    const newest: number[] = [];
    const reachedStart = linesFromEndAcross(
      file,
      (text) => {
        newest.push((JSON.parse(text) as { i: number }).i);
        return true;
      },
      1 << 20,
    );
    expect(reachedStart).toBe(true);
    expect(newest).toEqual(Array.from({ length: 250 }, (_, i) => 249 - i));
    const few: number[] = [];
    linesFromEndAcross(
      file,
      (text) => few.push((JSON.parse(text) as { i: number }).i) < 120,
      1 << 20,
    );
    expect(few.at(-1)).toBe(130);
  });

  it("are followed by an incremental reader: nothing counted twice, nothing lost", async () => {
    const file = join(dir, "decisions.jsonl");
    fill(file, 0, 10);
    const got: number[] = [];
    let restarts = 0;
    const reader = {
      restart: () => {
        restarts++;
        got.length = 0;
      },
      line: (text: string) => got.push((JSON.parse(text) as { i: number }).i),
    };
    let place = readAppendedAcross(file, startOfLog(), reader);
    fill(file, 10, 20);
    await rotateIfDue(file, policy({ maxFileBytes: 10 }), 1_000);
    fill(file, 20, 30);
    await rotateIfDue(file, policy({ maxFileBytes: 10 }), 2_000);
    fill(file, 30, 40);
    place = readAppendedAcross(file, place, reader);
    expect(got).toEqual(Array.from({ length: 40 }, (_, i) => i));
    expect(restarts).toBe(0);
    // a reader starting afresh reads the rotated ones first, marked as not in the live file
    const offsets: number[] = [];
    readAppendedAcross(file, startOfLog(), {
      restart: () => {},
      line: (_t, at) => offsets.push(at),
    });
    expect(offsets.slice(0, 30).every((at) => at === ROTATED_OFFSET)).toBe(true);
    expect(offsets[30]).toBe(0);
    // the old file gzipped before the reader came back: it starts again, from every segment
    fill(file, 40, 50);
    await rotateIfDue(file, policy({ maxFileBytes: 10 }), 3_000);
    fill(file, 50, 60);
    await compressSettled(file, 0, Date.now() + 1000);
    readAppendedAcross(file, place, reader);
    expect(restarts).toBe(1);
    expect(got).toEqual(Array.from({ length: 60 }, (_, i) => i));
  });

  it("are gzipped as readable gzip, and pruned by age and total size but never under the floor", async () => {
    const file = join(dir, "usage.jsonl");
    const day = 86_400_000;
    for (let d = 0; d < 6; d++) {
      fill(file, d * 100, d * 100 + 100);
      await rotateIfDue(file, policy({ maxFileBytes: 10 }), d * day);
    }
    await compressSettled(file, 0, Date.now() + 1000);
    const gz = logSegments(file).filter((s) => s.compressed);
    expect(gz).toHaveLength(6);
    const first = gz[0];
    if (!first) throw new Error("no segment");
    expect(gunzipSync(readFileSync(first.path)).toString().split("\n")[0]).toBe('{"i":0}');
    // rotated at days 0…5; on day 7, those older than 3.5 days (0…3) go
    expect(pruneSegments(file, policy({ keepMs: 3.5 * day }), 7 * day)).toHaveLength(4);
    // a total bound takes the oldest first, but the floor keeps what is under 2.5 days old
    const left = logSegments(file);
    expect(left).toHaveLength(2);
    const gone = pruneSegments(file, policy({ keepBytes: 1, floorMs: 2.5 * day }), 7 * day);
    expect(gone.map((s) => s.path)).toEqual(left.slice(0, 1).map((s) => s.path));
    expect(logSegments(file)).toHaveLength(1);
  });

  it("are named so that nothing else in the folder counts: a merged channel's archive, a half-written gzip, a lock", () => {
    const file = join(dir, "messages.jsonl");
    fill(file, 0, 1);
    const rotated = rotatedPath(file, Date.UTC(2026, 11, 6, 21, 0, 0, 123));
    expect(rotated.endsWith("messages.20261206T210000123Z.jsonl")).toBe(true);
    for (const name of [
      "messages.linked-team-20261206.jsonl",
      "messages.20261206T210000123Z.jsonl.gz.tmp",
      "messages.jsonl.rotate.lock",
      "messages.jsonl.old",
    ])
      writeFileSync(join(dir, name), "{}\n");
    writeFileSync(rotated, '{"i":-1}\n');
    mkdirSync(join(dir, "messages.20261206T210000124Z.jsonl"));
    expect(logSegments(file).map((s) => s.path)).toEqual([rotated, file]);
    expect(readdirSync(dir).length).toBe(7);
  });

  it("rotate by age when the live file has been live long enough", async () => {
    const file = join(dir, "events.jsonl");
    fill(file, 0, 1);
    await rotateIfDue(file, policy({ maxFileBytes: 1 }), 1_000);
    fill(file, 1, 2);
    const aged = policy({ maxFileBytes: 1 << 20, rotateAfterMs: 10_000 });
    expect(await rotateIfDue(file, aged, 5_000)).toBeUndefined();
    expect(await rotateIfDue(file, aged, 12_000)).toBeDefined();
  });
});
