import { appendFileSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { rosterPaths } from "../../runner/ground/config/paths.ts";
import { compressSettled } from "../../runner/ground/files/rotation/compress.ts";
import { eachLineAcross } from "../../runner/ground/files/rotation/read-across.ts";
import { type RetentionPolicy, rotateIfDue } from "../../runner/ground/files/rotation/rotate.ts";
import { logSegments } from "../../runner/ground/files/rotation/segments.ts";
import { mergeIntoLinked } from "../../runner/records/channels/link-merge.ts";
import {
  appendMessage,
  type MessageRecord,
  messagesFile,
  readMessages,
} from "../../runner/records/channels/store.ts";
import { appendJournal, journalFile, readJournal } from "../../runner/records/journal/journal.ts";
import { runRoster } from "../support/cli.ts";

/**
 * A worker's journal and a channel's history rotate with [retention]: what
 * reads them (the action host, a run's prompt, `channel show`, a warm
 * session's history) reads the rotated files, plain and gzipped, and the live
 * one as the one log they were; a channel merged into another takes its
 * rotated files along, each message once; `roster box doctor` says how big
 * each log is and what retention keeps of it.
 */
const roots: string[] = [];
afterAll(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});
const freshRoot = () => {
  const root = mkdtempSync(join(tmpdir(), "roster-rotated-read-"));
  roots.push(root);
  return root;
};

/** Rotates at any size; ages never matter. */
const small: RetentionPolicy = {
  maxFileBytes: 1,
  rotateAfterMs: 0,
  keepMs: 365 * 86_400_000,
  keepBytes: 1 << 30,
  floorMs: 0,
};

/** Rotates the live file now (stamped `at`), and gzips every rotated file when asked. */
async function rotate(file: string, at: number, gzip = false): Promise<void> {
  expect(await rotateIfDue(file, small, at)).toBeDefined();
  if (gzip) await compressSettled(file, 0, Date.now() + 60_000);
}

const T0 = Date.UTC(2026, 11, 1);
const message = (i: number, who = "ana"): MessageRecord => ({
  ts: new Date(T0 + i * 1000).toISOString(),
  author_id: who,
  author: who,
  role: "user",
  content: `${who} ${i}`,
  attachments: [],
});

/** Two gzipped segments, one plain one and the live file: lines [0,10) [10,20) gz, [20,30) plain, [30,35) live. */
async function segmented(file: string, write: (i: number) => void): Promise<void> {
  for (let i = 0; i < 35; i++) {
    write(i);
    if (i === 9) await rotate(file, T0 + 1);
    if (i === 19) await rotate(file, T0 + 2, true);
    if (i === 29) await rotate(file, T0 + 3);
  }
  const shape = logSegments(file).map((s) => (s.rotatedAt === undefined ? "live" : s.compressed));
  expect(shape).toEqual([true, true, false, "live"]);
}

describe("a rotated journal", () => {
  it("reads back as the one file it was: the last N across a plain and a gzipped boundary", async () => {
    const paths = rosterPaths({ ROSTER_ROOT: freshRoot() });
    const file = journalFile(paths, "elf");
    await segmented(file, (i) =>
      appendJournal(paths, { worker: "elf", run_id: `r${i}`, kind: "executed", detail: `n${i}` }),
    );
    const runs = (limit: number) => readJournal(paths, "elf", limit).map((e) => e.run_id);
    const range = (from: number, to: number) =>
      Array.from({ length: to - from }, (_, i) => `r${from + i}`);
    expect(runs(8)).toEqual(range(27, 35)); // the plain segment and the live file
    expect(runs(22)).toEqual(range(13, 35)); // into the gzipped ones
    expect(runs(1000)).toEqual(range(0, 35));
    // the same as reading every line of every file in order
    const whole: string[] = [];
    eachLineAcross(file, (line) => whole.push((JSON.parse(line) as { run_id: string }).run_id));
    expect(whole).toEqual(range(0, 35));
  });
});

