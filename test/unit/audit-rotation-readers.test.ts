import {
  appendFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AuditLog, type DecisionRecord } from "../../runner/boundary/gateway/audit/audit.ts";
import { readDecisions, runDecisionsFrom } from "../../runner/boundary/gateway/audit/view.ts";
import {
  eachRefusal,
  logSnapshot,
  RefusalGroups,
} from "../../runner/boundary/gateway/policy/refusal-groups.ts";
import { replayLog } from "../../runner/boundary/gateway/policy/replay.ts";
import { Budgets, spentSince } from "../../runner/boundary/gateway/spend/budget.ts";
import type { ScopedLimit } from "../../runner/ground/config/grant-schema.ts";
import { loadConfig } from "../../runner/ground/config/load.ts";
import { rosterPaths } from "../../runner/ground/config/paths.ts";
import { compressSettled } from "../../runner/ground/files/rotation/compress.ts";
import { ROTATED_OFFSET } from "../../runner/ground/files/rotation/read-across.ts";
import { type RetentionPolicy, rotateIfDue } from "../../runner/ground/files/rotation/rotate.ts";
import { logSegments } from "../../runner/ground/files/rotation/segments.ts";
import { readInbox } from "../../runner/services/actions/desk-view.ts";
import { DoorSummary } from "../../runner/services/console/door-summary.ts";
import { ConsoleFeed } from "../../runner/services/console/feed.ts";
import { doorPart } from "../../runner/services/console/pages/door.ts";
import { SpendSummary } from "../../runner/services/console/spend-summary.ts";
import { runDecisions } from "../../runner/work/runs/run-decisions.ts";
import { facts } from "../support/facts.ts";

/**
 * The audit logs' readers over a log that was rotated (runner/ground/files/rotation/):
 * the same lines kept once in one file and once as gzipped and plain rotated
 * files plus a live one give every reader the same answer — `gateway log`,
 * a run's decisions (from the console's places and from the log's tail),
 * the door page, refusal grouping and replay, the spend ledger's budgets,
 * and the console's running sums, which count each line once when they are
 * refreshed across a rotation. The rotated files are made by the real
 * rotation and compression.
 */
const rotateNow: RetentionPolicy = {
  maxFileBytes: 1,
  rotateAfterMs: 0,
  keepMs: 365 * 86_400_000,
  keepBytes: 1 << 30,
  floorMs: 0,
};

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "roster-audit-rotation-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const linesOf = (file: string) => readFileSync(file, "utf8").split("\n").filter(Boolean);
const rotate = async (file: string) => expect(await rotateIfDue(file, rotateNow)).toBeDefined();
const gzipAll = (file: string) => compressSettled(file, 0, Date.now() + 60_000);

/**
 * The same lines as `one` holds, written to `into` in three parts: the first
 * rotated and gzipped, the second rotated and left plain, the third live.
 */
async function rotatedCopy(lines: string[], into: string): Promise<void> {
  mkdirSync(join(into, ".."), { recursive: true });
  const third = Math.ceil(lines.length / 3);
  appendFileSync(into, `${lines.slice(0, third).join("\n")}\n`);
  await rotate(into);
  await gzipAll(into);
  appendFileSync(into, `${lines.slice(third, 2 * third).join("\n")}\n`);
  await rotate(into);
  appendFileSync(into, `${lines.slice(2 * third).join("\n")}\n`);
  const kinds = logSegments(into).map((s) => (s.rotatedAt === undefined ? "live" : s.compressed));
  expect(kinds).toEqual([true, false, "live"]);
}

