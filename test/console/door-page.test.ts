import { appendFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AuditLog } from "../../runner/boundary/gateway/audit/audit.ts";
import { rosterPaths } from "../../runner/ground/config/paths.ts";
import { linesFromEnd } from "../../runner/ground/files/tail-lines.ts";
import { doorPart } from "../../runner/services/console/pages/door.ts";
import { facts } from "../support/facts.ts";

/**
 * The door page reads the gateway's log from its end (files/tail-lines.ts
 * linesFromEnd): the newest matching decisions, newest first, and never more
 * of the log than its look-back, however long the log has grown.
 */
describe("the door page over a long log", () => {
  let root: string;
  let audit: AuditLog;

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), "roster-door-page-"));
    audit = new AuditLog(rosterPaths({ ROSTER_ROOT: root }).audit);
  });
  afterEach(async () => {
    await audit.close();
    rmSync(root, { recursive: true, force: true });
  });

  it("hands whole lines newest first, across chunk ends, within its budget", () => {
    // lines of every length, some longer than the 1 MiB a read takes
    const written = Array.from(
      { length: 40 },
      (_, i) => `${i}:${"é".repeat((i * 37_919) % 900_000)}`,
    );
    const file = join(root, "lines.log");
    appendFileSync(file, `${written.join("\n")}\n`);
    const seen: string[] = [];
    expect(linesFromEnd(file, (line) => seen.push(line) > 0, Number.MAX_SAFE_INTEGER)).toBe(true);
    expect(seen).toEqual([...written].reverse());
    // stopped by the visitor, and by the budget
    const few: string[] = [];
    expect(linesFromEnd(file, (line) => few.push(line) < 3, Number.MAX_SAFE_INTEGER)).toBe(false);
    expect(few).toEqual(written.slice(-3).reverse());
    const near: string[] = [];
    expect(linesFromEnd(file, (line) => near.push(line) > 0, 2_000_000)).toBe(false);
    expect(near.length).toBeGreaterThan(0);
    expect(near.length).toBeLessThan(written.length);
    expect(near).toEqual(written.slice(-near.length).reverse());
  });

  it("shows the newest matching decisions first, and says when it looked only so far back", () => {
    for (let i = 0; i < 500; i++)
      audit.record(facts({ host: `h${i}.example.com`, subject: i % 2 ? "org/elf" : "org/imp" }), {
        verdict: i % 5 ? "allow" : "deny",
        rule: undefined,
        status: i % 5 ? 200 : 403,
      });
    const paths = rosterPaths({ ROSTER_ROOT: root });
    const page = String(doorPart(paths, { worker: "elf", verdict: "refused" }));
    const hosts = [...page.matchAll(/GET (h\d+)\.example\.com/g)].map((m) => m[1]);
    // elf's refusals: odd i that are multiples of 5, newest first
    const expected = Array.from({ length: 500 }, (_, i) => i)
      .filter((i) => i % 2 && i % 5 === 0)
      .reverse()
      .map((i) => `h${i}`);
    expect(hosts).toEqual(expected);
    expect(page).toContain(`${expected.length} decision(s).`);
    // a look-back shorter than the log: what it found, and that it looked only so far
    const short = String(doorPart(paths, {}, 4096));
    expect(short).toContain("in the last 0 MiB of the log");
    expect(short).toContain("h499.example.com");
    expect(short).not.toContain("h0.example.com");
  });
});
