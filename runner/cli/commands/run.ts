/**
 * `roster init | validate | login | run | runs …`: declares the commands that set
 * up a root and run workers — their arguments, flags and help. What each does
 * lives in runner/cli/does/run.ts, config.ts and runs-prune.ts.
 */
import type { Command } from "commander";
import { rosterPaths } from "../../ground/config/paths.ts";
import type { RunFlags } from "../does/run.ts";
import { DEFAULT_CEILING } from "../run-words.ts";

// Implementations load when a command runs, so `roster --help` stays instant.
const doesConfig = () => import("../does/config.ts");
const doesRun = () => import("../does/run.ts");

export function registerRunCommands(program: Command): void {
  program
    .command("init")
    .description("create the config, data and state roots with one worker, elf (never overwrites)")
    .action(async () => (await doesConfig()).initCommand());

  program
    .command("validate")
    .description("check every config file; prints file:line: field: message per problem")
    .option("--json", "print the problems as JSON")
    .action(async (flags: { json?: boolean }) => (await doesConfig()).validateCommand(flags));

  program
    .command("login <credential>")
    .description(
      "store a credential in the vault: a model key (from ANTHROPIC_API_KEY / OPENAI_API_KEY, or a prompt), or named fields",
    )
    .option(
      "--field <name=value>",
      "store this field (repeatable), e.g. --field host=smtp.example.com --field port=465",
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .option(
      "--expires <when>",
      "when the secret expires: an RFC 3339 time or a span (30d, 12h, 2w); ls marks it a week before",
    )
    .action(async (credential: string, flags: { field?: string[]; expires?: string }) =>
      (await doesConfig()).loginCommand(credential, flags),
    );

  program
    .command("run <worker> <prompt...>")
    .description("run a worker once in a locked box and print its answer")
    .option("--ceiling <minutes>", "wall-clock limit in minutes", DEFAULT_CEILING)
    .option("--json", "stream pi's JSON events on stdout instead of the readable view")
    .option("--local", "start the box from this process even when a server is running")
    .action(async (worker: string, words: string[], flags: RunFlags) =>
      (await doesRun()).runCommand(worker, words, flags),
    );

  const runs = program.command("runs").description("run records");
  runs
    .command("ls")
    .description("recent runs, newest first")
    .option("--worker <worker>", "only this worker's runs")
    .option("--limit <n>", "how many", "20")
    .option("--json", "print JSON rows")
    .action(async (flags: { worker?: string; limit: string; json?: boolean }) =>
      (await doesRun()).listRunsCommand(flags),
    );
  runs
    .command("prune")
    .description(
      "drop the $HOME and repo clones of runs that ended longer ago than --older-than (default [store] scratch_keep); their records stay",
    )
    .option("--older-than <age>", 'an age like "3d", "12h", "90m" or "0s"')
    .option("--worker <worker>", "only this worker's runs")
    .option("--json", "print what was dropped as JSON")
    .action(async (flags: { olderThan?: string; worker?: string; json?: boolean }) => {
      const { pruneRunsCommand } = await import("../does/runs-prune.ts");
      await pruneRunsCommand(rosterPaths(), flags);
    });
  runs
    .command("show <run>")
    .description(
      "one run: its record, model tokens and cost, task, conversation and files (any unique prefix of its id)",
    )
    .option("--json", "the same as one JSON object")
    .action(async (prefix: string, flags: { json?: boolean }) =>
      (await doesRun()).showRunCommand(prefix, flags),
    );
  runs
    .command("context <run>")
    .description(
      "what the model was told: each block of the run's prompt with its size in characters and tokens, a hash, what changed since the worker's previous run, where a prompt cache can reach, and the worker's prompt-cache key",
    )
    .option("--all", "each block's text too, and every turn of a warm session")
    .option("--json", "the blocks as JSON")
    .action(async (prefix: string, flags: { all?: boolean; json?: boolean }) =>
      (await doesRun()).runContextCommand(prefix, flags),
    );
  runs
    .command("recall <run>")
    .description("the memory notes the run's prompt carried, as the model saw them")
    .option("--json", "the notes as JSON")
    .action(async (prefix: string, flags: { json?: boolean }) =>
      (await import("../does/memory.ts")).recallCommand(prefix, flags),
    );
}
