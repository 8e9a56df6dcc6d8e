import { type Static, Type } from "@sinclair/typebox";
import { AGE_PATTERN } from "./store-limits.ts";

/**
 * What a box is started with and what it may keep, as org.toml and a
 * worker.toml say it: `[box]` (memory, CPUs, processes, disk, runtime, the
 * ceilings and the stall watch, ready boxes), `[store]` (snapshots and the
 * sizes a box may write), `[context]` and `[memory]` (what a prompt carries).
 * config-schema.ts puts them into the two files' schemas.
 */

/** A duration in whole seconds, minutes or hours, or "off". */
export const STALL_AFTER_PATTERN = "^(off|[1-9][0-9]{0,5}[smh])$";

/** The runtimes a box may run under (box/runtime.ts checks the engine has it). */
export const BoxRuntime = Type.Union([Type.Literal("runc"), Type.Literal("runsc")], {
  description: '"runc" or "runsc"',
});

export type BoxRuntime = Static<typeof BoxRuntime>;

export const BoxSection = Type.Object(
  {
    pids_limit: Type.Optional(Type.Integer({ minimum: 16 })),
    /** e.g. "4g", "512m" */
    memory: Type.Optional(
      Type.String({
        pattern: "^[0-9]+(\\.[0-9]+)?[kmgKMG]$",
        description: 'a size like "4g" or "512m"',
      }),
    ),
    cpus: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
    /**
     * The most a box may write to its stdout, and to its stderr, over its life
     * (each; "512m" by default). Past it the box is stopped, ended by "output":
     * the host reads every byte a box writes, and the run's logs keep them.
     */
    max_output: Type.Optional(
      Type.String({
        pattern: "^[0-9]+(\\.[0-9]+)?[kmgKMG]$",
        description: 'a size like "512m" or "1g"',
      }),
    ),
    /**
     * Once the host firewall rule for the boxes' network. A box has no network
     * now, so this does nothing; it is still read so older files load.
     */
    egress_lockdown: Type.Optional(Type.Boolean()),
    /** A warm chat session's whole life, however busy (minutes). */
    session_ceiling_min: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
    /** One turn of a warm session (minutes): a turn past it ends the session with an error. */
    turn_ceiling_min: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
    /** A chat platform's session ends after this many quiet seconds. */
    chat_idle_secs: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
    /** A terminal (roster talk) session ends after this many quiet seconds. */
    talk_idle_secs: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
    /**
     * A run or a session turn with no model output, tool start or end, or tool
     * output for this long is stopped as stalled: "90s", "5m", "1h", or "off"
     * (org.toml only: a worker may shorten it, never switch it off).
     */
    stall_after: Type.Optional(
      Type.String({
        pattern: STALL_AFTER_PATTERN,
        description: 'a duration like "90s", "5m" or "1h", or "off"',
      }),
    ),
    /**
     * The OCI runtime a box runs under: "runc" (the engine's default) or
     * "runsc" (gVisor, a user-space kernel between the box and the host's;
     * `roster box doctor --fix` registers it). A worker may require runsc, never drop it.
     */
    runtime: Type.Optional(BoxRuntime),
    /**
     * The longest fetch_pages lets one page's scripts run in the box's browser
     * before reading what it has (seconds; 15 by default).
     */
    render_secs: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 300 })),
  },
  { additionalProperties: false },
);

export type BoxSection = Static<typeof BoxSection>;

/**
 * A worker's store: how many snapshots each store keeps (store/snapshots.ts;
 * taken after every run that changed it and in the server's daily sweep, 0
 * turns them off), how large it (and each of its channel stores) may grow
 * while a box writes it, how large a run's $HOME and clones may grow, and the
 * share of the data filesystem kept free for everyone (org-only);
 * runs/disk-watch.ts enforces those. How long a finished run's $HOME and
 * clones stay (org-only) is runs/retention.ts's.
 */
export const StoreSection = Type.Object(
  {
    snapshots: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 1000,
        description: "a whole number of snapshots to keep, 0 (off) to 1000",
      }),
    ),
    max_size: Type.Optional(
      Type.String({
        pattern: "^[0-9]+(\\.[0-9]+)?[kmgKMG]$",
        description: 'a size like "10g" or "512m"',
      }),
    ),
    reserve: Type.Optional(
      Type.Number({
        exclusiveMinimum: 0,
        maximum: 0.5,
        description: "the share of the data filesystem kept free, like 0.05",
      }),
    ),
    home_max_size: Type.Optional(
      Type.String({
        pattern: "^[0-9]+(\\.[0-9]+)?[kmgKMG]$",
        description: 'a size like "10g" or "512m"',
      }),
    ),
    scratch_keep: Type.Optional(
      Type.String({
        pattern: AGE_PATTERN,
        description: 'an age like "3d", "12h" or "90m"',
      }),
    ),
  },
  { additionalProperties: false },
);

export type StoreSection = Static<typeof StoreSection>;

export const ContextSection = Type.Object(
  {
    identity_max_chars: Type.Optional(Type.Integer({ minimum: 0 })),
    task_max_chars: Type.Optional(Type.Integer({ minimum: 0 })),
    max_injected_chars: Type.Optional(Type.Integer({ minimum: 0 })),
    /** Channel messages a session's first turn carries (newest kept). */
    history_max_messages: Type.Optional(Type.Integer({ minimum: 0 })),
    /** Characters of channel history a session's first turn carries (newest kept). */
    history_max_chars: Type.Optional(Type.Integer({ minimum: 0 })),
    /** Characters of a channel's purpose.md a prompt carries; a longer one is cut with a marker. */
    purpose_max_chars: Type.Optional(Type.Integer({ minimum: 0 })),
    /**
     * Characters of the OUTCOMES block (what became of the worker's proposals
     * since its last run) a prompt carries: the newest kept, the rest counted.
     */
    briefing_max_chars: Type.Optional(Type.Integer({ minimum: 0 })),
  },
  { additionalProperties: false },
);

export type ContextSection = Static<typeof ContextSection>;

/**
 * How much of the worker's own memory file (~/store/memory/memory.jsonl) a
 * prompt carries: at most `max_notes` notes and `max_chars` characters of
 * them (0 for either: no notes shown). A worker may only lower them.
 */
export const MemorySection = Type.Object(
  {
    max_notes: Type.Optional(Type.Integer({ minimum: 0 })),
    max_chars: Type.Optional(Type.Integer({ minimum: 0 })),
  },
  { additionalProperties: false },
);

export type MemorySection = Static<typeof MemorySection>;
