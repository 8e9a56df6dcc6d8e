/**
 * `roster config history | diff | rollback`: declares the commands that read
 * back the configs roster has taken (kept by digest under data/config-history/)
 * and put an old one back. What each does lives in runner/cli/does/config-history.ts.
 */
import type { Command } from "commander";

// Implementations load when a command runs, so `roster --help` stays instant.
const doesHistory = () => import("../does/config-history.ts");

export function registerConfigCommands(program: Command): void {
  const config = program
    .command("config")
    .description("the configs taken, by digest: what changed, and putting an old one back");

  config
    .command("history")
    .description(
      "every config the server, a gateway or a run took, newest first: digest, when, by what, files changed",
    )
    .option("--limit <n>", "how many", "20")
    .option("--json", "the same as a JSON array, newest first")
    .action(async (flags: { limit: string; json?: boolean }) =>
      (await doesHistory()).configHistoryCommand(flags),
    );

  config
    .command("diff <a> <b>")
    .description(
      "a unified diff per file between two configs (digests or unique prefixes; `current` is the files now)",
    )
    .option("--json", "the changed files and their diffs as one JSON object")
    .action(async (a: string, b: string, flags: { json?: boolean }) =>
      (await doesHistory()).configDiffCommand(a, b, flags),
    );

  config
    .command("rollback <digest>")
    .description(
      "write a kept config back, byte for byte: loaded and tested first like any edit, refused if it fails",
    )
    .option("--json", "what was written and removed, as one JSON object")
    .action(async (digest: string, flags: { json?: boolean }) =>
      (await doesHistory()).configRollbackCommand(digest, flags),
    );
}
