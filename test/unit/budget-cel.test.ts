import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Budgets, type MeteredCall, spendFor } from "../../runner/boundary/gateway/spend/budget.ts";
import {
  formatConfigError,
  type LoadedConfig,
  loadConfig,
} from "../../runner/ground/config/load.ts";

/**
 * Budget meters in CEL, as the public roster writes them: compiled once at
 * load (a bad expression is an error naming file, line, field and the
 * expression), spending what the table form spends for the same calls, with
 * `[budget] vars` typed from their values; an expression that fails when it
 * runs spends nothing and still can't carry a call past a used-up limit.
 */
const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

function load(org: string): LoadedConfig {
  const root = mkdtempSync(join(tmpdir(), "roster-cel-"));
  roots.push(root);
  writeFileSync(join(root, "org.toml"), org);
  return loadConfig(root);
}

const said = (config: LoadedConfig, kind: "errors" | "notices") =>
  config[kind].map(formatConfigError).map((line) => line.replace(/^.*org\.toml/, "org.toml"));

/** The 1-based line of the first line of `text` that contains `needle`. */
const lineOf = (text: string, needle: string) =>
  text.split("\n").findIndex((line) => line.includes(needle)) + 1;

const call = (over: Partial<MeteredCall> = {}): MeteredCall => ({
  protocol: "https",
  method: "POST",
  host: "api.example.com",
  port: 443,
  path: "/v1/things",
  query: "",
  bodySize: 2048,
  subject: "org/elf",
  rule: "api",
  mcp: null,
  ...over,
});

