/**
 * `roster policy check`: declares the command that asks the door's own
 * judging what it would do with one request, before any box sends it.
 * What it does lives in runner/cli/does/policy.ts.
 */
import type { Command } from "commander";
import type { PolicyCheckFlags } from "../does/policy.ts";

const collect = (value: string, previous: string[] = []) => [...previous, value];

export function registerPolicyCommands(program: Command): void {
  const policy = program
    .command("policy")
    .description("ask the door's policy before it is live: what it would do, and why");

  policy
    .command("check <worker> <method> <url>")
    .description(
      "the verdict a request from <worker>'s run would get: rule and its line, credential, meters, hint",
    )
    .option("--header <name:value>", "a header the request carries (repeatable)", collect)
    .option("--body-file <file>", "its body (an MCP tools/call is read as the door reads it)")
    .option("--channel <id>", "the channel the run started from")
    .option("--config <dir>", "judge under this config root (a draft) instead of the deployment's")
    .option("--json", "the verdict as one JSON object")
    .action(async (worker: string, method: string, url: string, flags: PolicyCheckFlags) =>
      (await import("../does/policy.ts")).policyCheckCommand(worker, method, url, flags),
    );
}
