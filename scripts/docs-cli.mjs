#!/usr/bin/env node
// Writes the command reference in docs/cli.md from roster's command tree
// (runner/cli/reference.ts renders it from what `--help` shows). Run it after
// changing a command or a help text; with --check it only says whether the
// file is current. test/unit/docs-cli.test.ts fails while it is not.
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { register } from "tsx/esm/api";

register();
const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const { buildProgram } = await import("../runner/cli/main.ts");
const { renderReference, withReference } = await import("../runner/cli/reference.ts");

const file = join(root, "docs/cli.md");
const current = readFileSync(file, "utf8");
const next = withReference(current, renderReference(buildProgram()));
if (process.argv.includes("--check")) {
  if (next !== current) {
    console.error(
      "docs-cli: docs/cli.md differs from the command tree; run node scripts/docs-cli.mjs",
    );
    process.exit(1);
  }
} else if (next !== current) {
  writeFileSync(file, next);
  console.log("docs-cli: rewrote the command reference in docs/cli.md");
} else {
  console.log("docs-cli: docs/cli.md is current");
}