describe("a rotated channel history", () => {
  it("reads whole, and its last N, as the one file it was", async () => {
    const paths = rosterPaths({ ROSTER_ROOT: freshRoot() });
    await segmented(messagesFile(paths, "team"), (i) => appendMessage(paths, "team", message(i)));
    // a torn line in the plain segment is skipped, not fatal
    const plain = logSegments(messagesFile(paths, "team")).find((s) => s.bytes && !s.compressed);
    if (!plain?.rotatedAt) throw new Error("no plain segment");
    appendFileSync(plain.path, '{"ts": "torn\n');
    const contents = (records: MessageRecord[]) => records.map((m) => m.content);
    const all = Array.from({ length: 35 }, (_, i) => `ana ${i}`);
    expect(contents(readMessages(paths, "team"))).toEqual(all);
    expect(contents(readMessages(paths, "team", { last: 7 }))).toEqual(all.slice(28));
    expect(contents(readMessages(paths, "team", { last: 17 }))).toEqual(all.slice(18));
    expect(contents(readMessages(paths, "team", { last: 500 }))).toEqual(all);
    expect(readMessages(paths, "team", { last: 0 })).toEqual([]);
    expect(readMessages(paths, "nobody")).toEqual([]);
  });

  it("merged into a linked channel brings every message of both, rotated or not, once", async () => {
    const paths = rosterPaths({ ROSTER_ROOT: freshRoot() });
    const surface = "term-bob-box";
    // the channel's and the surface's messages interleave in time: even i the channel's, odd the surface's
    await segmented(messagesFile(paths, "team"), (i) =>
      appendMessage(paths, "team", message(2 * i)),
    );
    await segmented(messagesFile(paths, surface), (i) =>
      appendMessage(paths, surface, message(2 * i + 1, "bob")),
    );
    mergeIntoLinked(paths, "team", surface);

    const merged = readMessages(paths, "team");
    expect(merged).toHaveLength(70);
    expect(merged.map((m) => m.ts)).toEqual(
      Array.from({ length: 70 }, (_, i) => new Date(T0 + i * 1000).toISOString()),
    );
    expect(merged.filter((m) => m.surface === surface).map((m) => m.content)).toEqual(
      Array.from({ length: 35 }, (_, i) => `bob ${2 * i + 1}`),
    );
    expect(readMessages(paths, "team", { last: 3 }).map((m) => m.content)).toEqual([
      "bob 67",
      "ana 68",
      "bob 69",
    ]);
    // the surface's files were all moved aside, under names no reader takes for its history
    expect(readMessages(paths, surface)).toEqual([]);
    const aside = readdirSync(join(paths.data, "channels", surface)).filter((name) =>
      name.startsWith("messages.linked-team-"),
    );
    expect(aside).toHaveLength(4);
    expect(aside.filter((name) => name.endsWith(".jsonl.gz"))).toHaveLength(2);
    // appended to afterwards, the channel rotates and reads on as before
    appendMessage(paths, "team", message(70));
    await rotate(messagesFile(paths, "team"), Date.now());
    appendMessage(paths, "team", message(71));
    expect(readMessages(paths, "team")).toHaveLength(72);
    expect(readMessages(paths, "team", { last: 2 }).map((m) => m.content)).toEqual([
      "ana 70",
      "ana 71",
    ]);
  });
});

describe("roster box doctor on a fresh root", () => {
  const NO_ENGINE = "unix:///nonexistent/roster-doctor-logs.sock";

  it("lists each growing log's size, rotated files and policy, and flags one retention left behind", async () => {
    const root = freshRoot();
    const env = { ROSTER_ROOT: root, ANTHROPIC_API_KEY: "", OPENAI_API_KEY: "" };
    expect((await runRoster(["init"], env)).code).toBe(0);
    const paths = rosterPaths({ ROSTER_ROOT: root });
    const journal = journalFile(paths, "elf");
    await segmented(journal, (i) =>
      appendJournal(paths, { worker: "elf", run_id: `r${i}`, kind: "executed" }),
    );
    appendMessage(paths, "team", message(0));

    const doctor = await runRoster(["box", "doctor", "--json"], { ...env, DOCKER_HOST: NO_ENGINE });
    const report = JSON.parse(doctor.stdout) as {
      logs: {
        ok: boolean;
        totalBytes: number;
        logs: {
          file: string;
          kind: string;
          liveBytes: number;
          rotatedFiles: number;
          rotatedBytes: number;
          policy: string;
          overgrown: boolean;
        }[];
      };
    };
    const rotated = logSegments(journal).filter((s) => s.rotatedAt !== undefined);
    expect(report.logs.ok).toBe(true);
    expect(report.logs.logs).toContainEqual(
      expect.objectContaining({
        file: journal,
        kind: "journal",
        liveBytes: statSync(journal).size,
        rotatedFiles: 3,
        rotatedBytes: rotated.reduce((sum, s) => sum + s.bytes, 0),
        policy: "rotates at 16m or 30d, keeps 365d / 64m",
        overgrown: false,
      }),
    );
    expect(report.logs.logs).toContainEqual(
      expect.objectContaining({ file: messagesFile(paths, "team"), kind: "channel" }),
    );
    expect(report.logs.totalBytes).toBe(
      report.logs.logs.reduce((sum, log) => sum + log.liveBytes + log.rotatedBytes, 0),
    );

    // a live journal past twice its max_file: no sweep has run; the text says so even with no engine
    appendFileSync(
      join(paths.config, "org.toml"),
      '\n[retention.journal]\nmax_file = "1k"\nrotate_after = "0d"\n',
    );
    for (let i = 0; i < 40; i++)
      appendJournal(paths, { worker: "elf", run_id: `x${i}`, kind: "executed" });
    const text = await runRoster(["box", "doctor"], { ...env, DOCKER_HOST: NO_ENGINE });
    expect(text.code).toBe(1);
    const lines = text.stdout.split("\n");
    expect(lines).toContainEqual(expect.stringMatching(/^-- {2}logs {5}\d+ growing logs hold /));
    expect(lines).toContainEqual(
      expect.stringMatching(
        /^ {4}workers\/elf\/journal\/events\.jsonl +[\d.]+ KiB live, 3 rotated \([\d.]+ (B|KiB)\); rotates at 1k, keeps 365d \/ 64m$/,
      ),
    );
    expect(lines).toContainEqual(
      expect.stringMatching(
        /^-- {2}logs {5}workers\/elf\/journal\/events\.jsonl is [\d.]+ KiB, over twice its max_file \(1k\): retention is not running/,
      ),
    );
  }, 120_000);
});
