import type { ScopedGrant } from "../../../ground/config/grant-schema.ts";
import type { LoadedConfig } from "../../../ground/config/load.ts";
import { classSaid } from "../../../records/channels/channel-class.ts";
import type { DecisionRecord } from "../audit/audit.ts";
import { AUDIT_FIELD_CHARS, AUDIT_ORIGINS } from "../audit/cuts.ts";
import { type Ruling, ruleOn, ruleOnConnect } from "../exchange/ruling.ts";
import type { RequestFacts } from "../judging/request-facts.ts";
import { mcpScope } from "../mcp/hosts.ts";
import { ClosedPorts } from "../upstream/closed-ports.ts";
import { ACTION_HOST_REASON, type Decided, type LineSays } from "./replay-record.ts";

/**
 * A recorded request judged again by the door's own ruling (exchange/
 * ruling.ts) under another config. The line is what is left of the request:
 * its body is gone (the MCP facts read from it stay), credential headers are
 * redacted, long values cut, headers past 32 dropped, and lines older than
 * the `origins` field keep no channels. Where what is missing could decide
 * the verdict it is never guessed: the request is judged twice, once with
 * every unknown at its least (a redacted or cut header holding only what was
 * kept, a dropped one absent, no channels) and once at its most (each such
 * header holding every needle a grant looks for, every channel-limited grant
 * open to it). Each grant matches at least as much in the second as in the
 * first, and the real request lies between them, so when both judgings
 * agree that is the verdict; when they don't, the line is counted as not
 * replayable with the rule and the header or channel it turns on.
 */

const CUT = /…\[\d+ more characters cut\]$/;
const REDACTED = "<redacted>";

interface Heard {
  /** The headers as kept: a cut value at what was kept, a redacted one empty. */
  known: Record<string, string>;
  /** Headers whose value the line doesn't keep whole, and how (redacted, cut). */
  unsure: Map<string, string>;
  /** Headers were dropped (past the 32 kept, or a name cut): any name not kept may have been sent. */
  dropped: boolean;
}

export class Rejudge {
  private readonly closed: ClosedPorts;
  /** Every needle the grants' `headerContains` look for, by header name. */
  private readonly needles = new Map<string, string[]>();
  private readonly channelled: boolean;
  /** Whether any grant passes a raw tunnel: with none, every CONNECT is intercepted. */
  private readonly tunnels: boolean;
  /** The config with every grant open to every channel, made when a line first needs it. */
  private open: LoadedConfig | undefined;
  private readonly longestPrefix: number;

  constructor(readonly config: LoadedConfig) {
    this.closed = ClosedPorts.forConfig(config.org);
    for (const grant of config.grants)
      for (const [name, needle] of Object.entries(grant.match?.headerContains ?? {})) {
        const key = name.toLowerCase();
        this.needles.set(key, [...(this.needles.get(key) ?? []), needle]);
      }
    this.channelled = config.grants.some((grant) => grant.channels !== undefined);
    this.tunnels = config.grants.some((grant) => grant.verdict === "tunnel");
    this.longestPrefix = Math.max(0, ...config.grants.map((g) => g.match?.pathPrefix?.length ?? 0));
  }

  /** The decision this config gives the line's request, or why it can't be said. */
  judge(record: DecisionRecord): LineSays {
    const r = record.request;
    if (CUT.test(r.host)) return not("the log keeps only the start of its host");
    if (CUT.test(r.method)) return not("the log keeps only the start of its method");
    if (r.mcp && (CUT.test(r.mcp.method) || CUT.test(r.mcp.tool ?? "")))
      return not("the log keeps only the start of its MCP method or tool");
    let path = r.path;
    if (CUT.test(path)) {
      // the kept start decides every pathPrefix shorter than it
      if (this.longestPrefix >= AUDIT_FIELD_CHARS)
        return not("the log keeps only the start of its path, and a rule's prefix is longer");
      path = path.replace(CUT, "");
    }
    const heard = headersHeard(r.headers);
    const doubt = (name: string) =>
      heard.unsure.has(name) || (heard.dropped && heard.known[name] === undefined);
    if (record.actor === "page" && doubt("origin"))
      return not("a page's limits read its Origin header, which the log doesn't keep whole");
    if (doubt("upgrade") || (doubt("connection") && heard.known.upgrade !== undefined))
      return not("the log doesn't keep whole the headers that say it was an upgrade");
    const entry =
      heard.known.upgrade !== undefined && /upgrade/i.test(heard.known.connection ?? "")
        ? "upgrade"
        : "request";
    const scope = mcpScope(this.config, r.host);
    if (!r.mcp && r.bodySize > 0 && scope !== "no")
      return not("this config would read its body for MCP, and the log keeps no body");
    if (r.mcp && scope === "no" && doubt("content-type"))
      return not("the log doesn't keep whole the Content-Type its MCP reading turns on");
    const originsKept =
      record.origins !== undefined &&
      record.origins.length < AUDIT_ORIGINS &&
      !record.origins.some((origin) => CUT.test(origin));
    const facts = (headers: Record<string, string>): RequestFacts => ({
      subject: record.subject ?? undefined,
      runId: record.run_id ?? undefined,
      origins: originsKept ? record.origins : undefined,
      ...(record.actor ? { actor: record.actor } : {}),
      protocol: r.protocol,
      method: r.method,
      host: r.host,
      port: r.port,
      path,
      query: r.query,
      headers,
      bodySize: r.bodySize,
      mcp: null,
    });
    const read = [...this.needles.keys()].filter(doubt);
    const channels = !originsKept && this.channelled;
    const least = this.outcome(this.config, facts(heard.known), entry, r.mcp);
    if (!read.length && !channels) return least;
    const most = this.outcome(
      channels ? this.opened() : this.config,
      facts(this.fullest(heard.known, read)),
      entry,
      r.mcp,
    );
    if (least.kind === "not") return least;
    if (most.kind === "not") return most;
    if (same(least.decided, most.decided)) return least;
    return not(this.turnsOn(most.decided, least.decided, heard, read, channels));
  }

