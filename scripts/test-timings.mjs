#!/usr/bin/env node
// What a test run cost, from the files test/support/timing-reporter.ts wrote
// under test-output/timings/ (one per vitest pass: docker, podman, runsc,
// host on this Node, host on Node 24): each pass's time, the ten slowest
// files, every file over its budget (scripts/test-budgets.mjs), and last, each
// failed file with what failed in it and the first lines of why.
// scripts/test-lanes.mjs prints it as `npm test` ends; run it alone to see
// the last run's again: `node scripts/test-timings.mjs [--json]`.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { BUDGETS, budgetOf } from "./test-budgets.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
export const TIMINGS_DIR = join(root, "test-output/timings");

/** Every pass's timings written under test-output/timings/. */
export function readPasses(dir = TIMINGS_DIR) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => name.endsWith(".json"))
    .map((name) => JSON.parse(readFileSync(join(dir, name), "utf8")))
    .sort((a, b) => a.started_at.localeCompare(b.started_at));
}

/** The summary as data: per pass, the slowest ten, and the files over budget. */
export function summarise(passes) {
  const all = passes.flatMap((pass) => pass.files.map((file) => ({ ...file, pass: pass.pass })));
  const slowest = [...all].sort((a, b) => b.seconds - a.seconds).slice(0, 10);
  const over = all
    .map((file) => ({ ...file, budget: budgetOf(file.file, file.pass) }))
    .filter((file) => file.seconds > file.budget);
  return {
    // a budget for a file that is gone (renamed, removed) would quietly budget nothing
    stale_budgets: Object.keys(BUDGETS).filter((file) => !existsSync(join(root, file))),
    passes: passes.map((pass) => ({
      pass: pass.pass,
      wall_seconds: pass.wall_seconds,
      files: pass.files.length,
      file_seconds: Math.round(pass.files.reduce((sum, file) => sum + file.seconds, 0)),
    })),
    slowest,
    over_budget: over,
    failed: all.filter((file) => file.state === "failed"),
  };
}

const clock = (seconds) => {
  const s = Math.round(seconds);
  return s >= 60 ? `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, "0")} s` : `${s} s`;
};

/** The summary as lines for a person; `total` is the whole command's time, when known. */
export function render(summary, total) {
  const lines = ["", "──── what the tests cost (test-output/timings/) ────"];
  if (total !== undefined) lines.push(`total: ${clock(total)}`);
  for (const pass of summary.passes)
    lines.push(
      `  ${pass.pass.padEnd(12)} ${clock(pass.wall_seconds).padStart(10)}  (${pass.files} files)`,
    );
  lines.push("the ten slowest files:");
  for (const file of summary.slowest)
    lines.push(
      `  ${file.seconds.toFixed(1).padStart(6)} s  ${file.file}  [${file.pass}]${file.state === "passed" ? "" : `  ${file.state}`}`,
    );
  if (summary.over_budget.length) {
    lines.push("OVER BUDGET (scripts/test-budgets.mjs):");
    for (const file of summary.over_budget)
      lines.push(
        `  ${file.file} [${file.pass}]: ${file.seconds.toFixed(1)} s, budget ${file.budget} s`,
      );
  } else lines.push("every file within its budget (scripts/test-budgets.mjs)");
  for (const file of summary.stale_budgets)
    lines.push(`scripts/test-budgets.mjs names ${file}, which is not there: mend the list`);
  // last, so the end of a long run's output says what broke and why
  if (summary.failed.length) {
    lines.push("WHAT FAILED:");
    for (const file of summary.failed) {
      lines.push(`  ${file.file} [${file.pass}]`);
      for (const failure of file.failures ?? [])
        lines.push(
          `    ${failure.name}`,
          ...failure.error.split("\n").map((line) => `      ${line}`),
        );
    }
  }
  return lines.join("\n");
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const summary = summarise(readPasses());
  if (process.argv.includes("--json")) console.log(JSON.stringify(summary, null, 2));
  else console.log(render(summary));
}
