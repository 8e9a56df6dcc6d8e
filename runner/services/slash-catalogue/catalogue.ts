/**
 * Every command a person can give from chat or `roster talk`, in one list:
 * what Discord registers as application commands, what `/help` prints, how
 * a typed line is read, and which authority each part needs all come from
 * here, so the platforms can't disagree about what a command is.
 */

/**
 * What a part of a command needs (authority.ts decides who has it):
 * `anyone` in the channel, `look` (approvers and admins: it shows the desk,
 * runs and tasks), `decide` (approvers and admins: approve or deny), or
 * `change` (admins only: it changes what the worker does or may do).
 */
export type Authority = "anyone" | "look" | "decide" | "change";

/** What an option names, for autocomplete and for checking it. */
export type OptionKind = "text" | "gate" | "task" | "run" | "worker" | "mode" | "channel";

export interface OptionSpec {
  name: string;
  description: string;
  kind: OptionKind;
  required?: boolean;
  /** Typed lines: takes the rest of the words (a note, a prompt, a purpose). */
  rest?: boolean;
  /** Typed lines: given as `--name value`, not by position. */
  flag?: boolean;
}

export interface SubSpec {
  name: string;
  description: string;
  authority: Authority;
  options: OptionSpec[];
}

export interface CommandSpec {
  name: string;
  description: string;
  subs: SubSpec[];
  /**
   * The part a typed line means when its first word names none: `/runs`
   * is `/runs ls`, `/runs r-12` is `/runs show r-12`.
   */
  bare: { empty: string; word?: string };
}

const text = (name: string, description: string, more: Partial<OptionSpec> = {}): OptionSpec => ({
  name,
  description,
  kind: "text",
  ...more,
});

export const COMMANDS: readonly CommandSpec[] = [
  {
    name: "approvals",
    description: "proposals of this worker waiting for a person",
    bare: { empty: "ls", word: "show" },
    subs: [
      { name: "ls", description: "what waits", authority: "look", options: [] },
      {
        name: "show",
        description: "one proposal, exactly as it would be sent",
        authority: "look",
        options: [{ name: "id", description: "the proposal", kind: "gate", required: true }],
      },
      {
        name: "approve",
        description: "run one now, once",
        authority: "decide",
        options: [
          { name: "id", description: "the proposal", kind: "gate", required: true },
          text("note", "why, for the journal", { rest: true }),
        ],
      },
      {
        name: "deny",
        description: "refuse one; the worker's journal says why",
        authority: "decide",
        options: [
          { name: "id", description: "the proposal", kind: "gate", required: true },
          text("note", "why, for the worker", { rest: true }),
        ],
      },
    ],
  },
  {
    name: "task",
    description: "this worker's task list",
    bare: { empty: "ls", word: "show" },
    subs: [
      { name: "ls", description: "open tasks and recurring ones", authority: "look", options: [] },
      {
        name: "show",
        description: "one task or recurring template",
        authority: "look",
        options: [{ name: "id", description: "t-… or r-…", kind: "task", required: true }],
      },
      {
        name: "add",
        description: "file a task (or a recurring one with cron or every)",
        authority: "change",
        options: [
          text("prompt", "what to do", { required: true, rest: true }),
          text("cron", 'a cron expression, e.g. "0 9 * * 1-5"', { flag: true }),
          text("every", "an interval, e.g. 6h", { flag: true }),
          text("ceiling", "minutes the run may take", { flag: true }),
        ],
      },
      {
        name: "rm",
        description: "take a task off the list, or retire a recurring one",
        authority: "change",
        options: [{ name: "id", description: "t-… or r-…", kind: "task", required: true }],
      },
      {
        name: "requeue",
        description: "run a finished task again",
        authority: "change",
        options: [{ name: "id", description: "t-…", kind: "task", required: true }],
      },
    ],
  },
  {
    name: "runs",
    description: "this worker's runs",
    bare: { empty: "ls", word: "show" },
    subs: [
      { name: "ls", description: "the last runs", authority: "look", options: [] },
      {
        name: "show",
        description: "one run's outcome",
        authority: "look",
        options: [{ name: "id", description: "the run", kind: "run", required: true }],
      },
    ],
  },
  {
    name: "channel",
    description: "this channel's trust, wake mode and purpose",
    bare: { empty: "show" },
    subs: [
      { name: "show", description: "its standing", authority: "look", options: [] },
      { name: "trust", description: "trust this channel", authority: "change", options: [] },
      { name: "untrust", description: "stop trusting it", authority: "change", options: [] },
      {
        name: "mode",
        description: "wake on every message, or only when mentioned",
        authority: "change",
        options: [{ name: "mode", description: "all or mention", kind: "mode", required: true }],
      },
      {
        name: "link",
        description: "make this DM and another of your surfaces one conversation",
        authority: "change",
        options: [
          {
            name: "other",
            description: "the other surface's id, e.g. slack-t0…-dm-u0…",
            kind: "channel",
            required: true,
          },
        ],
      },
      {
        name: "unlink",
        description: "make this surface its own conversation again",
        authority: "change",
        options: [],
      },
    ],
  },
  {
    name: "purpose",
    description: "what this channel is for",
    bare: { empty: "show" },
    subs: [
      { name: "show", description: "the purpose", authority: "look", options: [] },
      {
        name: "edit",
        description: "a new purpose (approved first where the channel isn't trusted)",
        authority: "look",
        options: [text("text", "the new purpose", { required: true, rest: true })],
      },
    ],
  },
  {
    name: "worker",
    description: "the workers: who they are, pause and resume",
    bare: { empty: "show", word: "show" },
    subs: [
      { name: "ls", description: "every worker", authority: "look", options: [] },
      {
        name: "show",
        description: "one worker (this one by default)",
        authority: "look",
        options: [{ name: "name", description: "the worker", kind: "worker" }],
      },
      {
        name: "pause",
        description: "start no run of it until resumed",
        authority: "change",
        options: [
          { name: "name", description: "the worker", kind: "worker", required: true },
          text("reason", "why, for whoever resumes it", { rest: true }),
        ],
      },
      {
        name: "resume",
        description: "let it run again",
        authority: "change",
        options: [{ name: "name", description: "the worker", kind: "worker", required: true }],
      },
    ],
  },
  {
    name: "identity",
    description: "who this worker is, and who you are to roster",
    bare: { empty: "show" },
    subs: [{ name: "show", description: "both", authority: "anyone", options: [] }],
  },
  {
    name: "help",
    description: "the commands, and which of them you may run",
    bare: { empty: "show" },
    subs: [{ name: "show", description: "the list", authority: "anyone", options: [] }],
  },
];

/** Older spellings `roster talk` has always taken: `/approve <id>` is `/approvals approve <id>`. */
export const ALIASES: Readonly<Record<string, string>> = {
  approve: "approvals approve",
  deny: "approvals deny",
};

export function commandSpec(name: string): CommandSpec | undefined {
  return COMMANDS.find((command) => command.name === name);
}

export function subSpec(command: CommandSpec, name: string): SubSpec | undefined {
  return command.subs.find((sub) => sub.name === name);
}
