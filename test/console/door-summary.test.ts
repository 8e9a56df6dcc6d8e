import { appendFileSync, mkdtempSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AuditLog } from "../../runner/boundary/gateway/audit/audit.ts";
import { readDecisions, runDecisionsFrom } from "../../runner/boundary/gateway/audit/view.ts";
import { DoorSummary } from "../../runner/services/console/door-summary.ts";
import { facts as requestFacts } from "../support/facts.ts";

/**
 * The door's running counts (runner/services/console/door-summary.ts) over an audit
 * log written by the gateway's own AuditLog: each refresh reads only what was
 * appended, a half-written line waits, a replaced log is counted again, and
 * the counts survive a new process. No page reads the whole log for them.
 */
const facts = (host: string, worker = "elf") => requestFacts({ host, subject: `org/${worker}` });

describe("the door's running counts", () => {
  let dir: string;
  let audit: AuditLog;
  const summaryFile = () => join(dir, "door-summary.json");
  const log = () => join(dir, "audit", "decisions.jsonl");

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "roster-door-summary-"));
    audit = new AuditLog(join(dir, "audit"));
  });
  afterEach(async () => {
    await audit.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("counts allowed and refused requests per host and refusals per worker, reading only what was appended", () => {
    for (let i = 0; i < 3; i++)
      audit.record(facts("api.example.com"), { verdict: "allow", rule: "api", status: 200 });
    audit.record(facts("evil.example.net"), { verdict: "deny", rule: undefined, status: 403 });
    audit.record(facts("evil.example.net", "imp"), {
      verdict: "deny",
      rule: undefined,
      status: 403,
    });
    const summary = new DoorSummary(join(dir, "audit"), summaryFile());
    const first = summary.refresh();
    expect(first).toBeGreaterThan(0);
    const window = summary.window(24);
    expect(window.hosts).toEqual([
      { host: "api.example.com", allowed: 3, refused: 0 },
      { host: "evil.example.net", allowed: 0, refused: 2 },
    ]);
    expect(window.refusedBy).toEqual({ elf: 1, imp: 1 });
    expect(window.hours).toHaveLength(24);
    expect(window.hours.at(-1)).toMatchObject({ allowed: 3, refused: 2 });

    // one more line: the next refresh reads that line's bytes and no more
    const before = statSync(log()).size;
    audit.record(facts("api.example.com"), { verdict: "allow", rule: "api", status: 200 });
    const after = statSync(log()).size;
    expect(summary.refresh()).toBe(after - before);
    expect(summary.window(24).hosts[0]).toEqual({
      host: "api.example.com",
      allowed: 4,
      refused: 0,
    });
    expect(summary.refresh()).toBe(0);
  });

  it("leaves a line still being written for the next refresh, and skips lines that are not the door's", () => {
    audit.record(facts("a.example.com"), { verdict: "allow", rule: "a", status: 200 });
    // an action's disposition shares the file; a line cut short is still being written
    appendFileSync(
      log(),
      `${JSON.stringify({ ts: new Date().toISOString(), gate: "g1", disposition: "approved" })}\n`,
    );
    const line = JSON.stringify({
      ts: new Date().toISOString(),
      subject: "org/elf",
      request: { host: "ü.example.com" },
      status: 403,
    });
    const cut = Buffer.byteLength(line) - 5;
    appendFileSync(log(), Buffer.from(line).subarray(0, cut));
    const summary = new DoorSummary(join(dir, "audit"), summaryFile());
    summary.refresh();
    expect(summary.window(1).hosts.map((h) => h.host)).toEqual(["a.example.com"]);
    appendFileSync(log(), Buffer.concat([Buffer.from(line).subarray(cut), Buffer.from("\n")]));
    summary.refresh();
    expect(summary.window(1).hosts).toContainEqual({
      host: "ü.example.com",
      allowed: 0,
      refused: 1,
    });
  });

  it("keeps its counts for the next process, and counts a replaced log again from its start", () => {
    audit.record(facts("a.example.com"), { verdict: "allow", rule: "a", status: 200 });
    new DoorSummary(join(dir, "audit"), summaryFile()).refresh();
    // a new process: nothing to read, the counts are there
    const next = new DoorSummary(join(dir, "audit"), summaryFile());
    expect(next.refresh()).toBe(0);
    expect(next.window(1).hosts).toEqual([{ host: "a.example.com", allowed: 1, refused: 0 }]);
    // the log replaced by a shorter one (rotated, restored): counted from its start
    writeFileSync(`${log()}.new`, "");
    renameSync(`${log()}.new`, log());
    const fresh = new AuditLog(join(dir, "audit"));
    fresh.record(facts("b.example.com"), { verdict: "deny", rule: undefined, status: 403 });
    next.refresh();
    expect(next.window(1).hosts).toEqual([{ host: "b.example.com", allowed: 0, refused: 1 }]);
    void fresh.close();
  });

  it("drops hours older than it keeps, and a host named __proto__ is counted like any other", () => {
    const old = new Date(Date.now() - 72 * 3_600_000).toISOString();
    appendFileSync(
      log(),
      `${JSON.stringify({ ts: old, subject: "org/elf", request: { host: "old.example.com" }, status: 200 })}\n`,
    );
    audit.record(facts("__proto__"), { verdict: "deny", rule: undefined, status: 403 });
    const summary = new DoorSummary(join(dir, "audit"), summaryFile(), 48);
    summary.refresh();
    expect(summary.window(96).hosts).toEqual([{ host: "__proto__", allowed: 0, refused: 1 }]);
    const reloaded = new DoorSummary(join(dir, "audit"), summaryFile(), 48);
    expect(reloaded.window(24).hosts).toEqual([{ host: "__proto__", allowed: 0, refused: 1 }]);
  });

  it("knows where each run's first line is, so a run page reads from there and finds all of the run's", () => {
    // other runs' lines before, between and after
    audit.record(requestFacts({ runId: "run-old", host: "a.example.com" }), {
      verdict: "allow",
      rule: "a",
      status: 200,
    });
    for (let i = 0; i < 3; i++) {
      audit.record(requestFacts({ runId: "run-mine", host: `m${i}.example.com` }), {
        verdict: i === 1 ? "deny" : "allow",
        rule: undefined,
        status: i === 1 ? 403 : 200,
      });
      audit.record(requestFacts({ runId: "run-other", host: "o.example.com" }), {
        verdict: "allow",
        rule: "o",
        status: 200,
      });
    }
    const summary = new DoorSummary(join(dir, "audit"), summaryFile());
    summary.refresh();
    const from = summary.firstOffset("run-mine");
    if (!from) throw new Error("run-mine has no first line");
    expect(from.offset).toBeGreaterThan(0);
    const mine = runDecisionsFrom(join(dir, "audit"), from, "run-mine");
    const whole = readDecisions(join(dir, "audit")).filter((d) => d.run_id === "run-mine");
    expect(mine).toEqual(whole);
    expect(mine.map((d) => d.request.host)).toEqual([
      "m0.example.com",
      "m1.example.com",
      "m2.example.com",
    ]);
    expect(summary.firstOffset("run-never")).toBeUndefined();
    // the places survive a new process
    expect(new DoorSummary(join(dir, "audit"), summaryFile()).firstOffset("run-mine")).toEqual(
      from,
    );
  });
});
