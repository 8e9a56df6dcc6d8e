/**
 * `roster memory`: a worker's memory (~/store/memory/memory.jsonl) seen and
 * corrected from the host; `roster worker memory …` is the public roster's
 * spelling of it (aliases.ts). Every change is a line appended to the file,
 * naming who made it.
 */
import type { Command } from "commander";

// The implementation loads when the command runs, so `roster --help` stays instant.
const does = () => import("../does/memory.ts");

export function registerMemoryCommands(program: Command): void {
  const memory = program
    .command("memory")
    .description("a worker's memory notes: list, show, correct, forget, pin, compact");
  memory
    .command("ls <worker>")
    .description("the worker's live notes, pinned first, then the newest")
    .option("--scope <scope>", "worker (the one scope kept here)")
    .option("--scope-id <id>", "a channel's or a user's id (no such scope is kept here)")
    .option("--json", "the notes as JSON")
    .action(async (worker: string, flags: { scope?: string; scopeId?: string; json?: boolean }) =>
      (await does()).listMemoryCommand(worker, flags),
    );
  memory
    .command("show <worker> <id>")
    .description("one note and every line that made it, with who wrote each")
    .option("--json", "the note and its history as JSON")
    .action(async (worker: string, id: string, flags: { json?: boolean }) =>
      (await does()).showNoteCommand(worker, id, flags),
    );
  memory
    .command("correct <worker> <id> <text...>")
    .description(
      "replace a note's text (a line naming you is appended; the old one stays in the file)",
    )
    .option("--json", "the line appended, as JSON")
    .action(async (worker: string, id: string, text: string[], flags: { json?: boolean }) =>
      (await does()).changeNoteCommand(worker, id, { op: "correct", text: text.join(" ") }, flags),
    );
  for (const [op, description] of [
    ["rm", "forget a note: no prompt shows it again"],
    ["pin", "pin a note: shown before every unpinned one"],
    ["unpin", "unpin a note"],
    ["disable", "hide a note from prompts (enable brings it back)"],
    ["enable", "bring back a note that was disabled or forgotten, as it last read"],
  ] as const) {
    memory
      .command(`${op} <worker> <id>`)
      .description(description)
      .option("--json", "the line appended, as JSON")
      .action(async (worker: string, id: string, flags: { json?: boolean }) =>
        (await does()).changeNoteCommand(worker, id, { op }, flags),
      );
  }
  memory
    .command("compact <worker>")
    .description(
      "rewrite the file as its live notes (the file as it was stays beside it); refused while the worker runs",
    )
    .option("--json", "what was kept, as JSON")
    .action(async (worker: string, flags: { json?: boolean }) =>
      (await does()).compactMemoryCommand(worker, flags),
    );
}