describe("a meter's CEL at load", () => {
  it("refuses an expression that does not parse, type-check or fit, naming file, line, field and text", () => {
    const org = [
      "[budget]",
      "vars = { price = { call = 0.5 } }",
      "",
      "[[budget.meter]]",
      `match = 'request.bodyBytes + "x" == 1'`,
      'spend = { usd = "1" }',
      "",
      "[[budget.meter]]",
      'match = "request.bodyBytes"',
      'spend = { usd = "1" }',
      "",
      "[[budget.meter]]",
      'match = "decision.rule =="',
      "spend = { usd = 1 }",
      "",
      "[[budget.meter]]",
      "match = 'request.host == \"a\"'",
      'spend = { usd = "request.host", calls = "vars.price.nope" }',
      "",
      "[[budget.meter]]",
      "match = 'request.path.matches(\"^/(a+)+$\")'",
      "spend = { usd = 1 }",
      "",
      "[[budget.meter]]",
      "match = 'vars.price.call > 0.0'",
      "spend = { usd = 'usage.input + \"x\"' }",
      "",
    ].join("\n");
    const config = load(org);
    const errors = said(config, "errors");
    expect(errors).toEqual([
      `org.toml:${lineOf(org, "bodyBytes + ")}: budget.meter.0.match: "request.bodyBytes + \\"x\\" == 1": does not type-check: no such overload: int + string`,
      `org.toml:${lineOf(org, 'match = "request.bodyBytes"')}: budget.meter.1.match: "request.bodyBytes": is an int; it must be a bool`,
      `org.toml:${lineOf(org, "rule ==")}: budget.meter.2.match: "decision.rule ==": does not parse: Unexpected token: EOF`,
      `org.toml:${lineOf(org, 'usd = "request.host"')}: budget.meter.3.spend.usd: "request.host": is a string; it must be a number (int, uint or double)`,
      `org.toml:${lineOf(org, "vars.price.nope")}: budget.meter.3.spend.calls: "vars.price.nope": does not type-check: No such key: nope`,
      expect.stringMatching(
        new RegExp(
          `^org\\.toml:${lineOf(org, "matches(")}: budget\\.meter\\.4\\.match: .*matches\\(\\) is refused in a meter`,
        ),
      ),
      `org.toml:${lineOf(org, "usage.input")}: budget.meter.5.spend.usd: "usage.input + \\"x\\"": does not type-check: no such overload: int + string`,
    ]);
    // a meter with a bad expression is never kept (and the config with it is broken)
    expect(config.meters).toEqual([]);
  });

  it("says how to mix an int and a double, which the public roster's evaluator allows", () => {
    const config = load(
      ["[[budget.meter]]", "match = 'true'", 'spend = { kb = "request.bodyBytes * 0.001" }'].join(
        "\n",
      ),
    );
    expect(said(config, "errors")).toEqual([
      'org.toml:3: budget.meter.0.spend.kb: "request.bodyBytes * 0.001": does not type-check: no such overload: int * double (CEL does not mix int and double: write double(…) around the int)',
    ]);
  });

  it("refuses a comprehension inside another: each stays one pass over one list", () => {
    const config = load(
      [
        "[budget]",
        'vars = { hosts = ["a.test", "b.test"] }',
        "[[budget.meter]]",
        "match = 'vars.hosts.exists(h, vars.hosts.exists(g, g == request.host + h))'",
        "spend = { calls = 1 }",
        "[[budget.meter]]",
        "match = 'vars.hosts.exists(h, h == request.host)'",
        "spend = { calls = 1 }",
      ].join("\n"),
    );
    expect(said(config, "errors")).toEqual([expect.stringContaining("budget.meter.0.match: ")]);
    expect(said(config, "errors")[0]).toContain("inside another is refused");
  });

  it("takes a meter that reads the answer, says how the public roster differs, and spends once it has ended", () => {
    const config = load(
      [
        "[[budget.meter]]",
        "match = 'response.status >= 400'",
        'spend = { errors = 1, bytes = "response.bytes" }',
        "[[budget.meter]]",
        "match = 'usage.model.startsWith(\"claude\")'",
        'spend = { out = "usage.output" }',
        "[[budget.meter]]",
        "match = 'decision.rule == \"model\"'",
        'spend = { model_out = "usage.output" }',
      ].join("\n"),
    );
    expect(said(config, "errors")).toEqual([]);
    expect(said(config, "notices")).toEqual([
      expect.stringMatching(
        /^org\.toml:2: budget\.meter\.0\.match: reads response, which the public roster gives as \{\}/,
      ),
      expect.stringMatching(/^org\.toml:3: budget\.meter\.0\.spend\.bytes: reads response/),
    ]);
    // before the answer: nothing spent, the currencies of those that may match to be checked
    // (a match that doesn't read the answer is read first: "model" is not this call's rule)
    expect(spendFor(config.meters, call())).toEqual({
      spend: {},
      failed: [],
      later: ["errors", "bytes", "out"],
    });
    expect(spendFor(config.meters, call({ rule: "model" })).later).toEqual([
      "errors",
      "bytes",
      "out",
      "model_out",
    ]);
    const usage = { model: "claude-x", input: 10, output: 42, cache_read: 0, cache_write: 0 };
    expect(spendFor(config.meters, call(), { status: 404, bytes: 120, usage }).spend).toEqual({
      errors: 1,
      bytes: 120,
      out: 42,
    });
    expect(spendFor(config.meters, call(), { status: 200, bytes: 120 }).spend).toEqual({});
    expect(
      spendFor(config.meters, call({ rule: "model" }), { status: 200, bytes: 9, usage }).spend,
    ).toEqual({ out: 42, model_out: 42 });
  });
});

