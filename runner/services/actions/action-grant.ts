import { scopeApplies } from "../../boundary/gateway/judging/judge.ts";
import type { ActionGrant, Scoped } from "../../ground/config/action-schema.ts";
import { classAdmits, classSaid } from "../../records/channels/channel-class.ts";

/**
 * The action grant for an intent, in the proposer's scope, whose class of
 * channels (if it has one) admits the run's origins; or why there is none.
 */
export function grantFor(
  actions: readonly Scoped<ActionGrant>[],
  intent: string,
  subject: string,
  origins: string[] | undefined,
): { grant: Scoped<ActionGrant> } | { refused: string } {
  const named = actions.filter(
    (candidate) => candidate.name === intent && scopeApplies(candidate.scope, subject),
  );
  // a grant limited to a class of channels is not there for a run started elsewhere
  const grant = named.find(
    (candidate) => !candidate.channels || classAdmits(candidate.channels, origins),
  );
  if (grant) return { grant };
  const limited = named.find((candidate) => candidate.channels)?.channels;
  if (!limited) return { refused: `no action grant for "${intent}"` };
  const from = origins?.length ? origins.join(", ") : "no channel";
  return {
    refused: `the action grant "${intent}" is only for runs started from ${classSaid(limited)}; this run started from ${from}`,
  };
}
