/**
 * `roster budget`: declares the command that shows each budget limit's spend
 * and what is left in its window, as the gateway counts it.
 */
import type { Command } from "commander";

// The implementation loads when the command runs, so `roster --help` stays instant.

/** `roster budget`: every budget limit, what its window has spent and what is left. */
export function registerBudgetCommands(program: Command): void {
  program
    .command("budget")
    .description("each budget limit's spend and what is left in its window (tokens, usd, …)")
    .option("--worker <worker>", "only the limits that bind this worker")
    .option("--json", "one JSON object per limit")
    .action(async (flags: { worker?: string; json?: boolean }) =>
      (await import("../does/budget.ts")).budgetCommand(flags),
    );
}