/** A door's decisions over three runs (the middle one in every part), allowed and refused. */
async function writeDecisions(auditDir: string): Promise<string[]> {
  const audit = new AuditLog(auditDir);
  const say = (runId: string, host: string, refused: boolean, worker = "elf") =>
    audit.record(facts({ runId, host, subject: `org/${worker}`, path: `/v1/${host.length}` }), {
      verdict: refused ? "deny" : "allow",
      rule: refused ? undefined : "api",
      status: refused ? 403 : 200,
    });
  for (let i = 0; i < 30; i++) {
    const run = i < 8 ? "run-early" : i > 22 ? "run-late" : "run-long";
    say(run, `h${i % 4}.example.com`, i % 3 === 0, i % 5 === 0 ? "imp" : "elf");
    say("run-long", "model.example.com", i % 7 === 0);
  }
  await audit.close();
  return linesOf(join(auditDir, "decisions.jsonl"));
}

describe("the decision log's readers, across its rotated files", () => {
  it("give `gateway log`, a run's decisions, the door page, refusal groups and replay the same answer as one file", async () => {
    const one = rosterPaths({ ROSTER_ROOT: join(dir, "one") });
    const rotated = rosterPaths({ ROSTER_ROOT: join(dir, "rotated") });
    const lines = await writeDecisions(one.audit);
    await rotatedCopy(lines, join(rotated.audit, "decisions.jsonl"));

    const hour = Date.now() - 3_600_000;
    for (const filter of [
      {},
      { run: "run-long" },
      { run: "run-early", deniedOnly: true },
      { run: "run-late", since: hour },
    ]) {
      const same = readDecisions(one.audit, filter);
      expect(same.length).toBeGreaterThan(0);
      expect(readDecisions(rotated.audit, filter)).toEqual(same);
    }
    expect(readDecisions(rotated.audit)).toHaveLength(lines.length);
    for (const run of ["run-early", "run-long", "run-late"])
      expect(runDecisions(rotated.audit, run)).toEqual(runDecisions(one.audit, run));
    expect(String(doorPart(rotated, { worker: "imp" }))).toBe(
      String(doorPart(one, { worker: "imp" })),
    );
    expect(String(doorPart(rotated, {}, 4096))).toBe(String(doorPart(one, {}, 4096)));

    const grouped = (auditDir: string) => {
      const groups = new RefusalGroups(new Set(["api"]));
      eachRefusal(logSnapshot(auditDir), {}, (record) => groups.add(record));
      return groups;
    };
    const groups = grouped(rotated.audit);
    expect(groups.groups.size).toBeGreaterThan(1);
    expect(groups).toEqual(grouped(one.audit));

    mkdirSync(one.config, { recursive: true });
    writeFileSync(join(one.config, "org.toml"), "");
    const config = loadConfig(one.config, { vaultDir: one.vault });
    const replayed = replayLog(join(rotated.audit, "decisions.jsonl"), config);
    expect(replayed.decisions).toBe(lines.length);
    expect(replayed).toEqual(replayLog(join(one.audit, "decisions.jsonl"), config));
    // --since passes over the files rotated before it, and still finds every line after it
    const later = Date.parse((JSON.parse(lines[40] ?? "{}") as DecisionRecord).ts);
    expect(replayLog(join(rotated.audit, "decisions.jsonl"), config, { since: later })).toEqual(
      replayLog(join(one.audit, "decisions.jsonl"), config, { since: later }),
    );
  });

  it("groups refusals from a snapshot that a rotation and a gzip after it do not change", async () => {
    const auditDir = join(dir, "audit");
    const file = join(auditDir, "decisions.jsonl");
    const lines = await writeDecisions(join(dir, "written"));
    await rotatedCopy(lines.slice(0, 40), file);
    const snapshot = logSnapshot(auditDir);
    const read = () => {
      const seen: string[] = [];
      eachRefusal(snapshot, {}, (record) => seen.push(record.decision_id));
      return seen;
    };
    const first = read();
    expect(first.length).toBeGreaterThan(0);
    // more lines, the live file rotated, and everything rotated gzipped before the second reading
    appendFileSync(file, `${lines.slice(40).join("\n")}\n`);
    await rotate(file);
    await gzipAll(file);
    expect(logSegments(file).filter((s) => s.compressed)).toHaveLength(3);
    expect(read()).toEqual(first);
  });

  it("keep the console's door counts and run places right when it is refreshed across rotations", async () => {
    const lines = await writeDecisions(join(dir, "one"));
    const whole = new DoorSummary(join(dir, "one"), join(dir, "whole.json"));
    whole.refresh();

    const auditDir = join(dir, "audit");
    const file = join(auditDir, "decisions.jsonl");
    mkdirSync(auditDir, { recursive: true });
    const summary = new DoorSummary(auditDir, join(dir, "door.json"));
    const part = (from: number, to: number) =>
      appendFileSync(file, `${lines.slice(from, to).join("\n")}\n`);
    part(0, 10);
    summary.refresh();
    const early = summary.firstOffset("run-early");
    expect(early?.offset).toBe(0);
    // rotated after the summary placed run-early: its place is in no live file now
    part(10, 20);
    await rotate(file);
    part(20, 30);
    const wanted = readDecisions(join(dir, "one"), { run: "run-early" });
    if (!early) throw new Error("no place for run-early");
    expect(runDecisionsFrom(auditDir, early, "run-early")).toEqual(wanted);
    // followed into the rotated file: counted once, and the old places read across the files
    summary.refresh();
    expect(summary.firstOffset("run-early")?.offset).toBe(ROTATED_OFFSET);
    part(30, 45);
    // the file read up to is rotated and gzipped before the next refresh: counted again, once
    await rotate(file);
    await gzipAll(file);
    part(45, lines.length);
    summary.refresh();
    expect(summary.window(2)).toEqual(whole.window(2));
    for (const run of ["run-early", "run-long", "run-late"]) {
      const start = summary.firstOffset(run);
      if (!start) throw new Error(`no place for ${run}`);
      expect(runDecisionsFrom(auditDir, start, run)).toEqual(
        readDecisions(join(dir, "one"), { run }),
      );
    }
    // a run whose first line is in the live file is read from its offset there
    expect(summary.firstOffset("run-late")?.offset).toBeGreaterThanOrEqual(0);
    // and a new process reads on from the saved place, counting nothing twice
    const next = new DoorSummary(auditDir, join(dir, "door.json"));
    expect(next.refresh()).toBe(0);
    expect(next.window(2)).toEqual(whole.window(2));
  });
});