describe("a meter's CEL on a call", () => {
  it("spends what its table twin spends, call for call", () => {
    const table = load(
      [
        "[[budget.meter]]",
        'match = { rule = ["api", "mcp"], host = "*.example.com", method = ["GET", "post"], mcp = { tool = "create_*" } }',
        "spend = { calls = 1, usd = 0.25 }",
        "[[budget.meter]]",
        'match = { host = "files.test" }',
        "spend = { calls = 2 }",
      ].join("\n"),
    );
    const cel = load(
      [
        "[[budget.meter]]",
        `match = '''decision.rule in ["api", "mcp"]
          && (request.host == "example.com" || request.host.endsWith(".example.com"))
          && request.method in ["GET", "POST"]
          && request.mcp.tool.startsWith("create_")'''`,
        'spend = { calls = "1", usd = "0.25" }',
        "[[budget.meter]]",
        "match = 'request.host == \"files.test\"'",
        'spend = { calls = "2" }',
      ].join("\n"),
    );
    expect(said(table, "errors")).toEqual([]);
    expect(said(cel, "errors")).toEqual([]);
    const calls: MeteredCall[] = [];
    for (const rule of ["api", "mcp", "other"])
      for (const host of ["example.com", "api.example.com", "notexample.com", "files.test"])
        for (const method of ["GET", "POST", "DELETE"])
          for (const mcp of [
            null,
            { method: "tools/call", tool: "create_issue" },
            { method: "tools/list" },
          ])
            calls.push(call({ rule, host, method, mcp }));
    let spent = 0;
    for (const one of calls) {
      const want = spendFor(table.meters, one);
      expect(spendFor(cel.meters, one)).toEqual(want);
      if (want.spend.usd) spent++;
    }
    // the comparison covered calls that spend and calls that don't
    expect(spent).toBeGreaterThan(0);
    expect(spent).toBeLessThan(calls.length);
  });

  it("reads [budget] vars, TOML integers as ints and floats as doubles, and the call's facts", () => {
    const config = load(
      [
        "[budget]",
        'currencies = ["usd", "kb", "calls"]',
        'vars = { price = { call = 0.05 }, kb = 1024, team = "org/elf" }',
        "[[budget.meter]]",
        "match = 'subject == vars.team && request.path.startsWith(\"/v1/\")'",
        'spend = { usd = "vars.price.call", kb = "request.bodyBytes / vars.kb", calls = "1" }',
      ].join("\n"),
    );
    expect(said(config, "errors")).toEqual([]);
    expect(spendFor(config.meters, call()).spend).toEqual({ usd: 0.05, kb: 2, calls: 1 });
    expect(spendFor(config.meters, call({ subject: "org/imp" })).spend).toEqual({});
    expect(spendFor(config.meters, call({ path: "/v2/things" })).spend).toEqual({});
  });

  it("spends nothing for a meter that fails, says why, and still refuses past a used-up limit", () => {
    const config = load(
      [
        "[budget]",
        "vars = { zero = 0 }",
        "[[budget.meter]]",
        'name = "per-byte"',
        "match = 'true'",
        'spend = { usd = "request.bodyBytes / vars.zero", calls = 1 }',
        "[[budget.limit]]",
        'currency = "usd"',
        'window = "day"',
        "max = 1.0",
      ].join("\n"),
    );
    expect(said(config, "errors")).toEqual([]);
    const reading = spendFor(config.meters, call());
    expect(reading.spend).toEqual({ calls: 1 });
    expect(reading.failed).toEqual([
      { meter: "per-byte", currencies: ["usd"], why: expect.stringContaining("division by zero") },
    ]);
    const audit = mkdtempSync(join(tmpdir(), "roster-cel-audit-"));
    roots.push(audit);
    const budgets = new Budgets(audit, config.meters, config.limits);
    const checked = reading.failed.flatMap((failure) => failure.currencies);
    // room left: the call goes on, spending what could be computed
    expect(budgets.charge("org/elf", reading.spend, Date.now(), checked)).toBeUndefined();
    budgets.record("org/elf", { usd: 1 });
    // the window is used up: a failed usd meter can't carry the call past it
    expect(budgets.charge("org/elf", reading.spend, Date.now(), checked)).toMatchObject({
      currency: "usd",
      window: "day",
    });
  });

  it("evaluates on a long box-chosen path in time linear in it", () => {
    const config = load(
      [
        "[[budget.meter]]",
        'match = \'request.path.contains("aaaaaaaaaaaaaaaaaaaab") || request.query.endsWith("x")\'',
        "spend = { calls = 1 }",
      ].join("\n"),
    );
    const path = `/${"a".repeat(16_000)}`;
    const started = performance.now();
    for (let i = 0; i < 100; i++) spendFor(config.meters, call({ path, query: path }));
    expect(performance.now() - started).toBeLessThan(1000);
  });
});
