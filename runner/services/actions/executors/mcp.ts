import { type Static, Type } from "@sinclair/typebox";
import { Credentials } from "../../../boundary/gateway/credentials/inject.ts";
import {
  readCredential,
  renderInjection,
  templatesFor,
} from "../../../boundary/gateway/credentials/vault.ts";
import { requestFacts } from "../../../boundary/gateway/exchange/admission.ts";
import { grantNamesHost, judge } from "../../../boundary/gateway/judging/judge.ts";
import { resolveTimeouts } from "../../../boundary/gateway/settings/defaults.ts";
import { ClosedPorts } from "../../../boundary/gateway/upstream/closed-ports.ts";
import { upstreamsFor } from "../../../boundary/gateway/upstream/pools.ts";
import { loadConfig } from "../../../ground/config/load.ts";
import { oneLine } from "../../../ground/text/message-parts.ts";
import type { Executor } from "../../executor.ts";
import { callMcpTool } from "./mcp-session.ts";

/**
 * mcp: an MCP `tools/call` a `verdict = "gate"` grant held at the gateway
 * (never proposed through an [[action]] grant: only the gateway files it).
 * On approval the call is judged again against the config as it is now (the
 * grant must still hold this tool on this server), the grant's credential is
 * rendered for that server only, and the call is made once, through the
 * gateway's own Upstreams. The server's answer is the result the journal keeps.
 */
const Payload = Type.Object(
  {
    /** The server's origin and path, e.g. https://mcp.example.com:443/mcp. */
    url: Type.String({ pattern: "^https?://" }),
    tool: Type.String({ minLength: 1 }),
    arguments: Type.Record(Type.String(), Type.Unknown()),
    /** The grant that held it. */
    rule: Type.String({ minLength: 1 }),
  },
  { additionalProperties: false },
);
type Payload = Static<typeof Payload>;

/** Past this, a result is kept in the journal as a preview of its JSON (the gate and journal stay small). */
const MAX_KEPT_CHARS = 64 * 1024;

function kept(value: unknown): unknown {
  const text = JSON.stringify(value) ?? "null";
  return text.length <= MAX_KEPT_CHARS
    ? value
    : { truncated: true, chars: text.length, preview: text.slice(0, MAX_KEPT_CHARS) };
}

/** The JSON-RPC request the desk sends once approved: what the human sees is what goes. */
function request(payload: Payload): Record<string, unknown> {
  return {
    jsonrpc: "2.0",
    method: "tools/call",
    params: { name: payload.tool, arguments: payload.arguments },
  };
}

export const mcpCall: Executor<Payload> = {
  schema: Payload,
  summary: (payload) =>
    `MCP ${new URL(payload.url).host} ${payload.tool} ${oneLine(JSON.stringify(payload.arguments), 60)}`,
  render: (payload) =>
    `MCP server: ${payload.url}\nTool:       ${payload.tool}\nGrant:      ${payload.rule} (its credential is injected on approval)\n\n${JSON.stringify(request(payload), null, 2)}`,
  async run(payload, context) {
    const loaded = loadConfig(context.paths.config, { vaultDir: context.paths.vault });
    const first = loaded.errors[0];
    if (first)
      throw new Error(`the config is broken (${first.file}: ${first.message}); nothing was sent`);
    const url = new URL(payload.url);
    const protocol = url.protocol === "https:" ? "https" : "http";
    const target = {
      protocol,
      host: url.hostname.replace(/^\[|\]$/g, ""),
      port: Number(url.port || (protocol === "https" ? 443 : 80)),
    } as const;
    const rawPath = `${url.pathname}${url.search}`;
    const facts = requestFacts({
      target,
      method: "POST",
      rawPath,
      headers: { "content-type": "application/json" },
      identity: { subject: `org/${context.worker}`, runId: context.runId ?? "" },
      bodySize: 0,
    });
    facts.mcp = { method: "tools/call", tool: payload.tool };
    const decision = judge(loaded.grants, facts, "request");
    const grant = decision.rule;
    if (decision.verdict !== "gate" || !grant || grant.name !== payload.rule)
      throw new Error(
        `no grant holds ${payload.tool} on ${url.host} for approval any more (the config now says ${decision.verdict}${grant ? ` by "${grant.name}"` : ""}); nothing was sent`,
      );
    const section = loaded.org.gateway ?? {};
    // an approved call is held to the gateway's rules: never to roster's own ports on this host
    const closed = ClosedPorts.forConfig(loaded.org);
    const upstreams = upstreamsFor(section, resolveTimeouts(section.timeouts), closed, (name) =>
      readCredential(context.paths.vault, name),
    );
    try {
      let inject = new Map<string, string>();
      if (grant.inject) {
        const credentials = new Credentials({
          vaultDir: context.paths.vault,
          auditDir: context.paths.audit,
          upstreams,
        });
        const ready = await credentials.ready(grant.inject.credential);
        if (ready.kind !== "ok")
          throw new Error(
            `credential "${grant.inject.credential}" is not available (${ready.kind}); nothing was sent`,
          );
        inject = renderInjection(templatesFor(grant.inject), ready.credential, facts.host);
      }
      const outcome = await callMcpTool(
        upstreams,
        { target, path: rawPath || "/", allowInternal: grantNamesHost(grant, facts.host), inject },
        payload.tool,
        payload.arguments,
      );
      // the call was sent: whatever came back is its outcome (a throw here would let a
      // failed gate be approved again, and the call would run twice)
      return {
        server: url.host,
        tool: payload.tool,
        status: outcome.status,
        ...(outcome.error !== undefined ? { error: kept(outcome.error) } : {}),
        ...(outcome.result !== undefined ? { result: kept(outcome.result) } : {}),
        ...(outcome.error === undefined && outcome.result === undefined
          ? { error: "the server's answer held no JSON-RPC response to the call" }
          : {}),
      };
    } finally {
      await upstreams.close();
    }
  },
};
