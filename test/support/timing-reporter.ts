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
}

export interface PassTimings {
  pass: string;
  started_at: string;
  wall_seconds: number;
  files: FileTiming[];
}

export const TIMINGS_DIR = "test-output/timings";

const round = (ms: number) => Math.round(ms / 100) / 10;

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
