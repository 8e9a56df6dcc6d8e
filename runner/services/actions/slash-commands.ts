import type { RosterPaths } from "../../ground/config/paths.ts";
import { errorMessage } from "../../ground/errors.ts";
import {
  designationOf,
  isWakeMode,
  modeSaid,
  readDesignations,
  setMode,
  setTrusted,
  trustSaid,
  WAKE_MODES,
} from "../../records/channels/designations.ts";
import { readPurpose } from "../../records/channels/store.ts";
import { findGate, listGates } from "../../records/gates/gate-record.ts";
import { findRun } from "../../records/run-records/run-record.ts";
import { formatRows, runRows, showRun } from "../../work/runs/runs-view.ts";
import { approveGate, denyGate } from "./desk.ts";
import { gateRow } from "./desk-view.ts";

/**
 * The few commands `roster talk` answers on the host (the CLI hands them to it): they never
 * reach the worker (a worker can't approve its own proposals by typing).
 * Returns the text to show, or "quit".
 */
export const TALK_HELP = [
  "/help                 this list",
  "/approvals            proposals of this worker waiting for you",
  "/approve <id> [note]  run one now, once",
  "/deny <id> [note]     refuse one; the worker's journal says why",
  "/runs [id]            this worker's last runs, or one run's outcome",
  "/channel [trust|untrust|mode all|mention]   this channel's trust, wake mode and purpose; change one",
  "/quit                 end the session (as Ctrl-D does)",
  "Anything else you type goes to the worker.",
].join("\n");

export async function slashCommand(
  paths: RosterPaths,
  worker: string,
  line: string,
  user: string,
  /** The channel it was typed in, for /channel. */
  channel?: string,
): Promise<string> {
  const [command, id, ...note] = line.split(/\s+/);
  try {
    switch (command) {
      case "/help":
        return TALK_HELP;
      case "/quit":
      case "/exit":
        return "quit";
      case "/approvals": {
        const waiting = listGates(paths, worker).filter(
          (gate) => gate.state === "pending" || gate.state === "failed",
        );
        return waiting.length ? waiting.map(gateRow).join("\n") : "nothing waits for you";
      }
      case "/approve":
      case "/deny": {
        if (!id) return `${command} needs a proposal id (see /approvals)`;
        const gate = findGate(paths, id);
        const decision = { by: user, ...(note.length ? { note: note.join(" ") } : {}) };
        const decided = await (command === "/approve" ? approveGate : denyGate)(
          paths,
          gate,
          decision,
        );
        if (decided.state === "executed") return `${decided.id} executed`;
        if (decided.state === "denied") return `${decided.id} denied`;
        return `${decided.id} failed: ${decided.error ?? "unknown error"}`;
      }
      case "/runs":
        return runsAnswer(paths, worker, id);
      case "/channel":
        if (!channel) return "/channel: this surface is not a channel";
        return await channelAnswer(paths, channel, id, note);
      default:
        return `unknown command ${command}; /help lists them (to send a line starting with "/" to the worker, start it with a space)`;
    }
  } catch (error) {
    return `${command}: ${errorMessage(error)}`;
  }
}

/** `/runs`: the worker's last five runs; `/runs <id>`: one of its runs, as `roster runs show` has it. */
function runsAnswer(paths: RosterPaths, worker: string, id: string | undefined): string {
  if (!id) {
    const rows = runRows(paths.state, worker, 5);
    return rows.length ? formatRows(rows) : `${worker} has no runs yet`;
  }
  const run = findRun(paths.state, id);
  if ("error" in run) return `/runs: ${run.error}`;
  // a person talking to one worker reads that worker's runs, not another's
  if (run.worker !== worker) return `/runs: ${run.id} is a run of ${run.worker}, not of ${worker}`;
  return showRun(run, paths.audit);
}

/** `/channel`: its standing and purpose; `trust`, `untrust`, `mode all|mention` change it, as `roster channel` does. */
async function channelAnswer(
  paths: RosterPaths,
  channel: string,
  verb: string | undefined,
  rest: string[],
): Promise<string> {
  if (verb === "trust" || verb === "untrust") {
    return trustSaid(await setTrusted(paths, channel, verb === "trust"));
  }
  if (verb === "mode") {
    const [mode] = rest;
    if (!mode || !isWakeMode(mode)) return `/channel mode: ${WAKE_MODES.join(" or ")}`;
    return modeSaid(await setMode(paths, channel, mode));
  }
  if (verb !== undefined) return `/channel: trust, untrust or mode all|mention, not "${verb}"`;
  const standing = designationOf(readDesignations(paths), channel);
  const purpose = readPurpose(paths, channel)?.trim();
  return [
    `channel   ${channel}`,
    `trusted   ${standing.trusted ? "yes" : "no"}${standing.trustedBy === "operator" ? "" : ` (${standing.trustedBy})`}`,
    `mode      ${standing.mode}${standing.modeBy === "operator" ? "" : " (default)"}`,
    `purpose   ${purpose ? purpose.split("\n")[0] : "(none yet)"}`,
  ].join("\n");
}
