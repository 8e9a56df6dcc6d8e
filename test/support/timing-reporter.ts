import { mkdirSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import type { Reporter, TestModule } from "vitest/node";

/**
 * Writes what each test file cost in this vitest pass to
 * test-output/timings/<pass>.json, where scripts/test-timings.mjs reads it
 * for `npm test`'s closing summary (the total, the ten slowest files, and
 * every file over its budget in test/budgets.json). The pass is named by
 * ROSTER_TEST_PASS (scripts/test-lanes.mjs and test-engines.mjs set it), so
 * the Docker, Podman, runsc and host passes keep a file each.
 *
 * A file's time is what vitest spent on it: its import and setup, every
 * hook and every test, not its place in the queue.
 */
export interface FileTiming {
  file: string;
  seconds: number;
  state: string;
  tests: number;
  /** Its three slowest tests, slowest first. */
  slowest: { name: string; seconds: number }[];
  /**
   * What failed in it, each a test's (or a hook's, or the file's) name and
   * the first lines of its error: the run's closing summary names the cause
   * where a reader of its last lines will see it. At most MAX_FAILURES.
   */
  failures?: { name: string; error: string }[];
}

export interface PassTimings {
  pass: string;
  started_at: string;
  wall_seconds: number;
  files: FileTiming[];
}

export const TIMINGS_DIR = "test-output/timings";

const round = (ms: number) => Math.round(ms / 100) / 10;

const MAX_FAILURES = 5;
const ERROR_LINES = 6;
const ERROR_CHARS = 800;

/** An error's first lines, bounded: enough to say what broke, never a whole log. */
function shortError(error: { name?: string; message?: string }): string {
  const text = `${error.name && error.name !== "Error" ? `${error.name}: ` : ""}${error.message ?? "(no message)"}`;
  const lines = text.split("\n").slice(0, ERROR_LINES).join("\n");
  return lines.length > ERROR_CHARS ? `${lines.slice(0, ERROR_CHARS)}…` : lines;
}

/** What failed in a file: its own errors, a suite's hooks, then its failed tests. */
function failuresOf(module: TestModule): { name: string; error: string }[] {
  const out: { name: string; error: string }[] = [];
  for (const error of module.errors()) out.push({ name: "(the file)", error: shortError(error) });
  for (const suite of module.children.allSuites())
    for (const error of suite.errors())
      out.push({ name: suite.fullName, error: shortError(error) });
  for (const test of module.children.allTests()) {
    const result = test.result();
    if (result.state !== "failed") continue;
    for (const error of result.errors) out.push({ name: test.fullName, error: shortError(error) });
  }
  return out.slice(0, MAX_FAILURES);
}

export default class TimingReporter implements Reporter {
  private readonly started = Date.now();
  private readonly files: FileTiming[] = [];
  private root = process.cwd();

  onInit(vitest: { config: { root: string } }): void {
    this.root = vitest.config.root;
  }

  onTestModuleEnd(module: TestModule): void {
    const d = module.diagnostic();
    const tests = [...module.children.allTests()];
    const slowest = tests
      .map((test) => ({ name: test.fullName, seconds: round(test.diagnostic()?.duration ?? 0) }))
      .sort((a, b) => b.seconds - a.seconds)
      .slice(0, 3);
    const failures = module.state() === "failed" ? failuresOf(module) : [];
    this.files.push({
      file: relative(this.root, module.moduleId),
      seconds: round(
        d.environmentSetupDuration +
          d.prepareDuration +
          d.collectDuration +
          d.setupDuration +
          d.duration,
      ),
      state: module.state(),
      tests: tests.length,
      slowest,
      ...(failures.length ? { failures } : {}),
    });
  }

  onTestRunEnd(): void {
    const pass = process.env.ROSTER_TEST_PASS || "vitest";
    const dir = join(this.root, TIMINGS_DIR);
    mkdirSync(dir, { recursive: true });
    const out: PassTimings = {
      pass,
      started_at: new Date(this.started).toISOString(),
      wall_seconds: round(Date.now() - this.started),
      files: this.files.sort((a, b) => b.seconds - a.seconds),
    };
    writeFileSync(join(dir, `${pass}.json`), `${JSON.stringify(out, null, 2)}\n`);
  }
}
