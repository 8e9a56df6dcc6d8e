/**
 * `roster approvals …`, `roster trust` and `roster inbox`: declares the approval
 * desk and local inbox commands — their arguments, flags and help. What each
 * does lives in runner/cli/does/action.ts.
 */
import type { Command } from "commander";

// Implementations load when a command runs, so `roster --help` stays instant.
const doesAction = () => import("../does/action.ts");

export function registerActionCommands(program: Command): void {
  const approvals = program
    .command("approvals")
    .description("the approval desk: proposals held for a human");

  approvals
    .command("ls")
    .description("gates waiting for a decision (--all: every gate)")
    .option("--all", "include decided gates")
    .option("--worker <worker>", "only this worker's")
    .option("--json", "one JSON object per gate")
    .action(async (flags: { all?: boolean; worker?: string; json?: boolean }) =>
      (await doesAction()).listGatesCommand(flags),
    );

  approvals
    .command("show <id>")
    .description("exactly what would be sent, and the worker's reason")
    .option("--json", "the gate as JSON")
    .action(async (id: string, flags: { json?: boolean }) =>
      (await doesAction()).showGateCommand(id, flags),
    );

  for (const verb of ["approve", "deny"] as const) {
    approvals
      .command(`${verb} <id> [note...]`)
      .description(
        verb === "approve" ? "run it now, once" : "refuse it; the worker's journal says why",
      )
      .option("--json", "the decided gate as JSON")
      .action(async (id: string, note: string[], flags: { json?: boolean }) =>
        (await doesAction()).decideGateCommand(verb, id, note, flags),
      );
  }

  program
    .command("trust <worker>")
    .description("what a worker's proposals would do: run at once, or wait for a human")
    .option("--json", "the same as JSON")
    .action(async (worker: string, flags: { json?: boolean }) =>
      (await doesAction()).trustCommand(worker, flags),
    );

  program
    .command("inbox")
    .description("messages workers sent you (message_user) when no chat is configured")
    .option("--json", "one JSON message per line")
    .option("--limit <n>", "the last n messages", "20")
    .action(async (flags: { json?: boolean; limit: string }) =>
      (await doesAction()).inboxCommand(flags),
    );
}
