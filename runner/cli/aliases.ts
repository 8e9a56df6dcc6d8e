import type { Command } from "commander";

/**
 * The public roster's spellings, accepted as ours. It groups commands under
 * `server`, `worker`, `channel` and `connection`; a user coming from it (or
 * following its docs) types `roster server approvals ls` or `roster worker run
 * elf "…"`. Each spelling is rewritten to our command before commander sees
 * the line, so it reaches the very same command — same handler, same options,
 * same help — and help only ever shows ours.
 */
export interface Alias {
  /** The words as the public roster spells them, after `roster`. */
  spelled: readonly string[];
  /** Ours. */
  ours: readonly string[];
}

export const ALIASES: readonly Alias[] = [
  { spelled: ["server", "approvals"], ours: ["approvals"] },
  { spelled: ["server", "gates"], ours: ["approvals"] },
  { spelled: ["server", "validate"], ours: ["validate"] },
  // there is no deploy step: config is read live, and validate checks an edit first
  { spelled: ["server", "deploy"], ours: ["validate"] },
  { spelled: ["server", "run"], ours: ["server", "start"] },
  // where `channel` lived before it became a noun of its own
  { spelled: ["server", "channel"], ours: ["channel"] },
  { spelled: ["server", "runs"], ours: ["runs"] },
  { spelled: ["worker", "run"], ours: ["run"] },
  { spelled: ["worker", "task"], ours: ["task"] },
  { spelled: ["worker", "trust"], ours: ["trust"] },
  { spelled: ["worker", "memory"], ours: ["memory"] },
  { spelled: ["worker", "init"], ours: ["worker", "add"] },
  // a session at this terminal; ours is always a terminal channel's
  { spelled: ["worker", "chat"], ours: ["talk"] },
  { spelled: ["completions"], ours: ["completion"] },
];

/** The words after `roster` in our spelling (unchanged when no alias starts them). */
export function ourSpelling(args: readonly string[]): string[] {
  for (const alias of ALIASES) {
    if (alias.spelled.every((word, i) => args[i] === word))
      return [...alias.ours, ...args.slice(alias.spelled.length)];
  }
  return [...args];
}

/**
 * A noun typed alone shows its most useful read-only view, as the public
 * roster's does, instead of help and exit 2: the server its status, every
 * other noun its list. Keys and views in our spelling, so `roster server
 * approvals` (read as `approvals`) lists the approvals too. `--help` after a
 * noun still shows its help.
 */
export const BARE_NOUNS: Readonly<Record<string, readonly string[]>> = {
  server: ["server", "status"],
  worker: ["worker", "ls"],
  connection: ["connection", "ls"],
  channel: ["channel", "ls"],
  approvals: ["approvals", "ls"],
  runs: ["runs", "ls"],
  task: ["task", "ls"],
};

/** A full argv (node, script, words…) in our spelling, a bare noun given its view. */
export function withOurSpelling(argv: readonly string[]): string[] {
  const words = ourSpelling(argv.slice(2));
  const view = words.length === 1 && words[0] !== undefined ? BARE_NOUNS[words[0]] : undefined;
  return [...argv.slice(0, 2), ...(view ?? words)];
}

/**
 * The command these words reach: the deepest command of the tree whose names
 * they spell, aliases read as ours. What a test compares, alias against ours.
 */
export function resolveCommand(program: Command, args: readonly string[]): Command {
  let at = program;
  for (const word of ourSpelling(args)) {
    const next = at.commands.find((command) => command.name() === word);
    if (!next) break;
    at = next;
  }
  return at;
}
