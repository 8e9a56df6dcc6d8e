import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { PROJECT_ROOT } from "../../runner/ground/version.ts";
// @ts-expect-error: a plain script, no types
import { readPasses, render, summarise } from "../../scripts/test-timings.mjs";

/**
 * `npm test`'s closing summary ends with what failed and why: a real vitest
 * pass, with the project's timing reporter, over a file whose suite's
 * beforeAll throws and whose other test fails. CI keeps only the end of a
 * long run's output, so the cause has to be there, not minutes above it.
 */
const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), "roster-timings-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("the test run's closing summary", () => {
  it("names each failed file last, with the failing hook or test and its error's first lines", async () => {
    writeFileSync(
      join(dir, "vitest.config.mjs"),
      `export default { test: { globals: true, include: ["*.probe.js"], reporters: [${JSON.stringify(join(PROJECT_ROOT, "test/support/timing-reporter.ts"))}] } };\n`,
    );
    writeFileSync(
      join(dir, "broken.probe.js"),
      [
        'describe("a listener suite", () => {',
        '  beforeAll(() => { throw new Error("the server ended (exit code 2)\\nline one of its log\\nline two\\n3\\n4\\n5\\nline seven, left off"); });',
        '  it("never runs", () => {});',
        "});",
        'it("adds", () => { expect(1 + 1).toBe(3); });',
        'it("passes", () => {});',
        "",
      ].join("\n"),
    );
    writeFileSync(join(dir, "fine.probe.js"), 'it("passes", () => {});\n');
    const vitest = join(PROJECT_ROOT, "node_modules/vitest/vitest.mjs");
    const failed = await run(
      process.execPath,
      [vitest, "run", "--root", dir, "--config", join(dir, "vitest.config.mjs")],
      { cwd: dir, env: { ...process.env, ROSTER_TEST_PASS: "probe" } },
    ).catch((error: { code?: number }) => error);
    expect((failed as { code?: number }).code, "vitest exits non-zero").toBe(1);

    const text: string = render(summarise(readPasses(join(dir, "test-output/timings"))));
    const tail = text.slice(text.indexOf("WHAT FAILED:"));
    expect(text.indexOf("WHAT FAILED:"), text).toBeGreaterThan(0);
    expect(tail).toBe(
      [
        "WHAT FAILED:",
        "  broken.probe.js [probe]",
        "    a listener suite",
        "      the server ended (exit code 2)",
        "      line one of its log",
        "      line two",
        "      3",
        "      4",
        "      5",
        "    adds",
        "      AssertionError: expected 2 to be 3 // Object.is equality",
      ].join("\n"),
    );
  });
});
