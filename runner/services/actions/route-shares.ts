import { KeyedShare } from "../../ground/shares/keyed-share.ts";

/**
 * Each run's share of the action host's routes other than proposals (those
 * are desk-bounds.ts's ProposalShare). Every request a box makes to the
 * action host is answered on the gateway's loop, which every box's door
 * shares, and an outcome is a journal line on the host's disk: a box asking
 * in a loop must be refused long before either shows. A run reads its gates
 * and journal READ_BURST times at once, then READ_RATE a second; it reports
 * its outcome OUTCOME_BURST times (the last one stands), then one a minute.
 */
export const READ_BURST = 20;
export const READ_RATE = 1;
export const OUTCOME_BURST = 5;
export const OUTCOME_RATE = 1 / 60;

export type RouteKind = "read" | "outcome";

export class RouteShares {
  private readonly shares: Record<RouteKind, KeyedShare> = {
    read: new KeyedShare(READ_BURST, READ_RATE),
    outcome: new KeyedShare(OUTCOME_BURST, OUTCOME_RATE),
  };

  /** Why this run may not use a route of this kind now, with when to try again; undefined when it may. */
  refused(kind: RouteKind, runId: string): { reason: string; retryAfterSecs: number } | undefined {
    const share = this.shares[kind];
    if (share.take(runId).allowed) return undefined;
    const retryAfterSecs = share.waitSecs(runId);
    const bound =
      kind === "read"
        ? `reads its gates and journal more often than one run may (${READ_BURST} at once, then ${READ_RATE} a second)`
        : `has reported its outcome more often than one run may (${OUTCOME_BURST} times, then once a minute; the last report stands)`;
    return { reason: `this run ${bound}: try again in ${retryAfterSecs} s`, retryAfterSecs };
  }
}