  /** The door's ruling under `config`, said as a verdict and rule (what its audit line would say). */
  private outcome(
    config: LoadedConfig,
    facts: RequestFacts,
    entry: "request" | "upgrade",
    mcp: DecisionRecord["request"]["mcp"],
  ): LineSays {
    const input = { config, broken: undefined, closed: this.closed.reason(facts.host, facts.port) };
    if (facts.method === "CONNECT") {
      const connect = ruleOnConnect(input, facts);
      return connect.kind === "tunnel" ? decided("tunnel", connect.grant.name) : intercepted;
    }
    if (!this.tunnels) return saidOf(ruleOn(input, facts, { recordedMcp: mcp }, entry));
    // a CONNECT to this host and port (headers are not judged there) would now pass raw
    const connect = ruleOnConnect(input, {
      ...facts,
      method: "CONNECT",
      path: "",
      query: "",
      headers: {},
      bodySize: 0,
    });
    if (connect.kind === "tunnel")
      return facts.protocol === "https"
        ? decided("tunnel", connect.grant.name)
        : not("plain HTTP that may have come through a CONNECT this config passes raw");
    return saidOf(ruleOn(input, facts, { recordedMcp: mcp }, entry));
  }

  private opened(): LoadedConfig {
    this.open ??= {
      ...this.config,
      grants: this.config.grants.map(({ channels: _open, ...grant }) => grant),
    };
    return this.open;
  }

  /** The headers with every doubtful one a grant reads holding all that grants look for in it. */
  private fullest(known: Record<string, string>, read: string[]): Record<string, string> {
    const out = { ...known };
    for (const name of read)
      out[name] = [known[name] ?? "", ...(this.needles.get(name) ?? [])].join("\u0000");
    return out;
  }

  /** Why the two judgings differ, in words: the rule, and the header or the channels it turns on. */
  private turnsOn(
    most: Decided,
    least: Decided,
    heard: Heard,
    read: string[],
    channels: boolean,
  ): string {
    for (const rule of [most.rule, least.rule]) {
      const grant = rule === null ? undefined : grantNamed(this.config, rule);
      if (!grant) continue;
      const header = Object.keys(grant.match?.headerContains ?? {})
        .map((name) => name.toLowerCase())
        .find((name) => read.includes(name));
      if (header)
        return `rule "${grant.name}" matches its ${header} header, which the log keeps ${
          heard.unsure.get(header) ?? "no longer (past the headers a line keeps)"
        }`;
      if (channels && grant.channels)
        return `rule "${grant.name}" is only for runs from ${classSaid(grant.channels)}, and the line keeps no channels (written before lines kept them, or its run's token named none)`;
    }
    return "a header or the channels the log doesn't keep decide it";
  }
}

const not = (reason: string): LineSays => ({ kind: "not", reason });
const decided = (verdict: Decided["verdict"], rule: string | null): LineSays => ({
  kind: "decided",
  decided: { verdict, rule },
});
const intercepted = decided("intercept", null);

export const same = (a: Decided, b: Decided) => a.verdict === b.verdict && a.rule === b.rule;

/** A ruling as its audit line would say it (admission.ts refusalOutcome, exchange.ts). */
function saidOf(ruling: Ruling): LineSays {
  switch (ruling.kind) {
    case "action":
      return not(ACTION_HOST_REASON);
    case "gate":
      return decided("gate", ruling.decision.rule?.name ?? null);
    case "allow":
      // an internal address literal no grant names is refused under the grant that allowed it
      return decided(ruling.literal ? "deny" : "allow", ruling.grant.name);
    case "refuse":
      return decided("deny", ruling.decision?.rule?.name ?? ruling.refusal.rule ?? null);
  }
}

function headersHeard(headers: Record<string, string>): Heard {
  const heard: Heard = { known: {}, unsure: new Map(), dropped: false };
  for (const [name, value] of Object.entries(headers)) {
    if (name === "…" || CUT.test(name)) {
      heard.dropped = true;
      continue;
    }
    if (value === REDACTED) {
      heard.known[name] = "";
      heard.unsure.set(name, "redacted");
    } else if (CUT.test(value)) {
      heard.known[name] = value.replace(CUT, "");
      heard.unsure.set(name, "cut");
    } else heard.known[name] = value;
  }
  return heard;
}

function grantNamed(config: LoadedConfig, name: string): ScopedGrant | undefined {
  return config.grants.find((grant) => grant.name === name);
}
