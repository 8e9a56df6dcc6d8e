/** Reading the gateway's audit log from tests, as `roster gateway log --json` would. */

import type { DecisionRecord } from "../../runner/boundary/gateway/audit/audit.ts";
import { readDecisions } from "../../runner/boundary/gateway/audit/view.ts";

/**
 * The first decision matching `predicate`, waiting for it: a forwarded
 * exchange's line is written when its transfer ends, which can be a moment
 * after the client has seen the last byte or hung up.
 */
export async function waitForDecision(
  auditDir: string,
  predicate: (record: DecisionRecord) => boolean,
  timeoutMs = 5000,
): Promise<DecisionRecord> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = readDecisions(auditDir).find(predicate);
    if (found) return found;
    if (Date.now() > deadline) {
      throw new Error(`no matching audit line within ${timeoutMs} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
