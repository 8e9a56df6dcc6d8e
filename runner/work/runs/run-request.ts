import type { BoxHandle } from "../../boundary/box/lifecycle.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import type { EndedBy, RunRecord } from "../../records/run-records/run-record.ts";
import type { RunHome } from "../home/build-home.ts";
import type { AheadClones } from "../repos/clone.ts";
import type { EngineDrive } from "./engine-prompt.ts";
import type { Provisioned } from "./start-1-provision.ts";

/** What a caller asks of the run owner (run.ts), and what it says back about the end. */
export type RunKind = RunRecord["kind"];

export interface RunRequest {
  paths: RosterPaths;
  worker: string;
  kind: RunKind;
  /**
   * The wall-clock ceiling in minutes, checked against the one bound
   * (config/ceiling.ts). Absent for a session: the worker's `[box] session_ceiling_min`.
   */
  ceiling_min?: number;
  /** pi and its prompt, or a plain command in a box without an engine (no model, no credential). */
  drive: { engine: EngineDrive } | { command: string[] };
  /** Mode-specific variables for the box. */
  boxEnv?: Record<string, string>;
  /**
   * A box started before this run (a server's ready box): the run takes it
   * over instead of starting one (hand-off.ts). Only for a run that drives pi.
   */
  ready?: ReadyStart;
  /** A server's clones made ahead of their runs: the run's gated repos come from them when current. */
  spares?: AheadClones;
  /** The box keeps stdin open (a session's RPC). */
  interactive?: boolean;
  /** The stall watch: over the whole box, per turn (beginTurn/endTurn), or none. */
  stall: "box" | "turns" | "none";
  /** Ask the engine whether the OOM killer ended the box. */
  reportOom?: boolean;
  /** Each line of stdout, read within its bound (box-output.ts): pi's events. */
  onLine?: (line: string) => void;
  onStdout?: (chunk: Buffer) => void;
  onStderr?: (chunk: Buffer) => void;
  /** Told the record as soon as it exists (a dispatcher claims its task with the id). */
  /** Awaited before the $HOME is built: a task's claim is in the schedule.json its run sees. */
  onRecord?: (record: RunRecord) => void | Promise<void>;
  note: (text: string) => void;
  env?: NodeJS.ProcessEnv;
  signal?: AbortSignal;
}

/** How a run ends, as its caller judged the outcome. */
export interface RunEnding {
  endedBy: EndedBy;
  exitCode?: number;
  error?: string;
  /** Overrides the usual rule (a session that reaches its ceiling between turns ended well). */
  state?: "done" | "failed";
  turns?: number;
}

/** Why the owner or the box's engine ended it: which limit, and the words the record and a sender get. */
export interface LimitReached {
  endedBy: EndedBy;
  limit: "ceiling" | "turn-ceiling" | "stall" | "disk" | "output" | "gateway";
  message: string;
}

/**
 * A box started before its run, as the run owner (run.ts) takes it over:
 * runner/work/ready/ makes them (docs/ready-boxes.md) by the owner's own start
 * steps (start-4-box.ts), paused before the run. Everything here was fixed when
 * the box was made; what the run adds is written at hand-off.
 */
export interface ReadyStart {
  id: string;
  dir: string;
  home: RunHome;
  /** Minted unbound: the owner binds it at hand-off. */
  token: string;
  box: Provisioned;
  handle: BoxHandle;
  /** Where the box's output goes once the run has it. */
  output: { stdout?: (chunk: Buffer) => void; stderr?: (chunk: Buffer) => void };
  /** The host side of ~/self/handoff.json. */
  handoffFile: string;
  /** A session's box: the channel whose folder it has mounted. */
  channel?: string;
  /** A `box exec` box: roster-ready waits for a command, no pi runs. */
  exec?: boolean;
  /** The inode of the door folder mounted in the box: a folder made again since is not the box's. */
  doorIno: number;
  /** Its box has exited. */
  ended(): boolean;
  /** Ends it unused, by the owner's teardown: box, token, door folder, the folder of the run it never had. */
  discard(why: string): Promise<void>;
}

/**
 * What a session router asks of a server's ready boxes: one made for this
 * channel when a session opens (none is made behind it while the session
 * lasts), and one wanted once the session has ended.
 */
export interface ReadySessions {
  take(worker: string, channel: string): Promise<ReadyStart | undefined>;
  want(worker: string, channel: string): void;
}
