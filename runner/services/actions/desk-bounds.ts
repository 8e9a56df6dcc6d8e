import type { RosterPaths } from "../../ground/config/paths.ts";
import { KeyedShare } from "../../ground/shares/keyed-share.ts";
import { listGates } from "./gates.ts";

/**
 * What one worker may leave on the approval desk. A gate is kept on the
 * host's disk until a human decides it, and every page of the desk lists it:
 * a box looping on a gated tool must not fill either. A held MCP call is
 * bounded like an ordinary proposal's envelope, and a worker has at most
 * MAX_PENDING_GATES undecided gates at once (proposals and held calls
 * together); past either, nothing is filed and the box is told why.
 */
/** The most a held MCP call (url, tool, arguments, rule as JSON) may be: an envelope's bound. */
export const MAX_HELD_CALL_BYTES = 256 * 1024;
/** Undecided gates one worker may have on the desk at once. */
export const MAX_PENDING_GATES = 50;

/** Why this held call is too big to file, or undefined when it fits. */
export function heldCallTooBig(payload: unknown): string | undefined {
  const bytes = Buffer.byteLength(JSON.stringify(payload));
  if (bytes <= MAX_HELD_CALL_BYTES) return undefined;
  return `the call is ${Math.ceil(bytes / 1024)} KiB as JSON, over the ${MAX_HELD_CALL_BYTES / 1024} KiB a call held for approval may be; send smaller arguments`;
}

/** Why `worker` can't file another gate now, or undefined when the desk has room. */
export function deskFull(paths: RosterPaths, worker: string): string | undefined {
  const pending = listGates(paths, worker).filter((gate) => gate.state === "pending").length;
  if (pending < MAX_PENDING_GATES) return undefined;
  return `${worker} already has ${pending} proposals waiting for approval, the most one worker may (${MAX_PENDING_GATES}); nothing more is filed until a human decides some`;
}

/**
 * Proposals one run may make: PROPOSAL_BURST at once, then PROPOSAL_RATE a
 * second. Each is a journal line, an audit line, and under `auto` trust a
 * message, a task or a post that runs at once: a box proposing in a loop
 * would fill the host's disk (and its chat channels) whatever trust says.
 */
export const PROPOSAL_BURST = 100;
export const PROPOSAL_RATE = 0.5;

export class ProposalShare {
  private readonly share = new KeyedShare(PROPOSAL_BURST, PROPOSAL_RATE);

  /** Why this run may not propose now (and whether this is its first refusal since it last could). */
  refused(runId: string): { reason: string; first: boolean; retryAfterSecs: number } | undefined {
    const { allowed, dropped } = this.share.take(runId);
    if (allowed) return undefined;
    const retryAfterSecs = this.share.waitSecs(runId);
    return {
      reason: `this run has proposed more than one run may (${PROPOSAL_BURST} at once, then one every ${1 / PROPOSAL_RATE} s); nothing was filed: try again in ${retryAfterSecs} s, or stop`,
      first: dropped === 1,
      retryAfterSecs,
    };
  }
}
