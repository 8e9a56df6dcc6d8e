import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { DecisionRecord } from "../../runner/boundary/gateway/audit/audit.ts";
import { replayLog } from "../../runner/boundary/gateway/policy/replay.ts";
import { whatTheLineSays } from "../../runner/boundary/gateway/policy/replay-record.ts";
import { loadConfig } from "../../runner/ground/config/load.ts";
import { eachBoundedLine } from "../../runner/ground/files/bounded-lines.ts";

/**
 * What a replay reads of the audit log, on lines in the gateway's format:
 * the log streamed with a bound on one line (a longer one, across chunks,
 * skipped and counted; a last line with no newline left for later), and
 * what each kind of line says the grants decided, told apart from what the
 * door refused for other reasons. test/gateway/policy-replay.test.ts
 * replays a log the real gateway wrote.
 */

const dir = mkdtempSync(join(tmpdir(), "roster-replay-lines-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("the log streamed with a bound on a line", () => {
  it("gives each whole line, skips and counts one over the bound, and leaves an unfinished one", () => {
    const file = join(dir, "log.jsonl");
    const long = "x".repeat(3 * 1024 * 1024); // over the bound and across the 1 MiB chunks
    const middle = "y".repeat(1024 * 1024 - 3); // under the bound, across a chunk's end
    writeFileSync(file, `a\n\n${long}\nb\n${middle}\nc\nunfinished`);
    const lines: string[] = [];
    let tooLong = 0;
    eachBoundedLine(file, 2 * 1024 * 1024, {
      line: (text) => lines.push(text.length > 10 ? `${text[0]}×${text.length}` : text),
      tooLong: () => tooLong++,
    });
    expect(lines).toEqual(["a", "b", `y×${middle.length}`, "c"]);
    expect(tooLong).toBe(1);
  });

  it("finds nothing to replay where no box has written a line yet", () => {
    mkdirSync(join(dir, "config"));
    writeFileSync(join(dir, "config", "org.toml"), "");
    const config = loadConfig(join(dir, "config"), { vaultDir: join(dir, "vault") });
    expect(replayLog(join(dir, "none.jsonl"), config)).toMatchObject({ lines: 0, flipped: 0 });
  });
});

const line = (over: Partial<DecisionRecord>, request: Partial<DecisionRecord["request"]> = {}) =>
  ({
    decision_id: "1-1",
    ts: "2030-01-01T00:00:00.000Z",
    verdict: "deny",
    rule: null,
    subject: "org/elf",
    run_id: "run-1",
    status: 403,
    request: {
      protocol: "https",
      method: "GET",
      host: "api.test",
      port: 443,
      path: "/",
      query: "",
      headers: {},
      bodySize: 0,
      mcp: null,
      ...request,
    },
    ...over,
  }) as DecisionRecord;

describe("what a line says the grants decided", () => {
  it.each([
    ["a default deny", {}, {}, "deny", null],
    ["a deny rule", { rule: "no-admin" }, {}, "deny", "no-admin"],
    [
      "a deny answered as a JSON-RPC error, the run's audit then full",
      {
        rule: "mcp-no-delete",
        note: "answered as a JSON-RPC error (HTTP 200); this run's audit is full (9 bytes; audit_max_per_run 9): its later requests are refused and not written",
      },
      {},
      "deny",
      "mcp-no-delete",
    ],
    ["an allow", { verdict: "allow", rule: "api", status: 200 }, {}, "allow", "api"],
    [
      "an allow a budget then refused",
      { verdict: "allow", rule: "api", status: 402, note: "budget" },
      {},
      "allow",
      "api",
    ],
    [
      "an allow the SSRF guard refused once the name resolved",
      {
        rule: "api",
        note: "api.test resolves to 10.0.0.1 (private); only a grant naming exactly this host may reach it",
      },
      {},
      "allow",
      "api",
    ],
    [
      "a held call",
      { verdict: "gate", rule: "hold", status: 200, note: "held as g-1" },
      {},
      "gate",
      "hold",
    ],
    [
      "a gated call the desk could not take",
      {
        rule: "hold",
        note: "gated, not held: this gateway has no approval desk to hold the call on",
      },
      {},
      "gate",
      "hold",
    ],
    [
      "a raw tunnel",
      { verdict: "tunnel", rule: "pipe", status: 200 },
      { method: "CONNECT", path: "" },
      "tunnel",
      "pipe",
    ],
  ] as const)("%s", (_, over, request, verdict, rule) => {
    expect(whatTheLineSays(line(over, request))).toEqual({
      kind: "decided",
      decided: { verdict, rule },
    });
  });

  it.each([
    [{ rule: "audit-full", status: 429 }, {}, "the run's share of the audit log was full"],
    [{ rule: "closed" }, {}, "a host service no box may reach, whatever the grants say"],
    [{ rule: "sentinel-leak" }, {}, "the sentinel tripwire, which reads what the log redacts"],
    [{ status: 413, note: "body too large" }, {}, "its body was over the size the door reads"],
    [
      { note: "not judged: the config is broken" },
      {},
      "the config was broken then: everything was denied",
    ],
    [{ status: 400 }, {}, "a JSON-RPC batch, refused whatever the grants say"],
    [
      { verdict: "allow", rule: "action-host", status: 200 },
      { host: "actions.roster.internal" },
      "the action host: its own grants decide (roster approvals)",
    ],
  ] as const)("counts a refusal the grants didn't make: %j", (over, request, reason) => {
    expect(whatTheLineSays(line(over, request))).toEqual({ kind: "not", reason });
  });
});

describe("a tunnel judged again", () => {
  it("is the CONNECT's verdict: a tunnel grant passes it raw, or its requests are judged inside", () => {
    mkdirSync(join(dir, "tunnels"));
    writeFileSync(
      join(dir, "tunnels", "org.toml"),
      `
[[grant]]
name = "pipe"
verdict = "tunnel"
match = { host = "git.test" }

[[grant]]
name = "read"
verdict = "allow"
match = { host = "*.test", method = ["GET"] }
`,
    );
    const config = loadConfig(join(dir, "tunnels"), { vaultDir: join(dir, "vault") });
    const log = join(dir, "tunnels.jsonl");
    const connect = { method: "CONNECT", path: "" };
    const lines = [
      line({ verdict: "tunnel", rule: "pipe", status: 200 }, { ...connect, host: "git.test" }),
      line({ verdict: "tunnel", rule: "pipe", status: 200 }, { ...connect, host: "old.test" }),
      line({ verdict: "allow", rule: "read", status: 200 }, { host: "git.test" }),
      line({ verdict: "allow", rule: "read", status: 200 }, { host: "git.test", protocol: "http" }),
      line({ verdict: "allow", rule: "read", status: 200 }, { host: "web.test" }),
    ];
    writeFileSync(log, `${lines.map((one) => JSON.stringify(one)).join("\n")}\n`);
    const report = replayLog(log, config);
    expect(report.unchanged).toBe(2);
    expect(report.flips.map((group) => [group.from, group.to, group.examples[0]?.request])).toEqual(
      [
        [
          { verdict: "tunnel", rule: "pipe" },
          { verdict: "intercept", rule: null },
          "CONNECT old.test:443",
        ],
        [
          { verdict: "allow", rule: "read" },
          { verdict: "tunnel", rule: "pipe" },
          "GET https://git.test/",
        ],
      ],
    );
    expect(report.notReplayed).toMatchObject([
      {
        reason: "plain HTTP that may have come through a CONNECT this config passes raw",
        count: 1,
      },
    ]);
  });
});