describe("the inbox", () => {
  it("shows the newest messages across the rotated files, oldest first", async () => {
    const paths = rosterPaths({ ROSTER_ROOT: dir });
    const lines = Array.from({ length: 30 }, (_, i) =>
      JSON.stringify({
        ts: new Date(Date.UTC(2026, 0, 1, 0, i)).toISOString(),
        worker: "elf",
        text: `m${i}`,
      }),
    );
    await rotatedCopy(lines, join(paths.audit, "messages.jsonl"));
    expect(readInbox(paths, 25).map((m) => m.text)).toEqual(
      Array.from({ length: 25 }, (_, i) => `m${i + 5}`),
    );
    expect(readInbox(paths, 100)).toHaveLength(30);
  });
});

describe("the console's live feed", () => {
  it("still hears the door's decisions after the log was rotated and gzipped", async () => {
    const paths = rosterPaths({ ROSTER_ROOT: dir });
    const feed = new ConsoleFeed(paths, () => []);
    feed.start();
    let heard = 0;
    feed.subscribe((event) => {
      if (event === "decision") heard++;
    });
    const file = join(paths.audit, "decisions.jsonl");
    const until = async (done: () => boolean) => {
      const deadline = Date.now() + 10_000;
      while (!done() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(done()).toBe(true);
    };
    try {
      appendFileSync(file, '{"a":1}\n');
      await until(() => heard > 0);
      heard = 0;
      // the rename is heard; the gzip's files are other names
      await rotate(file);
      await until(() => heard > 0);
      await gzipAll(file);
      expect(logSegments(file).map((s) => s.compressed)).toEqual([true]);
      heard = 0;
      appendFileSync(file, '{"a":2}\n');
      await until(() => heard > 0);
    } finally {
      feed.close();
    }
  });
});

const LIMITS: ScopedLimit[] = [
  { scope: "org", currency: "tokens", window: "minute", max: 1_000 },
  { scope: "org", currency: "tokens", window: "hour", max: 10_000 },
  { scope: "org/elf", currency: "tokens", window: "day", max: 50_000 },
  { scope: "org/imp", currency: "usd", window: "month", max: 20 },
];

describe("the spend ledger, across its rotated files", () => {
  /** Spends over the last three weeks up to now, by two workers. */
  function spend(auditDir: string, now: number): string[] {
    const budgets = new Budgets(auditDir, [], LIMITS);
    for (let i = 0; i < 40; i++) {
      const at = now - Math.round(((40 - i) / 40) * 21 * 86_400_000);
      budgets.record(i % 2 ? "org/elf" : "org/imp", { tokens: 100 + i, usd: 0.25 }, at);
    }
    budgets.record("org/elf", { tokens: 7 }, now - 30_000);
    return linesOf(join(auditDir, "usage.jsonl"));
  }

  it("gives budgets at the gateway's start and `worker ls` the spend one file gives: nothing forgotten", async () => {
    const now = Date.now();
    const lines = spend(join(dir, "one"), now);
    await rotatedCopy(lines, join(dir, "rotated", "usage.jsonl"));
    const standing = (auditDir: string) =>
      new Budgets(auditDir, [], LIMITS).standing(undefined, now);
    const same = standing(join(dir, "one"));
    expect(same.find((s) => s.window === "month")?.used).toBeGreaterThan(0);
    expect(standing(join(dir, "rotated"))).toEqual(same);
    for (const since of [now - 86_400_000, now - 10 * 86_400_000, 0])
      expect(spentSince(join(dir, "rotated"), "org", since)).toEqual(
        spentSince(join(dir, "one"), "org", since),
      );
  });

  it("refuses to count from a ledger whose rotated file can't be read, rather than forget its spend", async () => {
    const now = Date.now();
    const lines = spend(join(dir, "one"), now);
    const auditDir = join(dir, "rotated");
    await rotatedCopy(lines, join(auditDir, "usage.jsonl"));
    const gz = logSegments(join(auditDir, "usage.jsonl")).find((s) => s.compressed);
    if (!gz) throw new Error("no gzipped file");
    writeFileSync(gz.path, "not gzip at all");
    expect(() => new Budgets(auditDir, [], LIMITS)).toThrow(`${gz.path}: can't be read`);
    expect(() => spentSince(auditDir, "org", 0)).toThrow(`${gz.path}: can't be read`);
  });

  it("keeps the console's spend sums right when they are refreshed across rotations", async () => {
    const now = Date.now();
    const lines = spend(join(dir, "one"), now);
    const whole = new SpendSummary(join(dir, "one"), join(dir, "whole.json"));
    whole.refresh(now);
    const auditDir = join(dir, "audit");
    const file = join(auditDir, "usage.jsonl");
    mkdirSync(auditDir, { recursive: true });
    const summary = new SpendSummary(auditDir, join(dir, "spend.json"));
    appendFileSync(file, `${lines.slice(0, 15).join("\n")}\n`);
    summary.refresh(now);
    appendFileSync(file, `${lines.slice(15, 25).join("\n")}\n`);
    await rotate(file);
    appendFileSync(file, `${lines.slice(25, 30).join("\n")}\n`);
    summary.refresh(now);
    await rotate(file);
    await gzipAll(file);
    appendFileSync(file, `${lines.slice(30).join("\n")}\n`);
    summary.refresh(now);
    expect(summary.days(31, now)).toEqual(whole.days(31, now));
    expect(summary.standing(LIMITS, undefined, now)).toEqual(
      whole.standing(LIMITS, undefined, now),
    );
    // a console starting afresh reads the rotated files first
    const fresh = new SpendSummary(auditDir, join(dir, "fresh.json"));
    fresh.refresh(now);
    expect(fresh.days(31, now)).toEqual(whole.days(31, now));
  });
});
