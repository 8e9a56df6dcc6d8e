/**
 * `roster channel ls | show | trust | untrust | set | rm | link | unlink`: declares the commands for
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
          ? "sends and purpose edits there run without a gate, from a run of its own (started there or from a linked surface); a linked channel's name sets every member"
          : "sends and purpose edits there wait for approval (even a terminal or DM); a linked channel's name sets every member",
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
    .command("link <name> <surfaces...>")
    .description(
      "make one person's direct surfaces (DMs, a terminal) one channel named <name>: one history (interleaved by send time), purpose, store and trust; the reply goes to the surface they wrote from. The older form `link <surface> <other>` (both surface ids) keeps the first surface's history and each surface's own trust",
    )
    .option("--json", "print the linked channel as JSON")
    .action(async (name: string, surfaces: string[], flags: { json?: boolean }) =>
      (await doesChannelWord()).linkChannelCommand(name, surfaces, flags),
    );

  channel
    .command("unlink <surface>")
    .description(
      "take a surface out of its linked channel: the channel and its history stay with the others; the surface's next message starts a fresh conversation",
    )
    .option("--json", "print the channel it left as JSON")
    .action(async (surface: string, flags: { json?: boolean }) =>
      (await doesChannelWord()).unlinkChannelCommand(surface, flags),
    );

  channel
    .command("set <id> [key] [value]")
    .description(
      "change a setting: mode all|mention (which messages wake the worker); with no key, list the keys with their values",
    )
    .option("--json", "with no key: the keys as JSON")
    .action(
      async (
        id: string,
        key: string | undefined,
        value: string | undefined,
        flags: { json?: boolean },
      ) => (await doesChannelWord()).setChannelCommand(id, key, value, flags),
    );
}
