/**
 * `roster channel ls | show | trust | untrust | set | rm`: declares the commands for
 * the channels workers talk in, and the operator's word on each — whether sends
 * there run unasked and whether every message wakes the worker or only a
 * mention. What each does lives in
 * runner/cli/does/channel*.ts.
 */
import type { Command } from "commander";

// Implementations load when a command runs, so `roster --help` stays instant.
const doesChannel = () => import("../does/channel.ts");
const doesChannelWord = () => import("../does/channel-word.ts");

export function registerChannelCommands(program: Command): void {
  const channel = program
    .command("channel")
    .description("the channels workers talk in: trust, wake mode, history");

  channel
    .command("ls")
    .description("every channel with its trust, wake mode and activity")
    .option("--json", "one JSON object per channel")
    .action(async (flags: { json?: boolean }) => (await doesChannel()).listChannelsCommand(flags));

  channel
    .command("show <id>")
    .description("one channel: its designation, purpose and latest messages")
    .option("--json", "the same as JSON")
    .option("--last <n>", "how many of the latest messages", "20")
    .action(async (id: string, flags: { json?: boolean; last: string }) =>
      (await doesChannel()).showChannelCommand(id, flags),
    );

  for (const verb of ["trust", "untrust"] as const) {
    channel
      .command(`${verb} <id>`)
      .description(
        verb === "trust"
          ? "sends and purpose edits there run without a gate, from a run of its own (started there or from a linked surface)"
          : "sends and purpose edits there wait for approval (even a terminal or DM)",
      )
      .action(async (id: string) => (await doesChannelWord()).trustChannelCommand(verb, id));
  }

  channel
    .command("rm <id>")
    .description(
      "remove a channel: its history, purpose and files move to data/archive/channel-<id>-<time>/ (never deleted), its trust and mode are forgotten; refused while a session runs in it",
    )
    .option("--yes", "do not ask")
    .option("--json", "print what was done as JSON")
    .action(async (id: string, flags: { yes?: boolean; json?: boolean }) =>
      (await doesChannelWord()).removeChannelCommand(id, flags),
    );

  channel
    .command("link <id> <other>")
    .description(
      "make two of one person's direct surfaces (DMs, a terminal) one conversation: one history (the first's), one session; the reply goes where they last wrote; each keeps its own trust",
    )
    .option("--json", "print the link group as JSON")
    .action(async (id: string, other: string, flags: { json?: boolean }) =>
      (await doesChannelWord()).linkChannelCommand(id, other, flags),
    );

  channel
    .command("unlink <id>")
    .description(
      "take a surface out of its link group: its next message starts its own conversation",
    )
    .action(async (id: string) => (await doesChannelWord()).unlinkChannelCommand(id));

  channel
    .command("set <id> <key> <value>")
    .description("change a setting: mode all|mention (which messages wake the worker)")
    .action(async (id: string, key: string, value: string) =>
      (await doesChannelWord()).setChannelCommand(id, key, value),
    );
}
