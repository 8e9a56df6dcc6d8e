import type { RosterPaths } from "../../ground/config/paths.ts";
import type { Asker, Judged } from "./authority.ts";

/** What every command's answer is given: where it was asked, by whom, with what standing. */
export interface CommandContext {
  paths: RosterPaths;
  /** The worker the surface belongs to (a bot's binding, `roster talk`'s worker). */
  worker: string;
  /** The channel it was asked in, when the surface is one. */
  channel: string | undefined;
  asker: Asker;
  judged: Judged;
}

/** What a command says back. */
export interface CommandAnswer {
  text: string;
  /** For everyone in the channel (a change of the channel itself); else only for the asker. */
  room?: boolean;
}

export const onlyYou = (text: string): CommandAnswer => ({ text });

/**
 * A command its asker may not give here, found by the answer itself (the
 * standing was enough, the target is not theirs): journalled as refused.
 */
export class CommandRefused extends Error {
  override name = "CommandRefused";
}
