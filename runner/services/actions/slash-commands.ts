import type { RosterPaths } from "../../ground/config/paths.ts";
import { errorMessage } from "../../ground/errors.ts";
import { findGate, listGates } from "../../records/gates/gate-record.ts";
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
  "/quit                 end the session (as Ctrl-D does)",
  "Anything else you type goes to the worker.",
].join("\n");

export async function slashCommand(
  paths: RosterPaths,
  worker: string,
  line: string,
  user: string,
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
      default:
        return `unknown command ${command}; /help lists them (to send a line starting with "/" to the worker, start it with a space)`;
    }
  } catch (error) {
    return `${command}: ${errorMessage(error)}`;
  }
}
