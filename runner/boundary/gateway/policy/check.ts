import { readFileSync } from "node:fs";
import { hostName } from "../../../ground/config/host-name.ts";
import type { LoadedConfig } from "../../../ground/config/load.ts";
import { workerSubject } from "../../../ground/config/subject.ts";
import { classSaid } from "../../../records/channels/channel-class.ts";
import { templatesFor } from "../credentials/vault.ts";
import { requestFacts } from "../exchange/admission.ts";
import { type Ruling, ruleOn } from "../exchange/ruling.ts";
import type { Refusal } from "../judging/refusals.ts";
import { brokenReasonOf } from "../settings/config-source.ts";
import { ClosedPorts } from "../upstream/closed-ports.ts";

/**
 * One request asked of the policy, as `roster policy check` takes it: which
 * worker's run sends it (and from which channel), the method, the URL, the
 * headers and body it carries. Judged by the door's own ruling
 * (exchange/ruling.ts) on the config given, with no network and nothing
 * written: no audit line, no budget charged, no vault read (the credential
 * is named, never its value).
 */
export interface PolicyRequest {
  worker: string;
  method: string;
  url: string;
  headers?: Record<string, string>;
  body?: Buffer;
  /** The channel the run started from (its origin), for grants limited to a class of channels. */
  channel?: string;
}

/** What the door would do with it, in words an operator and a script can read. */
export interface PolicyVerdict {
  /** `action`: the action host answers it (its own grants decide there). */
  verdict: "allow" | "deny" | "gate" | "action";
  /** The status the box would get when it is refused (403, 400 …). */
  status?: number;
  rule?: string;
  /** Where the deciding rule is written: file:line. */
  source?: string;
  /** The credential the door would inject, by name, and the headers it would set. */
  credential?: { name: string; headers: string[] };
  /** The fixed spends its meters would charge, by currency. */
  meters: Record<string, number>;
  /** A model call: its usage would be metered from the provider's answer. */
  model?: boolean;
  /** The channel it was judged from, and the class of channels the deciding grant is limited to. */
  channel?: string;
  channelClass?: string;
  /** The MCP call read from the body, when there was one. */
  mcp?: { method: string; tool?: string };
  /** What the box would read: the refusal's error and hint. */
  error?: string;
  hint?: string;
}

/** The door's ruling on one request, said as a verdict. */
export function policyCheck(config: LoadedConfig, request: PolicyRequest): PolicyVerdict {
  const url = new URL(request.url);
  const https = url.protocol === "https:";
  const facts = requestFacts({
    target: {
      protocol: https ? "https" : "http",
      host: hostName(url.hostname.replace(/^\[|\]$/g, "")),
      port: Number(url.port) || (https ? 443 : 80),
    },
    method: request.method.toUpperCase(),
    rawPath: `${url.pathname}${url.search}`,
    headers: lowerKeys(request.headers ?? {}),
    identity: {
      subject: workerSubject(request.worker),
      runId: "",
      origins: request.channel ? [request.channel] : [],
    },
    bodySize: request.body?.length ?? 0,
  });
  const ruling = ruleOn(
    {
      config,
      broken: brokenReasonOf(config),
      closed: ClosedPorts.forConfig(config.org).reason(facts.host, facts.port),
    },
    facts,
    request.body ?? Buffer.alloc(0),
    "request",
  );
  const said: PolicyVerdict = {
    ...verdictOf(ruling),
    meters: ruling.kind === "allow" ? ruling.spend : {},
    ...(request.channel ? { channel: request.channel } : {}),
    ...(facts.mcp
      ? {
          mcp: {
            method: facts.mcp.method,
            ...(facts.mcp.tool !== undefined ? { tool: facts.mcp.tool } : {}),
          },
        }
      : {}),
  };
  const grant = "decision" in ruling ? ruling.decision?.rule : undefined;
  if (grant) {
    said.rule = grant.name;
    said.source = sourceLine(grant.source, grant.name);
    if (grant.channels) said.channelClass = classSaid(grant.channels);
  } else if (ruling.kind === "refuse" && ruling.refusal.rule) {
    // a refusal no grant decided names its own rule, as the audit line does (sentinel-leak, closed)
    said.rule = ruling.refusal.rule;
  }
  if (ruling.kind === "allow") {
    if (ruling.model) said.model = true;
    if (grant?.inject)
      said.credential = {
        name: grant.inject.credential,
        headers: templatesFor(grant.inject)
          .filter((entry) => !entry.hosts || entry.hosts.includes(facts.host))
          .map((entry) => entry.header.toLowerCase()),
      };
  }
  return said;
}

function verdictOf(ruling: Ruling): Pick<PolicyVerdict, "verdict" | "status" | "error" | "hint"> {
  if (ruling.kind === "action") return { verdict: "action" };
  if (ruling.kind === "gate") return { verdict: "gate" };
  if (ruling.kind === "allow")
    return ruling.literal ? refused(ruling.literal) : { verdict: "allow" };
  return refused(ruling.refusal);
}

function refused(refusal: Refusal): Pick<PolicyVerdict, "verdict" | "status" | "error" | "hint"> {
  const { error, hint } = refusal.body;
  return {
    verdict: "deny",
    status: refusal.status,
    ...(typeof error === "string" ? { error } : {}),
    ...(typeof hint === "string" ? { hint } : {}),
  };
}

/** file:line of a grant, found by its name in its file (the file alone when it is not written there). */
function sourceLine(file: string, name: string): string {
  try {
    const lines = readFileSync(file, "utf8").split("\n");
    const quoted = JSON.stringify(name);
    // the model's grant is made from [model], not written as a [[grant]]
    const written = name.startsWith("model:") ? /^\s*\[model\]/ : undefined;
    const at = lines.findIndex((line) =>
      written
        ? written.test(line)
        : new RegExp(`^\\s*name\\s*=\\s*${escapeRegex(quoted)}`).test(line),
    );
    return at >= 0 ? `${file}:${at + 1}` : file;
  } catch {
    return file;
  }
}

const escapeRegex = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

function lowerKeys(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(headers).map(([key, value]) => [key.toLowerCase(), value]),
  );
}
