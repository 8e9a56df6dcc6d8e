import type { ScopedGrant } from "../../../ground/config/grant-schema.ts";
import { hostName } from "../../../ground/config/host-name.ts";
import { hostMatches } from "../../../ground/config/host-pattern.ts";
import type { LoadedConfig } from "../../../ground/config/load.ts";
import { modelEndpoint } from "../../../ground/config/model.ts";
import { classAdmits } from "../../../records/channels/channel-class.ts";
import { templatesFor } from "../credentials/vault.ts";
import { scopeApplies } from "../judging/judge.ts";
import type { Refusal } from "../judging/refusals.ts";
import type { RequestFacts } from "../judging/request-facts.ts";
import {
  bodyCarriesSentinel,
  sentinelLeakRefusal,
  textCarriesSentinel,
} from "../judging/sentinel.ts";

/**
 * The sentinel tripwire on the door's ruling. A box holds the sentinel where
 * a credential would be, and it has one kind of place to go: a host the
 * gateway injects a credential for (for this run: a grant in its scope that
 * allows or gates the host and injects there), where the injected header
 * takes the sentinel's place, and a sentinel anywhere else in the request
 * reaches only the service that credential is for. There the ruling stands
 * as it was (a method the grant refuses is still refused by it). A request
 * carrying it anywhere else — a host no grant injects for, whether the grants
 * allow it or not; any page (it never gets the run's credentials) — is
 * refused as `sentinel-leak`, whatever the ruling was, and the run is marked
 * by that audit line (audit/tripwire.ts).
 *
 * Two places are not the tripwire's: the action host (the gateway's own,
 * whose rules judge what a proposal carries) and the model's endpoint, where
 * pi sends the sentinel as its key by design, a key injected or not (a
 * keyless local model gets it as it always did).
 *
 * A request to a host that gets a credential is not searched at all, so a
 * model call's large body costs nothing here. The refusal names no grant:
 * the audit line, the metrics and a policy check name the tripwire.
 */
export function sentinelLeak(
  config: LoadedConfig,
  facts: RequestFacts,
  /** What the door holds of the body (none for a replay of an audit line). */
  body: Buffer | undefined,
): Refusal | undefined {
  // most requests carry no body and no sentinel: a few substring searches, nothing else asked
  const inText = textCarriesSentinel(facts);
  if (!inText && !body?.length) return undefined;
  if (toModel(config, facts)) return undefined;
  // a page reads as the run but never with its credentials (caller.ts)
  if (!facts.actor && config.grants.some((grant) => injectsFor(grant, facts))) return undefined;
  return inText || (body && bodyCarriesSentinel(body))
    ? sentinelLeakRefusal(facts.host)
    : undefined;
}

/** A grant of this run's that lets a credential be injected on this host. */
function injectsFor(grant: ScopedGrant, facts: RequestFacts): boolean {
  if (!grant.inject || (grant.verdict !== "allow" && grant.verdict !== "gate")) return false;
  if (!scopeApplies(grant.scope, facts.subject)) return false;
  if (grant.channels && !classAdmits(grant.channels, facts.origins)) return false;
  const hosts = grant.match?.host;
  const patterns = hosts === undefined ? ["*"] : Array.isArray(hosts) ? hosts : [hosts];
  if (!patterns.some((pattern) => hostMatches(pattern, facts.host))) return false;
  const host = hostName(facts.host);
  return templatesFor(grant.inject).some(
    (entry) => !entry.hosts || entry.hosts.some((one) => hostName(one) === host),
  );
}

/** The model's endpoint, where pi's key (the sentinel) is written for. */
function toModel(config: LoadedConfig, facts: RequestFacts): boolean {
  const model = config.org.model;
  if (!model) return false;
  try {
    const endpoint = modelEndpoint(model);
    return endpoint.host === hostName(facts.host) && endpoint.port === facts.port;
  } catch {
    // a model with no usable base_url: the config's own checks say so
    return false;
  }
}
