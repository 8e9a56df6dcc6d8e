import { hostName } from "../../../ground/config/host-name.ts";
import { type Identity, tokenFromProxyAuthorization } from "../doors/identity.ts";
import { denied, type Refusal } from "../judging/refusals.ts";
import type { RequestFacts } from "../judging/request-facts.ts";
import { ACTIONS_HOST } from "./action-host.ts";

/**
 * Who a request speaks for, from where it arrived. On a run's own door
 * (run-doors.ts) the run is the door the bytes came through, known before a
 * byte was read: a request there is that run's whatever it says, counted
 * against its shares and written in its audit. Its token can only confirm it:
 * a token for another run, or one that is no longer live, is refused (on the
 * run's audit line), and a request with no token at all is the run's *page*
 * (the renderer's browser sends none: extensions/lib/render/door-forwarder.ts),
 * which the door judges by the run's grants but never lets act as the run
 * (admission.ts: no credential injected, no action host, no MCP call held,
 * nothing but GET/HEAD/OPTIONS to another site). Off a run door (the
 * gateway's loopback port, the shared door) the token alone says who asks,
 * as before: no token, nobody.
 */
export interface Caller {
  identity: Identity | undefined;
  /** Set when the request must be refused for who it claims to be (audited as `identity`). */
  refusal?: Refusal;
}

/** The rule a refusal names when a token on a run's door is not that run's (a stable name). */
export const WRONG_RUN_RULE = "wrong-run";

/** The rule a refusal of what a page may not do names (admission.ts; a stable name). */
export const PAGE_RULE = "page";

/** The run whose door a socket came through: set by the door as it hands the socket on. */
const doorRuns = new WeakMap<object, Identity>();

/** Marks a socket as having come through `run`'s own door (run-doors.ts hands it over). */
export function arrivedAtDoor(socket: object, run: Identity): void {
  doorRuns.set(socket, run);
}

/** The run whose door this socket came through, if it did. */
export function doorRunOf(socket: object): Identity | undefined {
  return doorRuns.get(socket);
}

/**
 * The caller of a request that carried `header` (Proxy-Authorization), on a
 * connection that came through `door` (undefined: not a run's door).
 */
export function callerOf(
  resolve: (token: string | undefined) => Identity | undefined,
  header: string | undefined,
  door: Identity | undefined,
): Caller {
  const token = tokenFromProxyAuthorization(header);
  const named = resolve(token);
  if (!door) return { identity: named };
  if (header === undefined) return { identity: { ...door, actor: "page" } };
  if (named?.runId === door.runId) return { identity: named };
  return {
    identity: door,
    refusal: denied(
      WRONG_RUN_RULE,
      named
        ? "this request's proxy token is another run's: a box speaks only for its own run"
        : "this request's proxy token is not a live token of the run whose door it came through",
      "denied by gateway (not this run's token)",
    ),
  };
}

/** Methods a page may send to a site other than its own: reads. */
const PAGE_READS: ReadonlySet<string> = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * What a page the renderer runs may not do (caller.ts): reach the action host,
 * or send anything but a read to a site other than the one its `Origin` names
 * (a browser names it on every such request; no Origin is no site of its own).
 */
export function pageRefusal(facts: RequestFacts): Refusal | undefined {
  if (facts.actor !== "page") return undefined;
  if (facts.host === ACTIONS_HOST)
    return denied(
      PAGE_RULE,
      "a page the renderer runs can't reach the action host: only the model's own tool calls propose",
      "denied by gateway (a page can't act as the run)",
    );
  if (PAGE_READS.has(facts.method) || originHost(facts.headers.origin) === facts.host)
    return undefined;
  return denied(
    PAGE_RULE,
    `a page the renderer runs may send only GET, HEAD or OPTIONS to a site other than its own (this was ${facts.method} to ${facts.host})`,
    "denied by gateway (a page can't act as the run)",
  );
}

/** The host an Origin header names, or undefined ("null", absent, malformed). */
function originHost(origin: string | undefined): string | undefined {
  if (!origin) return undefined;
  try {
    return hostName(new URL(origin).hostname);
  } catch {
    return undefined;
  }
}
