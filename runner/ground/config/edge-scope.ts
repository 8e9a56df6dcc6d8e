import type { EdgeScopeTerms } from "../chat/terms.ts";
import { connectionProvider } from "./connection-providers.ts";
import type { ConnectionConfig } from "./connection-schema.ts";
import type { EdgeScope, ScopedGrant } from "./grant-schema.ts";

/**
 * A connection edge narrowed by its provider's dimensions (`[grant.dobby]
 * servers = […], surfaces = […]`, the public roster's scope), held where
 * roster can hold it and refused where it can't: never wider than it says.
 *
 * At the door, the edge's rules allow each listed channel's and server's API
 * paths, a channel of a listed class (`public`, `private`) by the class its
 * bot's listener recorded for it from the platform's own permissions, refuse
 * every other channel and server path, refuse every other version of the
 * API (which would reach the same channels by paths no rule names), and
 * allow the rest of the host as an empty edge would. A channel whose class
 * was never recorded is in no class (fail closed). A request's path shows no
 * channel's server, so a listed server opens its own paths, not its
 * channels'; the public roster also opens those and DMs, which is said in a
 * notice where a file asks for them (public-connection.ts).
 *
 * At the bot's listener, the edge of the connection its `[channels]`
 * credential names decides which channels' messages are handed on: a listed
 * channel, any channel of a listed server, a channel of a listed class, and
 * DMs unless the edge names classes without `dm`.
 */
const CLASS_DM = "dm";

/**
 * A rule that holds only for the channels whose recorded class it names: the
 * judge asks `admits` of the id after `path` (boundary/gateway/judging/judge.ts).
 */
export interface ClassedGrant extends ScopedGrant {
  readonly surfaceClass?: { readonly path: string; readonly admits: (surface: string) => boolean };
}

/** Whether a rule holds for this path: always, unless it is a class rule and the path's channel isn't of its class. */
export function surfaceClassAdmits(grant: ClassedGrant, path: string): boolean {
  const classed = grant.surfaceClass;
  if (!classed) return true;
  if (!path.startsWith(`${classed.path}/`)) return false;
  const surface = path.slice(classed.path.length + 1).split("/")[0] ?? "";
  return surface !== "" && classed.admits(surface);
}

/** The rules for one edge, in order; only the allow of an empty edge when it names no dimension. */
export function edgeGrants(
  allow: ScopedGrant,
  edge: EdgeScope,
  terms: EdgeScopeTerms | undefined,
): ScopedGrant[] {
  const servers = edge.servers ?? [];
  const ids = (edge.surfaces ?? []).filter((entry) => !terms?.classes.includes(entry));
  if (!terms || (!edge.servers && !edge.surfaces)) return [allow];
  const at = (pathPrefix: string): ScopedGrant => ({
    ...allow,
    match: { ...allow.match, pathPrefix },
  });
  const refuse = (what: string, pathPrefix: string): ScopedGrant => ({
    name: `${allow.name}:deny-unscoped-${what}`,
    verdict: "deny",
    match: { host: allow.match?.host ?? [], port: allow.match?.port ?? 443, pathPrefix },
    scope: allow.scope,
    source: allow.source,
  });
  const roomClasses = (edge.surfaces ?? []).filter(
    (entry) => terms.classes.includes(entry) && entry !== CLASS_DM,
  );
  const classOf = terms.classOf;
  const classed: ClassedGrant[] =
    roomClasses.length && classOf
      ? [
          {
            ...at(terms.surfacePath),
            name: `${allow.name}:class-${roomClasses.join("-")}`,
            surfaceClass: {
              path: terms.surfacePath,
              admits: (surface) => {
                const recorded = classOf({ surface });
                return recorded !== undefined && roomClasses.includes(recorded);
              },
            },
          },
        ]
      : [];
  return [
    ...ids.map((id) => at(`${terms.surfacePath}/${id}`)),
    ...servers.map((id) => at(`${terms.serverPath}/${id}`)),
    ...classed,
    refuse("channels", terms.surfacePath),
    refuse("servers", terms.serverPath),
    at(terms.api.version),
    refuse("api-versions", terms.api.root),
    allow,
  ];
}

/** Whether an edge admits a channel's messages to the bot's listener (the public roster's rule). */
export function edgeAdmits(edge: EdgeScope, terms: EdgeScopeTerms, channel: string): boolean {
  const place = terms.placeOf(channel);
  if (!place) return false;
  const classes = (edge.surfaces ?? []).filter((entry) => terms.classes.includes(entry));
  // a DM is one person seeking the worker out: admitted unless the edge names classes without it
  if ("direct" in place) return classes.length === 0 || classes.includes(CLASS_DM);
  if (!edge.servers && !edge.surfaces) return true;
  if ((edge.surfaces ?? []).includes(place.surface) || (edge.servers ?? []).includes(place.server))
    return true;
  // a room of a listed class, by the class its listener recorded (none recorded: none)
  const roomClasses = classes.filter((entry) => entry !== CLASS_DM);
  if (!roomClasses.length) return false;
  const recorded = terms.classOf?.({ roster: channel });
  return recorded !== undefined && roomClasses.includes(recorded);
}

/** The dimensions a connection's edges may narrow it by: its provider's, when it names one that has them. */
export function edgeTerms(connection: ConnectionConfig): EdgeScopeTerms | undefined {
  if (connection.kind !== undefined && connection.kind !== "service") return undefined;
  return connection.provider ? connectionProvider(connection.provider)?.edgeScope : undefined;
}

/**
 * Which channels a worker's bot listener hands on, by the connection its
 * credential names: undefined (every channel) unless that connection names a
 * provider that narrows by channel, as a file written for the public roster
 * does; then the worker's own edge, else `[grant.org]`, else nothing.
 */
export function listenerScope(
  connections: ReadonlyMap<string, ConnectionConfig>,
  credential: string,
  worker: string,
): ((channel: string) => boolean) | undefined {
  const connection = connections.get(credential);
  const terms = connection && edgeTerms(connection);
  if (!connection || !terms) return undefined;
  const edge = connection.grant?.[worker] ?? connection.grant?.org;
  return (channel) => edge !== undefined && edgeAdmits(edge, terms, channel);
}
