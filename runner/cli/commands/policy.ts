/**
 * `roster policy check`: declares the command that asks the door's own
 * judging what it would do with one request, before any box sends it;
 * `roster policy replay`: what it would do with every request the audit log
 * recorded. What they do lives in runner/cli/does/policy.ts and policy-replay.ts.
 */
import type { Command } from "commander";
import type { PolicyCheckFlags } from "../does/policy.ts";
import type { PolicyReplayFlags } from "../does/policy-replay.ts";

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

  policy
    .command("replay")
    .description(
      "judge the audit log's requests again under this config (or a draft's): what would flip, by worker and rule; exit 1 when something would",
    )
    .option("--since <when>", "only requests since a span back (30m, 12h, 7d, 2w) or a date")
    .option("--worker <name>", "only this worker's requests")
    .option("--config <dir>", "judge under this config root (a draft) instead of the deployment's")
    .option("--json", "the report as one JSON object")
    .action(async (flags: PolicyReplayFlags) =>
      (await import("../does/policy-replay.ts")).policyReplayCommand(flags),
    );
}
