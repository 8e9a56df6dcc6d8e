import { userInfo } from "node:os";
import type { Command } from "commander";
import { rosterPaths } from "../config/paths.ts";

/**
 * The approval desk (`roster approvals …`) and the local inbox (`roster
 * inbox`). Ids may be any unique prefix; `--json` prints what scripts need.
 */
const decidedBy = () => `cli:${process.env.USER ?? userInfo().username}`;

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
    .action(async (flags: { all?: boolean; worker?: string; json?: boolean }) => {
      const { listGates } = await import("../actions/gates.ts");
      const { gateRow } = await import("../actions/desk-view.ts");
      const gates = listGates(rosterPaths(), flags.worker).filter(
        (gate) => flags.all || gate.state === "pending" || gate.state === "failed",
      );
      if (flags.json) {
        for (const gate of gates) process.stdout.write(`${JSON.stringify(gate)}\n`);
        return;
      }
      if (!gates.length) {
        process.stdout.write(flags.all ? "no gates\n" : "nothing waits for you\n");
        return;
      }
      for (const gate of gates) process.stdout.write(`${gateRow(gate)}\n`);
    });

  approvals
    .command("show <id>")
    .description("exactly what would be sent, and the worker's reason")
    .option("--json", "the gate as JSON")
    .action(async (id: string, flags: { json?: boolean }) => {
      const { findGate } = await import("../actions/gates.ts");
      const { showGate } = await import("../actions/desk-view.ts");
      const paths = rosterPaths();
      const gate = findGate(paths, id);
      process.stdout.write(
        flags.json ? `${JSON.stringify(gate, null, 2)}\n` : showGate(paths, gate),
      );
    });

  for (const verb of ["approve", "deny"] as const) {
    approvals
      .command(`${verb} <id> [note...]`)
      .description(
        verb === "approve" ? "run it now, once" : "refuse it; the worker's journal says why",
      )
      .option("--json", "the decided gate as JSON")
      .action(async (id: string, note: string[], flags: { json?: boolean }) => {
        const paths = rosterPaths();
        const { findGate } = await import("../actions/gates.ts");
        const { approveGate, denyGate } = await import("../actions/desk.ts");
        const gate = findGate(paths, id);
        const decision = { by: decidedBy(), ...(note.length ? { note: note.join(" ") } : {}) };
        const decided = await (verb === "approve" ? approveGate : denyGate)(paths, gate, decision);
        if (flags.json) process.stdout.write(`${JSON.stringify(decided)}\n`);
        else if (decided.state === "executed")
          process.stdout.write(`${decided.id} executed: ${JSON.stringify(decided.result)}\n`);
        else if (decided.state === "denied") process.stdout.write(`${decided.id} denied\n`);
        else process.stdout.write(`${decided.id} failed: ${decided.error ?? "unknown error"}\n`);
        if (decided.state === "failed") process.exitCode = 1;
      });
  }

  program
    .command("trust <worker>")
    .description("what a worker's proposals would do: run at once, or wait for a human")
    .option("--json", "the same as JSON")
    .action(async (worker: string, flags: { json?: boolean }) => {
      const paths = rosterPaths();
      const { formatConfigError, loadConfig } = await import("../config/load.ts");
      const { formatTrust, trustOf } = await import("../actions/trust-view.ts");
      const { RosterError } = await import("../errors.ts");
      const config = loadConfig(paths.config, { vaultDir: paths.vault });
      if (config.errors.length)
        throw new RosterError(
          `config is invalid:\n${config.errors.map(formatConfigError).join("\n")}`,
          {
            exitCode: 2,
          },
        );
      if (!config.workers.has(worker))
        throw new RosterError(`no worker named "${worker}"`, { exitCode: 2 });
      const intents = trustOf(paths, config, worker);
      process.stdout.write(
        flags.json ? `${JSON.stringify(intents)}\n` : formatTrust(worker, intents),
      );
    });

  program
    .command("inbox")
    .description("messages workers sent you (message_user) when no chat is configured")
    .option("--json", "one JSON message per line")
    .option("--limit <n>", "the last n messages", "20")
    .action(async (flags: { json?: boolean; limit: string }) => {
      const { readInbox } = await import("../actions/desk-view.ts");
      const messages = readInbox(rosterPaths(), Number(flags.limit) || 20);
      if (flags.json) {
        for (const message of messages) process.stdout.write(`${JSON.stringify(message)}\n`);
        return;
      }
      if (!messages.length) process.stdout.write("no messages\n");
      for (const message of messages)
        process.stdout.write(`${message.ts.slice(0, 19)}Z ${message.worker}: ${message.text}\n`);
    });
}
